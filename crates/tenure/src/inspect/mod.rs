//! Looking at a store from the outside (the `tenure` tool's verify, repair and stat).
//!
//! - [`verify`] checks every record of the log — length, checksum, version order, generation,
//!   that its payload decodes and that it applies at replay — without opening the store, so it
//!   works on a store that refuses to open. After a bad record it searches forward for the
//!   next record that checks out, so it reports every problem, not only the first.
//! - [`repair`] salvages: it keeps every record that checks out (also those after a damaged
//!   range), fills the versions of what was lost with `Abort` records so the log stays
//!   consecutive, writes a fresh log beside the old one and swaps it in. The original files are
//!   kept in a `repair-backup-*` directory inside the store.
//! - [`Engine::stats`] counts what an open store holds.
//!
//! `repair` takes the store's lock (a store open elsewhere is `StoreLocked`); `verify` does
//! not, and works on a store a writer holds open: it reads the files as they are at its start
//! (an append in progress past the durable watermark is a torn tail, reported as a note).

mod damage;
mod repair;

use std::path::{Path, PathBuf};

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::index::catalog::Catalog;
use crate::index::Index;
use crate::log::record::{self, RecordHeader, RecordKind, HEADER_BYTES};
use crate::log::segment::Segment;
use crate::log::superblock::{self, ReadOutcome, Superblock, SUPERBLOCK_FILE};
use crate::log::{MAXIMUM_SEGMENT_SIZE_BYTES, MINIMUM_SEGMENT_SIZE_BYTES};
use crate::storage::{FileStorage, Storage};
use crate::types::Version;

pub use damage::{DamagedItem, DamagedRange};
pub use repair::{repair, RecoveredContainer, RepairReport};

/// Progress is reported at least every this many bytes scanned.
const PROGRESS_STEP_BYTES: u64 = 1 << 20;

/// One finding: the file, the byte offset in it, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    pub offset: u64,
    pub reason: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} at offset {}: {}",
            self.file.display(),
            self.offset,
            self.reason
        )
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub segment_size_bytes: u64,
    /// The superblock's generation (opens so far).
    pub generation: u64,
    pub durable_watermark: u64,
    pub first_slot: u64,
    pub segment_files: usize,
    /// Bytes of the segment files the log spans (the scan reads up to `log_end`).
    pub segment_bytes: u64,
    /// Data records that check out and apply.
    pub records: u64,
    pub aborted_records: u64,
    pub first_version: Option<Version>,
    pub last_version: Option<Version>,
    /// Versions missing between good records (lost with damaged records).
    pub versions_lost: u64,
    /// Global log offset where the log ends.
    pub log_end: u64,
    /// Damage: the store refuses to open, or records were lost. Each names file and offset.
    pub problems: Vec<Problem>,
    /// The damaged ranges of the log and the items they held, by container and key where
    /// the records can still be read (`DamagedItem::is_lost`: the damage cost the item its
    /// newest version).
    pub damaged: Vec<DamagedRange>,
    /// Harmless findings: a torn tail the next open cuts off, left-over files.
    pub notes: Vec<Problem>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

struct SegmentFile {
    first_slot: u64,
    path: PathBuf,
    map: memmap2::Mmap,
}

impl SegmentFile {
    fn length(&self) -> u64 {
        self.map.len() as u64
    }
}

struct Loaded {
    directory: PathBuf,
    superblock: Superblock,
    files: Vec<SegmentFile>,
    report: VerifyReport,
    /// Names of every segment file in the directory (repair moves them all).
    segment_names: Vec<String>,
    /// After a scan: a version no lost record can have reached — the next after the last
    /// good one, plus one per 24 bytes (the smallest record) lost after it. Repair continues
    /// the log there, so no version a reader may have seen is handed out again.
    next_version_bound: Version,
    _lock: Box<dyn std::any::Any + Send + Sync>,
}

