//! The one clock every time decision reads (docs/spec.md §1): leases, locks, TTL and date conditions.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch (UTC).
pub type Timestamp = u64;

pub const MICROS_PER_SECOND: u64 = 1_000_000;

/// A source of the current time. The store owns one and asks it at every decision.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
    /// Whether tests move this clock by hand: a cluster backend, whose time is the cluster's,
    /// refuses such a clock.
    fn is_manual(&self) -> bool {
        false
    }
}

/// Wall-clock time read once at creation, then advanced by a monotonic clock, so within one
/// run a clock that jumps back can neither stretch nor shorten a lease (docs/spec.md §11).
#[derive(Debug)]
pub struct SystemClock {
    wall_at_start: Timestamp,
    monotonic_start_nanos: u64,
}

/// `CLOCK_MONOTONIC` in nanoseconds, read directly: `Instant::elapsed` and `as_micros` (a
/// checked timespec subtraction, then 128-bit arithmetic) took about 100 instructions of
/// every get, this about 40 (callgrind).
fn monotonic_nanos() -> u64 {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC exists on every Linux.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut time) };
    assert_eq!(result, 0, "clock_gettime(CLOCK_MONOTONIC)");
    time.tv_sec as u64 * 1_000_000_000 + time.tv_nsec as u64
}

impl SystemClock {
    pub fn new() -> SystemClock {
        let wall_at_start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_micros() as u64)
            .unwrap_or(0);
        SystemClock {
            wall_at_start,
            monotonic_start_nanos: monotonic_nanos(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        self.wall_at_start + (monotonic_nanos() - self.monotonic_start_nanos) / 1_000
    }
}

/// The time a read judges expiries and leases at. A plain read takes it from the clock only
/// when it meets one (`ReadTime::now`): most items have neither an expiry nor a lease, and a
/// clock read took 23–33 ns here, 3–5% of a get. A snapshot's reads use the snapshot's time.
pub(crate) enum ReadTime<'c> {
    At(Timestamp),
    FromClock {
        clock: &'c dyn Clock,
        read: std::cell::Cell<Option<Timestamp>>,
    },
}

impl<'c> ReadTime<'c> {
    pub(crate) fn from_clock(clock: &'c dyn Clock) -> ReadTime<'c> {
        ReadTime::FromClock {
            clock,
            read: std::cell::Cell::new(None),
        }
    }

    /// The read's time: the clock is read once, at the first call, and that time kept.
    pub(crate) fn now(&self) -> Timestamp {
        match self {
            ReadTime::At(time) => *time,
            ReadTime::FromClock { clock, read } => {
                let time = read.get().unwrap_or_else(|| clock.now());
                read.set(Some(time));
                time
            }
        }
    }
}

/// A clock that moves only when a test moves it. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now_micros: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn new(now: Timestamp) -> ManualClock {
        ManualClock {
            now_micros: Arc::new(AtomicU64::new(now)),
        }
    }

    pub fn advance_micros(&self, micros: u64) {
        self.now_micros.fetch_add(micros, Ordering::SeqCst);
    }

    pub fn advance_seconds(&self, seconds: u64) {
        self.advance_micros(seconds * MICROS_PER_SECOND);
    }

    /// Sets the time, also backwards (to test a clock that jumped back).
    pub fn set(&self, now: Timestamp) {
        self.now_micros.store(now, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        self.now_micros.load(Ordering::SeqCst)
    }

    fn is_manual(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_starts_at_the_wall_time_and_never_goes_back() {
        let wall = || {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("after 1970")
                .as_micros() as u64
        };
        let before = wall();
        let clock = SystemClock::new();
        let first = clock.now();
        let after = wall();
        assert!(
            before <= first && first <= after + 1_000,
            "{before} ≤ {first} ≤ {after}"
        );
        let mut previous = first;
        for _ in 0..100_000 {
            let now = clock.now();
            assert!(now >= previous, "{now} after {previous}");
            previous = now;
        }
        // In microseconds: 100,000 reads take well under a minute.
        assert!(previous - first < 60 * MICROS_PER_SECOND);
    }
}
