//! The state word of a handle registry slot, and the protocol over it that lets a call use the
//! slot's object without a lock. A call enters with one `fetch_add` and checks the handle
//! against the word it got back; it leaves with one `fetch_sub`. A free or a store close that
//! finds calls in flight marks the word instead of waiting, and the last call out finishes the
//! work. An object is therefore read only by the calls counted in its word, and changed only by
//! whoever claimed the word with no call in flight.
//!
//! The word, low bits first:
//!
//! ```text
//! | calls in flight: 24 | kind: 4 | CLOSED | DROP_STORE | FREEING | LIVE | generation: 32 |
//! ```
//!
//! - A vacant slot has only its generation (the one its next handle gets) and the count of
//!   refused calls still leaving. Publishing an object adds `LIVE` and its kind.
//! - `CLOSED`: a store handle was closed; every later call is refused.
//! - `DROP_STORE`: the closed store's engine reference is still in the slot because calls were
//!   in flight; the last one out drops it.
//! - `FREEING`: the handle was freed (no longer `LIVE`) with calls in flight; the last one out
//!   empties the slot and moves the generation on.

use crate::sync::{fence, AtomicU64, Ordering};

const CALLS_MASK: u64 = (1 << 24) - 1;
/// A call that finds this many calls in flight on its slot is refused (bounds the field far
/// below its width, so concurrent entries cannot carry into the kind).
const CALLS_LIMIT: u64 = 1 << 23;
const KIND_SHIFT: u32 = 24;
const KIND_MASK: u64 = 0xF << KIND_SHIFT;
const CLOSED: u64 = 1 << 28;
const DROP_STORE: u64 = 1 << 29;
const FREEING: u64 = 1 << 30;
const LIVE: u64 = 1 << 31;
const GENERATION_SHIFT: u32 = 32;
/// The generation field of a handle: half of a pointer's bits (the other half is the index),
/// at most 32.
pub(crate) const GENERATION_MASK: u64 = if usize::BITS / 2 >= 32 {
    u32::MAX as u64
} else {
    (1 << (usize::BITS / 2)) - 1
};

/// Why a call was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Freed, never returned, or of an older generation.
    NotLive,
    /// Live, but of this other kind.
    WrongKind(u8),
    /// A closed store.
    Closed,
    /// `CALLS_LIMIT` calls in flight on the slot.
    Busy,
}

/// Work the claimer of a slot must do, with no other call reading its object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pending {
    /// Drop the closed store's engine reference, then leave: the claimer counts as a call
    /// until it has (so a free cannot empty the slot meanwhile).
    DropStore,
    /// Take the object out and put the slot on the free list: the slot is vacant already.
    Free,
}

/// What a free found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Freed {
    /// No call in flight: the slot is vacant and the freeing thread empties it now.
    Now,
    /// Calls in flight: the last one out empties the slot.
    Later,
}

pub(crate) struct SlotState(AtomicU64);

impl SlotState {
    pub(crate) fn vacant() -> SlotState {
        SlotState(AtomicU64::new(1 << GENERATION_SHIFT))
    }

    /// The generation of a vacant slot: the one its next handle gets.
    #[cfg(test)]
    pub(crate) fn generation(&self) -> u64 {
        self.0.load(Ordering::Relaxed) >> GENERATION_SHIFT
    }

    /// Makes a vacant slot live with an object of `kind` (1..=15), written before this call;
    /// returns the handle's generation. Only the holder of the registry's allocator lock calls
    /// it, on a slot it took from the free list or never used.
    pub(crate) fn publish(&self, kind: u8) -> u64 {
        assert!(
            (1..=15).contains(&kind),
            "a kind fits its 4 bits and is never 0"
        );
        // Release: a call that enters (Acquire) sees the object written before.
        let seen = self
            .0
            .fetch_add(LIVE | (u64::from(kind) << KIND_SHIFT), Ordering::Release);
        assert_eq!(
            seen & !(CALLS_MASK | (GENERATION_MASK << GENERATION_SHIFT)),
            0,
            "only a vacant slot is published"
        );
        seen >> GENERATION_SHIFT
    }

    /// Enters a call on the handle of `generation` and `kind`. On `Ok` the object stays as it
    /// is until the matching [`SlotState::leave`]; on `Err` the call counts as entered too and
    /// must leave as well (it must not read the object).
    #[inline]
    pub(crate) fn enter(&self, generation: u64, kind: u8) -> Result<(), Refused> {
        let seen = self.0.fetch_add(1, Ordering::Acquire);
        let expected = (generation << GENERATION_SHIFT) | LIVE | (u64::from(kind) << KIND_SHIFT);
        if seen & !CALLS_MASK == expected && seen & CALLS_MASK < CALLS_LIMIT {
            return Ok(());
        }
        Err(refusal(seen, generation, kind))
    }

    /// Leaves a call. `Some` when this was the last call out of a slot marked for work and
    /// this thread claimed it: it must do that work.
    #[inline]
    pub(crate) fn leave(&self) -> Option<Pending> {
        let seen = self.0.fetch_sub(1, Ordering::Release);
        debug_assert!(seen & CALLS_MASK > 0, "a call leaves only after entering");
        if seen & CALLS_MASK == 1 && seen & (FREEING | DROP_STORE) != 0 {
            return self.claim();
        }
        None
    }

