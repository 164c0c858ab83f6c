//! The atomics of the log's lock-free completion protocol and of the ordered index, through
//! one module, so that the same code runs under shuttle's randomized scheduler in tests
//! (`cargo test -p tenure --features shuttle --lib shuttle_`). With the feature on, these types
//! only work inside `shuttle::check_*`: build it for those tests alone, never for the rest of
//! the suite.

#[cfg(not(feature = "shuttle"))]
pub(crate) use portable_atomic::AtomicU128;
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// One turn of waiting for another thread's progress: a backoff step, or under shuttle a
/// scheduling point (a spin there would never let the awaited thread run).
#[cfg(not(feature = "shuttle"))]
pub(crate) fn spin_once(backoff: &crossbeam_utils::Backoff) {
    backoff.snooze();
}

#[cfg(feature = "shuttle")]
pub(crate) fn spin_once(_backoff: &crossbeam_utils::Backoff) {
    shuttle::thread::yield_now();
}

/// shuttle has no 128-bit atomic; a shuttle mutex gives the same atomicity (each operation is
/// one scheduling point), which is what the protocol relies on.
#[cfg(feature = "shuttle")]
pub(crate) struct AtomicU128(shuttle::sync::Mutex<u128>);

#[cfg(feature = "shuttle")]
impl AtomicU128 {
    pub(crate) fn new(value: u128) -> AtomicU128 {
        AtomicU128(shuttle::sync::Mutex::new(value))
    }

    pub(crate) fn load(&self, _order: Ordering) -> u128 {
        *self.0.lock().unwrap()
    }

    pub(crate) fn store(&self, value: u128, _order: Ordering) {
        *self.0.lock().unwrap() = value;
    }

    pub(crate) fn compare_exchange(
        &self,
        current: u128,
        new: u128,
        _success: Ordering,
        _failure: Ordering,
    ) -> Result<u128, u128> {
        let mut value = self.0.lock().unwrap();
        if *value == current {
            *value = new;
            Ok(current)
        } else {
            Err(*value)
        }
    }
}
