//! Compaction (docs/design.md §5): the oldest sealed segment is rewritten — live item versions
//! and live containers' state are copied forward to the tail, keeping their versions and so
//! their ETags — and then removed. Because only the oldest segment is ever removed, the log
//! stays contiguous, and whatever is dead in it (superseded versions, tombstones, expired
//! items, items and records of deleted containers) can simply be dropped: nothing older lies
//! behind it that a dropped tombstone could let come back.

use crate::backend::results::CompactionReport;
use crate::log::SpaceUse;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use crossbeam_epoch::{Owned, Shared};

use crate::engine::core::Engine;
use crate::error::Result;
use crate::index::catalog::Catalog;
use crate::index::{
    coordination_box, index_key, node_of, word_of, ItemSlot, NewVersion, Properties, ValueLocation,
    VersionNode, VersionRef, COMMITTED,
};
use crate::log::record::HEADER_BYTES;
use crate::record::{self, Coordination, DecodedRecord, ItemWrite};
use crate::types::Version;

/// A relocation record holds at most this many bytes, header included (one item larger than
/// that gets a record of its own). Why small: a record's checksum covers all its items, so
/// one damaged byte of a record costs every item in it; a damaged 4 KiB sector then costs the
/// items whose bytes lie in it and, at most, those of the two records that straddle its
/// edges (docs/design.md §6). A header per 4 KiB is 0.6% of the copied bytes.
const RELOCATION_RECORD_BYTES: usize = 4096;
/// Relocations are written a group of about this many bytes at a time: one wait for the
/// group's records to be visible, then their versions are swapped in.
const RELOCATION_GROUP_BYTES: usize = 1 << 20;
/// Rounds of copying for items whose copy lost a race with a write; past them the segment
/// stays until a later compaction.
const RELOCATION_ROUNDS: usize = 16;
/// How long compaction waits, per segment, for snapshots opened before its copies were
/// swapped in to close before it leaves the segment for a later pass.
const SNAPSHOT_WAIT: std::time::Duration = std::time::Duration::from_millis(50);
const SNAPSHOT_POLL: std::time::Duration = std::time::Duration::from_micros(200);

/// The background compaction cleans the oldest sealed segment only once at least this share
/// of its bytes is dead (`compact()` cleans every segment). Why: cleaning copies what is
/// live, so a mostly live segment costs nearly its size in copies for little space; and the
/// compaction used to rewrite every sealed segment whenever 4 were sealed, so a store of live
/// data kept one core copying it again after every 64 MiB of writes (1M-key compare-and-set
/// probe: the compactor took more CPU than the writer, and puts ran 1.2–1.5 µs instead of
/// 0.6–0.8). At one half, each segment cleaned frees at least as much as it copies, and the
/// log stays within about twice the live bytes plus the segments not yet sealed.
const BACKGROUND_MINIMUM_DEAD_PERCENT: u64 = 50;
/// What a relocated item costs in its record besides key and value (an estimate: op 10's
/// varints and flags, the record's share of its header).
const RELOCATED_ITEM_OVERHEAD_BYTES: u64 = 16;

/// How cleaning one segment ended.
enum Cleaning {
    /// Its live data is copied forward; the newest version recorded in it.
    Copied(Version),
    /// Some item's copy kept losing races with writes: the segment stays.
    RacedWrites,
    /// Less of it is dead than the background compaction waits for: the segment stays.
    MostlyLive,
}

/// What a background compaction pass did to the oldest sealed segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackgroundPass {
    /// Cleaned what it could.
    Cleaned,
    /// Left the oldest sealed segment alone: it is mostly live. The next pass that can find
    /// more dead in it comes after more writes, once another segment is sealed.
    OldestMostlyLive,
}

/// A record of the segment being compacted that may make its item depend on the segment.
struct Candidate {
    container_id: u64,
    /// Where its key lies in the pass's `Keys`.
    key: std::ops::Range<usize>,
    /// The version of the record (for a relocated item, of the original write).
    record_version: Version,
}

