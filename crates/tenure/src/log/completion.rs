//! Which versions are complete: appenders finish their copies in any order, and the
//! `completed` word advances over a contiguous prefix only, so a reader (or an acknowledgement)
//! that sees version v complete knows every version before it is complete too.
//!
//! An appender whose predecessor is already complete moves the word from
//! `(version − 1, its start offset)` to `(version, end offset)` with one compare-and-swap and
//! touches nothing else. Otherwise it writes its record's end offset, then its version, into
//! the slot `version % slot_count`; whoever finds the slot after the completed prefix filled
//! advances the word with one compare-and-swap of `(version, end offset)`. A slot is reused
//! only by a version `slot_count` later, which `reserve` hands out only once this one
//! completed — so the exchange that would take a reused slot's pair always fails.

use crate::base::sync::{AtomicU128, AtomicU64, Ordering};
use crate::types::Version;

/// Padded to a cache line: adjacent versions are completed by different threads.
/// The `(version, offset)` pair of the reservation and completion words, as one 128-bit word.
pub(super) fn pack(version: u64, offset: u64) -> u128 {
    ((version as u128) << 64) | offset as u128
}

pub(super) fn unpack(word: u128) -> (u64, u64) {
    ((word >> 64) as u64, word as u64)
}

#[repr(align(64))]
struct CompletionSlot {
    version: AtomicU64,
    end_offset: AtomicU64,
}

pub(crate) struct CompletionTracker {
    /// `(every version ≤ this is complete, end offset of that version)`.
    completed: AtomicU128,
    slots: Box<[CompletionSlot]>,
}

impl CompletionTracker {
    pub(crate) fn new(slot_count: u64, last_version: Version, end_offset: u64) -> Self {
        assert!(slot_count > 0, "a completion ring needs at least one slot");
        CompletionTracker {
            completed: AtomicU128::new(pack(last_version, end_offset)),
            slots: (0..slot_count)
                .map(|_| CompletionSlot {
                    version: AtomicU64::new(0),
                    end_offset: AtomicU64::new(0),
                })
                .collect(),
        }
    }

