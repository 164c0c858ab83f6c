//! Listing with continuation, from the store or a snapshot: pages.

use crate::prelude::*;

/// The arguments of a listing, checked, then `list` called with them; the page becomes a
/// handle.
///
/// # Safety
/// The documented argument contracts of tenure_list.
unsafe fn list_page(
    container: *const c_char,
    prefix: *const u8,
    prefix_length: usize,
    page_size: u32,
    continuation: *const c_char,
    page_out: *mut *mut tenure_page,
    list: impl FnOnce(&str, &[u8], usize, Option<&str>) -> tenure::Result<tenure::Page>,
) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    let (container, prefix, continuation) = unsafe {
        (
            text("container", container)?,
            crate::util::prefix("prefix", prefix, prefix_length)?,
            optional_text("continuation", continuation)?,
        )
    };
    out("page_out", page_out)?;
    if page_size == 0 {
        return Err(invalid("page_size", "must be at least 1"));
    }
    let page = list(container, prefix, page_size as usize, continuation)?;
    let handle = handles::register(Object::Page(page))?;
    // SAFETY: checked non-NULL.
    unsafe { *page_out = handle as *mut tenure_page };
    Ok(())
}

/// One page of the items of `container` whose keys start with the prefix, in key order.
/// `page_size` 1..=10000; `continuation` NULL for the first page, else the text from
/// tenure_page_continuation.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_list_items")
#[no_mangle]
pub unsafe extern "C" fn tenure_list(
    store: *const tenure_store,
    container: *const c_char,
    prefix: *const u8,
    prefix_length: usize,
    page_size: u32,
    continuation: *const c_char,
    include_values: bool,
    page_out: *mut *mut tenure_page,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        unsafe {
            list_page(
                container,
                prefix,
                prefix_length,
                page_size,
                continuation,
                page_out,
                |container, prefix, page_size, continuation| {
                    store.list(container, prefix, page_size, continuation, include_values)
                },
            )
        }
    })
}

/// tenure_list as of the snapshot: paging through one snapshot never skips or repeats an item
/// (docs/spec.md §7, §9), whatever is written meanwhile. A continuation from a snapshot's page goes
/// back to the same snapshot.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_snapshot_list_items")
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_list(
    snapshot: *const tenure_snapshot,
    container: *const c_char,
    prefix: *const u8,
    prefix_length: usize,
    page_size: u32,
    continuation: *const c_char,
    include_values: bool,
    page_out: *mut *mut tenure_page,
) -> tenure_status {
    guard(|| {
        with_snapshot(snapshot, |snapshot| {
            // SAFETY: the documented argument contracts.
            unsafe {
                list_page(
                    container,
                    prefix,
                    prefix_length,
                    page_size,
                    continuation,
                    page_out,
                    |container, prefix, page_size, continuation| {
                        snapshot.list(container, prefix, page_size, continuation, include_values)
                    },
                )
            }
        })
    })
}

fn with_page<T>(
    page: *const tenure_page,
    body: impl FnOnce(&tenure::Page) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let object = handles::hold("page", page as usize, Kind::Page)?;
    let Object::Page(page) = &*object else {
        unreachable!()
    };
    body(page)
}

/// The number of items in the page.
#[no_mangle]
pub unsafe extern "C" fn tenure_page_count(
    page: *const tenure_page,
    count_out: *mut usize,
) -> tenure_status {
    guard(|| {
        let count = with_page(page, |page| Ok(page.items.len()))?;
        out("count_out", count_out)?;
        // SAFETY: checked non-NULL.
        unsafe { *count_out = count };
        Ok(())
    })
}

/// Copies the key of item `index` out.
#[no_mangle]
pub unsafe extern "C" fn tenure_page_key(
    page: *const tenure_page,
    index: usize,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        with_page(page, |page| {
            let item = page
                .items
                .get(index)
                .ok_or_else(|| invalid("index", "is past the end of the page"))?;
            buffer("buffer_out", buffer_out, capacity)?;
            out("length_out", length_out)?;
            // SAFETY: checked above.
            unsafe { copy_out(&item.key, buffer_out, capacity, length_out) }
        })
    })
}

/// Copies the value of item `index` out (empty unless the listing included values).
#[no_mangle]
pub unsafe extern "C" fn tenure_page_value(
    page: *const tenure_page,
    index: usize,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        with_page(page, |page| {
            let item = page
                .items
                .get(index)
                .ok_or_else(|| invalid("index", "is past the end of the page"))?;
            buffer("buffer_out", buffer_out, capacity)?;
            out("length_out", length_out)?;
            // SAFETY: checked above.
            unsafe {
                copy_out(
                    item.value.as_deref().unwrap_or(&[]),
                    buffer_out,
                    capacity,
                    length_out,
                )
            }
        })
    })
}

/// The metadata of item `index`.
#[no_mangle]
pub unsafe extern "C" fn tenure_page_item_info(
    page: *const tenure_page,
    index: usize,
    info_out: *mut tenure_item_info,
) -> tenure_status {
    guard(|| {
        with_page(page, |page| {
            let item = page
                .items
                .get(index)
                .ok_or_else(|| invalid("index", "is past the end of the page"))?;
            out("info_out", info_out)?;
            // SAFETY: checked non-NULL.
            unsafe { *info_out = info_of(item) };
            Ok(())
        })
    })
}

/// The continuation for the next page as NUL-terminated text (pass it to tenure_list).
/// `*has_more_out` false when this was the last page (then nothing is copied).
#[no_mangle]
pub unsafe extern "C" fn tenure_page_continuation(
    page: *const tenure_page,
    buffer_out: *mut c_char,
    capacity: usize,
    length_out: *mut usize,
    has_more_out: *mut bool,
) -> tenure_status {
    guard(|| {
        with_page(page, |page| {
            buffer("buffer_out", buffer_out.cast(), capacity)?;
            out("length_out", length_out)?;
            out("has_more_out", has_more_out)?;
            let mut text = page.continuation.clone().unwrap_or_default().into_bytes();
            let has_more = page.continuation.is_some();
            text.push(0);
            // SAFETY: checked above; the length reported includes the NUL.
            unsafe { copy_out(&text, buffer_out.cast(), capacity, length_out) }?;
            // SAFETY: checked non-NULL.
            unsafe { *has_more_out = has_more };
            Ok(())
        })
    })
}

/// Frees a page. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_page_free(page: *mut tenure_page) -> tenure_status {
    guard(|| {
        handles::release("page", page as usize, Kind::Page)?;
        Ok(())
    })
}