/// One live item version to copy forward: its whole state, so the copy replaces it exactly.
struct Relocation {
    slot: ItemSlot,
    /// The head word of the version being copied (`VersionRef::word`: a node's address or a
    /// plain head), compared with the head's when swapping in the copy.
    node_address: usize,
    /// The segment's record that made the item a candidate: checked again if the copy loses.
    candidate: Candidate,
    version: Version,
    etag_version: Version,
    container_id: u64,
    /// Read from the log when its record is written, not copied ahead: a pass holds a whole
    /// segment's relocations at once.
    value: Option<ValueLocation>,
    last_modified: u64,
    expires_at: Option<u64>,
    properties: Properties,
    coordination: Coordination,
}

impl Engine {
    /// Rewrites the log's live data and removes the segments it came from, oldest first:
    /// every segment, the tail's too — its segment is ended first when anything was written
    /// since the last `compact` — so that what is left is the live data and no more. Readers
    /// and writers keep going; a writer racing a relocation at most retries its
    /// compare-and-swap once.
    pub(crate) fn compact(&self) -> Result<CompactionReport> {
        self.check_open()?;
        let mut tail_after_last_compact = self.compaction.lock();
        // A record is copied forward only once verified: a copy would carry a damaged one
        // under a new checksum.
        self.verify_log_locked(&|| false)?;
        if self.log.tail_offset() != *tail_after_last_compact {
            self.log.seal_tail()?;
        }
        let report = self.compact_sealed_locked()?;
        *tail_after_last_compact = self.log.tail_offset();
        Ok(report)
    }

    /// Rewrites and removes sealed segments (every one but the tail's), oldest first, while
    /// at least `BACKGROUND_MINIMUM_DEAD_PERCENT` of the oldest is dead: the background
    /// compaction, which leaves the segment being written alone.
    pub(crate) fn compact_sealed(&self) -> Result<BackgroundPass> {
        self.check_open()?;
        let _one_at_a_time = self.compaction.lock();
        self.verify_log_locked(&|| false)?;
        let (_, stopped_at_live) = self.clean_sealed(Some(BACKGROUND_MINIMUM_DEAD_PERCENT))?;
        Ok(if stopped_at_live {
            BackgroundPass::OldestMostlyLive
        } else {
            BackgroundPass::Cleaned
        })
    }

    /// The caller holds `compaction`.
    fn compact_sealed_locked(&self) -> Result<CompactionReport> {
        self.clean_sealed(None).map(|(report, _)| report)
    }

