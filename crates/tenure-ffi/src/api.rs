//! The exported functions. Each body runs inside `guard` (panic boundary + last error).

use std::ffi::c_char;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tenure::{
    ChangeKind, ChangesOptions, Conditions, ContainerOptions, ContainerWriteOptions, Durability,
    ETag, ETagArg, Item, LeaseDuration, LeaseId, LeaseRequest, LeaseState, LockHandle, ReadOptions,
    Store, StoreOptions, Ttl, WriteOptions,
};

use crate::handles::{self, BatchObject, CursorObject, Object, SnapshotObject};
use crate::status::*;
use crate::util::*;

// ----- handles (opaque: their values are registry ids, never pointers to these types) -----

/// An open store.
pub struct tenure_store {
    _private: [u8; 0],
}
/// A repeatable read view of a store.
pub struct tenure_snapshot {
    _private: [u8; 0],
}
/// A batch under construction.
pub struct tenure_batch {
    _private: [u8; 0],
}
/// One page of a listing.
pub struct tenure_page {
    _private: [u8; 0],
}
/// An item read by `tenure_get_item` or `tenure_get_and_lock`.
pub struct tenure_item {
    _private: [u8; 0],
}
/// A change-feed cursor.
pub struct tenure_cursor {
    _private: [u8; 0],
}

// ----- version -----

pub const TENURE_VERSION_MAJOR: u32 = 0;
pub const TENURE_VERSION_MINOR: u32 = 1;
pub const TENURE_VERSION_PATCH: u32 = 0;

/// Size of an ETag text buffer (`"0x` + 16 hex digits + `"` + NUL fits).
pub const TENURE_ETAG_SIZE: usize = 32;
/// Size of a lease id text buffer (a hyphenated UUID + NUL fits).
pub const TENURE_LEASE_ID_SIZE: usize = 40;
/// Size of a lock handle text buffer (32 hex digits + NUL fits).
pub const TENURE_LOCK_HANDLE_SIZE: usize = 40;

/// The library version, e.g. "0.1.0". Static; never free it.
#[no_mangle]
pub extern "C" fn tenure_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// ----- status and last error -----

/// The SPEC §12 name of a status ("ConditionNotMet"), "Ok" for 0, "Unknown" otherwise. Static.
#[no_mangle]
pub extern "C" fn tenure_status_name(status: tenure_status) -> *const c_char {
    const NAMES: [&str; 31] = [
        "Ok\0",
        "NotModified\0",
        "InvalidArgument\0",
        "NotFound\0",
        "ContainerNotFound\0",
        "AlreadyExists\0",
        "ContainerAlreadyExists\0",
        "LeaseAlreadyPresent\0",
        "LeaseIdMismatchWithLeaseOperation\0",
        "LeaseNotPresentWithLeaseOperation\0",
        "LeaseIsBrokenAndCannotBeRenewed\0",
        "LeaseIsBreakingAndCannotBeAcquired\0",
        "LeaseIsBreakingAndCannotBeChanged\0",
        "ObjectLocked\0",
        "ConditionNotMet\0",
        "VersionMismatch\0",
        "LeaseIdMissing\0",
        "LeaseIdMismatchWithBlobOperation\0",
        "LeaseNotPresentWithBlobOperation\0",
        "LeaseLost\0",
        "LeaseIdMismatchWithContainerOperation\0",
        "LeaseNotPresentWithContainerOperation\0",
        "ObjectNotLocked\0",
        "InvalidLockHandle\0",
        "FailedDependency\0",
        "StoreLocked\0",
        "Corruption\0",
        "Io\0",
        "Closed\0",
        "Panic\0",
        "BufferTooSmall\0",
    ];
    let name = TABLE
        .iter()
        .position(|(known, _, _)| *known == status)
        .map(|position| NAMES[position])
        .unwrap_or("Unknown\0");
    name.as_ptr().cast()
}

/// The HTTP-style number of a status (200 for TENURE_OK, 0 for an unknown status).
#[no_mangle]
pub extern "C" fn tenure_status_http(status: tenure_status) -> u32 {
    TABLE
        .iter()
        .find(|(known, _, _)| *known == status)
        .map(|(_, _, http)| u32::from(*http))
        .unwrap_or(0)
}

