//! Durability: group commit (a leader syncs for the writers waiting with it), the staged
//! writes of a `sync` store, the durable watermark and the superblock, the background
//! flusher of a `buffered` store, and poisoning after a failed sync.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use std::time::Instant;

use parking_lot::MutexGuard;

use super::core::*;
use super::group_commit::{FlushState, WaitingWriter, MAXIMUM_FOLLOWER_SPIN, MAXIMUM_LINGER};
use super::ring::{ChainFailure, RingWrite, SyncRing, RING_ENTRIES};
use super::segment::Segment;
use super::staging::StagedRecord;
use super::staging::RUN_BYTES_KEPT;
use super::superblock;
use crate::error::{Error, Result};
use crate::storage::{Storage, StorageFile};
use crate::types::Version;

/// Records one write of a ring chain takes at most (IOV_MAX on Linux).
const MAXIMUM_RECORDS_PER_WRITE: usize = 1024;

impl LogShared {
    /// `buffered` acknowledgement: every version ≤ `version` is complete, and visible before
    /// the call returns (whoever advanced the completed word).
    pub(super) fn acknowledge_buffered(&self, version: Version) -> Result<()> {
        self.wait_completed(version);
        if self.completion.load().0 < version {
            let poisoned = self.flush.lock().poisoned.clone();
            return Err(poisoned.unwrap_or(Error::Closed));
        }
        Ok(())
    }

    pub(super) fn sync_range(&self, from: u64, to: u64) -> Result<()> {
        let guard = crossbeam_epoch::pin();
        for segment in self.segments_between(from, to, &guard)? {
            if self.durability == Durability::Buffered {
                // Appends wrote these pages through the map (`sync` stores write with pwrite).
                let segment_start = segment.first_slot * self.slot_size;
                let local_from = from.saturating_sub(segment_start).min(segment.length());
                let local_to = (to - segment_start).min(segment.length());
                segment
                    .mapping
                    .release_page_table_entries(local_from as usize, local_to as usize);
            }
            segment.file.sync_data().map_err(|error| {
                Error::io(self.storage.path().join(&segment.name), "fdatasync", error)
            })?;
        }
        Ok(())
    }

    /// The segments holding any byte of the log from `from` to `to`, in log order.
    fn segments_between(
        &self,
        from: u64,
        to: u64,
        guard: &crossbeam_epoch::Guard,
    ) -> Result<Vec<Arc<Segment>>> {
        let mut segments = Vec::new();
        let mut slot = from / self.slot_size;
        while to > from && slot <= (to - 1) / self.slot_size {
            let segment = self.segment_of(slot * self.slot_size, guard)?;
            slot = segment.first_slot + segment.slot_count;
            segments.push(segment);
        }
        Ok(segments)
    }

    pub(super) fn record_watermark(&self, durable_offset: u64) -> Result<()> {
        let mut state = self.superblock.lock();
        if durable_offset <= state.current.durable_watermark {
            return Ok(());
        }
        state.current.durable_watermark = durable_offset;
        state.current.sequence += 1;
        superblock::write(
            self.superblock_file.as_ref(),
            &state.current,
            1 - state.synced_copy,
        )
        .map_err(|error| {
            Error::io(
                self.storage.path().join(superblock::SUPERBLOCK_FILE),
                "write",
                error,
            )
        })
    }

    /// Writes the superblock to the copy that is not the synced one, syncs it, and makes it
    /// the synced one.
    pub(super) fn sync_superblock(&self) -> Result<()> {
        let mut state = self.superblock.lock();
        state.current.sequence += 1;
        sync_superblock_copy(
            self.storage.as_ref(),
            self.superblock_file.as_ref(),
            &mut state,
        )?;
        // It holds the open's generation now.
        self.generation_pending.store(false, Ordering::Release);
        Ok(())
    }

