//! Item writes: put, create, replace, delete.

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
        if !etag_out.is_null() {
            // SAFETY: non-NULL; the caller passes TENURE_ETAG_SIZE bytes.
            unsafe { write_etag(etag, etag_out) };
        }
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
