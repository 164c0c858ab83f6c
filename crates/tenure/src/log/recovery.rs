//! Opening the log: superblock, segment discovery, the recovery scan and the torn-tail rule.
//!
//! Scan rules (docs/design.md, "Recovery"): records are read in log order from the first
//! segment. A record is good when its checksum holds, its version is the one expected next,
//! and its generation is neither newer than the superblock's nor older than the record before
//! it. The first bad record ends the log: before the durable watermark that is `Corruption`
//! naming file and offset; at or past it the tail is torn and is cut off there.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use portable_atomic::AtomicU128;

use super::anchor::{describes, LogAnchor};
use super::completion::{pack, CompletionTracker};
use super::core::SpacePolicy;
use super::core::{
    Durability, LogOptions, LogShared, SuperblockState, COMPLETION_SLOTS,
    MAXIMUM_SEGMENT_SIZE_BYTES, MINIMUM_SEGMENT_SIZE_BYTES,
};
use super::flush::sync_superblock_copy;
use super::group_commit::FlushState;
use super::record::{self, RecordKind};
use super::ring::{IoUringUse, SyncRing};
use super::segment::{Segment, SegmentTable};
use super::superblock::{self, ReadOutcome, Superblock, SUPERBLOCK_BYTES, SUPERBLOCK_FILE};
use crate::error::{Error, Result};
use crate::storage::{Mapping, Storage};
use crate::types::Version;

/// One record found by the recovery scan.
pub struct RecoveredRecord<'a> {
    pub version: Version,
    /// Global offset, as `Reservation::location` gave it.
    pub location: u64,
    /// A record past a persisted index's tail, to replay onto that index once it is loaded
    /// (`scan_or_verify`); otherwise the scan replays every record into a new index.
    pub onto_persisted_index: bool,
    pub payload: &'a [u8],
    /// The records replayed before this one, read back by offset (`RecordBytes`).
    pub(crate) earlier: EarlierRecords<'a>,
}

/// Reads bytes of records the recovery scan has passed, while the log is not open yet.
pub(crate) struct EarlierRecords<'a> {
    table: &'a SegmentTable,
    slot_size: u64,
    guard: &'a crossbeam_epoch::Guard,
    directory: &'a std::path::Path,
}

impl<'a> EarlierRecords<'a> {
    /// The segment holding global offset `offset`, and the offset inside it.
    fn locate(&self, offset: u64) -> Option<(&'a Segment, u64)> {
        let segment = self.table.get(offset / self.slot_size, self.guard)?;
        Some((segment, offset - segment.first_slot * self.slot_size))
    }
}