    /// Cleans sealed segments oldest first; with `minimum_dead_percent`, stops at the first
    /// segment less dead than that (and says so). The caller holds `compaction`.
    fn clean_sealed(&self, minimum_dead_percent: Option<u64>) -> Result<(CompactionReport, bool)> {
        let mut report = CompactionReport::default();
        let mut stopped_at_live = false;
        // Only durable segments are sealed; in buffered mode that needs a flush.
        self.log.flush()?;
        let sealed = self.log.sealed_segments();
        // Sealed segments lie below the tail's segment, which always remains.
        for (first_slot, bytes) in &sealed {
            let (retain_versions, retain_bytes) = self.feed_retention;
            let segment_end = first_slot * self.log.slot_size_bytes() + bytes;
            if retain_bytes.is_some_and(|retained| {
                self.log.tail_offset().saturating_sub(segment_end) < retained
            }) {
                report.retained_for_change_feed = true;
                break;
            }
            // A process following the store has not read this segment yet: removing it
            // would hide from it whatever the segment holds that is not copied forward (a
            // delete's tombstone, say). Checked again before the removal, for a process that
            // opened meanwhile.
            if self.log.followers_need(segment_end) {
                report.deferred_by_snapshot = true;
                break;
            }
            let newest_version =
                match self.relocate_live(*first_slot, *bytes, &mut report, minimum_dead_percent)? {
                    Cleaning::Copied(newest_version) => newest_version,
                    Cleaning::RacedWrites => {
                        report.deferred_by_writes = true;
                        break;
                    }
                    Cleaning::MostlyLive => {
                        stopped_at_live = true;
                        break;
                    }
                };
            if retain_versions
                .is_some_and(|retained| newest_version.saturating_add(retained) > self.version())
            {
                report.retained_for_change_feed = true;
                break;
            }
            self.log.flush()?;
            // A write that raced a relocation (and so kept the old version current for readers
            // at older versions) must be visible before the old segment goes: a reader that
            // starts after the removal then reads at least that version.
            self.log.wait(self.log.last_reserved_version())?;
            // A snapshot opened before the copies were swapped in may read old versions in
            // the segment, or hold values borrowed from its mapping
            // (`Snapshot::get_borrowed`); one opened after reads only the copies and newer
            // segments. Short-lived snapshots come and go all the time on a busy store, so
            // the earlier ones get a bounded wait to close before the removal is deferred.
            if !self.snapshots_all_opened_after_the_swap() || self.log.followers_need(segment_end) {
                report.deferred_by_snapshot = true;
                break;
            }
            self.log.remove_oldest_segment(*first_slot)?;
            report.segments_removed += 1;
            report.bytes_removed += bytes;
            if self.log.space_is_short() {
                // The next segment's copies may need the space this one held.
                self.log.collect_removed_segments();
            }
        }
        if report.segments_removed > 0 {
            // Give the disk back now, not whenever epoch garbage is next collected.
            self.log.collect_removed_segments();
            self.remove_stale_saved_index();
            crate::base::release_free_heap();
        }
        Ok((report, stopped_at_live))
    }