/// Copies this thread's last failure message (UTF-8, no NUL added) into `buffer`; `*length_out`
/// gets its length (also on TENURE_ERR_BUFFER_TOO_SMALL). Empty if nothing failed yet.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_message(
    buffer: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    let message = LAST_ERROR.with(|last| last.borrow().message.clone());
    guard(|| {
        crate::util::buffer("buffer", buffer, capacity)?;
        out("length_out", length_out)?;
        // SAFETY: checked above; the caller vouches for `capacity` bytes.
        unsafe { copy_out(message.as_bytes(), buffer, capacity, length_out) }
    })
}

/// The current ETag reported with this thread's last failure (a precondition failure on an
/// existing item). `*has_etag_out` false when there was none. `etag_out` holds
/// TENURE_ETAG_SIZE bytes.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_etag(
    etag_out: *mut c_char,
    has_etag_out: *mut bool,
) -> tenure_status {
    let etag = LAST_ERROR.with(|last| last.borrow().current_etag);
    guard(|| {
        out("etag_out", etag_out)?;
        out("has_etag_out", has_etag_out)?;
        // SAFETY: checked non-NULL; the caller passes TENURE_ETAG_SIZE bytes.
        unsafe {
            if let Some(etag) = etag {
                write_etag(etag, etag_out);
            }
            *has_etag_out = etag.is_some();
        }
        Ok(())
    })
}

/// The index of the failing operation of this thread's last failed batch commit.
/// `*has_index_out` false when the last failure was not a batch operation's.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_batch_index(
    index_out: *mut u64,
    has_index_out: *mut bool,
) -> tenure_status {
    let index = LAST_ERROR.with(|last| last.borrow().batch_index);
    guard(|| {
        out("index_out", index_out)?;
        out("has_index_out", has_index_out)?;
        // SAFETY: checked non-NULL.
        unsafe {
            *index_out = index.unwrap_or(0) as u64;
            *has_index_out = index.is_some();
        }
        Ok(())
    })
}

/// # Safety
/// `target` holds TENURE_ETAG_SIZE bytes.
unsafe fn write_etag(etag: ETag, target: *mut c_char) {
    // SAFETY: the caller's contract.
    let slice = unsafe { std::slice::from_raw_parts_mut(target, TENURE_ETAG_SIZE) };
    fill(slice, &etag.to_text());
}

// ----- store -----

/// Options of `tenure_store_open`. Pass NULL for the defaults; zero-initialise and set fields.
#[repr(C)]
pub struct tenure_store_options {
    /// 0 = sync (every write durable when it returns), 1 = buffered.
    pub durability: u32,
    /// 0 = the default (64 MiB). Fixed when the store is created.
    pub segment_size_bytes: u64,
    /// true = no background compaction thread.
    pub disable_background_compaction: bool,
}

fn store_of(argument: &'static str, handle: *const tenure_store) -> Result<Arc<Store>, Fail> {
    let object = handles::lookup(argument, handle as usize, "store")?;
    let Object::Store(store) = &*object else {
        unreachable!("kind checked by lookup")
    };
    let store = store
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    store.clone().ok_or_else(|| invalid(argument, "was closed"))
}

/// Opens (creating if needed) the store in directory `path`.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_open(
    path: *const c_char,
    options: *const tenure_store_options,
    store_out: *mut *mut tenure_store,
) -> tenure_status {
    guard(|| {
        // SAFETY: documented contract: NUL-terminated.
        let path = unsafe { text("path", path) }?;
        out("store_out", store_out)?;
        if path.is_empty() {
            return Err(invalid("path", "is empty"));
        }
        let mut store_options = StoreOptions::default();
        // SAFETY: NULL or a valid struct.
        if let Some(options) = unsafe { options.as_ref() } {
            store_options.durability = match options.durability {
                0 => Durability::Sync,
                1 => Durability::Buffered,
                other => {
                    return Err(invalid(
                        "options.durability",
                        format!("must be 0 (sync) or 1 (buffered), not {other}"),
                    ))
                }
            };
            if options.segment_size_bytes != 0 {
                store_options.segment_size_bytes = options.segment_size_bytes;
            }
            if options.disable_background_compaction {
                store_options.background_compaction_interval = None;
            }
        }
        let store = Store::open(path, store_options)?;
        let handle = handles::register(Object::Store(Mutex::new(Some(Arc::new(store)))))?;
        // SAFETY: checked non-NULL.
        unsafe { *store_out = handle as *mut tenure_store };
        Ok(())
    })
}