fn problem(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Problem {
    Problem {
        file: file.into(),
        offset,
        reason: reason.into(),
    }
}

fn plausible_segment_size(size: u64) -> bool {
    (MINIMUM_SEGMENT_SIZE_BYTES..=MAXIMUM_SEGMENT_SIZE_BYTES).contains(&size) && size % 4096 == 0
}

/// Takes the lock, reads the superblock (or infers one) and maps every segment file.
/// `lock`: take the store's lock (repair, which rewrites the store); verify reads a store a
/// writer may hold open without it.
fn load(directory: &Path, lock: bool) -> Result<Loaded> {
    let metadata =
        std::fs::metadata(directory).map_err(|error| Error::io(directory, "stat", error))?;
    if !metadata.is_dir() {
        let error = std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory");
        return Err(Error::io(directory, "open store", error));
    }
    let storage = FileStorage::new(directory);
    let lock: Box<dyn std::any::Any + Send + Sync> = if lock {
        storage
            .try_lock()
            .map_err(|error| Error::io(directory.join("LOCK"), "flock", error))?
            .ok_or_else(|| Error::StoreLocked {
                path: directory.to_path_buf(),
            })?
    } else {
        Box::new(())
    };
    let names = storage
        .list()
        .map_err(|error| Error::io(directory, "list", error))?;
    let mut report = VerifyReport::default();
    let mut segment_names: Vec<(u64, String)> = names
        .iter()
        .filter_map(|name| Segment::parse_file_name(name).map(|slot| (slot, name.clone())))
        .collect();
    segment_names.sort();
    let superblock_path = directory.join(SUPERBLOCK_FILE);
    let found = if names.iter().any(|name| name == SUPERBLOCK_FILE) {
        let file = storage
            .open(SUPERBLOCK_FILE, false)
            .map_err(|error| Error::io(&superblock_path, "open", error))?;
        match superblock::read(file.as_ref())
            .map_err(|error| Error::io(&superblock_path, "read", error))?
        {
            ReadOutcome::Valid(found, _) if plausible_segment_size(found.segment_size_bytes) => {
                Some(found)
            }
            ReadOutcome::Valid(found, _) => {
                let reason = format!("implausible segment size {}", found.segment_size_bytes);
                report.problems.push(problem(&superblock_path, 16, reason));
                None
            }
            ReadOutcome::UnsupportedFormat(format) => {
                return Err(Error::corruption(
                    &superblock_path,
                    8,
                    format!("on-disk format version {format} is not supported by this build"),
                ));
            }
            ReadOutcome::Unreadable => {
                let reason = "neither superblock copy has a valid checksum";
                report.problems.push(problem(&superblock_path, 0, reason));
                None
            }
        }
    } else {
        if segment_names.is_empty() {
            let error = std::io::Error::new(std::io::ErrorKind::NotFound, "no tenure store here");
            return Err(Error::io(directory, "open store", error));
        }
        let reason = "the superblock is missing but segment files exist";
        report.problems.push(problem(&superblock_path, 0, reason));
        None
    };
    let mut files = Vec::new();
    let mut lengths = Vec::new();
    for (slot, name) in &segment_names {
        let path = directory.join(name);
        let length = match std::fs::metadata(&path) {
            Ok(metadata) => metadata.len(),
            // Gone since the listing: a compaction's deferred removal of a segment below the
            // first slot, which can run after its store closed (docs/design.md §9). What is
            // absent is judged as absent, as if it had never been listed.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(Error::io(&path, "stat", error)),
        };
        lengths.push((*slot, path, length));
    }
    let superblock = found.unwrap_or_else(|| {
        // Inferred: the smallest plausible segment file is one slot; nothing is known to be
        // durable, so the log ends at its first bad record, as a torn tail would.
        let segment_size_bytes = lengths
            .iter()
            .map(|(_, _, length)| *length)
            .filter(|length| plausible_segment_size(*length))
            .min()
            .unwrap_or(64 << 20);
        Superblock {
            segment_size_bytes,
            generation: u64::from(u32::MAX),
            sequence: 0,
            durable_watermark: 0,
            first_slot: lengths.first().map_or(0, |(slot, ..)| *slot),
        }
    });
    let slot_size = superblock.segment_size_bytes;
    for (slot, path, length) in lengths {
        if slot < superblock.first_slot {
            let reason = "segment left over from compaction (the next open removes it)";
            report.notes.push(problem(&path, 0, reason));
            continue;
        }
        if length == 0 || length % slot_size != 0 || length > MAXIMUM_SEGMENT_SIZE_BYTES {
            let reason = format!(
                "segment length {length} is not a positive multiple of the segment size {slot_size}"
            );
            report.problems.push(problem(&path, 0, reason));
            continue;
        }
        let file = std::fs::File::open(&path).map_err(|error| Error::io(&path, "open", error))?;
        // SAFETY: the store's lock is held, so no tenure process writes or truncates the file
        // while it is mapped; the map is read-only.
        let map = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|error| Error::io(&path, "mmap", error))?;
        files.push(SegmentFile {
            first_slot: slot,
            path,
            map,
        });
    }
    report.segment_size_bytes = slot_size;
    report.generation = superblock.generation;
    report.durable_watermark = superblock.durable_watermark;
    report.first_slot = superblock.first_slot;
    report.segment_files = segment_names.len();
    Ok(Loaded {
        directory: directory.to_path_buf(),
        superblock,
        files,
        report,
        segment_names: segment_names.into_iter().map(|(_, name)| name).collect(),
        next_version_bound: 1,
        _lock: lock,
    })
}