    /// Claims the work marked on a slot with no call in flight: at most one thread wins it.
    #[cold]
    fn claim(&self) -> Option<Pending> {
        // Pairs with every leaving call's Release: their reads of the object happen before the
        // claimer changes it.
        fence(Ordering::Acquire);
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            if current & CALLS_MASK != 0 || current & (FREEING | DROP_STORE) == 0 {
                return None;
            }
            let (next, pending) = if current & FREEING != 0 {
                (vacant_after(current), Pending::Free)
            } else {
                ((current & !DROP_STORE) + 1, Pending::DropStore)
            };
            match self
                .0
                .compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(pending),
                Err(actual) => current = actual,
            }
        }
    }

    /// Frees the handle of `generation` and `kind` (closed or not): it is refused from now on.
    pub(crate) fn free(&self, generation: u64, kind: u8) -> Result<Freed, Refused> {
        let mut current = self.0.load(Ordering::Acquire);
        loop {
            let live = (generation << GENERATION_SHIFT) | LIVE;
            if current & ((GENERATION_MASK << GENERATION_SHIFT) | LIVE) != live {
                return Err(Refused::NotLive);
            }
            let actual_kind = kind_of(current);
            if actual_kind != kind {
                return Err(Refused::WrongKind(actual_kind));
            }
            let (next, freed) = if current & CALLS_MASK == 0 {
                (vacant_after(current), Freed::Now)
            } else {
                ((current & !LIVE) | FREEING, Freed::Later)
            };
            match self
                .0
                .compare_exchange(current, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(freed),
                Err(actual) => current = actual,
            }
        }
    }

    /// Closes the store whose call (entered) makes this one: later calls are refused, and the
    /// last call out (this one, if none else is in flight) drops the slot's engine reference.
    /// `Err(Closed)` when another close got there first.
    pub(crate) fn close(&self) -> Result<(), Refused> {
        let seen = self.0.fetch_or(CLOSED | DROP_STORE, Ordering::AcqRel);
        debug_assert!(seen & CALLS_MASK > 0, "the closing call is in flight");
        if seen & CLOSED != 0 {
            return Err(Refused::Closed);
        }
        Ok(())
    }
}

fn kind_of(word: u64) -> u8 {
    ((word & KIND_MASK) >> KIND_SHIFT) as u8
}

/// The vacant word that follows `word` (no call in flight): the next generation, never 0.
fn vacant_after(word: u64) -> u64 {
    debug_assert_eq!(word & CALLS_MASK, 0);
    let generation = (word >> GENERATION_SHIFT) & GENERATION_MASK;
    let next = if generation == GENERATION_MASK {
        1
    } else {
        generation + 1
    };
    next << GENERATION_SHIFT
}

