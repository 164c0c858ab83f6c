//! The growable options structs, the typed fixed-size outputs and the one spelling of
//! "infinite".
//!
//! Every options struct starts with `uint32_t struct_size`, set by its `TENURE_*_INIT` macro to
//! `sizeof` the struct the caller compiled against. The library reads what it knows: a size
//! below the known struct is refused, and a larger one (a caller built against a newer header)
//! is accepted when every byte the library does not know is zero — a newer field left at its
//! zero value means "absent", so it changes nothing; one that is set is refused by name, never
//! ignored. Fields are only ever appended, and every struct ends without padding (a test checks
//! it), so an appended field always lies past the end an older library knows.

use crate::prelude::*;

/// The one spelling of "infinite" or "never": an infinite lease duration, an item TTL that
/// never runs out. Zero (what the `TENURE_*_INIT` macros and `= {0}` give) always means
/// "absent": the default applies.
pub const TENURE_INFINITE: i64 = -1;

/// An ETag as text: `"0x` + 16 hex digits + `"`, NUL-terminated. The capacity is in the type,
/// so an output of this type can never be too small.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_etag {
    pub text: [c_char; TENURE_ETAG_SIZE],
}

/// A cache lock's handle as text (32 hex digits, NUL-terminated), as tenure_store_get_and_lock
/// returns it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_lock_handle {
    pub text: [c_char; TENURE_LOCK_HANDLE_SIZE],
}

/// How a read is made: tenure_store_get_value, tenure_snapshot_get_value,
/// tenure_snapshot_get_view, tenure_store_get_with. Declare it with
/// `tenure_read_options options = TENURE_READ_OPTIONS_INIT;` (NULL options = none).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_read_options {
    /// `sizeof(tenure_read_options)`; TENURE_READ_OPTIONS_INIT sets it.
    pub struct_size: u32,
    /// The read's conditions and lease id; NULL = none. `lock_handle` and `has_ttl` are refused.
    pub conditions: *const tenure_conditions,
}

/// How a write is made: tenure_store_write, tenure_batch_add_write, tenure_store_set_properties,
/// tenure_store_set_metadata, tenure_store_set_container_metadata. Declare it with
/// `tenure_write_options options = TENURE_WRITE_OPTIONS_INIT;` (NULL options = a plain put).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_write_options {
    /// `sizeof(tenure_write_options)`; TENURE_WRITE_OPTIONS_INIT sets it.
    pub struct_size: u32,
    /// TENURE_WRITE_PUT (0: create or replace), TENURE_WRITE_CREATE or TENURE_WRITE_REPLACE
    /// (tenure_store_write and tenure_batch_add_write; 0 elsewhere).
    pub kind: u32,
    /// Conditions, lease id, lock handle and TTL; NULL = none.
    pub conditions: *const tenure_conditions,
    /// NUL-terminated UTF-8; NULL = none. A write replaces the item's content type and
    /// metadata with these: a write without them leaves the item with none.
    pub content_type: *const c_char,
    /// `metadata_count` pairs; NULL only with a count of 0.
    pub metadata: *const tenure_metadata_entry,
    pub metadata_count: usize,
}

/// One page of a listing: tenure_store_list_items, tenure_snapshot_list_items. Declare it with
/// `tenure_list_options options = TENURE_LIST_OPTIONS_INIT;` (NULL options = the defaults).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_list_options {
    /// `sizeof(tenure_list_options)`; TENURE_LIST_OPTIONS_INIT sets it.
    pub struct_size: u32,
    /// Items per page, 1..=10000; 0 = TENURE_LIST_DEFAULT_PAGE_SIZE.
    pub page_size: u32,
    /// Whether the page carries the values (tenure_page_value), not only keys and properties.
    pub include_values: bool,
    /// Only keys that start with these bytes; NULL only with a length of 0 (all keys).
    pub prefix: *const u8,
    pub prefix_length: usize,
    /// NULL for the first page, else the text tenure_page_continuation gave.
    pub continuation: *const c_char,
}

/// Items per page of a listing whose options leave `page_size` 0.
pub const TENURE_LIST_DEFAULT_PAGE_SIZE: u32 = 100;

/// A cache lock's request: tenure_store_get_and_lock (`lock_timeout_ms`, `force`),
/// tenure_store_put_and_unlock and tenure_store_unlock (`lock_handle`, TTL). Declare it with
/// `tenure_lock_options options = TENURE_LOCK_OPTIONS_INIT;`. Fields a call does not use must
/// stay 0.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_lock_options {
    /// `sizeof(tenure_lock_options)`; TENURE_LOCK_OPTIONS_INIT sets it.
    pub struct_size: u32,
    /// get_and_lock: lock even an absent key (docs/spec.md §6).
    pub force: bool,
    /// get_and_lock: how long the lock lasts, > 0 (required).
    pub lock_timeout_ms: u64,
    /// put_and_unlock, unlock: the handle get_and_lock returned (required).
    pub lock_handle: *const c_char,
    /// put_and_unlock, unlock: with `has_ttl`, the item's TTL restarts from now:
    /// 1..=4294967295 seconds or TENURE_INFINITE (never expires).
    pub has_ttl: bool,
    pub ttl_seconds: i64,
}

