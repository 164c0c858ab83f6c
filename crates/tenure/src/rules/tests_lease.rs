//! docs/spec.md §4 lease actions: every cell of the lease-action table (13 actions × 5 states) is a
//! named row; named tests cover fences, break timing, the Expired-renew rule, lease info and
//! reopen clamping. The fixtures here are shared with `tests_lease_checks.rs`.

use crate::clock::{Timestamp, MICROS_PER_SECOND};
use crate::error::{ErrorCode, Result};
use crate::rules::lease::*;

pub(super) const SECOND: u64 = MICROS_PER_SECOND;
pub(super) const NOW: Timestamp = 10_000 * SECOND;
pub(super) const A: LeaseId = LeaseId(0xAAAA);
pub(super) const B: LeaseId = LeaseId(0xBBBB);
const C: LeaseId = LeaseId(0xCCCC);
pub(super) const GENERATED: LeaseId = LeaseId(0x6E6E);
/// The fence of the grant held in the fixtures, and the highest fence ever granted.
pub(super) const HELD_FENCE: u64 = 7;
pub(super) const LAST_FENCE: u64 = 9;
/// A new grant takes this.
const NEW_FENCE: u64 = LAST_FENCE + 1;
/// Written long before the fixtures' Expired lease expired.
const LAST_MODIFIED: Timestamp = NOW - 60 * SECOND;

pub(super) const STATES: [LeaseState; 5] = [
    LeaseState::Available,
    LeaseState::Leased,
    LeaseState::Breaking,
    LeaseState::Broken,
    LeaseState::Expired,
];

/// A 30-second lease on A acquired 10 s ago (20 s left), in the wanted state at `NOW`.
pub(super) fn record_in(state: LeaseState) -> Option<LeaseRecord> {
    let leased = LeaseRecord {
        id: A,
        duration: LeaseDuration::Fixed { seconds: 30 },
        deadline: Some(NOW + 20 * SECOND),
        break_deadline: None,
        broken: false,
        fence: HELD_FENCE,
        holder: Some("worker-1".to_owned()),
    };
    let record = match state {
        LeaseState::Available => return None,
        LeaseState::Leased => leased,
        LeaseState::Breaking => LeaseRecord {
            break_deadline: Some(NOW + 5 * SECOND),
            ..leased
        },
        LeaseState::Broken => LeaseRecord {
            broken: true,
            ..leased
        },
        LeaseState::Expired => LeaseRecord {
            deadline: Some(NOW - 5 * SECOND),
            ..leased
        },
    };
    assert_eq!(record.state(NOW), state, "fixture for {state:?}");
    Some(record)
}

pub(super) fn context() -> LeaseContext {
    LeaseContext {
        now: NOW,
        generated_id: Some(GENERATED),
        last_fence: LAST_FENCE,
        last_modified: LAST_MODIFIED,
    }
}

pub(super) fn acquire(proposed_id: Option<LeaseId>, seconds: u32) -> LeaseAction {
    LeaseAction::Acquire {
        proposed_id,
        duration: LeaseDuration::Fixed { seconds },
        holder: None,
    }
}

pub(super) fn break_with(period_seconds: Option<u32>) -> LeaseAction {
    LeaseAction::Break { period_seconds }
}

/// The expected result of one lease-action cell.
#[derive(Debug, Clone, Copy)]
enum Expected {
    Refused(ErrorCode),
    Leased {
        id: LeaseId,
        fence: u64,
        deadline: Option<Timestamp>,
    },
    Available,
    Breaking {
        until: Timestamp,
    },
    /// Broken at `NOW`, reporting 0 time left.
    Broken,
    /// Break left the record as it was, reporting this time left.
    Unchanged {
        time_left_micros: u64,
    },
}

fn leased(id: LeaseId, fence: u64, seconds_from_now: u64) -> Expected {
    Expected::Leased {
        id,
        fence,
        deadline: Some(NOW + seconds_from_now * SECOND),
    }
}