    /// Whether every open snapshot was opened after the caller's copies were swapped in,
    /// waiting up to `SNAPSHOT_WAIT` for earlier ones to close. A new generation starts under
    /// the lock snapshots register under, so a snapshot either belongs to an older one (and is
    /// waited for) or registers later and reads the visible version after the swap.
    fn snapshots_all_opened_after_the_swap(&self) -> bool {
        let generation = self.snapshots.lock().start_generation();
        let deadline = std::time::Instant::now() + SNAPSHOT_WAIT;
        loop {
            if self.snapshots.lock().oldest_generation() >= generation {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(SNAPSHOT_POLL);
        }
    }

    /// Copies the segment's live data forward, unless less than `minimum_dead_percent` of it
    /// is dead (judged by the live versions' sizes before anything is written).
    fn relocate_live(
        &self,
        first_slot: u64,
        segment_bytes: u64,
        report: &mut CompactionReport,
        minimum_dead_percent: Option<u64>,
    ) -> Result<Cleaning> {
        // Container states are copied first, so relocated items always find their container;
        // the catalog lock keeps container writes from racing the copy.
        let _container_changes = self.catalog.changes.lock();
        let slot_size = self.log.slot_size_bytes();
        let segment_start = first_slot * slot_size;
        let segment_end = segment_start + segment_bytes;
        let mut live_containers = BTreeSet::new();
        let mut candidates: Vec<Candidate> = Vec::new();
        // One buffer for every candidate's key: a segment has hundreds of thousands of them,
        // and an allocation each would stay in the allocator's free lists after the pass.
        let mut keys = Keys::default();
        let mut newest_version = 0;
        self.log
            .scan_segment(first_slot, &mut |version, location, payload| {
                newest_version = newest_version.max(version);
                let record = record::decode(payload)
                    .map_err(|reason| crate::error::Error::corruption("log", location, reason))?;
                match record {
                    DecodedRecord::Items(items) => {
                        for item in items {
                            candidates.push(Candidate {
                                container_id: item.write.container_id,
                                key: keys.add(item.write.key),
                                record_version: version,
                            });
                        }
                    }
                    DecodedRecord::RelocatedItems(items) => {
                        for (original, item) in items {
                            candidates.push(Candidate {
                                container_id: item.write.container_id,
                                key: keys.add(item.write.key),
                                record_version: original,
                            });
                        }
                    }
                    DecodedRecord::ItemCoordination {
                        container_id, key, ..
                    } => {
                        candidates.push(Candidate {
                            container_id,
                            key: keys.add(key),
                            record_version: version,
                        });
                    }
                    DecodedRecord::ContainerCreate { .. } => {
                        live_containers.insert(version);
                    }
                    DecodedRecord::ContainerState { id, .. } => {
                        live_containers.insert(id);
                    }
                    DecodedRecord::ContainerSetMetadata { container_id, .. }
                    | DecodedRecord::ContainerLease { container_id, .. } => {
                        live_containers.insert(container_id);
                    }
                    DecodedRecord::ContainerDelete { .. } => {}
                }
                Ok(())
            })?;
        // A lease, lock or metadata change carries its item's value location forward. If one
        // lands between reading an item and swapping in its copy, the copy is dropped but the
        // new version still points into this segment: such items are read and copied again.
        let guard = crossbeam_epoch::pin();
        for round in 0..RELOCATION_ROUNDS {
            // Writes installed so far become visible, so the versions read below are current.
            self.log.wait(self.log.last_reserved_version())?;
            let now = self.now();
            let visible = self.version();
            let mut seen = std::collections::HashSet::new();
            let mut relocations = Vec::new();
            for candidate in candidates {
                if let Some(relocation) = self.live_version(
                    candidate,
                    &keys,
                    segment_start..segment_end,
                    visible,
                    now,
                    &guard,
                )? {
                    if seen.insert(relocation.node_address) {
                        relocations.push(relocation);
                    }
                }
            }
            if round == 0 {
                if let Some(percent) = minimum_dead_percent {
                    let live_bytes: u64 = relocations
                        .iter()
                        .map(|relocation| relocation.bytes() as u64 + RELOCATED_ITEM_OVERHEAD_BYTES)
                        .sum();
                    if live_bytes * 100 > segment_bytes * (100 - percent.min(100)) {
                        return Ok(Cleaning::MostlyLive);
                    }
                }
                // Container states go first, so relocated items always find their container
                // at replay; a segment left alone above has had nothing written for it.
                self.copy_containers_forward(&live_containers, report)?;
            }
            candidates = Vec::new();
            for group in group_by_size(relocations) {
                let (relocated, lost) = self.write_relocations(group, &keys)?;
                report.items_relocated += relocated;
                candidates.extend(lost);
            }
            if candidates.is_empty() {
                return Ok(Cleaning::Copied(newest_version));
            }
        }
        Ok(Cleaning::RacedWrites)
    }

    /// Writes the current state of each live container in `live_containers` forward.
    fn copy_containers_forward(
        &self,
        live_containers: &BTreeSet<u64>,
        report: &mut CompactionReport,
    ) -> Result<()> {
        for &id in live_containers {
            let Some(incarnation) = self.catalog.by_id(id).filter(|incarnation| {
                incarnation.is_live() && !Catalog::is_placeholder(incarnation)
            }) else {
                continue;
            };
            let payload = incarnation.encode_state();
            let mut reservation = self.log.reserve(payload.len(), SpaceUse::Compacting)?;
            reservation.write_payload(&payload)?;
            reservation.commit_nowait();
            report.containers_relocated += 1;
        }
        Ok(())
    }

    /// The version readers see now for the key, if it depends on the segment — its own record
    /// is `record_version` from the segment, or its value lies in the segment — and is still
    /// live (an item, or a live lock on an absent key).
    #[allow(clippy::too_many_arguments)]
    fn live_version(
        &self,
        candidate: Candidate,
        keys: &Keys,
        segment: std::ops::Range<u64>,
        visible: Version,
        now: u64,
        guard: &crossbeam_epoch::Guard,
    ) -> Result<Option<Relocation>> {
        let Some(incarnation) = self
            .catalog
            .by_id(candidate.container_id)
            .filter(|incarnation| incarnation.is_live())
        else {
            return Ok(None);
        };
        let key = keys.get(&candidate.key);
        let Some(slot) = self.index.get(&index_key(incarnation.id, key))? else {
            return Ok(None);
        };
        // As a plain read: a writer's prune may have left nothing at `visible` (it keeps only
        // the newest node at the version *it* saw), and an item found nowhere would not be
        // copied while its newest version still points into the segment.
        let Some(current) = self.resolve(&slot, visible, false, guard)? else {
            return Ok(None);
        };
        let plain_offset = match &current {
            VersionRef::Plain(_, offset) => Some(*offset),
            VersionRef::Node(_) => None,
        };
        let depends = current.version == candidate.record_version
            || current
                .value()
                .is_some_and(|value| segment.contains(&value.offset()))
            || plain_offset.is_some_and(|offset| segment.contains(&offset));
        if !depends {
            return Ok(None);
        }
        let locked = crate::rules::lock::live_lock(current.lock(), now).is_some();
        if !(current.is_live_at(now) || locked) {
            // Not copied forward (deleted or expired). A plain head must not outlive the
            // segment its entry is in — readers read it to learn even that much — so it
            // becomes a node that says the same. If the head moved, a newer version is above
            // it, and readers stop there.
            if let Some(offset) = plain_offset {
                slot.demote_plain(offset, &current, guard);
            }
            return Ok(None);
        }
        Ok(Some(Relocation {
            node_address: current.word(),
            slot,
            version: current.version,
            etag_version: current.etag_version(),
            container_id: incarnation.id,
            candidate,
            value: current.value(),
            last_modified: current.last_modified,
            expires_at: current.expires_at(),
            properties: current.properties().cloned().unwrap_or_default(),
            coordination: current.coordination().cloned().unwrap_or_default(),
        }))
    }

    /// Writes a group's relocation records and swaps each still-current version for its copy;
    /// returns how many were swapped, and the candidates of those written meanwhile.
    fn write_relocations(
        &self,
        group: Vec<Relocation>,
        keys: &Keys,
    ) -> Result<(u64, Vec<Candidate>)> {
        assert!(!group.is_empty(), "groups are never empty");
        let mut value_locations = Vec::with_capacity(group.len());
        let mut record = RelocationRecord::default();
        let last_version = {
            // The values are read where they lie: the segments stay mapped while pinned.
            let guard = crossbeam_epoch::pin();
            for relocation in &group {
                let value = match relocation.value {
                    Some(location) => Some(self.value_bytes(location, &guard)?),
                    None => None,
                };
                let write = relocation.item_write(keys.get(&relocation.candidate.key), value);
                if !record.fits(&write) {
                    record.write(self, &mut value_locations)?;
                }
                record.push(relocation.version, &write);
            }
            record.write(self, &mut value_locations)?
        };
        debug_assert_eq!(value_locations.len(), group.len());
        // Sealed before any node points at them: relocated versions are already visible (the
        // last record's version, and so every earlier one).
        self.log.wait(last_version)?;
        let guard = crossbeam_epoch::pin();
        let mut relocated = 0;
        let mut lost = Vec::new();
        for (relocation, value) in group.into_iter().zip(value_locations) {
            let head = relocation.slot.settled_head(&guard);
            if word_of(head) != relocation.node_address {
                // Written meanwhile: the copy is dead (replay skips it, being older), but the
                // new version may still point into the segment — the caller checks again.
                lost.push(relocation.candidate);
                continue;
            }
            let copy = Owned::new(VersionNode::new(NewVersion {
                version: relocation.version,
                etag_version: relocation.etag_version,
                status: COMMITTED,
                value,
                last_modified: relocation.last_modified,
                expires_at: relocation.expires_at,
                properties: Properties::boxed(
                    relocation.properties.content_type.as_deref(),
                    relocation.properties.metadata,
                ),
                coordination: coordination_box(relocation.coordination),
            }));
            // The copy takes over the chain below `head`, which prunes detach under this lock:
            // read and swapped under it, the chain is never the copy's and detached at once
            // (a prune that read `head` before the exchange would retire what the copy links).
            let prunes = self.snapshots.lock();
            // A plain head has nothing older.
            let older = node_of(head).map_or(Shared::null(), |current| {
                current.older.load(Ordering::Acquire, &guard)
            });
            copy.link_older(older);
            let exchanged = relocation.slot.head().compare_exchange(
                head,
                copy,
                Ordering::AcqRel,
                Ordering::Acquire,
                &guard,
            );
            drop(prunes);
            if exchanged.is_ok() {
                // SAFETY: unlinked by the exchange.
                unsafe { relocation.slot.retire(head, &guard) };
                if let Some(location) = value {
                    self.index
                        .note_value_location(relocation.slot.index_key(), None, location);
                }
                relocated += 1;
            } else {
                lost.push(relocation.candidate);
            }
        }
        Ok((relocated, lost))
    }
}

impl Relocation {
    /// The write that copies this version forward, with its key and value.
    fn item_write<'a>(&'a self, key: &'a [u8], value: Option<&'a [u8]>) -> ItemWrite<'a> {
        ItemWrite {
            container_id: self.container_id,
            key,
            value,
            last_modified: self.last_modified,
            expires_at: self.expires_at,
            content_type: self.properties.content_type.as_deref(),
            metadata: &self.properties.metadata,
            etag_version: self.etag_version,
            created: false,
            expired: false,
            coordination: Some(&self.coordination),
        }
    }
}