/// Flushes and closes the store. The handle stays allocated (free it with tenure_store_free);
/// every later use of it fails with InvalidArgument. Snapshots, batches and cursors still open
/// keep the engine alive until they are freed; close then only flushes.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_close(store: *const tenure_store) -> tenure_status {
    guard(|| {
        let object = handles::lookup("store", store as usize, "store")?;
        let Object::Store(slot) = &*object else {
            unreachable!()
        };
        let taken = slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
            .ok_or_else(|| invalid("store", "was closed"))?;
        match Arc::try_unwrap(taken) {
            Ok(store) => store.close()?,
            Err(shared) => shared.flush()?,
        }
        Ok(())
    })
}

/// Frees the handle (closing the store first if needed). NULL is fine; a second free fails.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_free(store: *mut tenure_store) -> tenure_status {
    guard(|| {
        handles::release("store", store as usize, "store")?;
        Ok(())
    })
}

/// Makes every acknowledged write durable.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_flush(store: *const tenure_store) -> tenure_status {
    guard(|| {
        store_of("store", store)?.flush()?;
        Ok(())
    })
}

/// The store's current version (the last committed change).
#[no_mangle]
pub unsafe extern "C" fn tenure_store_version(
    store: *const tenure_store,
    version_out: *mut u64,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("version_out", version_out)?;
        let version = store.version();
        // SAFETY: checked non-NULL.
        unsafe { *version_out = version };
        Ok(())
    })
}

// ----- containers -----

/// Creates a container. `has_default_ttl`/`default_ttl_seconds` (1..=u32::MAX) set its TTL.
#[no_mangle]
pub unsafe extern "C" fn tenure_container_create(
    store: *const tenure_store,
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

/// Deletes a container and every item in it. `conditions` (NULL = none): if_match,
/// if_none_match, dates and lease_id apply; if_version, lock_handle and ttl are refused.
#[no_mangle]
pub unsafe extern "C" fn tenure_container_delete(
    store: *const tenure_store,
    name: *const c_char,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { text("name", name) }?;
        // SAFETY: NULL or valid.
        let parsed = unsafe { parse_conditions(conditions) }?;
        if parsed.lock_handle.is_some() || parsed.has_ttl {
            return Err(invalid(
                "conditions",
                "lock_handle and ttl do not apply to containers",
            ));
        }
        store.delete_container(
            name,
            &ContainerWriteOptions {
                conditions: parsed.conditions,
                lease_id: parsed.lease_id,
            },
        )?;
        Ok(())
    })
}

// ----- conditions -----

/// Conditions and options of a read or write. Zero-initialise, then set what you need; NULL
/// strings are absent. Dates are microseconds since the Unix epoch (>= 0).
#[repr(C)]
pub struct tenure_conditions {
    /// An ETag, or "*" (any existing item).
    pub if_match: *const c_char,
    pub if_none_match: *const c_char,
    pub has_if_version: bool,
    pub if_version: u64,
    pub has_if_modified_since: bool,
    pub if_modified_since_us: i64,
    pub has_if_unmodified_since: bool,
    pub if_unmodified_since_us: i64,
    /// The item's lease id (a UUID), required to write a leased item.
    pub lease_id: *const c_char,
    /// A cache-lock handle (32 hex digits): the write replaces the locked item and unlocks.
    pub lock_handle: *const c_char,
    /// Writes only: `ttl_seconds` -1 = never expires, 1..=4294967295 seconds. Without it the
    /// container's default applies.
    pub has_ttl: bool,
    pub ttl_seconds: i64,
}

pub(crate) struct Parsed {
    conditions: Conditions,
    lease_id: Option<LeaseId>,
    lock_handle: Option<LockHandle>,
    has_ttl: bool,
    ttl: Ttl,
}

fn date(argument: &str, micros: i64) -> Result<u64, Fail> {
    u64::try_from(micros).map_err(|_| invalid(argument, "must be >= 0 microseconds"))
}

