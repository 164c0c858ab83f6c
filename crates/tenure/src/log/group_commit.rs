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
//! smaller groups that overlap made each sync slower (docs/design.md §11 "Group commit").
//!
//! Leader and followers wait by spinning, yielding the CPU at each turn, for a bounded time
//! (followers: for the sync in progress, at most `MAXIMUM_FOLLOWER_SPIN`) before a follower
//! sleeps. Why: on this VM an idle virtual CPU halts, and waking a sleeper on it takes a host
//! round trip; with 16 writers on 2 CPUs those wake-ups strung out the hand-off between syncs.
//! A C probe of the bare protocol (`benches/probes/group_commit_protocol.c`) ran at 0.35–0.49
//! of 16 × the one-writer rate, 0.46–0.58 with spinning waits alone, 0.49–0.52 with staged
//! writes alone, and 0.65–0.95 with both (docs/design.md §11 "Group commit"). The cost is CPU time: a waiting
//! writer keeps its CPU busy (yielding to any other runnable thread) for up to a millisecond.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::error::Error;
use crate::types::Version;

/// The longest a group-commit leader lingers for more records before it syncs (it also never
/// lingers longer than half the last sync).
pub(super) const MAXIMUM_LINGER: Duration = Duration::from_micros(1000);

/// The longest a follower spins for the sync in progress before it sleeps.
pub(super) const MAXIMUM_FOLLOWER_SPIN: Duration = Duration::from_micros(1000);

pub(crate) struct FlushState {
    pub(crate) flushing: bool,
    /// How long the last sync took: the leader lingers at most half of it.
    pub(crate) last_sync_micros: u64,
    /// Every version ≤ .0 is durable; every log byte below .1 is durable.
    pub(crate) durable: (Version, u64),
    /// The most writers seen waiting at once during the sync before the last one (the last
    /// one's is `LogShared::peak_waiting_writers`): the size of group the next leader expects
    /// (see `group_target`).
    pub(super) previous_peak_waiting_writers: u32,
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
    pub(super) fn group_target(&mut self, peak_waiting_writers: u32) -> u64 {
        let target = peak_waiting_writers.max(self.previous_peak_waiting_writers);
        self.previous_peak_waiting_writers = peak_waiting_writers;
        u64::from(target.max(1))
    }
}

/// Counts a writer in `wait_durable` for as long as it lives.
pub(super) struct WaitingWriter<'a>(pub(super) &'a AtomicU32);

impl Drop for WaitingWriter<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