/// A lease request: tenure_store_acquire_lease and tenure_store_acquire_container_lease
/// (`duration_seconds` required; `proposed_id`, `holder`, `timeout_ms` optional),
/// tenure_store_break_lease and tenure_store_break_container_lease (`has_break_period`).
/// Declare it with `tenure_lease_options options = TENURE_LEASE_OPTIONS_INIT;`. Fields a call
/// does not use must stay 0.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_lease_options {
    /// `sizeof(tenure_lease_options)`; TENURE_LEASE_OPTIONS_INIT sets it.
    pub struct_size: u32,
    /// Acquire: 15..=60 seconds or TENURE_INFINITE.
    pub duration_seconds: i64,
    /// Acquire: the lease id to use (a UUID); NULL = a generated one.
    pub proposed_id: *const c_char,
    /// Acquire: a label lease info reports (NUL-terminated UTF-8, at most
    /// TENURE_LEASE_HOLDER_MAX bytes); NULL = none.
    pub holder: *const c_char,
    /// Acquire of an item's lease: wait up to this long (at most 24 h) for it to be free;
    /// 0 = never wait.
    pub timeout_ms: u64,
    /// Break: with `has_break_period`, 0..=60 seconds; without, the default (docs/spec.md §4).
    pub has_break_period: bool,
    pub break_period_seconds: i64,
}

/// How a store is opened: tenure_store_open_with. Declare it with
/// `tenure_open_options options = TENURE_OPEN_OPTIONS_INIT;` (NULL options = the defaults).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tenure_open_options {
    /// `sizeof(tenure_open_options)`; TENURE_OPEN_OPTIONS_INIT sets it.
    pub struct_size: u32,
    /// 0 = sync (every write durable when it returns), 1 = buffered.
    pub durability: u32,
    /// 0 = the default (64 MiB). Fixed when the store is created.
    pub segment_size_bytes: u64,
    /// The change feed keeps at least the last this many versions from compaction; 0 = no
    /// such bound.
    pub change_feed_retention_versions: u64,
    /// The change feed keeps at least the history within this many bytes of the log's tail;
    /// 0 = no such bound.
    pub change_feed_retention_bytes: u64,
    /// 1 = no background compaction thread, which also takes checkpoints (0 = the default:
    /// one).
    pub disable_background_compaction: u32,
    /// 1 = open for reading only (docs/spec.md §1): beside a process that has the store open,
    /// or on files this process cannot write. No lock, nothing written; every write fails
    /// with TENURE_ERR_READ_ONLY. Beside a writer, each call sees every write committed before
    /// it started. 0 = read and write.
    pub read_only: u32,
    /// The most bytes the store's segment files may take on disk: a write that needs more
    /// fails with TENURE_ERR_STORAGE_FULL, as on a full disk. 0 = no quota.
    pub quota_bytes: u64,
    /// Bytes of free disk that writes which add data leave for deletes and compaction
    /// (docs/spec.md §11). 0 = the default: two segments, at least 8 MiB.
    pub space_reserve_bytes: u64,
}

/// The size of `tenure_open_options` before `quota_bytes` and `space_reserve_bytes`: a program
/// built with that header still opens stores (the fields it lacks read as 0).
pub(crate) const OPEN_OPTIONS_FIRST_SIZE: usize = 40;

/// The longest options struct the library accepts, so a garbage `struct_size` is refused
/// before any byte past the known struct is read.
const MAX_STRUCT_SIZE: u32 = 4096;

/// A copy of the caller's options struct, checked: NULL is `None`.
///
/// # Safety
/// `options` is NULL or points to a struct of `struct_size` readable bytes whose first field
/// is that `uint32_t struct_size`.
pub(crate) unsafe fn options_in<T: Copy>(
    argument: &'static str,
    initialiser: &'static str,
    options: *const T,
) -> Result<Option<T>, Fail> {
    // SAFETY: the caller's contract.
    unsafe { options_in_since(argument, initialiser, options, std::mem::size_of::<T>()) }
}