/// # Safety
/// `conditions` is NULL or a valid struct whose strings are NULL or NUL-terminated.
unsafe fn parse_conditions(conditions: *const tenure_conditions) -> Result<Parsed, Fail> {
    let mut parsed = Parsed {
        conditions: Conditions::default(),
        lease_id: None,
        lock_handle: None,
        has_ttl: false,
        ttl: Ttl::ContainerDefault,
    };
    // SAFETY: the caller's contract.
    let Some(given) = (unsafe { conditions.as_ref() }) else {
        return Ok(parsed);
    };
    // SAFETY: the caller's contract for each string.
    if let Some(text) = unsafe { optional_text("if_match", given.if_match) }? {
        parsed.conditions.if_match = vec![ETagArg::parse("if_match", text)?];
    }
    // SAFETY: as above.
    if let Some(text) = unsafe { optional_text("if_none_match", given.if_none_match) }? {
        parsed.conditions.if_none_match = vec![ETagArg::parse("if_none_match", text)?];
    }
    if given.has_if_version {
        parsed.conditions.if_version = Some(given.if_version);
    }
    if given.has_if_modified_since {
        parsed.conditions.if_modified_since =
            Some(date("if_modified_since_us", given.if_modified_since_us)?);
    }
    if given.has_if_unmodified_since {
        parsed.conditions.if_unmodified_since = Some(date(
            "if_unmodified_since_us",
            given.if_unmodified_since_us,
        )?);
    }
    // SAFETY: as above.
    if let Some(text) = unsafe { optional_text("lease_id", given.lease_id) }? {
        parsed.lease_id = Some(LeaseId::parse("lease_id", text)?);
    }
    // SAFETY: as above.
    if let Some(text) = unsafe { optional_text("lock_handle", given.lock_handle) }? {
        parsed.lock_handle = Some(LockHandle::parse(text)?);
    }
    if given.has_ttl {
        parsed.has_ttl = true;
        parsed.ttl = Ttl::from_signed_seconds(given.ttl_seconds)?;
    }
    Ok(parsed)
}

/// # Safety
/// As for [`parse_conditions`].
unsafe fn write_options(conditions: *const tenure_conditions) -> Result<WriteOptions, Fail> {
    if conditions.is_null() {
        return Ok(WriteOptions::default());
    }
    // SAFETY: the caller's contract.
    let parsed = unsafe { parse_conditions(conditions) }?;
    Ok(WriteOptions {
        conditions: parsed.conditions,
        ttl: parsed.ttl,
        lease_id: parsed.lease_id,
        lock_handle: parsed.lock_handle,
        ..WriteOptions::default()
    })
}

/// # Safety
/// As for [`parse_conditions`].
unsafe fn read_options(conditions: *const tenure_conditions) -> Result<ReadOptions, Fail> {
    if conditions.is_null() {
        return Ok(ReadOptions::default());
    }
    // SAFETY: the caller's contract.
    let parsed = unsafe { parse_conditions(conditions) }?;
    if parsed.lock_handle.is_some() || parsed.has_ttl {
        return Err(invalid(
            "conditions",
            "lock_handle and ttl do not apply to reads",
        ));
    }
    Ok(ReadOptions {
        conditions: parsed.conditions,
        lease_id: parsed.lease_id,
    })
}

// ----- writes -----

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

// ----- reads -----

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

fn info_of(item: &Item) -> tenure_item_info {
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
unsafe fn deliver(
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

// ----- listing -----

/// One page of the items of `container` whose keys start with the prefix, in key order.
/// `page_size` 1..=10000; `continuation` NULL for the first page, else the text from
/// tenure_page_continuation.
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
        let (container, prefix, continuation) = unsafe {
            (
                text("container", container)?,
                crate::util::prefix(prefix, prefix_length)?,
                optional_text("continuation", continuation)?,
            )
        };
        out("page_out", page_out)?;
        if page_size == 0 {
            return Err(invalid("page_size", "must be at least 1"));
        }
        let page = store.list(
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
    })
}

fn with_page<T>(
    page: *const tenure_page,
    body: impl FnOnce(&tenure::Page) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let object = handles::lookup("page", page as usize, "page")?;
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
        handles::release("page", page as usize, "page")?;
        Ok(())
    })
}

// ----- snapshots -----

/// Opens a repeatable read view of the store (free it with tenure_snapshot_free).
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_open(
    store: *const tenure_store,
    snapshot_out: *mut *mut tenure_snapshot,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("snapshot_out", snapshot_out)?;
        let snapshot = store.snapshot()?;
        // SAFETY: the snapshot borrows the store behind the Arc, whose heap address is stable;
        // the object keeps that Arc and drops the snapshot first (field order).
        let snapshot = unsafe {
            std::mem::transmute::<tenure::Snapshot<'_>, tenure::Snapshot<'static>>(snapshot)
        };
        let handle = handles::register(Object::Snapshot(SnapshotObject {
            snapshot,
            _store: Arc::clone(&store),
        }))?;
        // SAFETY: checked non-NULL.
        unsafe { *snapshot_out = handle as *mut tenure_snapshot };
        Ok(())
    })
}

