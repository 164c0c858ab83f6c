//! Store handles: open, close, free, flush, version.

use crate::options::{options_in_since, tenure_open_options, OPEN_OPTIONS_FIRST_SIZE};
use crate::prelude::*;

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

#[inline]
pub(crate) fn store_of(
    argument: &'static str,
    handle: *const tenure_store,
) -> Result<handles::StoreHold, Fail> {
    handles::store(argument, handle as usize)
}

/// # Safety
/// The usual argument contracts.
pub(crate) unsafe fn item_target<'a>(
    store: *const tenure_store,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
) -> Result<(handles::StoreHold, &'a str, &'a [u8]), Fail> {
    let store = store_of("store", store)?;
    // SAFETY: the caller's contract.
    let (container, key) =
        unsafe { (text("container", container)?, key(key_pointer, key_length)?) };
    Ok((store, container, key))
}

/// Opens (creating if needed) the store in directory `path`, or the store that an
/// `etcd://host:port[,host:port...]/prefix` URL names on an etcd cluster (docs/etcd.md). On a
/// cluster, a call that gets no answer from a quorum in time fails with TENURE_ERR_UNAVAILABLE.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_open(
    path: *const c_char,
    options: *const tenure_store_options,
    store_out: *mut *mut tenure_store,
) -> tenure_status {
    guard(|| {
        let store_options = || {
            let mut store_options = StoreOptions::default();
            // SAFETY: NULL or a valid struct.
            if let Some(options) = unsafe { options.as_ref() } {
                store_options.durability = durability(options.durability)?;
                if options.segment_size_bytes != 0 {
                    store_options.segment_size_bytes = options.segment_size_bytes;
                }
                if options.disable_background_compaction {
                    store_options.background_compaction_interval = None;
                }
            }
            Ok(store_options)
        };
        // SAFETY: the caller's contract.
        unsafe { open_store(path, store_out, store_options) }
    })
}

/// Opens (creating if needed, unless read-only) the store in directory `path` (or at an
/// `etcd://` URL, as `tenure_store_open`) with `options` (NULL = the defaults). With `options->read_only`, the store must exist: it is
/// opened beside any process that holds it, and every write through the handle fails with
/// TENURE_ERR_READ_ONLY.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_open_with(
    path: *const c_char,
    options: *const tenure_open_options,
    store_out: *mut *mut tenure_store,
) -> tenure_status {
    guard(|| {
        let store_options = || {
            // SAFETY: NULL or a struct of its declared size.
            let options = unsafe {
                options_in_since(
                    "options",
                    "TENURE_OPEN_OPTIONS_INIT",
                    options,
                    OPEN_OPTIONS_FIRST_SIZE,
                )
            }?;
            match options {
                Some(options) => open_options(&options),
                None => Ok(StoreOptions::default()),
            }
        };
        // SAFETY: the caller's contract.
        unsafe { open_store(path, store_out, store_options) }
    })
}

/// What both opens share: the path and the out-param checked first (in that order), then
/// the options read, the store opened and its handle written to `store_out` on success.
///
/// # Safety
/// `path` NULL or NUL-terminated; `store_out` NULL or writable.
unsafe fn open_store(
    path: *const c_char,
    store_out: *mut *mut tenure_store,
    store_options: impl FnOnce() -> Result<StoreOptions, Fail>,
) -> Result<(), Fail> {
    // SAFETY: documented contract: NUL-terminated.
    let path = unsafe { text("path", path) }?;
    out("store_out", store_out)?;
    if path.is_empty() {
        return Err(invalid("path", "is empty"));
    }
    let store = tenure_etcd::open_location(path, store_options()?)?;
    let handle = handles::register(Object::Store(Some(Arc::new(store))))?;
    // SAFETY: checked non-NULL.
    unsafe { *store_out = handle as *mut tenure_store };
    Ok(())
}

/// `options.durability` of either open: 0 = sync, 1 = buffered.
fn durability(value: u32) -> Result<Durability, Fail> {
    match value {
        0 => Ok(Durability::Sync),
        1 => Ok(Durability::Buffered),
        other => Err(invalid(
            "options.durability",
            format!("must be 0 (sync) or 1 (buffered), not {other}"),
        )),
    }
}

