//! Opening the log: superblock, segment discovery, and what follows the recovery scan
//! (`scan.rs`): the torn tail cut off, stale segments removed, the new generation.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use portable_atomic::AtomicU128;

use super::anchor::LogAnchor;
use super::completion::{pack, CompletionTracker};
use super::core::SpacePolicy;
use super::core::{
    Durability, LogOptions, LogShared, SuperblockState, COMPLETION_SLOTS,
    MAXIMUM_SEGMENT_SIZE_BYTES, MINIMUM_SEGMENT_SIZE_BYTES,
};
use super::flush::sync_superblock_copy;
use super::group_commit::FlushState;
use super::ring::{IoUringUse, SyncRing};
use super::scan::{scan_or_verify, RecoveredRecord, ScanResult};
use super::segment::{Segment, SegmentTable};
use super::superblock::{self, ReadOutcome, Superblock, SUPERBLOCK_BYTES, SUPERBLOCK_FILE};
use crate::error::{Error, Result};
use crate::storage::{Mapping, Storage};

pub(super) fn create_segment(
    storage: &dyn Storage,
    first_slot: u64,
    slot_count: u64,
    slot_size: u64,
    durability: Durability,
    permit: &dyn Fn(u64) -> bool,
    allocate_ahead: bool,
) -> Result<Segment> {
    let name = Segment::file_name(first_slot);
    let path = storage.path().join(&name);
    let file = storage
        .open(&name, true)
        .map_err(|error| Error::io(&path, "create", error))?;
    let length = slot_count * slot_size;
    // Full length, allocated as appends reach it (`Segment::ensure_allocated`).
    file.grow_sparse(length)
        .map_err(|error| Error::io(&path, "allocate", error))?;
    storage
        .sync_directory()
        .map_err(|error| Error::io(storage.path(), "fsync directory", error))?;
    let mapping = file
        .map(length as usize)
        .map_err(|error| Error::io(&path, "mmap", error))?;
    prepare_for_appends(&mapping, durability);
    let segment = Segment::new(first_slot, slot_count, name, file, mapping);
    // A segment of several slots holds one record, written at once: all of it now. Otherwise
    // the lead, so the appender that rolls over finds it ready (the preparer faults it in:
    // `Segment::fault_in_next_step`) — if the space policy allows, and unless compaction is
    // writing (`allocate_ahead`: its copies allocate no lead); otherwise the appender's space
    // check (`LogShared::make_room`) allocates what it needs or refuses the write.
    let allocated = match (slot_count > 1, allocate_ahead) {
        (true, _) => segment.allocate_to(length, permit),
        (false, true) => segment.allocate_to(1, permit),
        (false, false) => Ok(()),
    };
    match allocated {
        Ok(()) => {}
        Err(error) if slot_count == 1 && super::segment::is_out_of_space(&error) => {}
        Err(error) => return Err(Error::io(&path, "allocate", error)),
    }
    Ok(segment)
}

/// How a segment that receives appends is mapped: in `sync` stores without read-ahead
/// (`Mapping::advise_no_read_ahead`), in `buffered` ones with huge pages (`advise_for_reads`).
/// (Both modes fault pages in ahead of the tail: `Segment::prefault_ahead`.)
fn prepare_for_appends(mapping: &Mapping, durability: Durability) {
    match durability {
        Durability::Sync => mapping.advise_no_read_ahead(),
        Durability::Buffered => mapping.advise_huge_pages(),
    }
}

/// How a segment is mapped for its reads: with huge pages in `buffered` stores
/// (`Mapping::advise_huge_pages`). A `sync` store's tail wants small folios, and its other
/// segments were written in them.
fn advise_for_reads(mapping: &Mapping, durability: Durability) {
    if durability == Durability::Buffered {
        mapping.advise_huge_pages();
    }
}

