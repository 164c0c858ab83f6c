//! Cache locks.

use crate::prelude::*;

/// Locks the item for `lock_timeout_ms` (> 0) and returns its handle text in `lock_handle_out`
/// (TENURE_LOCK_HANDLE_SIZE bytes). `item_out` (NULL = not wanted) receives an item handle of
/// the locked item, or NULL when `force` locked an absent key. Never waits.
#[no_mangle]
pub unsafe extern "C" fn tenure_get_and_lock(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lock_timeout_ms: u64,
    force: bool,
    lock_handle_out: *mut c_char,
    item_out: *mut *mut tenure_item,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        out("lock_handle_out", lock_handle_out)?;
        if lock_timeout_ms == 0 {
            return Err(invalid("lock_timeout_ms", "must be greater than 0"));
        }
        let (item, handle) = store.get_and_lock(
            container,
            key,
            Duration::from_millis(lock_timeout_ms),
            force,
        )?;
        let item_handle = match (item, item_out.is_null()) {
            (Some(item), false) => handles::register(Object::Item(item))?,
            _ => 0,
        };
        // SAFETY: non-NULL; the caller passes TENURE_LOCK_HANDLE_SIZE bytes.
        let target =
            unsafe { std::slice::from_raw_parts_mut(lock_handle_out, TENURE_LOCK_HANDLE_SIZE) };
        fill(target, &handle.to_string());
        if !item_out.is_null() {
            // SAFETY: checked non-NULL.
            unsafe { *item_out = item_handle as *mut tenure_item };
        }
        Ok(())
    })
}

fn ttl_of(has_ttl: bool, ttl_seconds: i64) -> Result<Option<Ttl>, Fail> {
    Ok(if has_ttl {
        Some(Ttl::from_signed_seconds(ttl_seconds)?)
    } else {
        None
    })
}

/// Replaces the locked item's value and unlocks it.
#[no_mangle]
pub unsafe extern "C" fn tenure_put_and_unlock(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value_pointer: *const u8,
    value_length: usize,
    lock_handle: *const c_char,
    has_ttl: bool,
    ttl_seconds: i64,
    etag_out: *mut c_char,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: as documented.
        let value = unsafe { value(value_pointer, value_length) }?;
        // SAFETY: NUL-terminated.
        let handle = LockHandle::parse(unsafe { text("lock_handle", lock_handle) }?)?;
        let ttl = ttl_of(has_ttl, ttl_seconds)?.unwrap_or_default();
        let etag = store.put_and_unlock(container, key, value, handle, ttl)?;
        // SAFETY: NULL or TENURE_ETAG_SIZE bytes by contract.
        unsafe { optional_etag_out(etag, etag_out) };
        Ok(())
    })
}

/// Releases the lock; with `has_ttl`, the item's expiry restarts from now.
#[no_mangle]
pub unsafe extern "C" fn tenure_unlock(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lock_handle: *const c_char,
    has_ttl: bool,
    ttl_seconds: i64,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NUL-terminated.
        let handle = LockHandle::parse(unsafe { text("lock_handle", lock_handle) }?)?;
        let ttl = ttl_of(has_ttl, ttl_seconds)?;
        store.unlock(container, key, handle, ttl)?;
        Ok(())
    })
}
