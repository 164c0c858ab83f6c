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
//! - [`StoreShared::stats`] counts what an open store holds.
//!
//! Both `verify` and `repair` take the store's lock: a store open elsewhere is `StoreLocked`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::etag::Version;
use crate::index::{index_key, Index, COMMITTED};
use crate::log::placement::place;
use crate::log::record::{self, RecordHeader, RecordKind, HEADER_BYTES};
use crate::log::segment::Segment;
use crate::log::superblock::{self, ReadOutcome, Superblock, SUPERBLOCK_BYTES, SUPERBLOCK_FILE};
use crate::log::{MAXIMUM_SEGMENT_SIZE_BYTES, MINIMUM_SEGMENT_SIZE_BYTES};
use crate::rules::lease::LeaseState;
use crate::storage::{FileStorage, Storage, StorageFile};
use crate::store::StoreShared;

/// Repair refuses to fill a hole of more versions than this with `Abort` records.
const MAX_VERSION_GAP: u64 = 1 << 24;
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
    /// Bytes of segment files read.
    pub bytes_scanned: u64,
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
    /// Harmless findings: a torn tail the next open cuts off, left-over files.
    pub notes: Vec<Problem>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What [`repair`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// The findings before the repair (`problems` lists what was dropped).
    pub before: VerifyReport,
    /// False when the store was clean: nothing was rewritten.
    pub rewritten: bool,
    pub records_kept: u64,
    /// Data records that checked out but were dropped because they no longer apply.
    pub records_dropped: u64,
    /// Where the original files were moved.
    pub backup_directory: Option<PathBuf>,
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
fn load(directory: &Path) -> Result<Loaded> {
    let metadata =
        std::fs::metadata(directory).map_err(|error| Error::io(directory, "stat", error))?;
    if !metadata.is_dir() {
        let error = std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory");
        return Err(Error::io(directory, "open store", error));
    }
    let storage = FileStorage::new(directory);
    let lock = storage
        .try_lock()
        .map_err(|error| Error::io(directory.join("LOCK"), "flock", error))?
        .ok_or_else(|| Error::StoreLocked {
            path: directory.to_path_buf(),
        })?;
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
        let length = std::fs::metadata(&path)
            .map_err(|error| Error::io(&path, "stat", error))?
            .len();
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
        _lock: lock,
    })
}

/// A record that checked out, handed to the scan's visitor.
struct GoodRecord<'a> {
    header: RecordHeader,
    payload: &'a [u8],
    file: &'a Path,
    local_offset: u64,
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
                report.first_version.get_or_insert(header.version);
                last_version = Some(header.version);
                expected = Some(header.version + 1);
                let good = GoodRecord {
                    header,
                    payload,
                    file: &file.path,
                    local_offset: local,
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
                position = resumed.unwrap_or(end);
                expected = None;
            }
        }
    }
    report.last_version = last_version;
    report.log_end = position;
    report.bytes_scanned = total;
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
        crate::store::replay_record(
            &self.index,
            &self.catalog,
            self.now,
            record.header.version,
            record.global_offset,
            record.payload,
        )
        .err()
        .map(|error| match error {
            Error::Corruption { reason, .. } => format!("record does not apply: {reason}"),
            other => format!("record does not apply: {other}"),
        })
    }
}

/// Checks every record of the store in `directory` without opening it. `progress(done,
/// total)` is called with bytes scanned. Fails only when the store cannot be read at all
/// (missing, locked, unsupported format); damage is reported in the report.
pub fn verify(
    directory: impl AsRef<Path>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    let mut loaded = load(directory.as_ref())?;
    let replay = ReplayCheck::new();
    scan(
        &mut loaded,
        progress,
        &mut |record| Ok(replay.check(record)),
    )?;
    Ok(loaded.report)
}

/// Writes a fresh log: records at their versions, `Abort`s for lost versions, segments as the
/// engine lays them out.
struct LogWriter {
    storage: FileStorage,
    slot_size: u64,
    tail: u64,
    next_version: Option<Version>,
    generation: u32,
    current: Option<(u64, u64, Arc<dyn StorageFile>)>,
    written: Vec<(String, Arc<dyn StorageFile>)>,
}