fn mismatch_of(
    before: Option<&LeaseRecord>,
    result: &Result<LeaseOutcome>,
    expected: Expected,
) -> Option<String> {
    let outcome = match (result, expected) {
        (Err(error), Expected::Refused(code)) => {
            return (error.code() != code || error.status() != 409)
                .then(|| format!("expected {code} (409), got {error}"))
        }
        (Err(error), _) => return Some(format!("expected {expected:?}, got {error}")),
        (Ok(outcome), Expected::Refused(code)) => {
            return Some(format!("expected {code}, got {outcome:?}"))
        }
        (Ok(outcome), _) => outcome,
    };
    let record = outcome.record.as_ref();
    let state_now = state(record, NOW);
    let wrong = match expected {
        Expected::Refused(_) => unreachable!(),
        Expected::Leased {
            id,
            fence,
            deadline,
        } => {
            state_now != LeaseState::Leased
                || record.map(|record| (record.id, record.fence, record.deadline))
                    != Some((id, fence, deadline))
                || outcome.lease_id != Some(id)
                || outcome.fence != Some(fence)
        }
        Expected::Available => record.is_some() || outcome.lease_id.is_some(),
        Expected::Breaking { until } => {
            state_now != LeaseState::Breaking
                || record.and_then(|record| record.break_deadline) != Some(until)
                || outcome.break_time_left_micros != Some(until - NOW)
                // Time alone ends the break.
                || state(record, until) != LeaseState::Broken
                || state(record, until - 1) != LeaseState::Breaking
        }
        Expected::Broken => {
            state_now != LeaseState::Broken
                || outcome.break_time_left_micros != Some(0)
                || record.map(|record| (record.id, record.fence)) != Some((A, HELD_FENCE))
        }
        Expected::Unchanged { time_left_micros } => {
            record != before || outcome.break_time_left_micros != Some(time_left_micros)
        }
    };
    wrong.then(|| format!("expected {expected:?}, got {outcome:?} (state now {state_now:?})"))
}

/// Every row of the docs/spec.md §4 lease-action table, in the table's order, with one expected result
/// per state column (Available, Leased(A), Breaking(A), Broken(A), Expired(A)).
#[rustfmt::skip]
fn lease_action_table() -> Vec<(&'static str, LeaseAction, [Expected; 5])> {
    use ErrorCode::*;
    use Expected::{Available, Broken, Refused};
    let renewed_a = leased(A, HELD_FENCE, 30);
    vec![
        ("acquire, no proposed id", acquire(None, 30), [
            leased(GENERATED, NEW_FENCE, 30),
            Refused(LeaseAlreadyPresent),
            Refused(LeaseAlreadyPresent),
            leased(GENERATED, NEW_FENCE, 30),
            leased(GENERATED, NEW_FENCE, 30),
        ]),
        ("acquire(A) (45 s)", acquire(Some(A), 45), [
            leased(A, NEW_FENCE, 45),
            leased(A, HELD_FENCE, 45),
            Refused(LeaseIsBreakingAndCannotBeAcquired),
            leased(A, NEW_FENCE, 45),
            leased(A, NEW_FENCE, 45),
        ]),
        ("acquire(B)", acquire(Some(B), 30), [
            leased(B, NEW_FENCE, 30),
            Refused(LeaseAlreadyPresent),
            Refused(LeaseAlreadyPresent),
            leased(B, NEW_FENCE, 30),
            leased(B, NEW_FENCE, 30),
        ]),
        ("renew(A)", LeaseAction::Renew { id: A }, [
            Refused(LeaseIdMismatchWithLeaseOperation),
            renewed_a,
            Refused(LeaseIsBrokenAndCannotBeRenewed),
            Refused(LeaseIsBrokenAndCannotBeRenewed),
            renewed_a, // not written since it expired
        ]),
        ("renew(B)", LeaseAction::Renew { id: B }, [Refused(LeaseIdMismatchWithLeaseOperation); 5]),
        ("change(A→B)", LeaseAction::Change { id: A, proposed_id: B }, [
            Refused(LeaseNotPresentWithLeaseOperation),
            leased(B, HELD_FENCE, 20),
            Refused(LeaseIsBreakingAndCannotBeChanged),
            Refused(LeaseNotPresentWithLeaseOperation),
            Refused(LeaseNotPresentWithLeaseOperation),
        ]),
        ("change(B→A)", LeaseAction::Change { id: B, proposed_id: A }, [
            Refused(LeaseNotPresentWithLeaseOperation),
            leased(A, HELD_FENCE, 20),
            Refused(LeaseIdMismatchWithLeaseOperation),
            Refused(LeaseNotPresentWithLeaseOperation),
            Refused(LeaseNotPresentWithLeaseOperation),
        ]),
        ("change(B→C)", LeaseAction::Change { id: B, proposed_id: C }, [
            Refused(LeaseNotPresentWithLeaseOperation),
            Refused(LeaseIdMismatchWithLeaseOperation),
            Refused(LeaseIdMismatchWithLeaseOperation),
            Refused(LeaseNotPresentWithLeaseOperation),
            Refused(LeaseNotPresentWithLeaseOperation),
        ]),
        ("release(A)", LeaseAction::Release { id: A }, [
            Refused(LeaseIdMismatchWithLeaseOperation),
            Available,
            Available,
            Available,
            Available,
        ]),
        ("release(B)", LeaseAction::Release { id: B }, [Refused(LeaseIdMismatchWithLeaseOperation); 5]),
        ("break, period 0", break_with(Some(0)), [
            Refused(LeaseNotPresentWithLeaseOperation),
            Broken,
            Broken,
            Broken,
            Broken,
        ]),
        // Leased has 20 s left, Breaking 5 s: min(10, 20) = 10; min(old 5, 10) = 5.
        ("break, period 10 s", break_with(Some(10)), [
            Refused(LeaseNotPresentWithLeaseOperation),
            Expected::Breaking { until: NOW + 10 * SECOND },
            Expected::Breaking { until: NOW + 5 * SECOND },
            Broken,
            Broken,
        ]),
        ("break, no period", break_with(None), [
            Refused(LeaseNotPresentWithLeaseOperation),
            Expected::Breaking { until: NOW + 20 * SECOND },
            Expected::Unchanged { time_left_micros: 5 * SECOND },
            Expected::Unchanged { time_left_micros: 0 },
            Broken,
        ]),
    ]
}