    pub(super) fn poison(&self, error: Error) {
        let mut state = self.flush.lock();
        if state.poisoned.is_none() {
            state.poisoned = Some(error);
        }
        self.poisoned.store(true, Ordering::Release);
        self.flush_done.notify_all();
    }

    pub(super) fn background_flush(&self, interval: Duration) {
        loop {
            {
                let mut state = self.flush.lock();
                if state.shutdown {
                    return;
                }
                self.flush_done.wait_for(&mut state, interval);
                if state.shutdown {
                    return;
                }
            }
            let (version, _) = self.completion.load();
            if self.wait_durable(version).is_err() {
                return;
            }
        }
    }
}

impl LogShared {
    /// Returns once every version ≤ `version` is durable. The first waiter to find no flush in
    /// progress becomes the leader and syncs for everyone (group commit).
    pub(crate) fn wait_durable(&self, version: Version) -> Result<()> {
        let waiting_writers = self.waiting_writers.fetch_add(1, Ordering::AcqRel) + 1;
        let _counted = WaitingWriter(&self.waiting_writers);
        self.peak_waiting_writers
            .fetch_max(waiting_writers, Ordering::Relaxed);
        // Whether this follower's last spin ran out of time: it then sleeps instead.
        let mut spin_timed_out = false;
        loop {
            if self.durability == Durability::Sync
                && !spin_timed_out
                && self.sync_in_progress.load(Ordering::Acquire)
            {
                // A follower, without the flush lock: 16 writers coming back from a sync
                // would otherwise take it in turn, and a writer that finds it held sleeps.
                spin_timed_out = self.spin_while_syncing(version);
                if self.visible.load(Ordering::Acquire) >= version {
                    return Ok(());
                }
            }
            let mut state = self.flush.lock();
            if let Some(error) = &state.poisoned {
                return Err(error.clone());
            }
            if state.durable.0 >= version {
                return Ok(());
            }
            if state.flushing {
                if self.durability == Durability::Sync && !spin_timed_out {
                    // A sync started since the check above: spin for it.
                    continue;
                }
                // The checks ran under the lock, which the leader holds to publish the end of
                // its sync: no wake-up is missed.
                self.flush_done.wait(&mut state);
                spin_timed_out = false;
                continue;
            }
            self.lead_sync(version, &mut state);
        }
    }

    /// One sync as the leader: wait for the records up to `version` (and the expected group)
    /// to complete, sync them, publish the new durable version and wake the followers.
    pub(super) fn lead_sync(&self, version: Version, state: &mut MutexGuard<'_, FlushState>) {
        state.flushing = true;
        self.sync_in_progress.store(true, Ordering::Release);
        let from = state.durable;
        let peak_waiting_writers = self.peak_waiting_writers.swap(
            self.waiting_writers.load(Ordering::Acquire),
            Ordering::Relaxed,
        );
        let group_target = state.group_target(peak_waiting_writers);
        let linger = Duration::from_micros(state.last_sync_micros / 2).min(MAXIMUM_LINGER);
        MutexGuard::unlocked(state, || self.wait_completed(version));
        MutexGuard::unlocked(state, || {
            self.linger_for_group(from.0 + group_target, linger)
        });
        let (target, result, sync_micros) = MutexGuard::unlocked(state, || {
            let target = self.completion.load();
            let started = Instant::now();
            let result = self.write_and_sync(from.1, target.1);
            (target, result, started.elapsed().as_micros() as u64)
        });
        state.flushing = false;
        state.last_sync_micros = sync_micros;
        match result {
            Ok(()) => {
                state.durable = target;
                if self.durability == Durability::Sync {
                    self.visible.fetch_max(target.0, Ordering::AcqRel);
                    self.notify_watchers();
                }
            }
            Err(error) => {
                state.poisoned = Some(error);
                self.poisoned.store(true, Ordering::Release);
            }
        }
        // After the durable version (or the poison) is published: a follower that sees the
        // sync over finds its outcome.
        self.sync_in_progress.store(false, Ordering::Release);
        self.flush_done.notify_all();
        if state.poisoned.is_none() {
            // The watermark only ever claims what is already durable, so it needs no sync of
            // its own; it reaches the disk with the next superblock sync or write-back. Written
            // without the flush lock, which the group's writers take again as they come back
            // (the watermark keeps the highest offset it is given).
            MutexGuard::unlocked(state, || {
                let _ = self.record_watermark(target.1);
            });
        }
    }