impl LogWriter {
    fn write_record(&mut self, at: u64, header: RecordHeader, payload: &[u8]) -> Result<()> {
        let Some((first_slot, slot_count, file)) = &self.current else {
            unreachable!("a segment exists before a record is written into it");
        };
        let local = at - first_slot * self.slot_size;
        assert!(local + record::record_size(payload.len() as u64) <= slot_count * self.slot_size);
        let mut bytes = vec![0u8; HEADER_BYTES + payload.len()];
        let mut encoded = [0u8; HEADER_BYTES];
        record::encode_header(&mut encoded, header, payload);
        bytes[..HEADER_BYTES].copy_from_slice(&encoded);
        bytes[HEADER_BYTES..].copy_from_slice(payload);
        let path = self.storage.path().to_path_buf();
        file.write_at(&bytes, local)
            .map_err(|error| Error::io(path, "write", error))
    }

    fn segment(&mut self, first_slot: u64, slot_count: u64) -> Result<()> {
        if self
            .current
            .as_ref()
            .is_some_and(|(slot, count, _)| (*slot..slot + count).contains(&first_slot))
        {
            return Ok(());
        }
        let name = Segment::file_name(first_slot);
        let path = self.storage.path().join(&name);
        let file = self
            .storage
            .open(&name, true)
            .map_err(|error| Error::io(&path, "create", error))?;
        file.allocate(slot_count * self.slot_size)
            .map_err(|error| Error::io(&path, "allocate", error))?;
        self.written.push((name, Arc::clone(&file)));
        self.current = Some((first_slot, slot_count, file));
        Ok(())
    }

    fn append(&mut self, version: Version, kind: RecordKind, payload: &[u8]) -> Result<()> {
        let size = record::record_size(payload.len() as u64);
        let placement = place(self.tail, size, self.slot_size);
        let generation = self.generation;
        let header = |kind, version, payload_length| RecordHeader {
            payload_length,
            version,
            generation,
            kind,
        };
        if let Some(at) = placement.end_marker_before {
            self.write_record(at, header(RecordKind::SegmentEnd, version, 0), &[])?;
        }
        self.segment(placement.start / self.slot_size, placement.segment_slots)?;
        let fields = header(kind, version, payload.len() as u32);
        self.write_record(placement.start, fields, payload)?;
        if let Some(at) = placement.end_marker_after {
            self.write_record(at, header(RecordKind::SegmentEnd, version + 1, 0), &[])?;
        }
        self.tail = placement.new_tail;
        self.next_version = Some(version + 1);
        Ok(())
    }

    /// Appends a kept record, after `Abort`s for any versions lost before it.
    fn keep(&mut self, record: &GoodRecord<'_>) -> Result<()> {
        let version = record.header.version;
        let from = self.next_version.unwrap_or(version);
        if version - from > MAX_VERSION_GAP {
            return Err(Error::corruption(
                record.file,
                record.local_offset,
                format!("refusing to fill a hole of {} versions", version - from),
            ));
        }
        self.generation = self.generation.max(record.header.generation);
        for lost in from..version {
            self.append(lost, RecordKind::Abort, &[])?;
        }
        self.append(version, RecordKind::Data, record.payload)
    }
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|error| Error::io(from, "rename", error))
}

fn sync_directory(path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|directory| directory.sync_all())
        .map_err(|error| Error::io(path, "fsync directory", error))
}

