//! Reads with options structs: copy-out gets from the store or a snapshot (`tenure_value_out`),
//! get-if-newer, and listings (`tenure_list_options`).

use crate::options::{options_in, tenure_list_options, tenure_read_options};
use crate::prelude::*;

/// Where a copy-out read puts the value, and what it reports. The caller fills `buffer` and
/// `capacity`; the library writes `length` and `info` on success. On
/// TENURE_ERR_BUFFER_TOO_SMALL only `length` is written: the size needed.
#[repr(C)]
pub struct tenure_value_out {
    /// In: where the value is copied; NULL only with `capacity` 0 (a size query).
    pub buffer: *mut u8,
    /// In: how many bytes `buffer` holds.
    pub capacity: usize,
    /// Out: the value's length (also on TENURE_ERR_BUFFER_TOO_SMALL).
    pub length: usize,
    /// Out: version, ETag, dates and value length.
    pub info: tenure_item_info,
}

/// The options of a read, checked: the conditions they point to (NULL = none).
///
/// # Safety
/// `options` is NULL or a valid `tenure_read_options` of its `struct_size`.
pub(crate) unsafe fn read_conditions(
    options: *const tenure_read_options,
) -> Result<*const tenure_conditions, Fail> {
    // SAFETY: the caller's contract.
    Ok(
        unsafe { options_in("options", "TENURE_READ_OPTIONS_INIT", options) }?
            .map_or(std::ptr::null(), |options| options.conditions),
    )
}

/// A read's arguments checked in order — container, key, options — then `read` called with
/// them. A read without conditions borrows one static `ReadOptions`.
///
/// # Safety
/// The documented argument contracts.
#[inline]
pub(crate) unsafe fn read_request<T>(
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_read_options,
    read: impl FnOnce(&str, &[u8], &ReadOptions) -> Result<T, Fail>,
) -> Result<T, Fail> {
    // SAFETY: the caller's contract.
    let (container, key) = unsafe {
        (
            text("container", container)?,
            crate::util::key(key, key_length)?,
        )
    };
    if options.is_null() {
        return read(container, key, &NO_CONDITIONS);
    }
    // SAFETY: the caller's contract.
    let conditions = unsafe { read_conditions(options) }?;
    if conditions.is_null() {
        return read(container, key, &NO_CONDITIONS);
    }
    // SAFETY: the caller's contract for what `options` points to.
    let read_options = unsafe { read_options(conditions) }?;
    read(container, key, &read_options)
}

/// The caller's `tenure_value_out`, checked: its buffer and capacity.
///
/// # Safety
/// `value_out` is NULL or a valid `tenure_value_out`.
unsafe fn value_target(value_out: *mut tenure_value_out) -> Result<(*mut u8, usize), Fail> {
    out("value_out", value_out)?;
    // SAFETY: non-NULL; the caller's struct.
    let (buffer, capacity) = unsafe { ((*value_out).buffer, (*value_out).capacity) };
    crate::util::buffer("value_out.buffer", buffer, capacity)?;
    Ok((buffer, capacity))
}

/// Copies the item's value into the caller's buffer and fills `length` and `info` (only
/// `length` on BUFFER_TOO_SMALL).
///
/// # Safety
/// `value_out` passed [`value_target`], which gave `buffer` and `capacity`.
unsafe fn deliver(
    item: &Item,
    value_out: *mut tenure_value_out,
    (buffer, capacity): (*mut u8, usize),
) -> Result<(), Fail> {
    let value = item.value.as_deref().unwrap_or(&[]);
    // SAFETY: checked by `value_target`; the caller vouches for `capacity` bytes.
    unsafe {
        copy_out(
            value,
            buffer,
            capacity,
            std::ptr::addr_of_mut!((*value_out).length),
        )?;
        std::ptr::addr_of_mut!((*value_out).info).write(info_of(item));
    }
    Ok(())
}

/// Reads an item and copies its value into `value_out->buffer` (`value_out->capacity` bytes);
/// `value_out->length` and `value_out->info` receive its length, version, ETag and dates. A
/// value longer than the capacity is TENURE_ERR_BUFFER_TOO_SMALL with only `value_out->length`
/// written (a NULL buffer with capacity 0 asks the size). `options` (NULL = none) carries the
/// read's conditions: a failed `if_none_match` is TENURE_ERR_NOT_MODIFIED, a failed `if_match`
/// TENURE_ERR_CONDITION_NOT_MET with the current ETag in the error state.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_get_value(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_read_options,
    value_out: *mut tenure_value_out,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        unsafe {
            read_request(
                container,
                key,
                key_length,
                options,
                |container, key, read| {
                    let target = value_target(value_out)?;
                    let item = store.get(container, key, read)?;
                    deliver(&item, value_out, target)
                },
            )
        }
    })
}