/// The version the snapshot sees.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_version(
    snapshot: *const tenure_snapshot,
    version_out: *mut u64,
) -> tenure_status {
    guard(|| {
        let object = handles::lookup("snapshot", snapshot as usize, "snapshot")?;
        let Object::Snapshot(snapshot) = &*object else {
            unreachable!()
        };
        out("version_out", version_out)?;
        // SAFETY: checked non-NULL.
        unsafe { *version_out = snapshot.snapshot.version() };
        Ok(())
    })
}

/// tenure_get as of the snapshot.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_get(
    snapshot: *const tenure_snapshot,
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
        let object = handles::lookup("snapshot", snapshot as usize, "snapshot")?;
        let Object::Snapshot(snapshot) = &*object else {
            unreachable!()
        };
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
        let item = snapshot.snapshot.get(container, key, &options)?;
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

/// Frees a snapshot. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_free(snapshot: *mut tenure_snapshot) -> tenure_status {
    guard(|| {
        handles::release("snapshot", snapshot as usize, "snapshot")?;
        Ok(())
    })
}

// ----- batches -----

/// Starts a batch (nothing happens until tenure_batch_commit).
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_new(
    store: *const tenure_store,
    batch_out: *mut *mut tenure_batch,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("batch_out", batch_out)?;
        // SAFETY: as for snapshots: the batch borrows the store the object keeps alive, and
        // drops first.
        let batch = unsafe {
            std::mem::transmute::<tenure::Batch<'_>, tenure::Batch<'static>>(store.batch())
        };
        let handle = handles::register(Object::Batch(Mutex::new(BatchObject {
            batch: Some(batch),
            _store: Arc::clone(&store),
        })))?;
        // SAFETY: checked non-NULL.
        unsafe { *batch_out = handle as *mut tenure_batch };
        Ok(())
    })
}

/// The cheap container-name check done when an operation is added (the engine checks the rest
/// at commit), so an empty or oversized name fails at once.
fn batch_container(container: &str) -> Result<(), Fail> {
    if container.is_empty() || container.len() > 255 {
        return Err(invalid("container", "a container name is 1 to 255 bytes"));
    }
    Ok(())
}

fn with_batch(
    batch: *const tenure_batch,
    body: impl FnOnce(&mut tenure::Batch<'static>) -> Result<(), Fail>,
) -> Result<(), Fail> {
    let object = handles::lookup("batch", batch as usize, "batch")?;
    let Object::Batch(batch) = &*object else {
        unreachable!()
    };
    let mut batch = batch
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let batch = batch
        .batch
        .as_mut()
        .ok_or_else(|| invalid("batch", "was already committed"))?;
    body(batch)
}

const BATCH_PUT: u32 = 0;
const BATCH_CREATE: u32 = 1;
const BATCH_REPLACE: u32 = 2;

unsafe fn batch_write(
    kind: u32,
    batch: *const tenure_batch,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
    value_pointer: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, value, options) = unsafe {
            (
                text("container", container)?,
                key(key_pointer, key_length)?,
                value(value_pointer, value_length)?,
                write_options(conditions)?,
            )
        };
        batch_container(container)?;
        with_batch(batch, |batch| {
            match kind {
                BATCH_PUT => batch.put(container, key, value, options),
                BATCH_CREATE => batch.create(container, key, value, options),
                _ => batch.replace(container, key, value, options),
            };
            Ok(())
        })
    })
}

/// Adds a put to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_put(
    batch: *const tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        batch_write(
            BATCH_PUT,
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
        )
    }
}

/// Adds a create to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_create(
    batch: *const tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        batch_write(
            BATCH_CREATE,
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
        )
    }
}

/// Adds a replace to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_replace(
    batch: *const tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        batch_write(
            BATCH_REPLACE,
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
        )
    }
}

/// Adds a delete to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_delete(
    batch: *const tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, options) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                write_options(conditions)?,
            )
        };
        batch_container(container)?;
        with_batch(batch, |batch| {
            batch.delete(container, key, options);
            Ok(())
        })
    })
}

/// Adds a check (conditions only; with none: the item exists) to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_check(
    batch: *const tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, parsed) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                parse_conditions(conditions)?,
            )
        };
        if parsed.lease_id.is_some() || parsed.lock_handle.is_some() || parsed.has_ttl {
            return Err(invalid(
                "conditions",
                "a check takes ETag, version and date conditions only",
            ));
        }
        batch_container(container)?;
        with_batch(batch, |batch| {
            batch.check(container, key, parsed.conditions);
            Ok(())
        })
    })
}