impl<'a> super::reader::RecordBytes<'a> for EarlierRecords<'a> {
    fn bytes_from(&mut self, offset: u64) -> Result<&'a [u8]> {
        let (segment, local) = self
            .locate(offset)
            .ok_or_else(|| self.corruption(offset, "no segment holds this log offset"))?;
        if local >= segment.length() {
            return Err(self.corruption(offset, "past the end of its segment"));
        }
        // SAFETY: inside the mapping, which lives while the scan's guard does.
        Ok(unsafe { segment.bytes_from(local) })
    }

    fn corruption(&mut self, offset: u64, reason: &str) -> Error {
        match self.locate(offset) {
            Some((segment, local)) => {
                Error::corruption(self.directory.join(&segment.name), local, reason)
            }
            None => Error::corruption(self.directory, offset, reason),
        }
    }
}

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
    // watermark is true.
    for segment in table.all() {
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
    sync_superblock_copy(
        storage.as_ref(),
        superblock_file.as_ref(),
        &mut superblock_state,
    )?;
    storage
        .sync_directory()
        .map_err(|error| Error::io(&directory, "fsync directory", error))?;

    Ok((
        shared_state(
            storage,
            options,
            (superblock_file, superblock_state),
            (table, scan),
            lock,
            false,
        ),
        anchored,
    ))
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
    let shared = shared_state(
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
    );
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
        read_only,
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

/// The log scanned, and whether `anchor` (a persisted index's) describes a prefix of it: then
/// the scan verifies every record (checksum, version, generation: the same checks and the
/// same `Corruption` as ever), hands none below the anchor's tail to `replay`, and hands the
/// ones after it with `onto_persisted_index` set, for the caller to replay onto the index it
/// loads. When the anchor does not describe the store as the superblock and the files show
/// it, or the scan does not reach its tail at a record boundary with its next version and
/// version index, the log is scanned again and every record replayed.
fn scan_or_verify(
    anchor: Option<&LogAnchor>,
    table: &SegmentTable,
    superblock: &Superblock,
    directory: &std::path::Path,
    replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
) -> Result<(ScanResult, bool)> {
    let slot_size = superblock.segment_size_bytes;
    if let Some(anchor) = anchor.filter(|anchor| describes(anchor, superblock, table)) {
        let verified = scan(
            table,
            slot_size,
            superblock,
            directory,
            Some(anchor),
            replay,
        )?;
        if verified.reached_anchor {
            return Ok((verified, true));
        }
    }
    Ok((
        scan(table, slot_size, superblock, directory, None, replay)?,
        false,
    ))
}

struct ScanResult {
    tail: u64,
    next_version: Version,
    version_index: Vec<(Version, u64)>,
    /// The scan was given an anchor and met it: at its tail, a record boundary, with its
    /// next version and version index. (A scan that does not meet it stops there.)
    reached_anchor: bool,
}

/// Scans the log from the first slot, handing records to `replay`: every one without an
/// `anchor`; with one, only those past the anchor's tail, once the scan has met it there.
fn scan(
    table: &SegmentTable,
    slot_size: u64,
    superblock: &Superblock,
    directory: &std::path::Path,
    anchor: Option<&LogAnchor>,
    replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
) -> Result<ScanResult> {
    let watermark = superblock.durable_watermark;
    let current_generation = superblock.generation as u32;
    let mut position = superblock.first_slot * slot_size;
    let mut expected_version: Option<Version> = None;
    let mut previous_generation = 0u32;
    let mut version_index = Vec::new();
    // Without an anchor every record is replayed from the start.
    let mut past_anchor = anchor.is_none();
    let guard = crossbeam_epoch::pin();
    loop {
        if let Some(anchor) = anchor.filter(|_| !past_anchor) {
            if position >= anchor.tail {
                let met = position == anchor.tail
                    && expected_version.unwrap_or(1) == anchor.next_version
                    && version_index == anchor.version_index;
                if !met {
                    return Ok(ScanResult {
                        tail: position,
                        next_version: expected_version.unwrap_or(1),
                        version_index,
                        reached_anchor: false,
                    });
                }
                past_anchor = true;
            }
        }
        let Some(segment) = table.get(position / slot_size, &guard) else {
            // Segments past a missing one would be taken for stale and removed: refuse instead.
            let later_segment = table
                .all()
                .iter()
                .any(|segment| segment.first_slot * slot_size > position);
            if position < watermark || later_segment {
                return Err(Error::corruption(
                    directory.join(Segment::file_name(position / slot_size)),
                    0,
                    if position < watermark {
                        format!("the log ends at offset {position}, before the durable watermark {watermark}")
                    } else {
                        format!("the segment for log offset {position} is missing, and later segments exist")
                    },
                ));
            }
            break;
        };
        let segment_start = segment.first_slot * slot_size;
        let segment_end = segment_start + segment.length();
        let local = position - segment_start;
        if segment_end - position < record::HEADER_BYTES as u64 {
            position = segment_end;
            continue;
        }
        // SAFETY: no appender exists yet; the scan is the only user of the mapping.
        let bytes = unsafe { segment.bytes_from(local) };
        let verdict = record::decode(bytes).and_then(|(header, payload)| {
            if header.generation > current_generation || header.generation < previous_generation {
                return Err("record generation out of order (stale bytes past an earlier cut)");
            }
            if expected_version.is_some_and(|expected| header.version != expected) {
                return Err("record version out of sequence");
            }
            Ok((header, payload))
        });
        match verdict {
            Ok((header, payload)) => {
                previous_generation = header.generation;
                match header.kind {
                    RecordKind::SegmentEnd => {
                        expected_version = Some(header.version);
                        position = segment_end;
                    }
                    RecordKind::Abort | RecordKind::Data => {
                        if header.version % super::core::VERSION_INDEX_STRIDE == 0 {
                            version_index.push((header.version, position));
                        }
                        if header.kind == RecordKind::Data && past_anchor {
                            replay(RecoveredRecord {
                                version: header.version,
                                location: position,
                                onto_persisted_index: anchor.is_some(),
                                payload,
                                earlier: EarlierRecords {
                                    table,
                                    slot_size,
                                    guard: &guard,
                                    directory,
                                },
                            })?;
                        }
                        expected_version = Some(header.version + 1);
                        position += record::record_size(header.payload_length as u64);
                    }
                }
            }
            Err(reason) => {
                if position < watermark {
                    return Err(Error::corruption(
                        directory.join(&segment.name),
                        local,
                        reason,
                    ));
                }
                break;
            }
        }
    }
    Ok(ScanResult {
        tail: position,
        next_version: expected_version.unwrap_or(1),
        version_index,
        reached_anchor: anchor.is_some() && past_anchor,
    })
}
