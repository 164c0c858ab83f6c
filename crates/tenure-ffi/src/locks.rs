//! Cache locks.

use crate::options::{options_in, tenure_etag, tenure_lock_handle, tenure_lock_options, unused};
use crate::prelude::*;

/// Locks the item for `lock_timeout_ms` (> 0) and returns its handle text in `lock_handle_out`
/// (TENURE_LOCK_HANDLE_SIZE bytes). `item_out` (NULL = not wanted) receives an item handle of
/// the locked item, or NULL when `force` locked an absent key. Never waits.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_get_and_lock")
#[no_mangle]
pub unsafe extern "C" fn tenure_get_and_lock(
    store: *mut tenure_store,
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
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_put_and_unlock")
#[no_mangle]
pub unsafe extern "C" fn tenure_put_and_unlock(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
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
        let value = unsafe { crate::util::value(value, value_length) }?;
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
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_unlock")
#[no_mangle]
pub unsafe extern "C" fn tenure_unlock(
    store: *mut tenure_store,
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

// ----- with a tenure_lock_options struct -----

/// A lock call's options, required.
///
/// # Safety
/// `options` is NULL or a valid `tenure_lock_options` of its `struct_size`.
unsafe fn lock_options(options: *const tenure_lock_options) -> Result<tenure_lock_options, Fail> {
    // SAFETY: the caller's contract.
    unsafe { options_in("options", "TENURE_LOCK_OPTIONS_INIT", options) }?.ok_or_else(|| {
        invalid(
            "options",
            "is NULL: declare it with TENURE_LOCK_OPTIONS_INIT and set its required fields",
        )
    })
}

/// The handle and TTL of a put_and_unlock or unlock, checked (`force` and `lock_timeout_ms`
/// must stay 0).
///
/// # Safety
/// `options.lock_handle` is NULL or NUL-terminated.
unsafe fn unlock_request(
    options: &tenure_lock_options,
    call: &str,
) -> Result<(LockHandle, Option<Ttl>), Fail> {
    unused("options.force", options.force, call)?;
    unused(
        "options.lock_timeout_ms",
        options.lock_timeout_ms != 0,
        call,
    )?;
    // SAFETY: the caller's contract.
    let handle = LockHandle::parse(unsafe { text("options.lock_handle", options.lock_handle) }?)?;
    let ttl = if options.has_ttl {
        Some(crate::options::ttl_seconds(
            "options.ttl_seconds",
            options.ttl_seconds,
        )?)
    } else {
        None
    };
    Ok((handle, ttl))
}

/// Locks the item for `options->lock_timeout_ms` (> 0; required) and returns its handle in
/// `*handle_out`. With `options->force` an absent key is locked too (docs/spec.md §6).
/// `item_out` (NULL = not wanted) receives an item handle of the locked item (free it with
/// tenure_item_free), or NULL when a forced lock found no item. Never waits: a locked or leased
/// item is TENURE_ERR_OBJECT_LOCKED.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_get_and_lock(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_lock_options,
    handle_out: *mut tenure_lock_handle,
    item_out: *mut *mut tenure_item,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: as documented.
        let options = unsafe { lock_options(options) }?;
        let call = "tenure_store_get_and_lock";
        unused("options.lock_handle", !options.lock_handle.is_null(), call)?;
        unused("options.has_ttl", options.has_ttl, call)?;
        if options.lock_timeout_ms == 0 {
            return Err(invalid(
                "options.lock_timeout_ms",
                "must be greater than 0 (required)",
            ));
        }
        out("handle_out", handle_out)?;
        let (item, handle) = store.get_and_lock(
            container,
            key,
            Duration::from_millis(options.lock_timeout_ms),
            options.force,
        )?;
        let item_handle = match (item, item_out.is_null()) {
            (Some(item), false) => handles::register(Object::Item(item))?,
            _ => 0,
        };
        let mut text = tenure_lock_handle {
            text: [0; TENURE_LOCK_HANDLE_SIZE],
        };
        fill(&mut text.text, &handle.to_string());
        // SAFETY: checked non-NULL; `item_out` NULL or valid.
        unsafe {
            handle_out.write(text);
            if !item_out.is_null() {
                *item_out = item_handle as *mut tenure_item;
            }
        }
        Ok(())
    })
}

/// Replaces the locked item's value and unlocks it: `options->lock_handle` (required) is the
/// handle tenure_store_get_and_lock gave; with `options->has_ttl` the item's TTL restarts from
/// now. A force-locked absent key is created. `etag_out` (NULL = not wanted) receives the new
/// ETag.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_put_and_unlock(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    options: *const tenure_lock_options,
    etag_out: *mut tenure_etag,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: as documented.
        let value = unsafe { crate::util::value(value, value_length) }?;
        // SAFETY: as documented.
        let options = unsafe { lock_options(options) }?;
        // SAFETY: as documented.
        let (handle, ttl) = unsafe { unlock_request(&options, "tenure_store_put_and_unlock") }?;
        let etag = store.put_and_unlock(container, key, value, handle, ttl.unwrap_or_default())?;
        // SAFETY: NULL or a tenure_etag.
        unsafe { crate::options::etag_out(etag, etag_out) };
        Ok(())
    })
}

/// Releases the lock `options->lock_handle` (required); with `options->has_ttl` the item's TTL
/// restarts from now.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_unlock(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_lock_options,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: as documented.
        let options = unsafe { lock_options(options) }?;
        // SAFETY: as documented.
        let (handle, ttl) = unsafe { unlock_request(&options, "tenure_store_unlock") }?;
        store.unlock(container, key, handle, ttl)?;
        Ok(())
    })
}
