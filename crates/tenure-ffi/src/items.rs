//! Item writes: put, create, replace, delete, set properties, set metadata.

use crate::prelude::*;

#[derive(Clone, Copy)]
enum WriteKind {
    Put,
    Create,
    Replace,
}

#[allow(clippy::too_many_arguments)]
unsafe fn write_item(
    kind: WriteKind,
    store: *const tenure_store,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
    value_pointer: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
    etag_out: *mut c_char,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts, checked as far as C allows.
        let (container, key, value, options) = unsafe {
            (
                text("container", container)?,
                key(key_pointer, key_length)?,
                value(value_pointer, value_length)?,
                write_options(conditions)?,
            )
        };
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
#[no_mangle]
pub unsafe extern "C" fn tenure_put(
    store: *const tenure_store,
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
            WriteKind::Put,
            store,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
            etag_out,
        )
    }
}

/// As tenure_put, only if the item does not exist (TENURE_ERR_ALREADY_EXISTS otherwise).
#[no_mangle]
pub unsafe extern "C" fn tenure_create(
    store: *const tenure_store,
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
            WriteKind::Create,
            store,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
            etag_out,
        )
    }
}

/// As tenure_put, only if the item exists (TENURE_ERR_NOT_FOUND otherwise).
#[no_mangle]
pub unsafe extern "C" fn tenure_replace(
    store: *const tenure_store,
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
            WriteKind::Replace,
            store,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
            etag_out,
        )
    }
}

/// Deletes the item. `conditions` may be NULL.
#[no_mangle]
pub unsafe extern "C" fn tenure_delete(
    store: *const tenure_store,
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
/// handle as for a write (SPEC §3). `etag_out` (NULL = not wanted) receives the new ETag; on a
/// precondition failure `tenure_last_error_etag` gives the current one.
#[no_mangle]
pub unsafe extern "C" fn tenure_set_properties(
    store: *const tenure_store,
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
#[no_mangle]
pub unsafe extern "C" fn tenure_set_metadata(
    store: *const tenure_store,
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
