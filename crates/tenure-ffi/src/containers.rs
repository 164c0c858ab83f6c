//! Containers: create and delete.

use crate::prelude::*;

/// Creates a container. `has_default_ttl`/`default_ttl_seconds` (1..=u32::MAX) set its TTL.
#[no_mangle]
pub unsafe extern "C" fn tenure_container_create(
    store: *const tenure_store,
    name: *const c_char,
    has_default_ttl: bool,
    default_ttl_seconds: i64,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { text("name", name) }?;
        let default_ttl_seconds = if has_default_ttl {
            Some(
                u32::try_from(default_ttl_seconds)
                    .ok()
                    .filter(|seconds| *seconds > 0)
                    .ok_or_else(|| invalid("default_ttl_seconds", "must be 1..=4294967295"))?,
            )
        } else {
            None
        };
        store.create_container(
            name,
            &ContainerOptions {
                default_ttl_seconds,
                ..ContainerOptions::default()
            },
        )?;
        Ok(())
    })
}

/// Deletes a container and every item in it. `conditions` (NULL = none): if_match,
/// if_none_match, dates and lease_id apply; if_version, lock_handle and ttl are refused.
#[no_mangle]
pub unsafe extern "C" fn tenure_container_delete(
    store: *const tenure_store,
    name: *const c_char,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { text("name", name) }?;
        // SAFETY: NULL or valid.
        let parsed = unsafe { parse_conditions(conditions) }?;
        if parsed.lock_handle.is_some() || parsed.has_ttl {
            return Err(invalid(
                "conditions",
                "lock_handle and ttl do not apply to containers",
            ));
        }
        store.delete_container(
            name,
            &ContainerWriteOptions {
                conditions: parsed.conditions,
                lease_id: parsed.lease_id,
            },
        )?;
        Ok(())
    })
}
