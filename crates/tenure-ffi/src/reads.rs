//! Item reads: copy-out get, properties, get_if_newer, and item handles.

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
    /// The value's length in bytes (0 from tenure_get_properties, which does not read it).
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
    info.etag = etag_text(item.etag);
    info
}

/// The out-parameters of a copy-out read, checked before anything is read.
pub(crate) struct ValueOut {
    buffer: *mut u8,
    capacity: usize,
    length_out: *mut usize,
    info_out: *mut tenure_item_info,
}

impl ValueOut {
    /// The out-parameters as given, not yet checked.
    pub(crate) fn unchecked(
        buffer: *mut u8,
        capacity: usize,
        length_out: *mut usize,
        info_out: *mut tenure_item_info,
    ) -> ValueOut {
        ValueOut {
            buffer,
            capacity,
            length_out,
            info_out,
        }
    }

    /// `buffer` may be NULL only with `capacity` 0; `length_out` is required; `info_out`
    /// optional.
    pub(crate) fn checked(self) -> Result<ValueOut, Fail> {
        crate::util::buffer("value_buffer", self.buffer, self.capacity)?;
        out("value_length_out", self.length_out)?;
        Ok(self)
    }

    /// Copies the value out (or reports the size needed) and fills the info.
    ///
    /// # Safety
    /// The pointers given to [`ValueOut::checked`] are valid as documented on tenure_get.
    pub(crate) unsafe fn deliver(&self, item: &Item) -> Result<(), Fail> {
        let value = item.value.as_deref().unwrap_or(&[]);
        // SAFETY: checked in `checked`; the caller vouches for `capacity` bytes.
        unsafe { copy_out(value, self.buffer, self.capacity, self.length_out) }?;
        if !self.info_out.is_null() {
            // SAFETY: non-NULL, valid by contract.
            unsafe { *self.info_out = info_of(item) };
        }
        Ok(())
    }
}

/// The options of a read without conditions (NULL), shared rather than built per call.
pub(crate) static NO_CONDITIONS: ReadOptions = ReadOptions {
    conditions: Conditions {
        if_match: ETagList::new(),
        if_none_match: ETagList::new(),
        if_modified_since: None,
        if_unmodified_since: None,
        if_version: None,
    },
    lease_id: None,
};

/// The arguments every conditional read starts with, checked in order (container, key,
/// conditions), then handed to `read`.
///
/// # Safety
/// The usual argument contracts.
#[inline]
pub(crate) unsafe fn read_target<T>(
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
    read: impl FnOnce(&str, &[u8], &ReadOptions) -> Result<T, Fail>,
) -> Result<T, Fail> {
    // SAFETY: the caller's contract.
    let (container, key) = unsafe {
        (
            text("container", container)?,
            crate::util::key(key, key_length)?,
        )
    };
    if conditions.is_null() {
        return read(container, key, &NO_CONDITIONS);
    }
    // SAFETY: the caller's contract.
    let options = unsafe { read_options(conditions) }?;
    read(container, key, &options)
}

/// tenure_get and tenure_snapshot_get: the arguments checked in order (container, key,
/// conditions, then the out-parameters), `get` called, the value copied out.
///
/// # Safety
/// The documented argument contracts of tenure_get.
#[inline]
pub(crate) unsafe fn get_into(
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
    value_out: ValueOut,
    get: impl FnOnce(&str, &[u8], &ReadOptions) -> tenure::Result<Item>,
) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    unsafe {
        read_target(
            container,
            key,
            key_length,
            conditions,
            |container, key, options| {
                let value_out = value_out.checked()?;
                let item = get(container, key, options)?;
                // SAFETY: checked above.
                value_out.deliver(&item)
            },
        )
    }
}

/// Reads an item into the caller's buffer. `*value_length_out` receives the value's length;
/// when it exceeds `value_capacity` the call fails with TENURE_ERR_BUFFER_TOO_SMALL (the
/// length is still written, nothing else). `info_out` (NULL = not wanted) receives version,
/// ETag and dates. `value_buffer` may be NULL when `value_capacity` is 0 (a size query).
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_get_value")
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
        unsafe {
            get_into(
                container,
                key,
                key_length,
                conditions,
                ValueOut::unchecked(value_buffer, value_capacity, value_length_out, info_out),
                |container, key, options| store.get(container, key, options),
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
        unsafe {
            read_target(
                container,
                key,
                key_length,
                conditions,
                |container, key, options| {
                    out("info_out", info_out)?;
                    let item = store.get_properties(container, key, options)?;
                    // SAFETY: checked non-NULL.
                    *info_out = info_of(&item);
                    Ok(())
                },
            )
        }
    })
}

