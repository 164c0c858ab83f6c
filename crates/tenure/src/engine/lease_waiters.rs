//! Waiters of `acquire_lease_wait`: first come, first served per key, woken by every lease
//! change (and every `WAITER_RECHECK`, since a lease running out has no event).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// At most this many waiters per key; more fail at once.
const MAX_WAITERS_PER_KEY: usize = 1024;
/// Lease expiry has no event: a waiter also re-checks this often.
const WAITER_RECHECK: Duration = Duration::from_millis(20);

/// Queues of waiting tickets by key.
#[derive(Default)]
pub(crate) struct LeaseWaiters {
    queues: Mutex<HashMap<Box<[u8]>, VecDeque<u64>>>,
    changed: Condvar,
    next_ticket: AtomicU64,
    /// How many wait in all: a lease change wakes no one when none do.
    waiting: AtomicUsize,
}

impl LeaseWaiters {
    /// Joins `key`'s queue; `None` when it is full.
    pub(crate) fn join(&self, key: &[u8]) -> Option<u64> {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let mut queues = self.queues.lock();
        let queue = queues.entry(Box::from(key)).or_default();
        if queue.len() >= MAX_WAITERS_PER_KEY {
            return None;
        }
        queue.push_back(ticket);
        self.waiting.fetch_add(1, Ordering::AcqRel);
        Some(ticket)
    }

    /// Whether `ticket` is first in `key`'s queue: its turn to try.
    pub(crate) fn is_first(&self, key: &[u8], ticket: u64) -> bool {
        self.queues
            .lock()
            .get(key)
            .and_then(|queue| queue.front().copied())
            == Some(ticket)
    }

    /// Leaves `key`'s queue and wakes the others (the next may now try).
    pub(crate) fn leave(&self, key: &[u8], ticket: u64) {
        let mut queues = self.queues.lock();
        if let Some(queue) = queues.get_mut(key) {
            queue.retain(|waiting| *waiting != ticket);
            if queue.is_empty() {
                queues.remove(key);
            }
        }
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        self.changed.notify_all();
    }

    /// Waits for a lease change, at most `timeout` (and at most `WAITER_RECHECK`).
    pub(crate) fn wait(&self, timeout: Duration) {
        let mut queues = self.queues.lock();
        self.changed
            .wait_for(&mut queues, timeout.min(WAITER_RECHECK));
    }

    /// Wakes every waiter after a lease changed.
    pub(crate) fn notify(&self) {
        if self.waiting.load(Ordering::Acquire) > 0 {
            let _queues = self.queues.lock();
            self.changed.notify_all();
        }
    }
}