/// Salvages the store in `directory`: keeps every record that checks out, writes a consistent
/// log and swaps it in; the originals move to `repair-backup-<seconds>` inside the store. A
/// clean store is left untouched. `progress(done, total)` as for [`verify`].
pub fn repair(
    directory: impl AsRef<Path>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RepairReport> {
    let directory = directory.as_ref();
    let mut loaded = load(directory)?;
    let replay = ReplayCheck::new();
    scan(
        &mut loaded,
        progress,
        &mut |record| Ok(replay.check(record)),
    )?;
    if loaded.report.is_clean() {
        let records_kept = loaded.report.records;
        return Ok(RepairReport {
            before: loaded.report,
            records_kept,
            ..RepairReport::default()
        });
    }
    let before = loaded.report.clone();
    let staging = directory.join("repair-new");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|error| Error::io(&staging, "remove", error))?;
    }
    let storage = FileStorage::new(&staging);
    storage
        .create_directory()
        .map_err(|error| Error::io(&staging, "create directory", error))?;
    let superblock = loaded.superblock;
    let mut writer = LogWriter {
        storage,
        slot_size: superblock.segment_size_bytes,
        tail: superblock.first_slot * superblock.segment_size_bytes,
        next_version: None,
        generation: 0,
        current: None,
        written: Vec::new(),
    };
    // The second pass decides exactly as the first (same bytes, a fresh replay).
    let replay = ReplayCheck::new();
    let (mut kept, mut dropped) = (0u64, 0u64);
    loaded.report = VerifyReport::default();
    scan(&mut loaded, &mut |_, _| {}, &mut |record| {
        let verdict = replay.check(record);
        if verdict.is_none() {
            writer.keep(record)?;
            kept += 1;
        } else {
            dropped += 1;
        }
        Ok(verdict)
    })?;
    for (name, file) in &writer.written {
        file.sync_data()
            .map_err(|error| Error::io(staging.join(name), "fdatasync", error))?;
    }
    let generation = if superblock.generation == u64::from(u32::MAX) {
        u64::from(writer.generation)
    } else {
        superblock.generation
    };
    let fresh = Superblock {
        segment_size_bytes: superblock.segment_size_bytes,
        generation,
        sequence: 1,
        durable_watermark: writer.tail,
        first_slot: superblock.first_slot,
    };
    let superblock_path = staging.join(SUPERBLOCK_FILE);
    let file = writer
        .storage
        .open(SUPERBLOCK_FILE, true)
        .map_err(|error| Error::io(&superblock_path, "create", error))?;
    let write_superblock = || -> std::io::Result<()> {
        file.allocate(SUPERBLOCK_BYTES)?;
        superblock::write(file.as_ref(), &fresh, 0)?;
        superblock::write(
            file.as_ref(),
            &Superblock {
                sequence: 2,
                ..fresh
            },
            1,
        )?;
        file.sync_data()
    };
    write_superblock().map_err(|error| Error::io(&superblock_path, "write", error))?;
    sync_directory(&staging)?;

    // Swap: the old superblock leaves first (a crash now leaves a store that refuses to open
    // rather than one that mixes old and new segments), the new one arrives last.
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let mut backup = directory.join(format!("repair-backup-{seconds}"));
    let mut attempt = 1;
    while backup.exists() {
        backup = directory.join(format!("repair-backup-{seconds}-{attempt}"));
        attempt += 1;
    }
    std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
        .create(&backup)
        .map_err(|error| Error::io(&backup, "create directory", error))?;
    let old_superblock = directory.join(SUPERBLOCK_FILE);
    if old_superblock.exists() {
        rename(&old_superblock, &backup.join(SUPERBLOCK_FILE))?;
    }
    for name in &loaded.segment_names {
        rename(&directory.join(name), &backup.join(name))?;
    }
    sync_directory(directory)?;
    for (name, _) in &writer.written {
        rename(&staging.join(name), &directory.join(name))?;
    }
    sync_directory(directory)?;
    rename(&superblock_path, &old_superblock)?;
    sync_directory(directory)?;
    sync_directory(&backup)?;
    drop(writer);
    std::fs::remove_dir(&staging).map_err(|error| Error::io(&staging, "remove", error))?;
    Ok(RepairReport {
        before,
        rewritten: true,
        records_kept: kept,
        records_dropped: dropped,
        backup_directory: Some(backup),
    })
}