/// Commits every operation or none. `*version_out` gets the batch's version (every written
/// item's new ETag). On failure `tenure_last_error_batch_index` names the failing operation.
/// A committed (or failed) batch cannot be reused; free it.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_commit(
    batch: *const tenure_batch,
    version_out: *mut u64,
) -> tenure_status {
    guard(|| {
        let object = handles::lookup("batch", batch as usize, "batch")?;
        let Object::Batch(batch) = &*object else {
            unreachable!()
        };
        out("version_out", version_out)?;
        let taken = batch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .batch
            .take()
            .ok_or_else(|| invalid("batch", "was already committed"))?;
        let version = taken.commit()?;
        // SAFETY: checked non-NULL.
        unsafe { *version_out = version };
        Ok(())
    })
}

/// Frees a batch (uncommitted operations are dropped). NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_free(batch: *mut tenure_batch) -> tenure_status {
    guard(|| {
        handles::release("batch", batch as usize, "batch")?;
        Ok(())
    })
}

// ----- leases -----

/// A granted lease.
#[repr(C)]
pub struct tenure_lease {
    /// NUL-terminated UUID text.
    pub id: [c_char; TENURE_LEASE_ID_SIZE],
    /// The fencing token: strictly increasing per item across grants.
    pub fence: u64,
}

fn lease_out(lease: tenure::Lease, target: *mut tenure_lease) {
    let mut value = tenure_lease {
        id: [0; TENURE_LEASE_ID_SIZE],
        fence: lease.fence,
    };
    fill(&mut value.id, &lease.id.to_string());
    // SAFETY: callers check `target` non-NULL first.
    unsafe { *target = value };
}

/// # Safety
/// The usual argument contracts.
unsafe fn item_target<'a>(
    store: *const tenure_store,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
) -> Result<(Arc<Store>, &'a str, &'a [u8]), Fail> {
    let store = store_of("store", store)?;
    // SAFETY: the caller's contract.
    let (container, key) =
        unsafe { (text("container", container)?, key(key_pointer, key_length)?) };
    Ok((store, container, key))
}

fn lease_request(duration_seconds: i64, proposed_id: Option<&str>) -> Result<LeaseRequest, Fail> {
    Ok(LeaseRequest {
        duration: LeaseDuration::from_seconds(duration_seconds)?,
        proposed_id: proposed_id
            .map(|text| LeaseId::parse("proposed_id", text))
            .transpose()?,
        holder: None,
    })
}

/// Acquires the item's lease: `duration_seconds` 15..=60 or -1 (infinite); `proposed_id`
/// (NULL = generated) a UUID. Never waits.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_acquire(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    duration_seconds: i64,
    proposed_id: *const c_char,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NULL or NUL-terminated.
        let proposed = unsafe { optional_text("proposed_id", proposed_id) }?;
        out("lease_out", lease_out_)?;
        let request = lease_request(duration_seconds, proposed)?;
        let lease = store.acquire_lease(container, key, &request)?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// As tenure_lease_acquire, waiting up to `timeout_ms` (at most 24 h) for the lease to be free.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_acquire_wait(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    duration_seconds: i64,
    proposed_id: *const c_char,
    timeout_ms: u64,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NULL or NUL-terminated.
        let proposed = unsafe { optional_text("proposed_id", proposed_id) }?;
        out("lease_out", lease_out_)?;
        let request = lease_request(duration_seconds, proposed)?;
        let lease = store.acquire_lease_wait(
            container,
            key,
            &request,
            Duration::from_millis(timeout_ms),
        )?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// Renews the lease `lease_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_renew(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NUL-terminated.
        let id = LeaseId::parse("lease_id", unsafe { text("lease_id", lease_id) }?)?;
        out("lease_out", lease_out_)?;
        let lease = store.renew_lease(container, key, id)?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// Changes the lease's id from `lease_id` to `proposed_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_change(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
    proposed_id: *const c_char,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NUL-terminated.
        let id = LeaseId::parse("lease_id", unsafe { text("lease_id", lease_id) }?)?;
        // SAFETY: NUL-terminated.
        let proposed = LeaseId::parse("proposed_id", unsafe { text("proposed_id", proposed_id) }?)?;
        out("lease_out", lease_out_)?;
        let lease = store.change_lease(container, key, id, proposed)?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// Releases the lease `lease_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_release(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NUL-terminated.
        let id = LeaseId::parse("lease_id", unsafe { text("lease_id", lease_id) }?)?;
        store.release_lease(container, key, id)?;
        Ok(())
    })
}