    /// The leader's short wait before it syncs: until the records of the group it expects
    /// are complete (every version ≤ `goal_version`), so one sync covers them all, but never
    /// longer than `limit`. A lone writer's goal is its own record, so it does not wait.
    pub(super) fn linger_for_group(&self, goal_version: Version, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            self.advance_completion();
            if self.completion.load().0 >= goal_version || Instant::now() >= deadline {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// A follower's wait for the sync in progress, spinning: until `version` is durable (in
    /// `sync` mode the visible version is the durable one), the sync is over (it may not have
    /// covered `version`: the caller may have to lead the next), or `MAXIMUM_FOLLOWER_SPIN` has
    /// passed. Returns whether the time ran out.
    pub(super) fn spin_while_syncing(&self, version: Version) -> bool {
        let deadline = Instant::now() + MAXIMUM_FOLLOWER_SPIN;
        loop {
            if self.visible.load(Ordering::Acquire) >= version
                || !self.sync_in_progress.load(Ordering::Acquire)
            {
                return false;
            }
            if Instant::now() >= deadline {
                return true;
            }
            std::thread::yield_now();
        }
    }
}

/// Staged records adjacent in one segment, `records[first..after]`, written at `local` in it.
struct StagedRun<'g> {
    segment: &'g Arc<Segment>,
    local: u64,
    first: usize,
    after: usize,
}

/// Where a group's writes and syncs went: done (either way), or back to the plain path.
enum RingOutcome {
    Done(Result<()>),
    Plain,
}

impl LogShared {
    /// Writes the staged records below `to` and syncs the log from `from` to `to`: as one
    /// io_uring chain when the store has a ring and the group fits one, else with `pwrite`
    /// and `fdatasync`.
    pub(super) fn write_and_sync(&self, from: u64, to: u64) -> Result<()> {
        let records = self.staging.take_below(to);
        if let Some(ring) = &self.ring {
            if let RingOutcome::Done(result) =
                self.write_and_sync_by_ring(ring, &records, (from, to))
            {
                return result;
            }
        }
        self.write_staged(&records)
            .and_then(|()| self.sync_range(from, to))
    }