impl Relocation {
    /// Its key's and value's bytes.
    fn bytes(&self) -> usize {
        self.candidate.key.len() + self.value.map_or(0, |value| value.length as usize)
    }
}

/// The keys of one segment's candidates, end to end in one buffer.
#[derive(Default)]
struct Keys {
    bytes: Vec<u8>,
}

impl Keys {
    fn add(&mut self, key: &[u8]) -> std::ops::Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        start..self.bytes.len()
    }

    fn get(&self, key: &std::ops::Range<usize>) -> &[u8] {
        &self.bytes[key.clone()]
    }
}

/// One relocation record being filled: its encoder and where each item's value lies in it.
#[derive(Default)]
struct RelocationRecord {
    encoder: Option<record::RelocatedItemsEncoder>,
    /// Each item's value offset in the payload and length (`None`: no value).
    values: Vec<Option<(usize, u32)>>,
    bytes: usize,
}

impl RelocationRecord {
    /// Whether `write` still fits the record (an empty record takes any item).
    fn fits(&self, write: &ItemWrite<'_>) -> bool {
        self.values.is_empty() || self.bytes + encoded_bound(write) <= RELOCATION_RECORD_BYTES
    }

    fn push(&mut self, version: Version, write: &ItemWrite<'_>) {
        let encoder = self
            .encoder
            .get_or_insert_with(record::RelocatedItemsEncoder::new);
        let offset = encoder.push(version, write);
        self.values
            .push(write.value.map(|value| (offset, value.len() as u32)));
        self.bytes = HEADER_BYTES + encoder.len();
    }