#[test]
fn lease_action_table_every_cell() {
    let table = lease_action_table();
    assert_eq!(table.len(), 13, "the docs/spec.md table has 13 action rows");
    let mut failures = Vec::new();
    for (row, action, expected_per_state) in table {
        for (column, expected) in STATES.into_iter().zip(expected_per_state) {
            let before = record_in(column);
            let result = apply_lease_action(before.as_ref(), action.clone(), context());
            if let Some(problem) = mismatch_of(before.as_ref(), &result, expected) {
                failures.push(format!("{row} on {column:?}: {problem}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "lease-action cells:\n{}",
        failures.join("\n")
    );
}

#[test]
fn generated_id_is_used_only_without_a_proposed_id() {
    let granted = apply_lease_action(None, acquire(None, 15), context()).unwrap();
    assert_eq!(granted.lease_id, Some(GENERATED));
    let proposed = apply_lease_action(None, acquire(Some(B), 15), context()).unwrap();
    assert_eq!(proposed.lease_id, Some(B));
}

/// Applies `action` as the engine would: feeding back the record and the highest fence granted.
fn step(
    record: &mut Option<LeaseRecord>,
    action: LeaseAction,
    last_fence: &mut u64,
) -> Option<u64> {
    let with_fence = LeaseContext {
        last_fence: *last_fence,
        ..context()
    };
    let outcome = apply_lease_action(record.as_ref(), action, with_fence).unwrap();
    if let Some(fence) = outcome.fence {
        *last_fence = (*last_fence).max(fence);
    }
    *record = outcome.record;
    outcome.fence
}

#[test]
fn fences_grow_with_every_new_grant_and_stay_with_the_grant() {
    let mut last_fence = 0;
    let mut record: Option<LeaseRecord> = None;
    assert_eq!(
        step(&mut record, acquire(Some(A), 30), &mut last_fence),
        Some(1)
    );
    assert_eq!(
        step(&mut record, acquire(Some(A), 60), &mut last_fence),
        Some(1),
        "re-acquire"
    );
    assert_eq!(
        step(&mut record, LeaseAction::Renew { id: A }, &mut last_fence),
        Some(1),
        "renew"
    );
    let change = LeaseAction::Change {
        id: A,
        proposed_id: B,
    };
    assert_eq!(
        step(&mut record, change, &mut last_fence),
        Some(1),
        "change"
    );
    assert_eq!(
        step(&mut record, LeaseAction::Release { id: B }, &mut last_fence),
        None
    );
    assert_eq!(
        step(&mut record, acquire(Some(B), 30), &mut last_fence),
        Some(2),
        "after release"
    );
    assert_eq!(
        step(&mut record, break_with(Some(0)), &mut last_fence),
        None
    );
    assert_eq!(
        step(&mut record, acquire(Some(B), 30), &mut last_fence),
        Some(3),
        "after break"
    );
}

#[test]
fn new_grant_fence_stays_above_the_records_own_fence() {
    // A stale last_fence (lower than the held grant's) must still give a higher fence.
    let broken = record_in(LeaseState::Broken);
    let stale = LeaseContext {
        last_fence: 1,
        ..context()
    };
    let outcome = apply_lease_action(broken.as_ref(), acquire(None, 30), stale).unwrap();
    assert_eq!(outcome.fence, Some(HELD_FENCE + 1));
}

#[test]
fn renew_a_on_expired_a_not_written_since_expiry_is_leased() {
    let expired = record_in(LeaseState::Expired);
    let outcome =
        apply_lease_action(expired.as_ref(), LeaseAction::Renew { id: A }, context()).unwrap();
    let record = outcome.record.unwrap();
    assert_eq!(record.state(NOW), LeaseState::Leased);
    assert_eq!(
        record.deadline,
        Some(NOW + 30 * SECOND),
        "renewed from now, full duration"
    );
    assert_eq!(
        (outcome.lease_id, outcome.fence),
        (Some(A), Some(HELD_FENCE))
    );
}

#[test]
fn renew_a_on_expired_a_written_since_expiry_is_refused() {
    let expired = record_in(LeaseState::Expired);
    let expired_at = expired.as_ref().unwrap().deadline.unwrap();
    for written_at in [expired_at, expired_at + 1, NOW] {
        let written = LeaseContext {
            last_modified: written_at,
            ..context()
        };
        let error = apply_lease_action(expired.as_ref(), LeaseAction::Renew { id: A }, written)
            .unwrap_err();
        assert_eq!(
            error.code(),
            ErrorCode::LeaseIdMismatchWithLeaseOperation,
            "written at {written_at}"
        );
    }
    let written_just_before = LeaseContext {
        last_modified: expired_at - 1,
        ..context()
    };
    assert!(apply_lease_action(
        expired.as_ref(),
        LeaseAction::Renew { id: A },
        written_just_before
    )
    .is_ok());
}

#[test]
fn renew_of_an_infinite_lease_stays_infinite() {
    let infinite = LeaseRecord {
        duration: LeaseDuration::Infinite,
        deadline: None,
        ..record_in(LeaseState::Leased).unwrap()
    };
    let outcome =
        apply_lease_action(Some(&infinite), LeaseAction::Renew { id: A }, context()).unwrap();
    assert_eq!(outcome.record.unwrap().deadline, None);
}

#[test]
fn reacquire_replaces_duration_and_holder() {
    let leased = record_in(LeaseState::Leased);
    let action = LeaseAction::Acquire {
        proposed_id: Some(A),
        duration: LeaseDuration::Infinite,
        holder: Some("worker-2".to_owned()),
    };
    let record = apply_lease_action(leased.as_ref(), action, context())
        .unwrap()
        .record
        .unwrap();
    assert_eq!(record.duration, LeaseDuration::Infinite);
    assert_eq!(record.deadline, None);
    assert_eq!(record.holder.as_deref(), Some("worker-2"));
    assert_eq!(
        record.state(u64::MAX),
        LeaseState::Leased,
        "an infinite lease never expires"
    );
}

fn break_outcome(record: &LeaseRecord, period_seconds: Option<u32>) -> LeaseOutcome {
    apply_lease_action(Some(record), break_with(period_seconds), context()).unwrap()
}

#[test]
fn break_period_longer_than_time_left_ends_with_the_lease() {
    let leased = record_in(LeaseState::Leased).unwrap(); // 20 s left
    let outcome = break_outcome(&leased, Some(50));
    assert_eq!(outcome.break_time_left_micros, Some(20 * SECOND));
    let record = outcome.record.unwrap();
    assert_eq!(record.break_deadline, leased.deadline);
    // At the lease's own deadline the lease is Broken, not Expired.
    assert_eq!(record.state(NOW + 20 * SECOND), LeaseState::Broken);
}

#[test]
fn break_period_shorter_than_time_left_ends_after_the_period() {
    let leased = record_in(LeaseState::Leased).unwrap();
    let outcome = break_outcome(&leased, Some(3));
    assert_eq!(outcome.break_time_left_micros, Some(3 * SECOND));
    assert_eq!(outcome.lease_id, None, "break does not hand out the id");
}

#[test]
fn break_of_an_infinite_lease() {
    let infinite = LeaseRecord {
        duration: LeaseDuration::Infinite,
        deadline: None,
        ..record_in(LeaseState::Leased).unwrap()
    };
    let with_period = break_outcome(&infinite, Some(50));
    assert_eq!(
        with_period.break_time_left_micros,
        Some(50 * SECOND),
        "infinite: p"
    );
    assert_eq!(with_period.record.unwrap().state(NOW), LeaseState::Breaking);
    let without_period = break_outcome(&infinite, None);
    assert_eq!(
        without_period.break_time_left_micros,
        Some(0),
        "infinite: broken now"
    );
    assert_eq!(
        without_period.record.unwrap().state(NOW),
        LeaseState::Broken
    );
}

#[test]
fn break_without_period_on_a_fixed_lease_breaks_at_its_deadline() {
    let leased = record_in(LeaseState::Leased).unwrap();
    let outcome = break_outcome(&leased, None);
    assert_eq!(outcome.break_time_left_micros, Some(20 * SECOND));
    let record = outcome.record.unwrap();
    assert_eq!(record.state(NOW + 20 * SECOND - 1), LeaseState::Breaking);
    assert_eq!(record.state(NOW + 20 * SECOND), LeaseState::Broken);
}

#[test]
fn second_break_can_shorten_but_not_lengthen() {
    let breaking = record_in(LeaseState::Breaking).unwrap(); // 5 s left
    assert_eq!(
        break_outcome(&breaking, Some(2)).break_time_left_micros,
        Some(2 * SECOND)
    );
    assert_eq!(
        break_outcome(&breaking, Some(60)).break_time_left_micros,
        Some(5 * SECOND)
    );
    assert_eq!(
        break_outcome(&breaking, Some(0)).break_time_left_micros,
        Some(0)
    );
}

#[test]
fn time_moves_leased_to_expired_and_breaking_to_broken() {
    let leased = record_in(LeaseState::Leased).unwrap();
    let deadline = leased.deadline.unwrap();
    assert_eq!(leased.state(deadline - 1), LeaseState::Leased);
    assert_eq!(leased.state(deadline), LeaseState::Expired);
    let breaking = record_in(LeaseState::Breaking).unwrap();
    let break_deadline = breaking.break_deadline.unwrap();
    assert_eq!(breaking.state(break_deadline - 1), LeaseState::Breaking);
    assert_eq!(breaking.state(break_deadline), LeaseState::Broken);
    assert_eq!(state(None, NOW), LeaseState::Available);
}

#[test]
fn lease_info_shows_state_id_fence_remaining_and_holder() {
    let leased = record_in(LeaseState::Leased);
    let info = lease_info(leased.as_ref(), NOW);
    assert_eq!(info.state, LeaseState::Leased);
    assert_eq!((info.id, info.fence), (Some(A), Some(HELD_FENCE)));
    assert_eq!(info.remaining_micros, Some(20 * SECOND));
    assert_eq!(info.holder.as_deref(), Some("worker-1"));
    let breaking = lease_info(record_in(LeaseState::Breaking).as_ref(), NOW);
    assert_eq!(breaking.remaining_micros, Some(5 * SECOND));
    for state_without_timer in [
        LeaseState::Available,
        LeaseState::Broken,
        LeaseState::Expired,
    ] {
        let info = lease_info(record_in(state_without_timer).as_ref(), NOW);
        assert_eq!(info.state, state_without_timer);
        assert_eq!(info.remaining_micros, None, "{state_without_timer:?}");
    }
}

#[test]
fn reopen_with_a_clock_that_jumped_back_cannot_stretch_a_lease() {
    let leased = record_in(LeaseState::Leased).unwrap(); // deadline NOW + 20 s, 30 s lease
    let jumped_back = NOW - 3_600 * SECOND;
    let clamped = leased.clamped_after_reopen(jumped_back);
    assert_eq!(clamped.deadline, Some(jumped_back + 30 * SECOND));
    assert_eq!(
        leased.clamped_after_reopen(NOW),
        leased,
        "a sane clock changes nothing"
    );
    let breaking = record_in(LeaseState::Breaking).unwrap();
    let clamped_break = breaking.clamped_after_reopen(jumped_back).break_deadline;
    // At most the longest break period (60 s) and never past the clamped 30 s lease itself.
    assert_eq!(clamped_break, Some(jumped_back + 30 * SECOND));
}