    /// `records` (in log order) as runs of adjacent records within one segment.
    fn staged_runs<'g>(
        &self,
        records: &[StagedRecord],
        guard: &'g crossbeam_epoch::Guard,
    ) -> Result<Vec<StagedRun<'g>>> {
        let mut runs = Vec::new();
        let mut first = 0;
        while first < records.len() {
            let start = records[first].start;
            let Some((segment, local)) = self.segment_at(start, guard) else {
                return Err(Error::corruption(
                    self.storage.path(),
                    start,
                    "no segment holds this staged record",
                ));
            };
            let segment_end = (segment.first_slot + segment.slot_count) * self.slot_size;
            let mut run_end = start + records[first].bytes.len() as u64;
            let mut after = first + 1;
            while after < records.len()
                && records[after].start == run_end
                && run_end + records[after].bytes.len() as u64 <= segment_end
            {
                run_end += records[after].bytes.len() as u64;
                after += 1;
            }
            segment.assert_allocated(run_end - start + local);
            runs.push(StagedRun {
                segment,
                local,
                first,
                after,
            });
            first = after;
        }
        Ok(runs)
    }

    /// Writes staged `records` (in log order): adjacent records in one segment with one write.
    pub(crate) fn write_staged(&self, records: &[StagedRecord]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let guard = crossbeam_epoch::pin();
        let mut run = self.staging.run.lock();
        for staged in self.staged_runs(records, &guard)? {
            let bytes: &[u8] = if staged.after == staged.first + 1 {
                &records[staged.first].bytes
            } else {
                run.clear();
                for record in &records[staged.first..staged.after] {
                    run.extend_from_slice(&record.bytes);
                }
                &run
            };
            staged
                .segment
                .file
                .write_at(bytes, staged.local)
                .map_err(|error| {
                    Error::io(
                        self.storage.path().join(&staged.segment.name),
                        "write",
                        error,
                    )
                })?;
        }
        if run.capacity() > RUN_BYTES_KEPT {
            *run = Vec::new();
        }
        Ok(())
    }

    /// The group's writes and the syncs of `range`'s segments as one io_uring chain. A short
    /// write, a ring that fails or a group too large for a chain goes back to the plain path,
    /// which writes everything again (the same bytes at the same offsets) and syncs.
    fn write_and_sync_by_ring(
        &self,
        ring: &SyncRing,
        records: &[StagedRecord],
        (from, to): (u64, u64),
    ) -> RingOutcome {
        let guard = crossbeam_epoch::pin();
        let runs = match self.staged_runs(records, &guard) {
            Ok(runs) => runs,
            Err(error) => return RingOutcome::Done(Err(error)),
        };
        let synced = match self.segments_between(from, to, &guard) {
            Ok(segments) => segments,
            Err(error) => return RingOutcome::Done(Err(error)),
        };
        // Each write takes at most IOV_MAX records; a longer run is split.
        let mut slices: Vec<(&Arc<Segment>, u64, Vec<&[u8]>)> = Vec::new();
        for run in &runs {
            let mut local = run.local;
            for chunk in records[run.first..run.after].chunks(MAXIMUM_RECORDS_PER_WRITE) {
                let bytes: Vec<&[u8]> = chunk.iter().map(|record| &record.bytes[..]).collect();
                let length: usize = bytes.iter().map(|bytes| bytes.len()).sum();
                slices.push((run.segment, local, bytes));
                local += length as u64;
            }
        }
        if slices.len() + synced.len() > RING_ENTRIES || (slices.is_empty() && synced.is_empty()) {
            return RingOutcome::Plain;
        }
        let mut writes = Vec::with_capacity(slices.len());
        for (segment, local, bytes) in &slices {
            let Some(file) = segment.file.descriptor() else {
                return RingOutcome::Plain;
            };
            writes.push(RingWrite {
                file,
                offset: *local,
                records: bytes,
            });
        }
        let mut syncs = Vec::with_capacity(synced.len());
        for segment in &synced {
            let Some(file) = segment.file.descriptor() else {
                return RingOutcome::Plain;
            };
            syncs.push(file);
        }
        let path = |segment: &Segment| self.storage.path().join(&segment.name);
        RingOutcome::Done(match ring.write_and_sync(&writes, &syncs) {
            Ok(()) => Ok(()),
            Err(ChainFailure::Write(position, Some(error))) => {
                Err(Error::io(path(slices[position].0), "write", error))
            }
            Err(ChainFailure::Sync(position, error)) => {
                Err(Error::io(path(&synced[position]), "fdatasync", error))
            }
            Err(ChainFailure::Write(_, None) | ChainFailure::Ring) => return RingOutcome::Plain,
        })
    }
}

pub(super) fn sync_superblock_copy(
    storage: &dyn Storage,
    file: &dyn StorageFile,
    state: &mut SuperblockState,
) -> Result<()> {
    let path = storage.path().join(superblock::SUPERBLOCK_FILE);
    let target = 1 - state.synced_copy;
    superblock::write(file, &state.current, target)
        .map_err(|error| Error::io(&path, "write", error))?;
    file.sync_data()
        .map_err(|error| Error::io(&path, "fdatasync", error))?;
    state.synced_copy = target;
    Ok(())
}
