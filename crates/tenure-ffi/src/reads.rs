//! Item reads: copy-out get, properties, and item handles.

use crate::prelude::*;

/// What a read reports besides the value.
#[repr(C)]
pub struct tenure_item_info {
    pub version: u64,
    /// NUL-terminated ETag text.
    pub etag: [c_char; TENURE_ETAG_SIZE],
    pub last_modified_us: i64,
    pub has_expires_at: bool,
    pub expires_at_us: i64,
    /// The value's length in bytes.
    pub value_length: u64,
}

pub(crate) fn info_of(item: &Item) -> tenure_item_info {
    let mut info = tenure_item_info {
        version: item.version,
        etag: [0; TENURE_ETAG_SIZE],
        last_modified_us: i64::try_from(item.last_modified).unwrap_or(i64::MAX),
        has_expires_at: item.expires_at.is_some(),
        expires_at_us: item
            .expires_at
            .map(|at| i64::try_from(at).unwrap_or(i64::MAX))
            .unwrap_or(0),
        value_length: item.value.as_ref().map_or(0, |value| value.len() as u64),
    };
    fill(&mut info.etag, &item.etag.to_text());
    info
}

/// # Safety
/// `value_buffer`/`capacity`/`length_out`/`info_out` as documented on tenure_get.
pub(crate) unsafe fn deliver(
    item: &Item,
    value_buffer: *mut u8,
    capacity: usize,
    length_out: *mut usize,
    info_out: *mut tenure_item_info,
) -> Result<(), Fail> {
    let value = item.value.as_deref().unwrap_or(&[]);
    // SAFETY: checked by the callers before the read.
    unsafe { copy_out(value, value_buffer, capacity, length_out) }?;
    if !info_out.is_null() {
        // SAFETY: non-NULL, valid by contract.
        unsafe { *info_out = info_of(item) };
    }
    Ok(())
}

/// Reads an item into the caller's buffer. `*value_length_out` receives the value's length;
/// when it exceeds `value_capacity` the call fails with TENURE_ERR_BUFFER_TOO_SMALL (the
/// length is still written, nothing else). `info_out` (NULL = not wanted) receives version,
/// ETag and dates. `value_buffer` may be NULL when `value_capacity` is 0 (a size query).
#[no_mangle]
pub unsafe extern "C" fn tenure_get(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
    value_buffer: *mut u8,
    value_capacity: usize,
    value_length_out: *mut usize,
    info_out: *mut tenure_item_info,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        let (container, key, options) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                read_options(conditions)?,
            )
        };
        buffer("value_buffer", value_buffer, value_capacity)?;
        out("value_length_out", value_length_out)?;
        let item = store.get(container, key, &options)?;
        // SAFETY: checked above.
        unsafe {
            deliver(
                &item,
                value_buffer,
                value_capacity,
                value_length_out,
                info_out,
            )
        }
    })
}

/// Reads an item's metadata only (no value).
#[no_mangle]
pub unsafe extern "C" fn tenure_get_properties(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
    info_out: *mut tenure_item_info,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        let (container, key, options) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                read_options(conditions)?,
            )
        };
        out("info_out", info_out)?;
        let item = store.get_properties(container, key, &options)?;
        // SAFETY: checked non-NULL.
        unsafe { *info_out = info_of(&item) };
        Ok(())
    })
}

/// Reads an item into a new item handle (free it with tenure_item_free).
#[no_mangle]
pub unsafe extern "C" fn tenure_get_item(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
    item_out: *mut *mut tenure_item,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts.
        let (container, key, options) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                read_options(conditions)?,
            )
        };
        out("item_out", item_out)?;
        let item = store.get(container, key, &options)?;
        let handle = handles::register(Object::Item(item))?;
        // SAFETY: checked non-NULL.
        unsafe { *item_out = handle as *mut tenure_item };
        Ok(())
    })
}

fn item_of(handle: *const tenure_item) -> Result<Arc<Object>, Fail> {
    handles::lookup("item", handle as usize, "item")
}

/// The item's metadata.
#[no_mangle]
pub unsafe extern "C" fn tenure_item_get_info(
    item: *const tenure_item,
    info_out: *mut tenure_item_info,
) -> tenure_status {
    guard(|| {
        let object = item_of(item)?;
        let Object::Item(item) = &*object else {
            unreachable!()
        };
        out("info_out", info_out)?;
        // SAFETY: checked non-NULL.
        unsafe { *info_out = info_of(item) };
        Ok(())
    })
}

/// Copies the item's value out (TENURE_ERR_BUFFER_TOO_SMALL reports the size).
#[no_mangle]
pub unsafe extern "C" fn tenure_item_value(
    item: *const tenure_item,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        let object = item_of(item)?;
        let Object::Item(item) = &*object else {
            unreachable!()
        };
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
}

/// A zero-copy view of the item's value, valid until the item handle is freed.
#[no_mangle]
pub unsafe extern "C" fn tenure_item_value_view(
    item: *const tenure_item,
    data_out: *mut *const u8,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        let object = item_of(item)?;
        let Object::Item(item) = &*object else {
            unreachable!()
        };
        out("data_out", data_out)?;
        out("length_out", length_out)?;
        let value = item.value.as_deref().unwrap_or(&[]);
        // SAFETY: checked non-NULL. The bytes live in the registry's object until the handle
        // is freed (the registry holds the object; `object` here is a second reference).
        unsafe {
            *data_out = value.as_ptr();
            *length_out = value.len();
        }
        Ok(())
    })
}

/// Frees an item handle. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_item_free(item: *mut tenure_item) -> tenure_status {
    guard(|| {
        handles::release("item", item as usize, "item")?;
        Ok(())
    })
}