fn open_segment(
    storage: &dyn Storage,
    name: &str,
    first_slot: u64,
    slot_size: u64,
    durability: Durability,
) -> Result<Segment> {
    let path = storage.path().join(name);
    let file = storage
        .open(name, false)
        .map_err(|error| Error::io(&path, "open", error))?;
    let length = file
        .length()
        .map_err(|error| Error::io(&path, "stat", error))?;
    if length == 0 || length % slot_size != 0 || length > MAXIMUM_SEGMENT_SIZE_BYTES {
        return Err(Error::corruption(
            &path,
            0,
            format!("segment length {length} is not a positive multiple of the segment size {slot_size}"),
        ));
    }
    let mapping = file
        .map(length as usize)
        .map_err(|error| Error::io(&path, "mmap", error))?;
    advise_for_reads(&mapping, durability);
    // How much was allocated is not recorded: the first append allocates from the start again
    // (a no-op for the part that is), and sealed segments take no appends.
    Ok(Segment::new(
        first_slot,
        length / slot_size,
        name.to_owned(),
        file,
        mapping,
    ))
}

fn validate_options(options: &LogOptions) -> Result<()> {
    let size = options.segment_size_bytes;
    if !(MINIMUM_SEGMENT_SIZE_BYTES..=MAXIMUM_SEGMENT_SIZE_BYTES).contains(&size)
        || size % 4096 != 0
    {
        return Err(Error::invalid(
            "segment_size_bytes",
            format!(
                "must be a multiple of 4096 between {MINIMUM_SEGMENT_SIZE_BYTES} and {MAXIMUM_SEGMENT_SIZE_BYTES}, got {size}"
            ),
        ));
    }
    Ok(())
}

/// The superblock file, the newest valid superblock, and the copy it was read from.
fn load_superblock(
    storage: &dyn Storage,
    names: &[String],
    options: &LogOptions,
) -> Result<(Arc<dyn crate::storage::StorageFile>, Superblock, usize)> {
    let path = storage.path().join(SUPERBLOCK_FILE);
    let exists = names.iter().any(|name| name == SUPERBLOCK_FILE);
    let has_segments = names
        .iter()
        .any(|name| Segment::parse_file_name(name).is_some());
    if !exists && has_segments {
        return Err(Error::corruption(
            &path,
            0,
            "the superblock is missing but segment files exist",
        ));
    }
    let file = storage
        .open(SUPERBLOCK_FILE, true)
        .map_err(|error| Error::io(&path, "open", error))?;
    // A creation that failed or lost power before its superblock reached the disk leaves a
    // superblock file with no valid copy and no segments: no record was ever written, so it
    // is created afresh rather than refused as corrupt forever.
    let unfinished_creation = || {
        !has_segments
            && matches!(
                superblock::read(file.as_ref()),
                Ok(ReadOutcome::Unreadable) | Err(_)
            )
    };
    if !exists
        || file
            .length()
            .map_err(|error| Error::io(&path, "stat", error))?
            == 0
        || unfinished_creation()
    {
        let fresh = Superblock {
            segment_size_bytes: options.segment_size_bytes,
            generation: 0,
            sequence: 0,
            durable_watermark: 0,
            first_slot: 0,
        };
        file.allocate(0, SUPERBLOCK_BYTES)
            .map_err(|error| Error::io(&path, "allocate", error))?;
        superblock::write(file.as_ref(), &fresh, 0)
            .map_err(|error| Error::io(&path, "write", error))?;
        file.sync_data()
            .map_err(|error| Error::io(&path, "fdatasync", error))?;
        storage
            .sync_directory()
            .map_err(|error| Error::io(storage.path(), "fsync directory", error))?;
        return Ok((file, fresh, 0));
    }
    match superblock::read(file.as_ref()).map_err(|error| Error::io(&path, "read", error))? {
        ReadOutcome::Valid(found, copy) => {
            let size = found.segment_size_bytes;
            if !(MINIMUM_SEGMENT_SIZE_BYTES..=MAXIMUM_SEGMENT_SIZE_BYTES).contains(&size) || size % 4096 != 0 {
                return Err(Error::corruption(&path, 16, format!("implausible segment size {size}")));
            }
            Ok((file, found, copy))
        }
        ReadOutcome::UnsupportedFormat(format) => Err(Error::corruption(
            &path,
            8,
            format!(
                "on-disk format version {format} is not supported by this build (it reads versions {} to {})",
                superblock::OLDEST_READABLE_FORMAT_VERSION,
                superblock::FORMAT_VERSION
            ),
        )),
        ReadOutcome::Unreadable => Err(Error::corruption(&path, 0, "neither superblock copy has a valid checksum")),
    }
}

