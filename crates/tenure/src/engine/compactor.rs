//! The background compactor (docs/design.md §5): a thread per store that records expiries,
//! compacts once enough segments are sealed, and takes checkpoints when they are due.

use crate::engine::compaction::BackgroundPass;
use crate::engine::core::Engine;
use crate::error::Result;
use std::sync::Arc;

/// How often the background thread looks whether a checkpoint is due (at most `interval`).
const CHECKPOINT_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// The background compactor: a thread that wakes every `interval`, compacts once enough
/// segments are sealed, and takes a checkpoint of the index when one is due
/// (`checkpoints.rs`). It holds only a weak reference, so it never keeps a store alive.
pub(crate) struct BackgroundCompaction {
    stop: Arc<(parking_lot::Mutex<bool>, parking_lot::Condvar)>,
    thread: std::thread::JoinHandle<()>,
}

impl BackgroundCompaction {
    pub(crate) fn start(
        store: std::sync::Weak<Engine>,
        interval: std::time::Duration,
        sealed_segments_threshold: usize,
    ) -> Result<BackgroundCompaction> {
        let stop = Arc::new((parking_lot::Mutex::new(false), parking_lot::Condvar::new()));
        let thread_stop = Arc::clone(&stop);
        let thread = crate::base::background::spawn(
            "tenure-compactor",
            crate::base::background::Priority::Background,
            move || {
                let mut sweep_cursor = Vec::new();
                // The oldest sealed segment and how many were sealed when the last pass left
                // it alone as mostly live: it is looked at again once more are sealed (more
                // writes can have made more of it dead), not on every wake.
                let mut left_live: Option<(u64, usize)> = None;
                let mut checkpoint_retry_after_tail = 0;
                // Whether a checkpoint is due is looked at more often than the compaction
                // pass runs: a fast load writes the 64 MiB that make one due well within a
                // second, and a crash right after it would otherwise replay all of it.
                let wake = interval.min(CHECKPOINT_CHECK_INTERVAL);
                let stopping = || *thread_stop.0.lock();
                let mut next_pass = std::time::Instant::now() + interval;
                loop {
                    if stopped_after(&thread_stop, wake) {
                        return;
                    }
                    let Some(store) = store.upgrade() else { return };
                    if std::time::Instant::now() >= next_pass {
                        next_pass = std::time::Instant::now() + interval;
                        // Record expiries first, so compaction can drop them. Bounded per wake:
                        // 65,536 items take about 20 ms (cold, 1M items), so a store of any size
                        // costs about 2% of a CPU; a whole walk of 1M items takes 16 wakes.
                        const SWEEP_ITEMS_PER_WAKE: usize = 65_536;
                        const SWEEP_RECORDED_PER_WAKE: usize = 10_000;
                        if store
                            .sweep_expired_step(
                                &mut sweep_cursor,
                                SWEEP_ITEMS_PER_WAKE,
                                SWEEP_RECORDED_PER_WAKE,
                            )
                            .is_err()
                        {
                            return;
                        }
                        let sealed = store.log.sealed_segments();
                        let oldest = sealed.first().map(|(first_slot, _)| *first_slot);
                        let looked_at_already = left_live.is_some_and(|(slot, count)| {
                            Some(slot) == oldest && sealed.len() <= count
                        });
                        if sealed.len() >= sealed_segments_threshold.max(1) && !looked_at_already {
                            // A failure here (a poisoned log, a closed store) surfaces to the next
                            // caller of the store itself; the compactor just stops.
                            left_live = match store.compact_sealed() {
                                Ok(BackgroundPass::OldestMostlyLive) => {
                                    oldest.map(|slot| (slot, sealed.len()))
                                }
                                Ok(BackgroundPass::Cleaned) => None,
                                Err(_) => return,
                            };
                        }
                    }
                    // On every wake, and after a pass, whose compaction may have removed segments
                    // a saved index names.
                    store.checkpoint_if_due(&mut checkpoint_retry_after_tail, &stopping);
                }
            },
        )
        .map_err(|error| crate::error::Error::io("tenure-compactor", "spawn thread", error))?;
        Ok(BackgroundCompaction { stop, thread })
    }

    /// For a read-only open that follows the writer (`follow.rs`), instead of compaction: a
    /// thread that reads what the writer appended every `interval` (at most
    /// `FOLLOW_INTERVAL`), so a follower that makes no calls still reads on, and its claim
    /// on the reader table holds back the writer's compaction by at most that long.
    pub(crate) fn start_following(
        store: std::sync::Weak<Engine>,
        interval: std::time::Duration,
    ) -> Result<BackgroundCompaction> {
        const FOLLOW_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);
        let interval = interval.min(FOLLOW_INTERVAL);
        let stop = Arc::new((parking_lot::Mutex::new(false), parking_lot::Condvar::new()));
        let thread_stop = Arc::clone(&stop);
        let thread = crate::base::background::spawn(
            "tenure-follower",
            crate::base::background::Priority::Background,
            move || loop {
                if stopped_after(&thread_stop, interval) {
                    return;
                }
                let Some(store) = store.upgrade() else { return };
                // A failure stays with the follower; every call meets it.
                if store.follow_writer().is_err() {
                    return;
                }
            },
        )
        .map_err(|error| crate::error::Error::io("tenure-follower", "spawn thread", error))?;
        Ok(BackgroundCompaction { stop, thread })
    }

    pub(crate) fn stop(self) {
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        let _ = self.thread.join();
    }
}

/// Waits up to `interval` unless stopped already; whether the thread is to stop.
fn stopped_after(
    stop: &(parking_lot::Mutex<bool>, parking_lot::Condvar),
    interval: std::time::Duration,
) -> bool {
    let mut stopped = stop.0.lock();
    if !*stopped {
        stop.1.wait_for(&mut stopped, interval);
    }
    *stopped
}