/// What an open store holds, as of now (the CLI's `stat`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// The latest committed version.
    pub version: Version,
    pub containers: Vec<ContainerStats>,
    pub items: u64,
    /// Item versions held in the in-memory index (current ones, tombstones and older
    /// versions snapshots may still need).
    pub item_versions: u64,
    pub segments: u64,
    pub segment_size_bytes: u64,
    /// Bytes of segment files on disk (preallocated).
    pub allocated_bytes: u64,
    /// Bytes of log from its start to its tail.
    pub log_bytes: u64,
    /// Bytes of the records that hold a live item's current value.
    pub live_bytes: u64,
    /// `log_bytes - live_bytes`: superseded versions, deletions, expiries, lease and lock
    /// records, container records, aborts, unused segment ends — what compaction can reclaim
    /// (except container state, which it copies forward).
    pub dead_bytes: u64,
    /// Item leases that are Leased or Breaking.
    pub active_leases: u64,
    /// Cache locks not past their timeout.
    pub active_locks: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerStats {
    pub name: String,
    pub items: u64,
    /// Sum of the live items' value lengths.
    pub value_bytes: u64,
    pub active_leases: u64,
    pub active_locks: u64,
    /// The container's own lease state.
    pub lease_state: Option<LeaseState>,
}

impl StoreShared {
    /// Counts containers, items, versions, live and dead log bytes, active leases and locks.
    pub fn stats(&self) -> Result<StoreStats> {
        self.check_open()?;
        let version = self.version();
        let now = self.now();
        let mut stats = StoreStats {
            version,
            segment_size_bytes: self.log.slot_size_bytes(),
            allocated_bytes: self.log.allocated_bytes(),
            ..StoreStats::default()
        };
        let log_start = self.log.first_slot() * self.log.slot_size_bytes();
        stats.segments = stats.allocated_bytes / stats.segment_size_bytes.max(1);
        stats.log_bytes = self.log.tail_offset().saturating_sub(log_start);
        let mut value_offsets = Vec::new();
        let guard = crossbeam_epoch::pin();
        for name in self.catalog.names_at(version) {
            let Some(incarnation) = self.catalog.visible(&name, version) else {
                continue;
            };
            let lease = incarnation.state.lock().lease.clone();
            let mut container = ContainerStats {
                name,
                lease_state: Some(crate::rules::lease::state(lease.as_ref(), now)),
                ..ContainerStats::default()
            };
            let prefix = index_key(incarnation.id, b"");
            for slot in self.index.range_from(&prefix, &prefix) {
                let mut node = slot.head.load(std::sync::atomic::Ordering::Acquire, &guard);
                // SAFETY: nodes reachable from a head are freed only through the epoch, and
                // the guard is held.
                while let Some(current) = unsafe { node.as_ref() } {
                    if current.status.load(std::sync::atomic::Ordering::Acquire) == COMMITTED {
                        stats.item_versions += 1;
                    }
                    node = current
                        .older
                        .load(std::sync::atomic::Ordering::Acquire, &guard);
                }
                let Some(node) = self.resolve(&slot, version, false, &guard) else {
                    continue;
                };
                if node.lock().is_some_and(|lock| lock.is_live(now)) {
                    container.active_locks += 1;
                }
                if !node.is_live_at(now) {
                    continue;
                }
                if matches!(
                    node.lease().map(|lease| lease.state(now)),
                    Some(LeaseState::Leased | LeaseState::Breaking)
                ) {
                    container.active_leases += 1;
                }
                container.items += 1;
                if let Some(location) = node.value {
                    container.value_bytes += u64::from(location.length);
                    value_offsets.push(location.offset);
                }
            }
            stats.items += container.items;
            stats.active_leases += container.active_leases;
            stats.active_locks += container.active_locks;
            stats.containers.push(container);
        }
        drop(guard);
        // A record is live when a live value lies in it; each is counted once.
        value_offsets.sort_unstable();
        let mut next = 0usize;
        self.log
            .read_records(log_start, 0, &mut |_, location, payload| {
                let end = location + record::record_size(payload.len() as u64);
                let first = next;
                while next < value_offsets.len() && value_offsets[next] < end {
                    next += 1;
                }
                if next > first && value_offsets[next - 1] >= location {
                    stats.live_bytes += end - location;
                }
                Ok(next < value_offsets.len())
            })?;
        stats.dead_bytes = stats.log_bytes.saturating_sub(stats.live_bytes);
        Ok(stats)
    }
}