pub(super) fn open(
    storage: Arc<dyn Storage>,
    options: &LogOptions,
    anchor: Option<&LogAnchor>,
    replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
) -> Result<(LogShared, bool)> {
    validate_options(options)?;
    let directory = storage.path().to_path_buf();
    storage
        .create_directory()
        .map_err(|error| Error::io(&directory, "create directory", error))?;
    let lock = storage
        .try_lock()
        .map_err(|error| Error::io(directory.join("LOCK"), "flock", error))?
        .ok_or_else(|| Error::StoreLocked {
            path: directory.clone(),
        })?;
    let names = storage
        .list()
        .map_err(|error| Error::io(&directory, "list", error))?;
    let (superblock_file, mut superblock, loaded_copy) =
        load_superblock(storage.as_ref(), &names, options)?;
    if superblock_file.descriptor().is_some() {
        // Without it read-only opens cannot follow, and are fixed views: nothing is lost.
        let _ = super::readers::create(&directory);
    }
    let slot_size = superblock.segment_size_bytes;

    let mut segment_slots: Vec<(u64, &String)> = names
        .iter()
        .filter_map(|name| Segment::parse_file_name(name).map(|slot| (slot, name)))
        .collect();
    segment_slots.sort();
    let table = SegmentTable::new();
    let mut stale = Vec::new();
    for (slot, name) in &segment_slots {
        if *slot < superblock.first_slot {
            stale.push((*name).clone());
            continue;
        }
        match open_segment(storage.as_ref(), name, *slot, slot_size, options.durability) {
            Ok(segment) => table.insert(Arc::new(segment)),
            // A crash between creating a segment file and allocating it leaves it short. One
            // that starts at or past the durable watermark cannot hold acknowledged records:
            // it is an unfinished creation, removed like a torn tail.
            Err(Error::Corruption { .. }) if slot * slot_size >= superblock.durable_watermark => {
                stale.push((*name).clone());
            }
            Err(error) => return Err(error),
        }
    }

    let (scan, anchored) = scan_or_verify(anchor, &table, &superblock, &directory, replay)?;
    // The scan read the segments with read-ahead; from now on the last one takes appends.
    if let Some(last) = table.all().last() {
        prepare_for_appends(&last.mapping, options.durability);
    }
    // The records below the tail were written and synced, so their whole pages have space
    // allocated; appends allocate from there (pre-faulting those pages again for writing would
    // only dirty them for another write-back).
    if let Some(tail_segment) = table
        .all()
        .iter()
        .rev()
        .find(|segment| segment.first_slot * slot_size <= scan.tail)
    {
        let tail_in_segment =
            (scan.tail - tail_segment.first_slot * slot_size).min(tail_segment.length());
        tail_segment.assume_allocated(tail_in_segment / 4096 * 4096);
    }

    // Segments that start at or past the tail hold only torn or stale bytes.
    for segment in table.all() {
        if segment.first_slot * slot_size >= scan.tail && scan.tail % slot_size == 0
            || segment.first_slot * slot_size > scan.tail
        {
            stale.push(segment.name.clone());
        }
    }
    let table = if stale.is_empty() {
        table
    } else {
        let kept = SegmentTable::new();
        for segment in table.all() {
            if !stale.contains(&segment.name) {
                kept.insert(segment);
            }
        }
        drop(table);
        for name in &stale {
            match storage.remove(name) {
                // A compaction's deferred removal (slots are never reused) may have won.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                result => {
                    result.map_err(|error| Error::io(directory.join(name), "remove", error))?
                }
            }
        }
        kept
    };
    // Whatever the scan accepted is made durable before anything new is appended, so the new
    // watermark is true. A clean open (the scan accepted nothing past the watermark) has
    // nothing to sync.
    let clean = scan.tail == superblock.durable_watermark;
    for segment in table.all().iter().filter(|_| !clean) {
        if (segment.first_slot + segment.slot_count) * slot_size > superblock.durable_watermark {
            segment
                .file
                .sync_data()
                .map_err(|error| Error::io(directory.join(&segment.name), "fdatasync", error))?;
        }
    }
    superblock.generation += 1;
    superblock.sequence += 1;
    superblock.durable_watermark = scan.tail;
    // The copy just read stays intact until the new generation is synced in the other one.
    let mut superblock_state = SuperblockState {
        current: superblock,
        synced_copy: loaded_copy,
    };
    // The new generation must be in a synced superblock before a record of it is appended.
    // After a clean open that is left to the first reservation, so that an open to read pays
    // no sync; otherwise it happens here.
    if !clean {
        make_generation_durable(
            storage.as_ref(),
            superblock_file.as_ref(),
            &mut superblock_state,
        )?;
    }

    Ok((
        shared_state(
            storage,
            options,
            (superblock_file, superblock_state),
            (table, scan),
            lock,
            false,
            (clean, anchor.filter(|_| anchored).cloned()),
        ),
        anchored,
    ))
}