/// The engine's options for `options`, each field checked.
fn open_options(options: &tenure_open_options) -> Result<StoreOptions, Fail> {
    let flag = |argument: &'static str, value: u32| match value {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(invalid(argument, format!("must be 0 or 1, not {other}"))),
    };
    let mut store_options = StoreOptions {
        durability: durability(options.durability)?,
        read_only: flag("options.read_only", options.read_only)?,
        change_feed_retention_versions: (options.change_feed_retention_versions != 0)
            .then_some(options.change_feed_retention_versions),
        change_feed_retention_bytes: (options.change_feed_retention_bytes != 0)
            .then_some(options.change_feed_retention_bytes),
        quota_bytes: (options.quota_bytes != 0).then_some(options.quota_bytes),
        space_reserve_bytes: (options.space_reserve_bytes != 0)
            .then_some(options.space_reserve_bytes),
        ..StoreOptions::default()
    };
    if options.segment_size_bytes != 0 {
        store_options.segment_size_bytes = options.segment_size_bytes;
    }
    if flag(
        "options.disable_background_compaction",
        options.disable_background_compaction,
    )? {
        store_options.background_compaction_interval = None;
    }
    Ok(store_options)
}

/// Flushes and closes the store. The handle stays allocated (free it with tenure_store_free);
/// every later use of it fails with InvalidArgument. Snapshots, batches and cursors still open
/// keep the engine alive until they are freed; close then only flushes.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_close(store: *mut tenure_store) -> tenure_status {
    guard(|| {
        let taken = handles::close_store("store", store as usize)?;
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
        handles::release("store", store as usize, Kind::Store)?;
        Ok(())
    })
}

/// Makes every acknowledged write durable.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_flush(store: *mut tenure_store) -> tenure_status {
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

/// Saves the index now, synced, so that an open after a crash loads it and replays only the
/// log written after this call (the background thread also takes one as the log grows;
/// docs/design.md §3 "The persisted index"). Readers and writers keep going. `*saved_out`
/// receives whether it saved one (false on a read-only store or an etcd cluster, or when a
/// batch was still settling: call again).
#[no_mangle]
pub unsafe extern "C" fn tenure_store_checkpoint(
    store: *mut tenure_store,
    saved_out: *mut bool,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("saved_out", saved_out)?;
        let saved = store.checkpoint()?;
        // SAFETY: checked non-NULL.
        unsafe { *saved_out = saved };
        Ok(())
    })
}

/// What tenure_store_compact did.
#[repr(C)]
pub struct tenure_compaction_report {
    pub segments_removed: u64,
    pub bytes_removed: u64,
    pub items_relocated: u64,
    pub containers_relocated: u64,
    /// A snapshot older than the compaction is open: segments were rewritten but not yet
    /// removed (a later compaction removes them).
    pub deferred_by_snapshot: bool,
    /// The change feed's retention kept the oldest segment.
    pub retained_for_change_feed: bool,
    /// Writes kept racing the copy of an item of the oldest segment: it stays until a later
    /// compaction.
    pub deferred_by_writes: bool,
}

/// Compacts now: rewrites and removes every sealed log segment (docs/spec.md §11). Readers and writers
/// keep going meanwhile. `report_out` receives what was done.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_compact(
    store: *mut tenure_store,
    report_out: *mut tenure_compaction_report,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("report_out", report_out)?;
        let report = store.compact()?;
        // SAFETY: checked non-NULL.
        unsafe {
            *report_out = tenure_compaction_report {
                segments_removed: report.segments_removed as u64,
                bytes_removed: report.bytes_removed,
                items_relocated: report.items_relocated,
                containers_relocated: report.containers_relocated,
                deferred_by_snapshot: report.deferred_by_snapshot,
                retained_for_change_feed: report.retained_for_change_feed,
                deferred_by_writes: report.deferred_by_writes,
            }
        };
        Ok(())
    })
}