/// `options_in` for a struct that grew: a `struct_size` from `oldest_size` (the first
/// published size) up to this library's is accepted too, the fields past it read as zero.
///
/// # Safety
/// As `options_in`; `T` is a plain C struct for which all-zero bytes are a valid value.
pub(crate) unsafe fn options_in_since<T: Copy>(
    argument: &'static str,
    initialiser: &'static str,
    options: *const T,
    oldest_size: usize,
) -> Result<Option<T>, Fail> {
    if options.is_null() {
        return Ok(None);
    }
    let known = std::mem::size_of::<T>();
    debug_assert!(oldest_size <= known);
    // SAFETY: non-NULL; every options struct starts with its u32 size.
    let declared = unsafe { options.cast::<u32>().read_unaligned() };
    if declared == 0 {
        return Err(size_refused(
            argument,
            format!("has struct_size 0: declare it with {initialiser}"),
        ));
    }
    if (oldest_size..known).contains(&(declared as usize)) {
        let mut copy = std::mem::MaybeUninit::<T>::zeroed();
        // SAFETY: `declared` readable bytes (the caller's contract), fewer than T's; all-zero
        // is a valid T, so the copy is one with its newer fields zero.
        unsafe {
            std::ptr::copy_nonoverlapping(
                options.cast::<u8>(),
                copy.as_mut_ptr().cast::<u8>(),
                declared as usize,
            );
            return Ok(Some(copy.assume_init()));
        }
    }
    if (declared as usize) < known || declared > MAX_STRUCT_SIZE {
        return Err(size_refused(
            argument,
            format!(
                "has struct_size {declared}, not the {known} bytes of this library's struct: \
                 declare it with {initialiser}"
            ),
        ));
    }
    // SAFETY: the caller vouches for `declared` bytes; only those past `known` are read here.
    let newer = unsafe {
        std::slice::from_raw_parts(options.cast::<u8>().add(known), declared as usize - known)
    };
    if newer.iter().any(|byte| *byte != 0) {
        return Err(size_refused(
            argument,
            format!(
                "sets fields this library does not know (struct_size {declared}, known {known}): \
                 link a newer libtenure"
            ),
        ));
    }
    // SAFETY: at least `known` readable bytes, a plain C struct.
    Ok(Some(unsafe { options.read_unaligned() }))
}

#[cold]
fn size_refused(argument: &'static str, reason: String) -> Fail {
    invalid(argument, reason)
}

/// Fails when a field the call does not use is set (a caller mixing up calls).
pub(crate) fn unused(argument: &'static str, set: bool, call: &str) -> Result<(), Fail> {
    if set {
        return Err(invalid(
            argument,
            format!("does not apply to {call}: leave it 0"),
        ));
    }
    Ok(())
}

/// A TTL of the new options structs: 1..=4294967295 seconds or TENURE_INFINITE.
pub(crate) fn ttl_seconds(argument: &'static str, seconds: i64) -> Result<Ttl, Fail> {
    Ttl::from_signed_seconds(seconds).map_err(|_| {
        invalid(
            argument,
            format!("must be 1..=4294967295 seconds or TENURE_INFINITE (-1), not {seconds}"),
        )
    })
}

/// Writes a typed ETag output when the caller asked for one (NULL = not wanted).
///
/// # Safety
/// `target` is NULL or points to a `tenure_etag`.
pub(crate) unsafe fn etag_out(etag: tenure::ETag, target: *mut tenure_etag) {
    if !target.is_null() {
        // SAFETY: non-NULL; the caller's contract.
        unsafe {
            target.write(tenure_etag {
                text: etag_text(etag),
            })
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// A field appended to a struct that ended in padding could land inside the size an older
    /// library knows, and be ignored; none of them does.
    #[test]
    fn no_options_struct_ends_in_padding() {
        let ends = [
            (
                size_of::<tenure_read_options>(),
                offset_of!(tenure_read_options, conditions) + size_of::<usize>(),
            ),
            (
                size_of::<tenure_write_options>(),
                offset_of!(tenure_write_options, metadata_count) + size_of::<usize>(),
            ),
            (
                size_of::<tenure_list_options>(),
                offset_of!(tenure_list_options, continuation) + size_of::<usize>(),
            ),
            (
                size_of::<tenure_lock_options>(),
                offset_of!(tenure_lock_options, ttl_seconds) + size_of::<i64>(),
            ),
            (
                size_of::<tenure_lease_options>(),
                offset_of!(tenure_lease_options, break_period_seconds) + size_of::<i64>(),
            ),
            (
                size_of::<tenure_open_options>(),
                offset_of!(tenure_open_options, space_reserve_bytes) + size_of::<u64>(),
            ),
        ];
        for (index, (size, end)) in ends.into_iter().enumerate() {
            assert_eq!(size, end, "options struct {index}");
        }
        assert_eq!(
            OPEN_OPTIONS_FIRST_SIZE,
            offset_of!(tenure_open_options, read_only) + size_of::<u32>()
        );
    }
}