/// Syncs the superblock with the open's new generation in the copy that was not read, and
/// the directory (the open's removals of stale segments).
pub(super) fn make_generation_durable(
    storage: &dyn Storage,
    superblock_file: &dyn crate::storage::StorageFile,
    state: &mut SuperblockState,
) -> Result<()> {
    sync_superblock_copy(storage, superblock_file, state)?;
    storage
        .sync_directory()
        .map_err(|error| Error::io(storage.path(), "fsync directory", error))
}

/// Opens the log for reading only, beside a process that may have it open for writing: no
/// lock is taken and no file is created, written, synced or removed; segments are opened and
/// mapped read-only. The log is the records its files held at open, up to the first record
/// that is not complete (a writer's append in progress, or a torn tail); a bad record before
/// the durable watermark is still `Corruption`. A segment that a writer's compaction removes
/// between the listing and its open fails with `Io` (not found): the caller opens again.
pub(super) fn open_read_only(
    storage: Arc<dyn Storage>,
    options: &LogOptions,
    anchor: Option<&LogAnchor>,
    replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
) -> Result<(LogShared, bool)> {
    let directory = storage.path().to_path_buf();
    // Claimed before the listing: from here on the writer removes no segment this open has
    // not read (`readers.rs`).
    let claim = super::readers::ReaderSlot::claim(&directory);
    let names = storage
        .list()
        .map_err(|error| Error::io(&directory, "list", error))?;
    if !names.iter().any(|name| name == SUPERBLOCK_FILE) {
        return Err(Error::io(
            directory.join(SUPERBLOCK_FILE),
            "open",
            std::io::Error::new(std::io::ErrorKind::NotFound, "no tenure store here"),
        ));
    }
    let superblock_path = directory.join(SUPERBLOCK_FILE);
    let superblock_file = storage
        .open_read_only(SUPERBLOCK_FILE)
        .map_err(|error| Error::io(&superblock_path, "open", error))?;
    let superblock = match superblock::read(superblock_file.as_ref())
        .map_err(|error| Error::io(&superblock_path, "read", error))?
    {
        ReadOutcome::Valid(found, _) => found,
        ReadOutcome::UnsupportedFormat(format) => {
            return Err(Error::corruption(
                &superblock_path,
                8,
                format!("on-disk format version {format} is not supported by this build"),
            ))
        }
        ReadOutcome::Unreadable => {
            return Err(Error::corruption(
                &superblock_path,
                0,
                "neither superblock copy has a valid checksum",
            ))
        }
    };
    let slot_size = superblock.segment_size_bytes;
    if !(MINIMUM_SEGMENT_SIZE_BYTES..=MAXIMUM_SEGMENT_SIZE_BYTES).contains(&slot_size)
        || slot_size % 4096 != 0
    {
        return Err(Error::corruption(
            &superblock_path,
            16,
            format!("implausible segment size {slot_size}"),
        ));
    }
    let table = SegmentTable::new();
    let mut slots: Vec<(u64, &String)> = names
        .iter()
        .filter_map(|name| Segment::parse_file_name(name).map(|slot| (slot, name)))
        .filter(|(slot, _)| *slot >= superblock.first_slot)
        .collect();
    slots.sort();
    for (slot, name) in slots {
        let path = directory.join(name);
        let file = storage
            .open_read_only(name)
            .map_err(|error| Error::io(&path, "open", error))?;
        let length = file
            .length()
            .map_err(|error| Error::io(&path, "stat", error))?;
        if length == 0 || length % slot_size != 0 {
            // A writer creating the segment right now: nothing in it is acknowledged yet.
            continue;
        }
        let mapping = file
            .map(length as usize)
            .map_err(|error| Error::io(&path, "mmap", error))?;
        table.insert(Arc::new(Segment::new(
            slot,
            length / slot_size,
            name.clone(),
            file,
            mapping,
        )));
    }
    let (scan, anchored) = scan_or_verify(anchor, &table, &superblock, &directory, replay)?;
    let follower = claim.map(|claim| {
        super::core::Follower::start(
            claim,
            (scan.tail, scan.next_version),
            superblock.generation as u32,
        )
    });
    let mut shared = shared_state(
        storage,
        options,
        (
            superblock_file,
            SuperblockState {
                current: superblock,
                synced_copy: 0,
            },
        ),
        (table, scan),
        Box::new(()),
        true,
        (false, anchor.filter(|_| anchored).cloned()),
    );
    shared.follower = follower;
    Ok((shared, anchored))
}