    /// Appends the record (not waiting for it to be visible) and adds where its values went
    /// to `locations`; returns its version. Leaves the record empty for the next items.
    fn write(
        &mut self,
        engine: &Engine,
        locations: &mut Vec<Option<ValueLocation>>,
    ) -> Result<Version> {
        let encoder = self
            .encoder
            .take()
            .expect("a record holds at least one item");
        let payload = encoder.finish();
        let mut reservation = engine.log.reserve(payload.len(), SpaceUse::Compacting)?;
        reservation.write_payload(&payload)?;
        let record_start = reservation.location() + HEADER_BYTES as u64;
        locations.extend(self.values.drain(..).map(|value| {
            value.map(|(offset, length)| ValueLocation::new(record_start + offset as u64, length))
        }));
        self.bytes = 0;
        Ok(reservation.commit_nowait())
    }
}

/// At least the bytes `write` takes in a relocation record: its variable fields and a bound
/// on the fixed ones.
fn encoded_bound(write: &ItemWrite<'_>) -> usize {
    const FIXED_FIELDS_BOUND: usize = 160;
    let metadata: usize = write
        .metadata
        .iter()
        .map(|(name, value)| name.len() + value.len() + 8)
        .sum();
    let holder = write
        .coordination
        .and_then(|coordination| coordination.lease.as_ref())
        .and_then(|lease| lease.holder.as_ref())
        .map_or(0, String::len);
    write.key.len()
        + write.value.map_or(0, <[u8]>::len)
        + write.content_type.map_or(0, str::len)
        + metadata
        + holder
        + FIXED_FIELDS_BOUND
}