    /// How many versions may be in flight (reserved, not complete) at once.
    pub(crate) fn slot_count(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Declares every version ≤ `version` complete, ending at `end_offset`: for a follower,
    /// whose versions were completed by another process (`follow.rs`).
    pub(crate) fn set(&self, version: Version, end_offset: u64) {
        self.completed
            .store(pack(version, end_offset), Ordering::Release);
    }

    /// `(every version ≤ this is complete, the end offset of that version)`.
    pub(crate) fn load(&self) -> (Version, u64) {
        unpack(self.completed.load(Ordering::Acquire))
    }

    fn slot(&self, version: Version) -> &CompletionSlot {
        // A mask, not a division, for the ring of a power-of-two size (every log's).
        let slot_count = self.slot_count();
        let index = if slot_count.is_power_of_two() {
            version & (slot_count - 1)
        } else {
            version % slot_count
        };
        &self.slots[index as usize]
    }

    /// Starts loading the ring slot that completing `version` reads (its successor's, in
    /// `advance`): a line no thread has touched for `slot_count` versions, which was a cache
    /// miss on every append of a lone writer (callgrind). Called once `version` is reserved,
    /// so the load overlaps the record's copy.
    pub(crate) fn prefetch_successor_slot(&self, version: Version) {
        crate::base::prefetch(self.slot(version + 1));
    }

    /// Marks `version` (whose record starts at `start_offset`) complete and advances the
    /// prefix as far as it can. Returns the newest version this call advanced the prefix to,
    /// if it moved it.
    ///
    /// When the version before is already complete and ended where this record starts (no
    /// segment change between them), one compare-and-swap moves the prefix straight here and
    /// the ring slot is left alone: one shared cache line fewer per record. Otherwise the
    /// record waits in its slot for whoever completes its predecessor.
    pub(crate) fn complete(
        &self,
        version: Version,
        start_offset: u64,
        end_offset: u64,
    ) -> Option<Version> {
        let predecessor = pack(version - 1, start_offset);
        if self
            .completed
            .compare_exchange(
                predecessor,
                pack(version, end_offset),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
        {
            // A successor that found this version incomplete waits in its slot.
            return self.advance().or(Some(version));
        }
        let slot = self.slot(version);
        slot.end_offset.store(end_offset, Ordering::Relaxed);
        slot.version.store(version, Ordering::Release);
        self.advance()
    }

    /// Advances the completed prefix over every slot already filled in order. Returns the
    /// newest version this call advanced it to, if it moved it.
    pub(crate) fn advance(&self) -> Option<Version> {
        let mut advanced_to = None;
        loop {
            let current = self.completed.load(Ordering::Acquire);
            let next = unpack(current).0 + 1;
            let slot = self.slot(next);
            if slot.version.load(Ordering::Acquire) != next {
                return advanced_to;
            }
            let end_offset = slot.end_offset.load(Ordering::Acquire);
            // A slot is reused only after its version completed, which fails the exchange
            // below; the re-check keeps a torn (version, end) pair out anyway.
            if slot.version.load(Ordering::Acquire) != next {
                return advanced_to;
            }
            if self
                .completed
                .compare_exchange(
                    current,
                    pack(next, end_offset),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
            {
                advanced_to = Some(next);
            }
        }
    }
}

#[cfg(all(test, feature = "shuttle"))]
mod shuttle_tests {
    //! The completion protocol under shuttle's randomized (PCT) scheduler: appenders that
    //! complete out of order, a ring smaller than the number of versions (so slots are reused),
    //! and an observer that checks, at every point it can run, that the completed prefix never
    //! claims a version whose record is not written, nor pairs a version with another's end.
    //! Each appender's last record is not waited for, as an aborted reservation is not: the
    //! prefix must still reach the last version, with no appender left to advance it.

    use super::CompletionTracker;
    use shuttle::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use shuttle::sync::Arc;
    use shuttle::thread;

    const APPENDERS: u64 = 3;
    const RECORDS_PER_APPENDER: u64 = 2;
    const VERSIONS: u64 = APPENDERS * RECORDS_PER_APPENDER;

    fn end_of(version: u64) -> u64 {
        version * 100 + 7
    }

    /// Where a record starts: where the one before ended, except after every third version
    /// (a segment change), so both ways of completing are exercised.
    fn start_of(version: u64) -> u64 {
        if version % 3 == 0 {
            end_of(version - 1) + 50
        } else if version == 1 {
            0
        } else {
            end_of(version - 1)
        }
    }

    fn scenario(slot_count: u64) {
        let tracker = Arc::new(CompletionTracker::new(slot_count, 0, 0));
        // Stands in for the reservation word: versions in order, never more than the ring holds.
        let next_version = Arc::new(AtomicU64::new(1));
        let written: Arc<Vec<AtomicBool>> =
            Arc::new((0..=VERSIONS).map(|_| AtomicBool::new(false)).collect());
        let mut threads = Vec::new();
        for _ in 0..APPENDERS {
            let (tracker, next_version, written) =
                (tracker.clone(), next_version.clone(), written.clone());
            threads.push(thread::spawn(move || {
                for record in 0..RECORDS_PER_APPENDER {
                    let version = loop {
                        let version = next_version.load(Ordering::Acquire);
                        if version.saturating_sub(tracker.load().0) > tracker.slot_count() {
                            // As `LogShared::reserve` does: the last to complete may have
                            // left its successors' slots for someone else to advance over.
                            tracker.advance();
                            thread::yield_now();
                            continue;
                        }
                        if next_version
                            .compare_exchange(
                                version,
                                version + 1,
                                Ordering::AcqRel,
                                Ordering::Acquire,
                            )
                            .is_ok()
                        {
                            break version;
                        }
                    };
                    written[version as usize].store(true, Ordering::Release);
                    tracker.complete(version, start_of(version), end_of(version));
                    if record + 1 == RECORDS_PER_APPENDER {
                        // Not acknowledged, like an `Abort` record.
                        break;
                    }
                    // An acknowledgement waits for the prefix to reach its version.
                    while tracker.load().0 < version {
                        tracker.advance();
                        thread::yield_now();
                    }
                }
            }));
        }
        let observer = {
            let (tracker, written) = (tracker.clone(), written.clone());
            thread::spawn(move || {
                for _ in 0..VERSIONS * 2 {
                    let (completed, end_offset) = tracker.load();
                    if completed > 0 {
                        assert_eq!(end_offset, end_of(completed), "torn (version, end) pair");
                    }
                    for version in 1..=completed {
                        assert!(
                            written[version as usize].load(Ordering::Acquire),
                            "version {version} claimed complete before it was written"
                        );
                    }
                    thread::yield_now();
                }
            })
        };
        for thread in threads {
            thread.join().unwrap();
        }
        observer.join().unwrap();
        assert_eq!(
            tracker.load(),
            (VERSIONS, end_of(VERSIONS)),
            "every record completed, but the prefix stopped short"
        );
    }

    #[test]
    fn shuttle_completion_prefix_with_a_ring_smaller_than_the_versions() {
        shuttle::check_pct(|| scenario(2), 20_000, 3);
    }

    #[test]
    fn shuttle_completion_prefix_with_one_slot() {
        shuttle::check_pct(|| scenario(1), 5_000, 3);
    }

    #[test]
    fn shuttle_completion_prefix_random_schedules() {
        shuttle::check_random(|| scenario(4), 20_000);
    }
}