/// A record that checked out, handed to the scan's visitor.
struct GoodRecord<'a> {
    header: RecordHeader,
    payload: &'a [u8],
    global_offset: u64,
}

/// What the record at the scan's position must continue.
#[derive(Clone, Copy)]
struct Order {
    expected: Option<Version>,
    last_version: Option<Version>,
    previous_generation: u32,
    current_generation: u32,
}

/// Decodes the record at the start of `bytes` and checks that it continues the log.
fn checked(bytes: &[u8], order: Order) -> std::result::Result<(RecordHeader, &[u8]), &'static str> {
    let (header, payload) = record::decode(bytes)?;
    if header.version == Version::MAX {
        // Hostile bytes with a valid checksum: no log reaches this version.
        return Err("record version out of range");
    }
    if header.generation > order.current_generation || header.generation < order.previous_generation
    {
        return Err("record generation out of order (stale bytes past an earlier cut)");
    }
    if order
        .expected
        .is_some_and(|expected| header.version != expected)
        || order
            .last_version
            .is_some_and(|last| header.version <= last)
    {
        return Err("record version out of sequence");
    }
    Ok((header, payload))
}

/// Scans the whole log (see the module comment). `visit` sees every good data or abort
/// record in order and returns `Some(reason)` to drop it (it does not apply).
fn scan(
    loaded: &mut Loaded,
    progress: &mut dyn FnMut(u64, u64),
    visit: &mut dyn FnMut(&GoodRecord<'_>) -> Result<Option<String>>,
) -> Result<()> {
    let superblock = loaded.superblock;
    let slot = superblock.segment_size_bytes;
    let watermark = superblock.durable_watermark;
    let current_generation = u32::try_from(superblock.generation).unwrap_or(u32::MAX);
    let total: u64 = loaded.files.iter().map(SegmentFile::length).sum();
    let report = &mut loaded.report;
    let files = &loaded.files;
    let mut position = superblock.first_slot * slot;
    let mut expected: Option<Version> = None;
    let mut last_version: Option<Version> = None;
    let mut previous_generation = 0u32;
    let mut file_index = 0usize;
    let mut scanned_before = 0u64;
    let mut reported = 0u64;
    let mut lost_bytes_after_last_record = 0u64;
    // The damaged range whose last version the next good record tells.
    let mut open_damage: Option<usize> = None;
    progress(0, total);
    loop {
        while files
            .get(file_index)
            .is_some_and(|file| (file.first_slot * slot) + file.length() <= position)
        {
            scanned_before += files[file_index].length();
            file_index += 1;
        }
        let Some(file) = files.get(file_index) else {
            if position < watermark {
                let missing = loaded.directory.join(Segment::file_name(position / slot));
                let reason = format!(
                    "the log ends at offset {position}, before the durable watermark {watermark}: \
                     segment file missing or damaged"
                );
                report.problems.push(problem(missing, 0, reason));
                lost_bytes_after_last_record += watermark - position;
            }
            break;
        };
        let start = file.first_slot * slot;
        if start > position {
            if position >= watermark {
                let reason = "segment past the end of the log (the next open removes it)";
                report.notes.push(problem(&file.path, 0, reason));
                break;
            }
            let missing = loaded.directory.join(Segment::file_name(position / slot));
            let reason = format!("segment file missing: log offsets {position}..{start} lost");
            report.problems.push(problem(missing, 0, reason));
            lost_bytes_after_last_record += start - position;
            position = start;
            expected = None;
            continue;
        }
        let end = start + file.length();
        let local = position - start;
        if scanned_before + local >= reported + PROGRESS_STEP_BYTES {
            reported = scanned_before + local;
            progress(reported, total);
        }
        if end - position < HEADER_BYTES as u64 {
            position = end;
            continue;
        }
        let bytes = &file.map[local as usize..];
        let order = Order {
            expected,
            last_version,
            previous_generation,
            current_generation,
        };
        match checked(bytes, order) {
            Ok((header, payload)) => {
                previous_generation = header.generation;
                if header.kind == RecordKind::SegmentEnd {
                    expected = Some(header.version);
                    position = end;
                    continue;
                }
                if let Some(last) = last_version {
                    report.versions_lost += header.version - last - 1;
                }
                if let Some(range) = open_damage.take() {
                    let range: &mut DamagedRange = &mut report.damaged[range];
                    range.last_version = header.version.checked_sub(1);
                }
                report.first_version.get_or_insert(header.version);
                last_version = Some(header.version);
                lost_bytes_after_last_record = 0;
                expected = Some(header.version + 1);
                let good = GoodRecord {
                    header,
                    payload,
                    global_offset: position,
                };
                match header.kind {
                    RecordKind::Data => match visit(&good)? {
                        None => report.records += 1,
                        Some(reason) => report.problems.push(problem(&file.path, local, reason)),
                    },
                    _ => report.aborted_records += 1,
                }
                position += record::record_size(u64::from(header.payload_length));
            }
            Err(reason) => {
                if position >= watermark {
                    if bytes[..HEADER_BYTES].iter().any(|byte| *byte != 0) {
                        let reason = format!(
                            "{reason}: a torn tail past the durable watermark {watermark}; \
                             the next open cuts the log here"
                        );
                        report.notes.push(problem(&file.path, local, reason));
                    }
                    break;
                }
                // Damage before the watermark: the length cannot be trusted, so look for the
                // next record that checks out (8-byte aligned, starting before the watermark).
                let limit = end.min(watermark);
                let mut next = position + record::RECORD_ALIGNMENT;
                let mut resumed = None;
                while next < limit && end - next >= HEADER_BYTES as u64 {
                    let candidate = &file.map[(next - start) as usize..];
                    let order = Order {
                        expected: None,
                        ..order
                    };
                    if checked(candidate, order).is_ok() {
                        resumed = Some(next);
                        break;
                    }
                    next += record::RECORD_ALIGNMENT;
                }
                let reason = match resumed {
                    Some(next) => format!(
                        "{reason}; {} bytes skipped to the next good record at offset {}",
                        next - position,
                        next - start
                    ),
                    None => format!(
                        "{reason}; no good record follows in this segment ({} bytes skipped)",
                        end - position
                    ),
                };
                report.problems.push(problem(&file.path, local, reason));
                let damaged_end = resumed.unwrap_or(limit).max(position);
                let mut range = damage::read_range(
                    file.path.clone(),
                    local,
                    &file.map[local as usize..(damaged_end - start) as usize],
                );
                range.first_version = last_version.map(|last| last + 1);
                report.damaged.push(range);
                open_damage = Some(report.damaged.len() - 1);
                lost_bytes_after_last_record += resumed.unwrap_or(limit) - position;
                position = resumed.unwrap_or(end);
                expected = None;
            }
        }
    }
    report.last_version = last_version;
    report.log_end = position;
    let next = last_version
        .map_or(1, |last| last + 1)
        .max(expected.unwrap_or(1));
    loaded.next_version_bound =
        next.saturating_add(lost_bytes_after_last_record.div_ceil(HEADER_BYTES as u64));
    report.segment_bytes = total;
    progress(total, total);
    Ok(())
}

/// Replays records into a scratch index, as an open would; a record that fails is dropped
/// (the index is unchanged by a failed replay).
struct ReplayCheck {
    index: Index,
    catalog: Catalog,
    now: Timestamp,
}

impl ReplayCheck {
    fn new() -> ReplayCheck {
        ReplayCheck {
            index: Index::new(),
            catalog: Catalog::default(),
            now: crate::clock::Clock::now(&crate::clock::SystemClock::new()),
        }
    }

    fn check(&self, record: &GoodRecord<'_>) -> Option<String> {
        crate::index::replay::replay_record(
            crate::index::replay::Applying::AtOpen,
            &self.index,
            &self.catalog,
            self.now,
            record.header.version,
            record.global_offset,
            record.payload,
            &mut crate::index::NoPlainHeads,
        )
        .err()
        .map(|error| match error {
            Error::Corruption { reason, .. } => format!("record does not apply: {reason}"),
            other => format!("record does not apply: {other}"),
        })
    }
}

/// Checks every record of the store in `directory` without opening it, also while another
/// handle holds it open. `progress(done, total)` is called with bytes scanned. Fails only
/// when the store cannot be read at all (missing, unsupported format); damage is reported in
/// the report.
pub fn verify(
    directory: impl AsRef<Path>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    let mut loaded = load(directory.as_ref(), false)?;
    let replay = ReplayCheck::new();
    scan(
        &mut loaded,
        progress,
        &mut |record| Ok(replay.check(record)),
    )?;
    damage::resolve(&mut loaded.report.damaged, &replay.index, &replay.catalog);
    Ok(loaded.report)
}
