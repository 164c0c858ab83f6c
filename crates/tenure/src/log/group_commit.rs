//! Group commit: in `sync` mode, writers waiting for durability share one fdatasync.
//!
//! The first waiter to find no sync in progress becomes the leader; the others (followers)
//! wait until a sync moves the durable version. How many records one sync covers decides the
//! rate of many writers: the leader lingers until the group it expects (as many writers as
//! waited at once over the last two syncs) has its records in, never longer than half the last
//! sync. Without that, 16 writers settled into alternating half groups: the writers a sync
//! released had not appended again when the next leader started. The leader then writes the
//! group's staged records (`staging.rs`) and syncs.
//!
//! One sync at a time, although this disk overlaps concurrent fdatasyncs of a file: leaders
//! syncing at once (up to 4, each through a file handle of its own) ran no faster, since all
//! 16 writers wait on the one sync and none is left to form the next group meanwhile, and
//! smaller groups that overlap made each sync slower (design.md §11, session 12).
//!
//! Leader and followers wait by spinning, yielding the CPU at each turn, for a bounded time
//! (followers: for the sync in progress, at most `MAXIMUM_FOLLOWER_SPIN`) before a follower
//! sleeps. Why: on this VM an idle virtual CPU halts, and waking a sleeper on it takes a host
//! round trip; with 16 writers on 2 CPUs those wake-ups strung out the hand-off between syncs.
//! A C probe of the bare protocol (`benches/probes/group_commit_protocol.c`) ran at 0.35–0.49
//! of 16 × the one-writer rate, 0.46–0.58 with spinning waits alone, 0.49–0.52 with staged
//! writes alone, and 0.65–0.95 with both (design.md §11). The cost is CPU time: a waiting
//! writer keeps its CPU busy (yielding to any other runnable thread) for up to a millisecond.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{Durability, LogShared};
use crate::error::{Error, Result};
use crate::types::Version;

/// The longest a group-commit leader lingers for more records before it syncs (it also never
/// lingers longer than half the last sync).
const MAXIMUM_LINGER: Duration = Duration::from_micros(1000);

/// The longest a follower spins for the sync in progress before it sleeps.
const MAXIMUM_FOLLOWER_SPIN: Duration = Duration::from_micros(1000);

pub(crate) struct FlushState {
    pub(crate) flushing: bool,
    /// How long the last sync took: the leader lingers at most half of it.
    pub(crate) last_sync_micros: u64,
    /// Every version ≤ .0 is durable; every log byte below .1 is durable.
    pub(crate) durable: (Version, u64),
    /// The most writers seen waiting at once during the sync before the last one (the last
    /// one's is `LogShared::peak_waiting_writers`): the size of group the next leader expects
    /// (see `group_target`).
    previous_peak_waiting_writers: u32,
    pub(crate) poisoned: Option<Error>,
    pub(crate) shutdown: bool,
}

impl FlushState {
    pub(crate) fn new(durable: (Version, u64)) -> FlushState {
        FlushState {
            flushing: false,
            last_sync_micros: 0,
            durable,
            previous_peak_waiting_writers: 0,
            poisoned: None,
            shutdown: false,
        }
    }

    /// How many records the next sync should cover: as many writers as waited at once over
    /// the last two syncs (`peak_waiting_writers`: during the sync that just ended). Writers a
    /// sync released come back with their next record while the following sync runs, so one
    /// sync's peak alone settles into alternating half groups. A lone writer expects a group of
    /// one and never lingers.
    fn group_target(&mut self, peak_waiting_writers: u32) -> u64 {
        let target = peak_waiting_writers.max(self.previous_peak_waiting_writers);
        self.previous_peak_waiting_writers = peak_waiting_writers;
        u64::from(target.max(1))
    }
}

/// Counts a writer in `wait_durable` for as long as it lives.
struct WaitingWriter<'a>(&'a AtomicU32);

impl Drop for WaitingWriter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
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
    fn lead_sync(&self, version: Version, state: &mut MutexGuard<'_, FlushState>) {
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
            let result = self
                .write_staged(target.1)
                .and_then(|()| self.sync_range(from.1, target.1));
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
    fn linger_for_group(&self, goal_version: Version, limit: Duration) {
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
    fn spin_while_syncing(&self, version: Version) -> bool {
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