/// The log's shared state over what recovery found.
fn shared_state(
    storage: Arc<dyn Storage>,
    options: &LogOptions,
    (superblock_file, superblock): (Arc<dyn crate::storage::StorageFile>, SuperblockState),
    (segments, scan): (SegmentTable, ScanResult),
    lock: Box<dyn std::any::Any + Send + Sync>,
    read_only: bool,
    (generation_pending, unverified_anchor): (bool, Option<LogAnchor>),
) -> LogShared {
    let last_version = scan.next_version - 1;
    let slot_size = superblock.current.segment_size_bytes;
    let (ring, io_uring_use) = sync_ring(options, read_only, superblock_file.as_ref());
    LogShared {
        storage,
        slot_size,
        generation: superblock.current.generation as u32,
        durability: options.durability,
        reservation: AtomicU128::new(pack(scan.next_version, scan.tail)),
        tail_at_open: scan.tail,
        completion: CompletionTracker::new(COMPLETION_SLOTS, last_version, scan.tail),
        visible: AtomicU64::new(last_version),
        segments,
        segment_creation: Mutex::new(()),
        ready_end: AtomicU64::new(0),
        space_lock: Mutex::new(()),
        space_policy: SpacePolicy {
            reserve_bytes: options
                .space_reserve_bytes
                .unwrap_or_else(|| SpacePolicy::default_reserve_bytes(slot_size)),
            quota_bytes: options.quota_bytes,
        },
        storage_full: AtomicBool::new(false),
        flush: Mutex::new(FlushState::new((last_version, scan.tail))),
        flush_done: Condvar::new(),
        staging: Default::default(),
        ring,
        io_uring_use,
        waiting_writers: std::sync::atomic::AtomicU32::new(0),
        peak_waiting_writers: std::sync::atomic::AtomicU32::new(0),
        sync_in_progress: AtomicBool::new(false),
        poisoned: AtomicBool::new(false),
        generation_pending: AtomicBool::new(generation_pending),
        unverified_anchor: Mutex::new(unverified_anchor),
        read_only,
        follower: None,
        appending_apart: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        prepared_slot: AtomicU64::new(scan.tail / slot_size),
        version_index: Mutex::new(scan.version_index),
        watchers: std::sync::atomic::AtomicUsize::new(0),
        watch_lock: Mutex::new(()),
        watch_changed: Condvar::new(),
        preparer_request: Mutex::default(),
        preparer_wake: Condvar::new(),
        segments_awaiting_removal: Arc::default(),
        superblock_file,
        superblock: Mutex::new(superblock),
        _lock: lock,
    }
}

/// The group commit's ring: only for a writable `sync` store on files with descriptors (the
/// test kit's simulated disk has none), and only if the system grants one.
fn sync_ring(
    options: &LogOptions,
    read_only: bool,
    superblock_file: &dyn crate::storage::StorageFile,
) -> (Option<SyncRing>, IoUringUse) {
    if !options.io_uring
        || read_only
        || options.durability != Durability::Sync
        || superblock_file.descriptor().is_none()
    {
        return (None, IoUringUse::NotUsed);
    }
    match SyncRing::new() {
        Ok(ring) => (Some(ring), IoUringUse::Used),
        Err(reason) => (None, IoUringUse::Refused(reason)),
    }
}