/// Breaks the lease. `break_period_seconds` 0..=60, or -1 for the default (SPEC §4).
/// `*time_left_ms_out` gets the time until a new lease can be acquired.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_break(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    break_period_seconds: i64,
    time_left_ms_out: *mut u64,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        out("time_left_ms_out", time_left_ms_out)?;
        let period = if break_period_seconds == -1 {
            None
        } else {
            Some(
                u32::try_from(break_period_seconds)
                    .ok()
                    .filter(|seconds| *seconds <= 60)
                    .ok_or_else(|| {
                        invalid(
                            "break_period_seconds",
                            "must be 0..=60, or -1 for the default",
                        )
                    })?,
            )
        };
        let left = store.break_lease(container, key, period)?;
        // SAFETY: checked non-NULL.
        unsafe { *time_left_ms_out = u64::try_from(left.as_millis()).unwrap_or(u64::MAX) };
        Ok(())
    })
}

pub const TENURE_LEASE_AVAILABLE: u32 = 0;
pub const TENURE_LEASE_LEASED: u32 = 1;
pub const TENURE_LEASE_EXPIRED: u32 = 2;
pub const TENURE_LEASE_BREAKING: u32 = 3;
pub const TENURE_LEASE_BROKEN: u32 = 4;

/// What tenure_lease_info reports.
#[repr(C)]
pub struct tenure_lease_info {
    /// One of TENURE_LEASE_*.
    pub state: u32,
    pub has_id: bool,
    pub id: [c_char; TENURE_LEASE_ID_SIZE],
    pub has_fence: bool,
    pub fence: u64,
    /// Time until the lease or break ends by itself (absent: nothing runs out).
    pub has_remaining: bool,
    pub remaining_ms: u64,
}

/// The item's lease as of now.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_get_info(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    info_out: *mut tenure_lease_info,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        out("info_out", info_out)?;
        let info = store.lease_info(container, key)?;
        let mut value = tenure_lease_info {
            state: match info.state {
                LeaseState::Available => TENURE_LEASE_AVAILABLE,
                LeaseState::Leased => TENURE_LEASE_LEASED,
                LeaseState::Expired => TENURE_LEASE_EXPIRED,
                LeaseState::Breaking => TENURE_LEASE_BREAKING,
                LeaseState::Broken => TENURE_LEASE_BROKEN,
            },
            has_id: info.id.is_some(),
            id: [0; TENURE_LEASE_ID_SIZE],
            has_fence: info.fence.is_some(),
            fence: info.fence.unwrap_or(0),
            has_remaining: info.remaining_micros.is_some(),
            remaining_ms: info.remaining_micros.unwrap_or(0) / 1000,
        };
        if let Some(id) = info.id {
            fill(&mut value.id, &id.to_string());
        }
        // SAFETY: checked non-NULL.
        unsafe { *info_out = value };
        Ok(())
    })
}

// ----- cache locks -----

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
        if !etag_out.is_null() {
            // SAFETY: non-NULL, TENURE_ETAG_SIZE bytes by contract.
            unsafe { write_etag(etag, etag_out) };
        }
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

// ----- change feed -----

pub const TENURE_CHANGE_CREATED: u32 = 0;
pub const TENURE_CHANGE_UPDATED: u32 = 1;
pub const TENURE_CHANGE_DELETED: u32 = 2;
pub const TENURE_CHANGE_EXPIRED: u32 = 3;
pub const TENURE_CHANGE_CONTAINER_CREATED: u32 = 4;
pub const TENURE_CHANGE_CONTAINER_DELETED: u32 = 5;

/// One change, as tenure_cursor_next reports it.
#[repr(C)]
pub struct tenure_change {
    pub version: u64,
    /// One of TENURE_CHANGE_*.
    pub kind: u32,
    pub has_key: bool,
    pub key_length: u64,
    pub has_etag: bool,
    pub etag: [c_char; TENURE_ETAG_SIZE],
    pub has_value: bool,
    pub value_length: u64,
}

/// Opens a cursor over the changes after version `since` (0 = from the start), of one
/// container (`container` non-NULL) or all.
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_open(
    store: *const tenure_store,
    since: u64,
    container: *const c_char,
    include_values: bool,
    cursor_out: *mut *mut tenure_cursor,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: NULL or NUL-terminated.
        let container = unsafe { optional_text("container", container) }?.map(str::to_owned);
        out("cursor_out", cursor_out)?;
        let handle = handles::register(Object::Cursor(Mutex::new(CursorObject {
            store,
            since,
            container,
            include_values,
            pending: Default::default(),
            current: None,
        })))?;
        // SAFETY: checked non-NULL.
        unsafe { *cursor_out = handle as *mut tenure_cursor };
        Ok(())
    })
}