#[cold]
fn refusal(seen: u64, generation: u64, kind: u8) -> Refused {
    let live = (generation << GENERATION_SHIFT) | LIVE;
    if seen & ((GENERATION_MASK << GENERATION_SHIFT) | LIVE) != live {
        Refused::NotLive
    } else if kind_of(seen) != kind {
        Refused::WrongKind(kind_of(seen))
    } else if seen & CLOSED != 0 {
        Refused::Closed
    } else {
        Refused::Busy
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn a_live_slot_admits_its_generation_and_kind_only() {
        let state = SlotState::vacant();
        let generation = state.publish(3);
        assert_eq!(state.enter(generation, 3), Ok(()));
        assert_eq!(state.leave(), None);
        assert_eq!(state.enter(generation + 1, 3), Err(Refused::NotLive));
        assert_eq!(state.leave(), None);
        assert_eq!(state.enter(generation, 4), Err(Refused::WrongKind(3)));
        assert_eq!(state.leave(), None);
    }

    #[test]
    fn a_free_with_no_call_in_flight_vacates_at_once() {
        let state = SlotState::vacant();
        let generation = state.publish(2);
        assert_eq!(state.free(generation, 1), Err(Refused::WrongKind(2)));
        assert_eq!(state.free(generation, 2), Ok(Freed::Now));
        assert_eq!(state.generation(), generation + 1);
        assert_eq!(state.free(generation, 2), Err(Refused::NotLive));
        assert_eq!(state.enter(generation, 2), Err(Refused::NotLive));
        assert_eq!(state.leave(), None);
    }

    #[test]
    fn the_last_call_out_finishes_a_free() {
        let state = SlotState::vacant();
        let generation = state.publish(2);
        assert_eq!(state.enter(generation, 2), Ok(()));
        assert_eq!(state.enter(generation, 2), Ok(()));
        assert_eq!(state.free(generation, 2), Ok(Freed::Later));
        assert_eq!(state.enter(generation, 2), Err(Refused::NotLive));
        assert_eq!(state.leave(), None);
        assert_eq!(state.leave(), None);
        assert_eq!(state.leave(), Some(Pending::Free));
        assert_eq!(state.generation(), generation + 1);
    }

    #[test]
    fn a_close_refuses_later_calls_and_its_last_call_out_drops_the_engine() {
        let state = SlotState::vacant();
        let generation = state.publish(1);
        assert_eq!(state.enter(generation, 1), Ok(()));
        assert_eq!(state.enter(generation, 1), Ok(()));
        assert_eq!(state.close(), Ok(()));
        assert_eq!(state.close(), Err(Refused::Closed));
        assert_eq!(state.enter(generation, 1), Err(Refused::Closed));
        assert_eq!(state.leave(), None);
        assert_eq!(state.leave(), None);
        assert_eq!(state.leave(), Some(Pending::DropStore));
        // The claimer counts as a call until it leaves: a free now waits for it.
        assert_eq!(state.free(generation, 1), Ok(Freed::Later));
        assert_eq!(state.leave(), Some(Pending::Free));
    }

    #[test]
    fn generations_wrap_past_zero() {
        let word = (GENERATION_MASK << GENERATION_SHIFT) | LIVE;
        assert_eq!(vacant_after(word), 1 << GENERATION_SHIFT);
    }
}

#[cfg(all(test, feature = "shuttle"))]
mod shuttle_tests {
    //! The protocol under shuttle's schedulers, over a model object: calls that entered must
    //! find the object whole until they leave; the slot is emptied exactly once, and the
    //! engine reference dropped exactly once, whoever ends up doing it.

    use super::{Freed, Pending, SlotState};
    use shuttle::sync::atomic::{AtomicU64, Ordering};
    use shuttle::sync::Arc;
    use shuttle::thread;

    const STORE: u8 = 1;

    /// The model object: whether the engine reference and the object are still in the slot,
    /// and how often each was dropped.
    struct Model {
        state: SlotState,
        engine: AtomicU64,
        object: AtomicU64,
        engine_drops: AtomicU64,
        object_drops: AtomicU64,
    }

    impl Model {
        /// Does what the claimer of `pending` must, and whatever its leaving claims next.
        fn finish(&self, mut pending: Option<Pending>) {
            while let Some(work) = pending {
                pending = match work {
                    Pending::DropStore => {
                        assert_eq!(self.object.load(Ordering::SeqCst), 1, "object gone");
                        if self.engine.swap(0, Ordering::SeqCst) == 1 {
                            self.engine_drops.fetch_add(1, Ordering::SeqCst);
                        }
                        self.state.leave()
                    }
                    Pending::Free => {
                        assert_eq!(self.object.swap(0, Ordering::SeqCst), 1, "emptied twice");
                        self.engine.store(0, Ordering::SeqCst);
                        self.object_drops.fetch_add(1, Ordering::SeqCst);
                        None
                    }
                };
            }
        }

        fn call(&self, generation: u64) {
            let entered = self.state.enter(generation, STORE);
            if entered.is_ok() {
                assert_eq!(self.object.load(Ordering::SeqCst), 1, "read a freed object");
                assert_eq!(
                    self.engine.load(Ordering::SeqCst),
                    1,
                    "read a dropped engine"
                );
                thread::yield_now();
                assert_eq!(self.object.load(Ordering::SeqCst), 1, "freed under a call");
                assert_eq!(
                    self.engine.load(Ordering::SeqCst),
                    1,
                    "dropped under a call"
                );
            }
            let pending = self.state.leave();
            self.finish(pending);
        }

        fn close(&self, generation: u64) {
            if self.state.enter(generation, STORE).is_ok() && self.state.close().is_ok() {
                thread::yield_now();
            }
            let pending = self.state.leave();
            self.finish(pending);
        }

        fn free(&self, generation: u64) {
            if self.state.free(generation, STORE) == Ok(Freed::Now) {
                self.finish(Some(Pending::Free));
            }
        }
    }

    fn scenario() {
        let model = Arc::new(Model {
            state: SlotState::vacant(),
            engine: AtomicU64::new(1),
            object: AtomicU64::new(1),
            engine_drops: AtomicU64::new(0),
            object_drops: AtomicU64::new(0),
        });
        let generation = model.state.publish(STORE);
        let threads: Vec<_> = (0..4)
            .map(|role| {
                let model = Arc::clone(&model);
                thread::spawn(move || match role {
                    0 => model.free(generation),
                    1 => model.close(generation),
                    _ => {
                        model.call(generation);
                        model.call(generation);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(model.object_drops.load(Ordering::SeqCst), 1);
        assert_eq!(model.object.load(Ordering::SeqCst), 0);
        assert!(model.engine_drops.load(Ordering::SeqCst) <= 1);
        assert_eq!(model.state.generation(), generation + 1);
        // Vacant, with no call in flight: a new object can be published.
        assert_eq!(model.state.publish(STORE), generation + 1);
    }

    #[test]
    fn shuttle_registry_gate_random_schedules() {
        shuttle::check_random(scenario, 20_000);
    }

    #[test]
    fn shuttle_registry_gate_pct_schedules() {
        shuttle::check_pct(scenario, 20_000, 3);
    }
}