/// Reads the item only if its version differs from `version` (docs/spec.md §6, the cache's
/// GetIfNewer). `*newer_out` false: the caller's version is current and nothing else is
/// written. `*newer_out` true: as tenure_get (value copied out, `info_out` filled). On
/// TENURE_ERR_BUFFER_TOO_SMALL only `*value_length_out` is written.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_get_if_newer")
#[no_mangle]
pub unsafe extern "C" fn tenure_get_if_newer(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    version: u64,
    value_buffer: *mut u8,
    value_capacity: usize,
    value_length_out: *mut usize,
    info_out: *mut tenure_item_info,
    newer_out: *mut bool,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        let target = ValueOut::unchecked(value_buffer, value_capacity, value_length_out, info_out)
            .checked()?;
        out("newer_out", newer_out)?;
        let item = store.get_if_newer(container, key, version)?;
        if let Some(item) = &item {
            // SAFETY: checked above.
            unsafe { target.deliver(item) }?;
        }
        // SAFETY: checked non-NULL.
        unsafe { *newer_out = item.is_some() };
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
        unsafe {
            read_target(
                container,
                key,
                key_length,
                conditions,
                |container, key, options| {
                    out("item_out", item_out)?;
                    let item = store.get(container, key, options)?;
                    let handle = handles::register(Object::Item(item))?;
                    // SAFETY: checked non-NULL.
                    *item_out = handle as *mut tenure_item;
                    Ok(())
                },
            )
        }
    })
}

fn with_item<T>(
    item: *const tenure_item,
    body: impl FnOnce(&Item) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let object = handles::hold("item", item as usize, Kind::Item)?;
    let Object::Item(item) = &*object else {
        unreachable!("kind checked by the hold")
    };
    body(item)
}

/// Copies `bytes` of the item out through a checked (buffer, capacity, length) triple.
fn item_part(
    item: *const tenure_item,
    part: fn(&Item) -> std::borrow::Cow<'_, [u8]>,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> Result<(), Fail> {
    with_item(item, |item| {
        buffer("buffer_out", buffer_out, capacity)?;
        out("length_out", length_out)?;
        // SAFETY: checked above; the caller vouches for `capacity` bytes.
        unsafe { copy_out(&part(item), buffer_out, capacity, length_out) }
    })
}

/// The item's version, ETag and dates.
#[no_mangle]
pub unsafe extern "C" fn tenure_item_get_info(
    item: *const tenure_item,
    info_out: *mut tenure_item_info,
) -> tenure_status {
    guard(|| {
        with_item(item, |item| {
            out("info_out", info_out)?;
            // SAFETY: checked non-NULL.
            unsafe { *info_out = info_of(item) };
            Ok(())
        })
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
        item_part(
            item,
            |item| item.value.as_deref().unwrap_or(&[]).into(),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Copies the item's user metadata out as `name\0value\0` pairs (empty when it has none;
/// TENURE_ERR_BUFFER_TOO_SMALL reports the size).
#[no_mangle]
pub unsafe extern "C" fn tenure_item_metadata(
    item: *const tenure_item,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        item_part(
            item,
            |item| metadata_bytes(&item.metadata).into(),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Copies the item's content type out (UTF-8, no NUL; empty when it has none).
#[no_mangle]
pub unsafe extern "C" fn tenure_item_content_type(
    item: *const tenure_item,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        item_part(
            item,
            |item| item.content_type.as_deref().unwrap_or("").as_bytes().into(),
            buffer_out,
            capacity,
            length_out,
        )
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
        with_item(item, |item| {
            out("data_out", data_out)?;
            out("length_out", length_out)?;
            let value = item.value.as_deref().unwrap_or(&[]);
            // SAFETY: checked non-NULL. The bytes live in the registry's object until the
            // handle is freed.
            unsafe {
                *data_out = value.as_ptr();
                *length_out = value.len();
            }
            Ok(())
        })
    })
}

/// Frees an item handle. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_item_free(item: *mut tenure_item) -> tenure_status {
    guard(|| {
        handles::release("item", item as usize, Kind::Item)?;
        Ok(())
    })
}