fn with_cursor<T>(
    cursor: *const tenure_cursor,
    body: impl FnOnce(&mut CursorObject) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let object = handles::lookup("cursor", cursor as usize, "cursor")?;
    let Object::Cursor(cursor) = &*object else {
        unreachable!()
    };
    let mut cursor = cursor
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    body(&mut cursor)
}

/// Moves to the next change. `*has_change_out` false when there is none yet (call again
/// later); else `change_out` describes it and tenure_cursor_key / _value / _container copy its
/// parts out.
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_next(
    cursor: *const tenure_cursor,
    change_out: *mut tenure_change,
    has_change_out: *mut bool,
) -> tenure_status {
    guard(|| {
        out("change_out", change_out)?;
        out("has_change_out", has_change_out)?;
        with_cursor(cursor, |cursor| {
            if cursor.pending.is_empty() {
                let options = ChangesOptions {
                    container: cursor.container.clone(),
                    include_values: cursor.include_values,
                    max_changes: 1000,
                };
                cursor.pending = cursor.store.changes(cursor.since, &options)?.into();
            }
            let next = cursor.pending.pop_front();
            if let Some(change) = &next {
                cursor.since = change.version;
                let mut value = tenure_change {
                    version: change.version,
                    kind: match change.kind {
                        ChangeKind::Created => TENURE_CHANGE_CREATED,
                        ChangeKind::Updated => TENURE_CHANGE_UPDATED,
                        ChangeKind::Deleted => TENURE_CHANGE_DELETED,
                        ChangeKind::Expired => TENURE_CHANGE_EXPIRED,
                        ChangeKind::ContainerCreated => TENURE_CHANGE_CONTAINER_CREATED,
                        ChangeKind::ContainerDeleted => TENURE_CHANGE_CONTAINER_DELETED,
                        _ => u32::MAX,
                    },
                    has_key: change.key.is_some(),
                    key_length: change.key.as_ref().map_or(0, |key| key.len() as u64),
                    has_etag: change.etag.is_some(),
                    etag: [0; TENURE_ETAG_SIZE],
                    has_value: change.value.is_some(),
                    value_length: change.value.as_ref().map_or(0, |value| value.len() as u64),
                };
                if let Some(etag) = change.etag {
                    fill(&mut value.etag, &etag.to_text());
                }
                // SAFETY: checked non-NULL.
                unsafe { *change_out = value };
            }
            // SAFETY: checked non-NULL.
            unsafe { *has_change_out = next.is_some() };
            cursor.current = next;
            Ok(())
        })
    })
}

fn cursor_part(
    cursor: *const tenure_cursor,
    part: fn(&tenure::Change) -> &[u8],
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> Result<(), Fail> {
    buffer("buffer_out", buffer_out, capacity)?;
    out("length_out", length_out)?;
    with_cursor(cursor, |cursor| {
        let change = cursor
            .current
            .as_ref()
            .ok_or_else(|| invalid("cursor", "has no current change (call tenure_cursor_next)"))?;
        // SAFETY: checked above.
        unsafe { copy_out(part(change), buffer_out, capacity, length_out) }
    })
}

/// Copies the current change's key out (empty for container changes).
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_key(
    cursor: *const tenure_cursor,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        cursor_part(
            cursor,
            |change| change.key.as_deref().unwrap_or(&[]),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Copies the current change's value out (empty unless values were asked for).
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_value(
    cursor: *const tenure_cursor,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        cursor_part(
            cursor,
            |change| change.value.as_deref().unwrap_or(&[]),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Copies the current change's container name out (UTF-8, no NUL).
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_container(
    cursor: *const tenure_cursor,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        cursor_part(
            cursor,
            |change| change.container.as_bytes(),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Frees a cursor. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_free(cursor: *mut tenure_cursor) -> tenure_status {
    guard(|| {
        handles::release("cursor", cursor as usize, "cursor")?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_macros_agree_with_cargo() {
        assert_eq!(
            format!(
                "{}.{}.{}",
                super::TENURE_VERSION_MAJOR,
                super::TENURE_VERSION_MINOR,
                super::TENURE_VERSION_PATCH
            ),
            env!("CARGO_PKG_VERSION")
        );
    }
}
