//! Containers: create, delete, properties, metadata, listing their names.

use crate::prelude::*;

/// Creates a container. `has_default_ttl`/`default_ttl_seconds` (1..=u32::MAX) set its TTL.
#[no_mangle]
pub unsafe extern "C" fn tenure_container_create(
    store: *mut tenure_store,
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

/// Deletes a container and every item in it. `conditions` (NULL = none): the container's
/// if_match, if_none_match, dates and lease_id apply; if_version, lock_handle and ttl are refused.
/// A leased container needs its lease id (docs/spec.md §5): without it TENURE_ERR_LEASE_ID_MISSING.
#[no_mangle]
pub unsafe extern "C" fn tenure_container_delete(
    store: *mut tenure_store,
    name: *const c_char,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        let (name, options) = unsafe { (text("name", name)?, container_options(conditions)?) };
        store.delete_container(name, &options)?;
        Ok(())
    })
}

/// What tenure_container_get_properties reports besides the metadata.
#[repr(C)]
pub struct tenure_container_properties {
    /// NUL-terminated ETag text of the container (changes when its metadata is set).
    pub etag: [c_char; TENURE_ETAG_SIZE],
    pub last_modified_us: i64,
    pub has_default_ttl: bool,
    pub default_ttl_seconds: i64,
    /// The number of metadata pairs.
    pub metadata_count: u64,
}

/// The container's properties, and (when `metadata_length_out` is not NULL) its metadata copied
/// into `metadata_buffer` as `name\0value\0` pairs. On TENURE_ERR_BUFFER_TOO_SMALL only
/// `*metadata_length_out` is written (the size needed). With a NULL `metadata_length_out`,
/// `metadata_buffer` must be NULL and `metadata_capacity` 0.
#[no_mangle]
pub unsafe extern "C" fn tenure_container_get_properties(
    store: *const tenure_store,
    name: *const c_char,
    properties_out: *mut tenure_container_properties,
    metadata_buffer: *mut u8,
    metadata_capacity: usize,
    metadata_length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { text("name", name) }?;
        out("properties_out", properties_out)?;
        buffer("metadata_buffer", metadata_buffer, metadata_capacity)?;
        if metadata_length_out.is_null() && (!metadata_buffer.is_null() || metadata_capacity != 0) {
            return Err(invalid(
                "metadata_length_out",
                "is NULL while a metadata buffer is given",
            ));
        }
        let properties = store.container_properties(name)?;
        if !metadata_length_out.is_null() {
            let bytes = metadata_bytes(&properties.metadata);
            // SAFETY: checked above.
            unsafe {
                copy_out(
                    &bytes,
                    metadata_buffer,
                    metadata_capacity,
                    metadata_length_out,
                )
            }?;
        }
        let mut value = tenure_container_properties {
            etag: [0; TENURE_ETAG_SIZE],
            last_modified_us: i64::try_from(properties.last_modified).unwrap_or(i64::MAX),
            has_default_ttl: properties.default_ttl_seconds.is_some(),
            default_ttl_seconds: properties.default_ttl_seconds.map_or(0, i64::from),
            metadata_count: properties.metadata.len() as u64,
        };
        value.etag = etag_text(properties.etag);
        // SAFETY: checked non-NULL.
        unsafe { *properties_out = value };
        Ok(())
    })
}

/// Replaces the container's metadata (`metadata_count` pairs; NULL only with 0 = none).
/// `conditions` as for tenure_container_delete: a lease id, if given, must match the
/// container's lease (docs/spec.md §5). `etag_out` (NULL = not wanted, else TENURE_ETAG_SIZE bytes)
/// receives the container's new ETag.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_set_container_metadata")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_set_metadata(
    store: *mut tenure_store,
    name: *const c_char,
    metadata: *const tenure_metadata_entry,
    metadata_count: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        let (name, metadata, options) = unsafe {
            (
                text("name", name)?,
                metadata_in(metadata, metadata_count)?,
                container_options(conditions)?,
            )
        };
        let etag = store.set_container_metadata(name, &metadata, &options)?;
        // SAFETY: NULL or TENURE_ETAG_SIZE bytes by contract.
        unsafe { optional_etag_out(etag, etag_out) };
        Ok(())
    })
}

/// The names of the store's containers, in name order, copied into `buffer_out` each followed by a
/// NUL; `*count_out` gets how many. On TENURE_ERR_BUFFER_TOO_SMALL only `*length_out` is
/// written (the size needed); `buffer_out` may be NULL with `capacity` 0 for that size query.
#[no_mangle]
pub unsafe extern "C" fn tenure_list_containers(
    store: *const tenure_store,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
    count_out: *mut usize,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        buffer("buffer_out", buffer_out, capacity)?;
        out("length_out", length_out)?;
        out("count_out", count_out)?;
        let names = store.list_containers()?;
        let mut bytes = Vec::new();
        for name in &names {
            bytes.extend_from_slice(name.as_bytes());
            bytes.push(0);
        }
        // SAFETY: checked above.
        unsafe { copy_out(&bytes, buffer_out, capacity, length_out) }?;
        // SAFETY: checked non-NULL.
        unsafe { *count_out = names.len() };
        Ok(())
    })
}