/// tenure_store_get_value as of the snapshot.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_get_value(
    snapshot: *const tenure_snapshot,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_read_options,
    value_out: *mut tenure_value_out,
) -> tenure_status {
    guard(|| {
        with_snapshot(snapshot, |snapshot| {
            // SAFETY: the documented argument contracts.
            unsafe {
                read_request(
                    container,
                    key,
                    key_length,
                    options,
                    |container, key, read| {
                        let target = value_target(value_out)?;
                        let item = snapshot.get(container, key, read)?;
                        deliver(&item, value_out, target)
                    },
                )
            }
        })
    })
}

/// The cache's GetIfNewer (docs/spec.md §6): reads the item, as tenure_store_get_value, only
/// when its version differs from `version`. When it does not, the caller's copy is current:
/// TENURE_ERR_NOT_MODIFIED, and nothing is written.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_get_if_newer(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    version: u64,
    value_out: *mut tenure_value_out,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: as documented.
        let target = unsafe { value_target(value_out) }?;
        match store.get_if_newer(container, key, version)? {
            // SAFETY: checked by `value_target`.
            Some(item) => unsafe { deliver(&item, value_out, target) },
            None => Err(fail(
                TENURE_ERR_NOT_MODIFIED,
                format!("NotModified: the item is still at version {version}"),
            )),
        }
    })
}

/// A listing's options checked, `list` called with them, the page made a handle.
///
/// # Safety
/// The documented argument contracts of tenure_store_list_items.
unsafe fn list_items(
    container: *const c_char,
    options: *const tenure_list_options,
    page_out: *mut *mut tenure_page,
    list: impl FnOnce(&str, &[u8], usize, Option<&str>, bool) -> tenure::Result<tenure::Page>,
) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    let container = unsafe { text("container", container) }?;
    // SAFETY: the caller's contract.
    let options = unsafe { options_in("options", "TENURE_LIST_OPTIONS_INIT", options) }?;
    let (prefix, continuation, page_size, include_values) = match options {
        None => (&[][..], None, TENURE_LIST_DEFAULT_PAGE_SIZE, false),
        // SAFETY: the caller's contract for the options' pointers.
        Some(options) => unsafe {
            (
                crate::util::prefix("options.prefix", options.prefix, options.prefix_length)?,
                optional_text("options.continuation", options.continuation)?,
                match options.page_size {
                    0 => TENURE_LIST_DEFAULT_PAGE_SIZE,
                    size => size,
                },
                options.include_values,
            )
        },
    };
    out("page_out", page_out)?;
    let page = list(
        container,
        prefix,
        page_size as usize,
        continuation,
        include_values,
    )?;
    let handle = handles::register(Object::Page(page))?;
    // SAFETY: checked non-NULL.
    unsafe { *page_out = handle as *mut tenure_page };
    Ok(())
}

/// One page of the items of `container`, in key order: `options` (NULL = the first page of
/// TENURE_LIST_DEFAULT_PAGE_SIZE items, every key, no values) give the prefix, page size,
/// continuation and whether values come too. `*page_out` receives the page (free it with
/// tenure_page_free); tenure_page_continuation gives the next page's continuation.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_list_items(
    store: *const tenure_store,
    container: *const c_char,
    options: *const tenure_list_options,
    page_out: *mut *mut tenure_page,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        unsafe {
            list_items(
                container,
                options,
                page_out,
                |container, prefix, size, from, values| {
                    store.list(container, prefix, size, from, values)
                },
            )
        }
    })
}

/// tenure_store_list_items as of the snapshot: paging through one snapshot never skips or
/// repeats an item (docs/spec.md §7, §9), whatever is written meanwhile.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_list_items(
    snapshot: *const tenure_snapshot,
    container: *const c_char,
    options: *const tenure_list_options,
    page_out: *mut *mut tenure_page,
) -> tenure_status {
    guard(|| {
        with_snapshot(snapshot, |snapshot| {
            // SAFETY: the documented argument contracts.
            unsafe {
                list_items(
                    container,
                    options,
                    page_out,
                    |container, prefix, size, from, values| {
                        snapshot.list(container, prefix, size, from, values)
                    },
                )
            }
        })
    })
}
