//! `Log`: the handle the engine and the test kit use.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_epoch::Guard;
use parking_lot::Mutex;

use super::anchor::{fingerprint, LogAnchor};
use super::completion::unpack;
use super::core::*;
use super::flush::sync_superblock_copy;
use super::placement;
use super::record::{self, RecordKind, HEADER_BYTES};
use super::recovery;
use super::scan::{self, RecoveredRecord};
use super::space::{SpaceState, SpaceUse};
use crate::base::background;
use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::types::Version;

impl Log {
    /// Opens (or creates) the log in `storage`, handing every recovered record to `replay` in
    /// log order.
    pub fn open(
        storage: Arc<dyn Storage>,
        options: &LogOptions,
        replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
    ) -> Result<Log> {
        Ok(Log::open_at(storage, options, None, replay)?.0)
    }

    /// [`Log::open`], given the anchor a persisted index recorded at a clean close: when the
    /// store is still exactly as that close left it, the scan is skipped (`replay` sees no
    /// record) and the second value is `true`.
    pub fn open_at(
        storage: Arc<dyn Storage>,
        options: &LogOptions,
        anchor: Option<&LogAnchor>,
        replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
    ) -> Result<(Log, bool)> {
        if options.read_only {
            let (shared, anchored) = recovery::open_read_only(storage, options, anchor, replay)?;
            let log = Log {
                shared: Arc::new(shared),
                flusher: Mutex::new(None),
                preparer: Mutex::new(None),
            };
            return Ok((log, anchored));
        }
        let (shared, anchored) = recovery::open(storage, options, anchor, replay)?;
        let shared = Arc::new(shared);
        let flusher = match options.durability {
            Durability::Sync => None,
            Durability::Buffered => {
                let shared = Arc::clone(&shared);
                let interval = options.buffered_flush_interval;
                Some(
                    background::spawn("tenure-flusher", background::Priority::Normal, move || {
                        shared.background_flush(interval)
                    })
                    .map_err(|error| Error::io("tenure-flusher", "spawn thread", error))?,
                )
            }
        };
        let preparer = {
            let shared = Arc::clone(&shared);
            background::spawn(
                "tenure-segments",
                background::Priority::Background,
                move || shared.prepare_segments_ahead(),
            )
            .map_err(|error| Error::io("tenure-segments", "spawn thread", error))?
        };
        let log = Log {
            shared,
            flusher: Mutex::new(flusher),
            preparer: Mutex::new(Some(preparer)),
        };
        Ok((log, anchored))
    }

