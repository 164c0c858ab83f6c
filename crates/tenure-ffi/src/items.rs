//! Item writes: put, create, replace, delete, set properties, set metadata.

use crate::prelude::*;

/// The kinds of tenure_write and tenure_batch_write.
pub const TENURE_WRITE_PUT: u32 = 0;
pub const TENURE_WRITE_CREATE: u32 = 1;
pub const TENURE_WRITE_REPLACE: u32 = 2;

#[derive(Clone, Copy)]
pub(crate) enum WriteKind {
    Put,
    Create,
    Replace,
}

impl WriteKind {
    /// A `kind` argument: one of TENURE_WRITE_*.
    pub(crate) fn from_c(kind: u32) -> Result<WriteKind, Fail> {
        match kind {
            TENURE_WRITE_PUT => Ok(WriteKind::Put),
            TENURE_WRITE_CREATE => Ok(WriteKind::Create),
            TENURE_WRITE_REPLACE => Ok(WriteKind::Replace),
            _ => Err(invalid(
                "kind",
                format!("must be TENURE_WRITE_PUT, _CREATE or _REPLACE (0..=2), not {kind}"),
            )),
        }
    }
}

/// tenure_put/create/replace (no `properties`) and tenure_write (`properties` required).
///
/// # Safety
/// The usual argument contracts; `properties` as for [`write_properties_in`].
unsafe fn write_item(
    kind: Result<WriteKind, Fail>,
    store: *const tenure_store,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
    value_pointer: *const u8,
    value_length: usize,
    properties: Option<*const tenure_write_properties>,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts, checked as far as C allows.
        let (container, key, value, mut options) = unsafe {
            (
                text("container", container)?,
                key(key_pointer, key_length)?,
                value(value_pointer, value_length)?,
                write_options(conditions)?,
            )
        };
        let kind = kind?;
        if let Some(properties) = properties {
            // SAFETY: the documented contract of `properties`.
            (options.content_type, options.metadata) = unsafe { write_properties_in(properties) }?;
        }
        let etag = match kind {
            WriteKind::Put => store.put(container, key, value, &options)?,
            WriteKind::Create => store.create(container, key, value, &options)?,
            WriteKind::Replace => store.replace(container, key, value, &options)?,
        };
        // SAFETY: NULL or TENURE_ETAG_SIZE bytes by contract.
        unsafe { optional_etag_out(etag, etag_out) };
        Ok(())
    })
}

/// Writes the item (create or replace). `conditions` may be NULL. `etag_out` (NULL = not
/// wanted) receives the new ETag; it must hold TENURE_ETAG_SIZE bytes. On a precondition
/// failure, `tenure_last_error_etag` gives the item's current ETag.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_write")
#[no_mangle]
pub unsafe extern "C" fn tenure_put(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        write_item(
            Ok(WriteKind::Put),
            store,
            container,
            key,
            key_length,
            value,
            value_length,
            None,
            conditions,
            etag_out,
        )
    }
}

/// As tenure_put, only if the item does not exist (TENURE_ERR_ALREADY_EXISTS otherwise).
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_write with kind TENURE_WRITE_CREATE")
#[no_mangle]
pub unsafe extern "C" fn tenure_create(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        write_item(
            Ok(WriteKind::Create),
            store,
            container,
            key,
            key_length,
            value,
            value_length,
            None,
            conditions,
            etag_out,
        )
    }
}

/// As tenure_put, only if the item exists (TENURE_ERR_NOT_FOUND otherwise).
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_write with kind TENURE_WRITE_REPLACE")
#[no_mangle]
pub unsafe extern "C" fn tenure_replace(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        write_item(
            Ok(WriteKind::Replace),
            store,
            container,
            key,
            key_length,
            value,
            value_length,
            None,
            conditions,
            etag_out,
        )
    }
}

/// A put, create or replace (`kind`: TENURE_WRITE_PUT/CREATE/REPLACE, as tenure_put/create/
/// replace) that also sets the item's content type and user metadata in the same write
/// (`properties`, required: a write without them is tenure_put/create/replace). The item's
/// previous content type and metadata are replaced, not merged. Conditions, `etag_out` and the
/// last error as for tenure_put.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_write")
#[no_mangle]
pub unsafe extern "C" fn tenure_write(
    store: *mut tenure_store,
    kind: u32,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    properties: *const tenure_write_properties,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        write_item(
            WriteKind::from_c(kind),
            store,
            container,
            key,
            key_length,
            value,
            value_length,
            Some(properties),
            conditions,
            etag_out,
        )
    }
}

/// Deletes the item. `conditions` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn tenure_delete(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        let (container, key, options) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                write_options(conditions)?,
            )
        };
        store.delete(container, key, &options)?;
        Ok(())
    })
}

/// What a properties write does with the content type.
enum ContentType {
    /// Replace it (NULL: no content type).
    Set(*const c_char),
    /// Keep the item's current one.
    Keep,
}

/// tenure_set_properties and tenure_set_metadata.
///
/// # Safety
/// The usual argument contracts; `metadata` as for [`metadata_in`].
unsafe fn write_properties(
    store: *const tenure_store,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
    content_type: ContentType,
    metadata: *const tenure_metadata_entry,
    metadata_count: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let (store, container, key) =
            unsafe { item_target(store, container, key_pointer, key_length) }?;
        // SAFETY: the caller's contract.
        let (metadata, mut options) = unsafe {
            (
                metadata_in(metadata, metadata_count)?,
                write_options(conditions)?,
            )
        };
        options.metadata = metadata;
        let etag = match content_type {
            ContentType::Set(content_type) => {
                // SAFETY: NULL or NUL-terminated.
                options.content_type =
                    unsafe { optional_text("content_type", content_type) }?.map(str::to_owned);
                store.set_properties(container, key, &options)?
            }
            ContentType::Keep => store.set_metadata(container, key, &options)?,
        };
        // SAFETY: NULL or TENURE_ETAG_SIZE bytes by contract.
        unsafe { optional_etag_out(etag, etag_out) };
        Ok(())
    })
}

/// Replaces the item's content type (`content_type` NULL = none) and user metadata
/// (`metadata_count` pairs; NULL only with 0), keeping its value. Conditions, lease id and lock
/// handle as for a write (docs/spec.md §3). `etag_out` (NULL = not wanted) receives the new ETag; on a
/// precondition failure `tenure_last_error_etag` gives the current one.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_set_properties")
#[no_mangle]
pub unsafe extern "C" fn tenure_set_properties(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    content_type: *const c_char,
    metadata: *const tenure_metadata_entry,
    metadata_count: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        write_properties(
            store,
            container,
            key,
            key_length,
            ContentType::Set(content_type),
            metadata,
            metadata_count,
            conditions,
            etag_out,
        )
    }
}

/// Replaces the item's user metadata, keeping its value and content type; otherwise as
/// tenure_set_properties. A stale if_match fails with TENURE_ERR_CONDITION_NOT_MET and
/// `tenure_last_error_etag` gives the current ETag.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_set_metadata")
#[no_mangle]
pub unsafe extern "C" fn tenure_set_metadata(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    metadata: *const tenure_metadata_entry,
    metadata_count: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        write_properties(
            store,
            container,
            key,
            key_length,
            ContentType::Keep,
            metadata,
            metadata_count,
            conditions,
            etag_out,
        )
    }
}
