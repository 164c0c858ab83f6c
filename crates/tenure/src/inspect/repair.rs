//! Repair: salvage every record that checks out into a fresh log, and swap it in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{load, scan, GoodRecord, ReplayCheck, VerifyReport};
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::log::placement::place;
use crate::log::record::{self, RecordHeader, RecordKind, HEADER_BYTES};
use crate::log::segment::Segment;
use crate::log::superblock::{self, Superblock, SUPERBLOCK_BYTES, SUPERBLOCK_FILE};
use crate::storage::{FileStorage, Storage, StorageFile};
use crate::types::Version;

/// Repair fills a hole of lost versions with `Abort` records (24 bytes each: the recovery
/// scan needs consecutive versions, and a `SegmentEnd` must announce the expected one), and
/// refuses a hole of more versions than this.
const MAX_VERSION_GAP: u64 = 1 << 24;

/// Names tried for one recovered container before it stays lost.
const MAX_RECOVERED_NAME_ATTEMPTS: u32 = 100;

/// A container whose create record was lost to damage while records of its items survived.
/// Repair creates it again at its original id (a lost version), under a name of its own, so
/// its items stay reachable: `lost+found-<id>`, or `lost+found-<id>-<n>` when that is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredContainer {
    pub id: u64,
    pub name: String,
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
    /// Items the repaired store holds.
    pub items_kept: u64,
    /// Items whose newest version was in a damaged record, named by container and key where
    /// the record could still be read: each is now at `kept_version` (an older version, or its
    /// delete), or gone. Versions of records that could not be read at all are counted in
    /// `before.versions_lost`.
    pub items_lost: Vec<crate::inspect::DamagedItem>,
    /// Containers created again under a new name because damage took their create record;
    /// their items are kept in them.
    pub containers_recovered: Vec<RecoveredContainer>,
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
    /// Payloads written at lost versions instead of `Abort`s: recovered containers' creates.
    recreated: BTreeMap<Version, Vec<u8>>,
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
        file.allocate(0, slot_count * self.slot_size)
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

    /// Moves the log on to `version` with an `Abort` record for every version in between.
    fn jump_to(&mut self, version: Version) -> Result<()> {
        let from = self.next_version.unwrap_or(1);
        if version <= from {
            return Ok(());
        }
        if version - from > MAX_VERSION_GAP {
            let path = self.storage.path().to_path_buf();
            let reason = format!(
                "refusing to fill a hole of {} versions (at most {MAX_VERSION_GAP})",
                version - from
            );
            return Err(Error::corruption(path, self.tail, reason));
        }
        for lost in from..version {
            match self.recreated.remove(&lost) {
                Some(payload) => self.append(lost, RecordKind::Data, &payload)?,
                None => self.append(lost, RecordKind::Abort, &[])?,
            }
        }
        Ok(())
    }

    /// Appends a kept record, after the versions lost before it.
    fn keep(&mut self, record: &GoodRecord<'_>) -> Result<()> {
        let version = record.header.version;
        self.generation = self.generation.max(record.header.generation);
        if self.next_version.is_some() {
            self.jump_to(version)?;
        }
        self.append(version, RecordKind::Data, record.payload)
    }
}

/// The containers whose create record a damaged range held (their id, the create's version,
/// lies within the range's bounds) while items of theirs survived. Each is created again in
/// `replay`, so its items count as kept.
fn recover_containers(report: &VerifyReport, replay: &ReplayCheck) -> Vec<RecoveredContainer> {
    // A log that still has its first segment starts at version 1; a later first segment
    // starts after versions compaction removed, which a damaged range cannot be said to hold.
    let log_start = (report.first_slot == 0).then_some(1);
    let lost_to_damage = |id: Version| {
        report.damaged.iter().any(|range| {
            range
                .first_version
                .or(log_start)
                .is_some_and(|first| first <= id)
                && range.last_version.is_none_or(|last| id <= last)
        })
    };
    let mut recovered = Vec::new();
    for id in replay.catalog.placeholder_ids() {
        if !lost_to_damage(id) {
            continue;
        }
        let Some(name) = (1..=MAX_RECOVERED_NAME_ATTEMPTS)
            .map(|attempt| match attempt {
                1 => format!("lost+found-{id}"),
                _ => format!("lost+found-{id}-{attempt}"),
            })
            .find(|name| replay.catalog.live(name).is_none())
        else {
            continue;
        };
        let container = RecoveredContainer { id, name };
        let payload = recreate_payload(&container, replay.now);
        let verdict = replay.check(&GoodRecord {
            header: RecordHeader {
                payload_length: payload.len() as u32,
                version: id,
                generation: 0,
                kind: RecordKind::Data,
            },
            payload: &payload,
            global_offset: 0,
        });
        debug_assert!(verdict.is_none(), "a recovered container's create replays");
        recovered.push(container);
    }
    recovered
}

fn recreate_payload(container: &RecoveredContainer, now: Timestamp) -> Vec<u8> {
    crate::record::encode_container_create(&container.name, None, &[], now)
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
    let mut loaded = load(directory, true)?;
    let replay = ReplayCheck::new();
    scan(
        &mut loaded,
        progress,
        &mut |record| Ok(replay.check(record)),
    )?;
    let containers_recovered = recover_containers(&loaded.report, &replay);
    super::damage::resolve(&mut loaded.report.damaged, &replay.index, &replay.catalog);
    let items_lost: Vec<_> = loaded
        .report
        .damaged
        .iter()
        .flat_map(|range| range.items.iter())
        .filter(|item| item.is_lost())
        .cloned()
        .collect();
    let items_kept = super::damage::live_items(&replay.index, replay.now);
    if loaded.report.is_clean() {
        let records_kept = loaded.report.records;
        return Ok(RepairReport {
            before: loaded.report,
            records_kept,
            items_kept,
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
        // A log that keeps its first segment starts at version 1, whatever damage took.
        next_version: (before.first_slot == 0).then_some(1),
        generation: 0,
        current: None,
        written: Vec::new(),
        recreated: containers_recovered
            .iter()
            .map(|container| (container.id, recreate_payload(container, replay.now)))
            .collect(),
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
    // Versions a lost record may have taken are never handed out again (ETags, fences and
    // change-feed positions stay unique).
    writer.jump_to(loaded.next_version_bound)?;
    // Each recovered container's id is a version a damaged range lost, so a gap filled it.
    assert!(
        writer.recreated.is_empty(),
        "recovered containers' creates are written at lost versions"
    );
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
        file.allocate(0, SUPERBLOCK_BYTES)?;
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
    // A persisted index describes the old log: it goes with it, never to be loaded over the
    // repaired one.
    let persisted_index = directory.join(crate::index::checkpoint::CHECKPOINT_FILE);
    if persisted_index.exists() {
        rename(
            &persisted_index,
            &backup.join(crate::index::checkpoint::CHECKPOINT_FILE),
        )?;
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
        items_kept,
        items_lost,
        containers_recovered,
    })
}