    /// Reserves a version and space for a record of `payload_length` bytes; `space_use` says
    /// whether it may use the space reserve (`SpaceUse`).
    pub fn reserve(&self, payload_length: usize, space_use: SpaceUse) -> Result<Reservation<'_>> {
        self.shared
            .reserve(payload_length, placement::place, space_use)
    }

    /// Ends the tail's segment: an empty record (an `Abort`, which takes a version and carries
    /// nothing) starts the next slot, so every record written before lies in segments that
    /// compaction may rewrite once they are durable. Nothing happens when the tail is on a slot
    /// boundary already.
    pub fn seal_tail(&self) -> Result<()> {
        if self.tail_offset() % self.shared.slot_size == 0 {
            return Ok(());
        }
        self.shared
            .reserve(0, placement::place_in_next_slot, SpaceUse::Compacting)?
            .abort();
        Ok(())
    }

    /// Runs the deferred removals of segment files that compaction took out of the log, once
    /// no reader can hold them: without this a removed segment keeps its disk until enough
    /// other epoch garbage has been collected after it, which can be long after the call that
    /// removed it. Bounded: a reader pinned for long (a borrowed value kept) leaves the rest to
    /// later collection, or to the next open, which removes segments below the log's start.
    ///
    /// The epoch moves on only once every thread pinned in an operation has left it, and on 2
    /// CPUs such a thread may need this one's CPU to do so: a tight loop of 10,000 rounds (a
    /// few milliseconds) left a file behind in about 1 test run in 4. So the rounds yield,
    /// and after the first `SPINNING_ROUNDS` sleep briefly: at most about half a second.
    pub fn collect_removed_segments(&self) {
        const COLLECTION_ROUNDS: usize = 5_000;
        const SPINNING_ROUNDS: usize = 100;
        const ROUND_SLEEP: Duration = Duration::from_micros(100);
        for round in 0..COLLECTION_ROUNDS {
            if self
                .shared
                .segments_awaiting_removal
                .load(Ordering::Acquire)
                == 0
            {
                return;
            }
            crossbeam_epoch::pin().flush();
            if round < SPINNING_ROUNDS {
                std::thread::yield_now();
            } else {
                std::thread::sleep(ROUND_SLEEP);
            }
        }
    }

    /// Appends one record and returns once it is acknowledged (per the durability mode).
    pub fn append(&self, payload: &[u8]) -> Result<(Version, u64)> {
        let mut reservation = self.reserve(payload.len(), SpaceUse::Ordinary)?;
        reservation.write_payload(payload)?;
        let location = reservation.location();
        let version = reservation.commit()?;
        Ok((version, location))
    }

    /// The newest version readers may see.
    pub fn visible_version(&self) -> Version {
        self.shared.visible_version()
    }

    /// The payload of the record at `location`, borrowed from the map for as long as `guard`.
    pub fn payload<'g>(&self, location: u64, guard: &'g Guard) -> Result<&'g [u8]> {
        self.shared.payload(location, guard)
    }

    /// Starts loading `lines` cache lines of the log from global offset `offset`, if a
    /// segment maps it: a hint that may be wrong (a value hint, `point_index.rs`), so nothing
    /// is read and a miss costs no error.
    pub(crate) fn prefetch(&self, offset: u64, lines: usize, guard: &Guard) {
        let Some((segment, local)) = self.shared.segment_at(offset, guard) else {
            return;
        };
        if local < segment.length() {
            // SAFETY: inside the mapping, which lives while `guard` does; only prefetched.
            let start = unsafe { segment.bytes_from(local) }.as_ptr();
            for line in 0..lines {
                crate::base::prefetch(start.wrapping_add(64 * line));
            }
        }
    }

    /// `length` bytes at global offset `offset`, borrowed from the map for as long as `guard`.
    /// For bytes the caller knows are inside complete records (the index only points there).
    pub fn read_bytes<'g>(&self, offset: u64, length: usize, guard: &'g Guard) -> Result<&'g [u8]> {
        self.reader(guard).read_bytes(offset, length)
    }

    /// The segments whose every byte is durable and below the tail's segment, oldest first:
    /// what compaction may rewrite. Each entry is (first slot, bytes).
    pub fn sealed_segments(&self) -> Vec<(u64, u64)> {
        let shared = &self.shared;
        let durable_offset = shared.flush.lock().durable.1;
        let tail = unpack(shared.reservation.load(Ordering::Acquire)).1;
        let mut segments = shared.segments.all();
        // The newest segment always stays: with the tail exactly on a slot boundary and the
        // next segment not created yet, it is sealed but the log's only segment.
        segments.pop();
        segments
            .into_iter()
            .filter(|segment| {
                let end = (segment.first_slot + segment.slot_count) * shared.slot_size;
                end <= durable_offset && end <= tail - tail % shared.slot_size
            })
            .map(|segment| (segment.first_slot, segment.length()))
            .collect()
    }

    /// Calls `visit(version, location, payload)` for every data record of a sealed segment.
    pub fn scan_segment(
        &self,
        first_slot: u64,
        visit: &mut dyn FnMut(Version, u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let shared = &self.shared;
        let segment = shared.segments.get_owned(first_slot).ok_or_else(|| {
            Error::corruption(
                shared.storage.path(),
                first_slot * shared.slot_size,
                "no such segment",
            )
        })?;
        let start = segment.first_slot * shared.slot_size;
        let mut local = 0u64;
        while segment.length() - local >= HEADER_BYTES as u64 {
            // SAFETY: the segment is sealed: every byte is part of a complete record or unused.
            let bytes = unsafe { segment.bytes_from(local) };
            let (header, payload) = record::decode(bytes).map_err(|reason| {
                Error::corruption(shared.storage.path().join(&segment.name), local, reason)
            })?;
            match header.kind {
                RecordKind::SegmentEnd => break,
                RecordKind::Abort => {}
                RecordKind::Data => visit(header.version, start + local, payload)?,
            }
            local += record::record_size(header.payload_length as u64);
        }
        Ok(())
    }

    /// Drops the oldest segment from the log: the superblock's first slot moves past it
    /// (synced), then the file goes once no reader can still hold a reference into it.
    /// The caller has made everything still needed from it durable elsewhere.
    pub fn remove_oldest_segment(&self, first_slot: u64) -> Result<()> {
        let shared = &self.shared;
        let all = shared.segments.all();
        let oldest = all
            .first()
            .ok_or_else(|| Error::invalid("segment", "the log has no segments"))?;
        if oldest.first_slot != first_slot || all.len() < 2 {
            return Err(Error::invalid(
                "segment",
                "only the oldest of several segments can be removed",
            ));
        }
        let next_slot = oldest.first_slot + oldest.slot_count;
        {
            let mut state = shared.superblock.lock();
            state.current.first_slot = next_slot;
            // Both copies, one after the other, before the file goes: were only one to name the
            // new first slot, damage to it would send the open to the other, which names a
            // segment that no longer exists (found by the torture corruption campaign once
            // compaction removed files promptly).
            for _ in 0..2 {
                state.current.sequence += 1;
                let synced = sync_superblock_copy(
                    shared.storage.as_ref(),
                    shared.superblock_file.as_ref(),
                    &mut state,
                );
                if let Err(error) = synced {
                    // A failed fdatasync poisons the store, as a failed log flush does (docs/spec.md §11).
                    shared.poison(error.clone());
                    return Err(error);
                }
            }
        }
        let removed = {
            let _creating = shared.segment_creation.lock();
            shared.segments.remove(first_slot)
        };
        // The feed cannot start in the removed segment any more: its index entries go too, so
        // the index stays as long as the log is (found by the soak, where it grew for ever).
        let log_start = next_slot * shared.slot_size;
        shared
            .version_index
            .lock()
            .retain(|(_, offset)| *offset >= log_start);
        let Some(removed) = removed else {
            return Ok(());
        };
        let storage = Arc::clone(&shared.storage);
        // The counter, not the log: a closure still queued must not keep the log (and its
        // lock file) alive.
        let awaiting = Arc::clone(&shared.segments_awaiting_removal);
        shared
            .segments_awaiting_removal
            .fetch_add(1, Ordering::AcqRel);
        let guard = crossbeam_epoch::pin();
        // Readers that found a value in this segment hold a guard; the file goes after them.
        guard.defer(move || {
            let name = removed.name.clone();
            drop(removed);
            let _ = storage.remove(&name);
            awaiting.fetch_sub(1, Ordering::AcqRel);
        });
        guard.flush();
        Ok(())
    }

    /// Blocks until a version newer than `version` is visible or `timeout` passes (no busy
    /// loop: visibility changes wake it). Returns the visible version.
    pub fn wait_visible_after(&self, version: Version, timeout: std::time::Duration) -> Version {
        let shared = &self.shared;
        let deadline = std::time::Instant::now() + timeout;
        shared.watchers.fetch_add(1, Ordering::AcqRel);
        let mut lock = shared.watch_lock.lock();
        loop {
            let visible = shared.visible_version();
            let now = std::time::Instant::now();
            if visible > version || now >= deadline || shared.closed.load(Ordering::Acquire) {
                drop(lock);
                shared.watchers.fetch_sub(1, Ordering::AcqRel);
                return visible;
            }
            shared.watch_changed.wait_for(&mut lock, deadline - now);
        }
    }

    /// Visits complete records from the one at or after global offset `from`, in log order,
    /// up to the newest visible version; `visit` returns `false` to stop. Records whose
    /// version is at most `after` are skipped.
    pub fn read_records(
        &self,
        from: u64,
        after: Version,
        visit: &mut dyn FnMut(Version, u64, &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let shared = &self.shared;
        let visible = shared.visible_version();
        let guard = crossbeam_epoch::pin();
        let mut position = from;
        loop {
            let Some(segment) = shared.segments.get(position / shared.slot_size, &guard) else {
                return Ok(());
            };
            let segment_start = segment.first_slot * shared.slot_size;
            let segment_end = segment_start + segment.length();
            if segment_end - position < HEADER_BYTES as u64 {
                position = segment_end;
                continue;
            }
            // SAFETY: only records up to the visible version are decoded; each is complete.
            let bytes = unsafe { segment.bytes_from(position - segment_start) };
            // Visible records were written by this process or verified by the recovery scan.
            let Ok((header, payload)) = record::decode_verified(bytes) else {
                // Past the last complete record (the tail).
                return Ok(());
            };
            if header.kind == RecordKind::SegmentEnd {
                position = segment_end;
                continue;
            }
            if header.version > visible {
                return Ok(());
            }
            if header.kind == RecordKind::Data
                && header.version > after
                && !visit(header.version, position, payload)?
            {
                return Ok(());
            }
            position += record::record_size(header.payload_length as u64);
        }
    }

    /// Where to start reading for versions after `after`: an indexed offset at or before the
    /// record of version `after + 1`, or the log's start. Also the oldest version still in the
    /// log (`None` for an empty log).
    pub fn feed_start(&self, after: Version) -> (u64, Option<Version>) {
        let shared = &self.shared;
        let segments = shared.segments.all();
        let Some(first) = segments.first() else {
            return (0, None);
        };
        let log_start = first.first_slot * shared.slot_size;
        let mut oldest = None;
        let _ = self.read_records(log_start, 0, &mut |version, _, _| {
            oldest = Some(version);
            Ok(false)
        });
        let index = shared.version_index.lock();
        let at = index.partition_point(|(version, _)| *version <= after + 1);
        let start = index[..at]
            .iter()
            .rev()
            .find(|(_, offset)| *offset >= log_start)
            .map_or(log_start, |(_, offset)| *offset);
        (start, oldest)
    }

    /// The slot the log starts at (greater than 0 once compaction removed segments).
    pub fn first_slot(&self) -> u64 {
        self.shared.superblock.lock().current.first_slot
    }

    /// The newest version handed out so far (perhaps not complete yet).
    pub fn last_reserved_version(&self) -> Version {
        // Sequentially consistent with the reservations' exchange: `Engine::snapshot`.
        unpack(self.shared.reservation.load(Ordering::SeqCst)).0 - 1
    }

    /// Whether the group commit goes through io_uring (`StoreStats::io_uring`).
    pub fn io_uring_use(&self) -> super::IoUringUse {
        let given_up = self.shared.ring.as_ref().and_then(|ring| ring.given_up());
        match given_up {
            Some(reason) => super::IoUringUse::Refused(reason),
            None => self.shared.io_uring_use.clone(),
        }
    }

    /// Bytes per slot: segment `s` starts at global offset `s * slot_size_bytes`.
    pub fn slot_size_bytes(&self) -> u64 {
        self.shared.slot_size
    }

    /// Bytes of segment files (allocated log space).
    pub fn allocated_bytes(&self) -> u64 {
        self.shared
            .segments
            .all()
            .iter()
            .map(|segment| segment.length())
            .sum()
    }

    /// Whether space is short (`LogShared::space_is_short`): compaction then frees removed
    /// segments' space after each one.
    pub fn space_is_short(&self) -> bool {
        self.shared.space_is_short()
    }

    /// The space policy and how full the store is (`stat`).
    pub fn space_state(&self) -> SpaceState {
        self.shared.space_state()
    }

    /// Segment files of the log (a segment covers one slot, or several for a large record).
    pub fn segment_count(&self) -> usize {
        self.shared.segments.all().len()
    }

    /// Syncs everything complete and returns once it is durable.
    pub fn flush(&self) -> Result<()> {
        if self.shared.read_only {
            return Ok(());
        }
        let (version, _) = self.shared.completion.load();
        self.shared.wait_durable(version)
    }

    /// Flushes, records the durable watermark and syncs the superblock.
    pub fn close(&self) -> Result<()> {
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stop_flusher();
        self.stop_preparer();
        if self.shared.read_only {
            return Ok(());
        }
        let result = self.flush_for_close();
        result.and_then(|()| self.shared.sync_superblock())
    }

    /// The files the log is in.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.shared.storage
    }

    /// Verifies the records below the anchor the open started its scan at, which it did not
    /// read (`scan::verify_below_anchor`: every check of an open's scan). Once they pass,
    /// later calls do nothing; a failure is `Corruption` naming the file and offset, and the
    /// next call checks again. The caller keeps compaction from removing segments meanwhile,
    /// and compaction calls it before it copies any record. `cancelled` is asked at each
    /// segment: a cancelled check leaves the records to the next call.
    pub fn verify_below_anchor(&self, cancelled: &dyn Fn() -> bool) -> Result<()> {
        let shared = &self.shared;
        let Some(anchor) = shared.unverified_anchor.lock().clone() else {
            return Ok(());
        };
        let superblock = shared.superblock.lock().current;
        // Compaction verifies them before it removes a segment, so the log still starts where
        // the anchor does.
        debug_assert_eq!(superblock.first_slot, anchor.first_slot);
        scan::verify_below_anchor(
            &shared.segments,
            &superblock,
            shared.storage.path(),
            &anchor,
            cancelled,
        )?;
        if !cancelled() {
            *shared.unverified_anchor.lock() = None;
        }
        Ok(())
    }

    /// Whether records below the open's anchor still wait for [`Log::verify_below_anchor`].
    pub fn has_unverified_records(&self) -> bool {
        self.shared.unverified_anchor.lock().is_some()
    }

    /// Where this log stands after a clean [`Log::close`], for a persisted index to record;
    /// `None` when the close was not clean: a read-only or poisoned log, a record still
    /// unfinished, or a superblock whose watermark is not the tail.
    pub fn anchor_after_close(&self) -> Option<LogAnchor> {
        let shared = &self.shared;
        if !shared.closed.load(Ordering::Acquire)
            || shared.read_only
            || shared.poisoned.load(Ordering::Acquire)
        {
            return None;
        }
        let (next_version, tail) = unpack(shared.reservation.load(Ordering::Acquire));
        let (completed_version, completed_end) = shared.completion.load();
        if completed_version + 1 != next_version || completed_end != tail {
            return None;
        }
        let superblock = shared.superblock.lock().current;
        if superblock.durable_watermark != tail {
            return None;
        }
        let start = superblock.first_slot * shared.slot_size;
        let fingerprint = fingerprint(&shared.segments, shared.slot_size, start, tail)?;
        Some(LogAnchor {
            segment_size_bytes: superblock.segment_size_bytes,
            generation: superblock.generation,
            sequence: superblock.sequence,
            first_slot: superblock.first_slot,
            tail,
            next_version,
            version_index: shared.version_index.lock().clone(),
            fingerprint,
        })
    }

    /// An anchor at the newest complete version of a running log (a checkpoint's: the caller
    /// takes the index at exactly that version), made durable first so the records it covers
    /// outlive any crash that the saved index does. `None` on a read-only or poisoned log, or
    /// a segment gone from under the fingerprint. The caller keeps compaction out meanwhile.
    pub fn anchor_at_completed(&self) -> Result<Option<LogAnchor>> {
        let shared = &self.shared;
        if shared.read_only || shared.poisoned.load(Ordering::Acquire) {
            return Ok(None);
        }
        // An anchor names the superblock's generation, which a later open must find synced.
        shared.make_generation_durable()?;
        let (completed_version, completed_end) = shared.completion.load();
        shared.wait_durable(completed_version)?;
        let superblock = shared.superblock.lock().current;
        let start = superblock.first_slot * shared.slot_size;
        if completed_end < start {
            return Ok(None);
        }
        let Some(fingerprint) =
            fingerprint(&shared.segments, shared.slot_size, start, completed_end)
        else {
            return Ok(None);
        };
        let version_index = shared
            .version_index
            .lock()
            .iter()
            .copied()
            .filter(|(version, _)| *version <= completed_version)
            .collect();
        Ok(Some(LogAnchor {
            segment_size_bytes: superblock.segment_size_bytes,
            generation: superblock.generation,
            sequence: superblock.sequence,
            first_slot: superblock.first_slot,
            tail: completed_end,
            next_version: completed_version + 1,
            version_index,
            fingerprint,
        }))
    }

    fn flush_for_close(&self) -> Result<()> {
        let (version, _) = self.shared.completion.load();
        self.shared.wait_durable(version)
    }

    fn stop_preparer(&self) {
        if let Some(preparer) = self.preparer.lock().take() {
            self.shared.preparer_request.lock().stop = true;
            self.shared.preparer_wake.notify_all();
            let _ = preparer.join();
        }
    }

    fn stop_flusher(&self) {
        if let Some(flusher) = self.flusher.lock().take() {
            self.shared.flush.lock().shutdown = true;
            self.shared.flush_done.notify_all();
            let _ = flusher.join();
        }
    }

    /// Bytes of log from its first segment to its tail.
    pub fn tail_offset(&self) -> u64 {
        unpack(self.shared.reservation.load(Ordering::Acquire)).1
    }

    /// Whether the log was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.shared.read_only
    }

    /// Whether this read-only open follows the writer's appends (it claimed a slot in the
    /// reader table).
    pub fn is_following(&self) -> bool {
        self.shared.follower.is_some()
    }

    /// A following open: whether records may have been appended since the last catch-up (one
    /// load when none was). Always `false` for other opens.
    #[inline]
    pub fn has_unread_records(&self) -> bool {
        self.shared.has_unread_records()
    }

    /// A following open: hands each record appended since the last catch-up to `apply`, in
    /// log order, then makes them visible; then lets go of the segments the writer removed,
    /// when `before_release`, given them (first slot, length in bytes), returns `true`.
    pub fn catch_up(
        &self,
        apply: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
        before_release: &mut dyn FnMut(&[(u64, u64)]) -> Result<bool>,
    ) -> Result<()> {
        self.shared.catch_up(apply, before_release)
    }

    /// Whether a process that follows the store still has to read the log below `end` (a
    /// segment's end): compaction leaves that segment until it has.
    pub fn followers_need(&self, end: u64) -> bool {
        self.shared.superblock_file.descriptor().is_some()
            && super::readers::lowest_needed(self.shared.storage.path())
                .is_some_and(|needed_from| needed_from < end)
    }

    pub fn is_poisoned(&self) -> bool {
        self.shared.poisoned.load(Ordering::Acquire)
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        // Best effort: a store dropped without close still gets its watermark recorded.
        let _ = self.close();
    }
}

impl Log {
    /// Waits until `version` is acknowledged per the durability mode.
    pub fn wait(&self, version: Version) -> Result<()> {
        match self.shared.durability {
            Durability::Buffered => self.shared.acknowledge_buffered(version),
            Durability::Sync => self.shared.wait_durable(version),
        }
    }

    pub fn durability(&self) -> Durability {
        self.shared.durability
    }
}