fn group_by_size(relocations: Vec<Relocation>) -> Vec<Vec<Relocation>> {
    let mut groups = Vec::new();
    let mut current = Vec::new();
    let mut bytes = 0usize;
    for relocation in relocations {
        bytes += relocation.bytes() + 64;
        current.push(relocation);
        if bytes >= RELOCATION_GROUP_BYTES {
            groups.push(std::mem::take(&mut current));
            bytes = 0;
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::BackgroundPass;
    use crate::{ContainerOptions, Durability, Store, StoreOptions, WriteOptions};

    /// The background pass leaves a mostly live oldest segment alone, and cleans it once
    /// writes have made at least half of it dead.
    #[test]
    fn the_background_pass_waits_until_half_of_the_oldest_segment_is_dead() {
        let directory = std::env::temp_dir().join(format!(
            "tenure-compaction-background-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&directory);
        let options = StoreOptions {
            durability: Durability::Buffered,
            segment_size_bytes: 64 << 10,
            background_compaction_interval: None,
            ..StoreOptions::default()
        };
        let store = Store::open(&directory, options).unwrap();
        store
            .create_container("c", &ContainerOptions::default())
            .unwrap();
        let put_all = |keys: std::ops::Range<u32>, round: u8| {
            for key in keys {
                store
                    .put(
                        "c",
                        &key.to_be_bytes(),
                        &[round; 100],
                        &WriteOptions::default(),
                    )
                    .unwrap();
            }
        };
        // About 4,000 records of 150 B: 9 segments of 64 KiB, every item live.
        put_all(0..4_000, 0);
        let before = store.log_bytes();
        assert_eq!(
            store.engine().compact_sealed().unwrap(),
            BackgroundPass::OldestMostlyLive
        );
        assert_eq!(store.log_bytes(), before, "a live segment stays");
        // A third of the items rewritten: the oldest segment is still two thirds live.
        put_all(0..400, 1);
        put_all(800..1_200, 1);
        assert_eq!(
            store.engine().compact_sealed().unwrap(),
            BackgroundPass::OldestMostlyLive
        );
        // Every item of the first segments rewritten: they are dead, and go.
        put_all(0..2_000, 2);
        let before = store.log_bytes();
        store.engine().compact_sealed().unwrap();
        assert!(store.log_bytes() < before, "dead segments go");
        for key in [0u32, 1_999, 2_000, 3_999] {
            let item = store
                .get("c", &key.to_be_bytes(), &Default::default())
                .unwrap();
            let round = if key < 2_000 { 2 } else { 0 };
            assert_eq!(item.value.unwrap(), [round; 100]);
        }
        store.close().unwrap();
        let _ = std::fs::remove_dir_all(&directory);
    }
}
