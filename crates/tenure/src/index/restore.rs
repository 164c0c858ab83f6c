//! Restoring a persisted index a shard at a time, so that an open does not wait for all of it.
//!
//! An open from a persisted index (`checkpoint/`) verifies the file's checksums and loads its
//! containers, then returns with the point index's 256 shards still unrestored. A shard is
//! restored the first time anything looks up a key that hashes to it, on that caller's thread,
//! and a background thread restores the rest in order (`engine/mod.rs`). Whatever needs every
//! slot (a listing, a checkpoint, the expiry sweep) restores every shard first. So the first
//! get after an open costs one shard's items (1/256 of them), not the whole index.
//!
//! Invariant: no slot of a shard is read or added through the index before the shard is
//! restored; every lookup by key passes [`Index::ready`] (one atomic load once all are).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::point_index::SHARDS;
use crate::error::{Error, Result};

const UNRESTORED: u8 = 0;
const RESTORING: u8 = 1;
const RESTORED: u8 = 2;
const FAILED: u8 = 3;

/// How long a lookup waits for another thread's restore of its shard. A shard's restore is
/// a few ms at 10M items; the bound is for a restore that never ends (a thread that panicked
/// in it marks it failed instead).
const RESTORE_WAIT: Duration = Duration::from_secs(60);

/// Which shards are restored: each shard's state, and how many are.
pub(crate) struct ShardStates {
    states: Box<[AtomicU8]>,
    restored: AtomicUsize,
}

impl ShardStates {
    pub(crate) fn new() -> ShardStates {
        ShardStates {
            states: (0..SHARDS).map(|_| AtomicU8::new(UNRESTORED)).collect(),
            restored: AtomicUsize::new(0),
        }
    }

    /// Runs `restore` for `shard` unless the shard is restored; waits when another thread is
    /// restoring it. Sets `all_restored` once the last shard is. A shard that failed (or
    /// whose restore did not end in time) returns `failure` with why.
    pub(crate) fn restore(
        &self,
        shard: usize,
        all_restored: &AtomicBool,
        restore: impl FnOnce() -> Result<()>,
        failure: impl Fn(&str) -> Error,
    ) -> Result<()> {
        let state = &self.states[shard];
        let deadline = Instant::now() + RESTORE_WAIT;
        loop {
            match state.compare_exchange(UNRESTORED, RESTORING, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return self.restore_elected(shard, all_restored, restore),
                Err(RESTORED) => return Ok(()),
                Err(FAILED) => return Err(failure("it did not decode")),
                Err(_) if Instant::now() >= deadline => {
                    return Err(failure("its restore did not end in time"))
                }
                Err(_) => std::thread::yield_now(),
            }
        }
    }

    /// Whether some shard failed to restore.
    pub(crate) fn any_failed(&self) -> bool {
        self.states
            .iter()
            .any(|state| state.load(Ordering::Acquire) == FAILED)
    }

    fn restore_elected(
        &self,
        shard: usize,
        all_restored: &AtomicBool,
        restore: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        /// Marks the shard failed should the restore unwind, so waiters do not wait on it.
        struct FailOnUnwind<'a>(&'a AtomicU8);
        impl Drop for FailOnUnwind<'_> {
            fn drop(&mut self) {
                if self.0.load(Ordering::Relaxed) == RESTORING {
                    self.0.store(FAILED, Ordering::Release);
                }
            }
        }
        let state = &self.states[shard];
        let _on_unwind = FailOnUnwind(state);
        let restored = restore();
        if restored.is_err() {
            state.store(FAILED, Ordering::Release);
            return restored;
        }
        state.store(RESTORED, Ordering::Release);
        // The count's read-modify-writes chain every shard's restore to the last one, whose
        // release store hands them all to a lookup that sees `all_restored`.
        if self.restored.fetch_add(1, Ordering::AcqRel) + 1 == SHARDS {
            all_restored.store(true, Ordering::Release);
        }
        Ok(())
    }
}
