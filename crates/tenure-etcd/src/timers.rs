//! The cluster holds the time (docs/etcd.md "Time"): every deadline a record holds — a
//! lease's, a break's, a cache lock's, an item's expiry — has a timer key attached to an etcd
//! lease whose TTL is the deadline's time left, and the cluster deletes the key when the TTL
//! runs out. Before the rules decide, `settle` moves each deadline to the right side of `now`:
//! passed when its timer is gone, still ahead while it lives. So which side of a deadline
//! the cluster is on decides, and the clients' clocks only size new deadlines.
//!
//! A decision that relied on a deadline commits only if that deadline's timer key is still at
//! the `mod_revision` it was read at (a timer that ran out meanwhile fails the compare, and
//! the write is decided again). A new or moved deadline gets a new timer in the same
//! transaction: an etcd lease granted just before, with the key put under it.

use etcd_client::{Compare, CompareOp, PutOptions, TxnOp};
use tenure::{Timestamp, MICROS_PER_SECOND};

use crate::codec::{ContainerRecord, ItemRecord, Timer};

/// The `mod_revision` of each of a record's timer keys as read (0: the key is gone), by
/// [`Timer::index`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TimerRevisions(pub(crate) [i64; 4]);

impl TimerRevisions {
    pub(crate) fn alive(&self, timer: Timer) -> bool {
        self.0[timer.index()] != 0
    }
}

/// The deadlines of a record, by [`Timer::index`].
pub(crate) type Deadlines = [Option<Timestamp>; 4];

pub(crate) fn item_deadlines(record: &ItemRecord) -> Deadlines {
    let lease = record.lease.as_ref();
    [
        lease.and_then(|lease| lease.deadline),
        lease.and_then(|lease| lease.break_deadline),
        record.lock.map(|lock| lock.deadline),
        record.expires_at,
    ]
}

pub(crate) fn container_deadlines(record: &ContainerRecord) -> Deadlines {
    let lease = record.lease.as_ref();
    [
        lease.and_then(|lease| lease.deadline),
        lease.and_then(|lease| lease.break_deadline),
        None,
        None,
    ]
}

/// Whether a record holds any deadline, that is, whether its timers matter.
pub(crate) fn has_deadlines(deadlines: &Deadlines) -> bool {
    deadlines.iter().any(Option::is_some)
}

fn settled(deadline: Option<Timestamp>, alive: bool, now: Timestamp) -> Option<Timestamp> {
    deadline.map(|deadline| {
        if alive {
            deadline.max(now.saturating_add(1))
        } else {
            deadline.min(now)
        }
    })
}

/// Moves the record's deadlines to the side of `now` their timers say.
pub(crate) fn settle_item(record: &mut ItemRecord, timers: TimerRevisions, now: Timestamp) {
    if let Some(lease) = record.lease.as_mut() {
        lease.deadline = settled(lease.deadline, timers.alive(Timer::Lease), now);
        lease.break_deadline = settled(lease.break_deadline, timers.alive(Timer::Break), now);
    }
    if let Some(lock) = record.lock.as_mut() {
        lock.deadline = settled(Some(lock.deadline), timers.alive(Timer::Lock), now)
            .expect("a lock always has a deadline");
    }
    record.expires_at = settled(record.expires_at, timers.alive(Timer::Expiry), now);
}

pub(crate) fn settle_container(
    record: &mut ContainerRecord,
    timers: TimerRevisions,
    now: Timestamp,
) {
    if let Some(lease) = record.lease.as_mut() {
        lease.deadline = settled(lease.deadline, timers.alive(Timer::Lease), now);
        lease.break_deadline = settled(lease.break_deadline, timers.alive(Timer::Break), now);
    }
}

/// The seconds of an etcd lease for a deadline `now` + this much: whole seconds, rounded up,
/// at least 1 (etcd's TTLs are seconds).
fn ttl_seconds(deadline: Timestamp, now: Timestamp) -> i64 {
    let micros = deadline.saturating_sub(now);
    let seconds = micros.div_ceil(MICROS_PER_SECOND).max(1);
    i64::try_from(seconds).unwrap_or(i64::MAX)
}

/// What a commit does for a decision's timers.
#[derive(Debug, Default)]
pub(crate) struct TimerPlan {
    /// Timers the decision relied on: each must still be at its read revision.
    pub(crate) compares: Vec<Compare>,
    /// New timers: the key, and the TTL of the etcd lease to put it under.
    pub(crate) new: Vec<(Timer, Vec<u8>, i64)>,
}

impl TimerPlan {
    /// Compares every timer of `old` (the settled deadlines the decision read), and a new
    /// timer for every deadline of `new` that `old` did not hold as it is.
    pub(crate) fn of(
        old: &Deadlines,
        new: &Deadlines,
        revisions: TimerRevisions,
        key_of: impl Fn(Timer) -> Vec<u8>,
        now: Timestamp,
    ) -> TimerPlan {
        let mut plan = TimerPlan::default();
        for timer in Timer::ALL {
            let index = timer.index();
            if old[index].is_some() {
                plan.compares.push(Compare::mod_revision(
                    key_of(timer),
                    CompareOp::Equal,
                    revisions.0[index],
                ));
            }
            if let Some(deadline) = new[index] {
                if old[index] != Some(deadline) {
                    plan.new
                        .push((timer, key_of(timer), ttl_seconds(deadline, now)));
                }
            }
        }
        plan
    }

    /// The puts of the new timers, under the etcd leases granted for them (same order).
    pub(crate) fn puts(&self, leases: &[i64]) -> Vec<TxnOp> {
        self.new
            .iter()
            .zip(leases)
            .map(|((_, key, _), &lease)| {
                TxnOp::put(
                    key.clone(),
                    Vec::new(),
                    Some(PutOptions::new().with_lease(lease)),
                )
            })
            .collect()
    }

    /// The revisions of the timers after a commit at `revision`.
    pub(crate) fn revisions_after(&self, before: TimerRevisions, revision: i64) -> TimerRevisions {
        let mut after = before;
        for (timer, _, _) in &self.new {
            after.0[timer.index()] = revision;
        }
        after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = 1_000 * MICROS_PER_SECOND;

    #[test]
    fn a_live_timer_keeps_its_deadline_ahead_and_a_gone_one_behind() {
        // A client clock ahead of the cluster's: the deadline looks passed, the timer lives.
        assert_eq!(settled(Some(NOW - 5), true, NOW), Some(NOW + 1));
        assert_eq!(settled(Some(NOW + 5), true, NOW), Some(NOW + 5));
        // A client clock behind: the deadline looks ahead, the timer is gone.
        assert_eq!(settled(Some(NOW + 5), false, NOW), Some(NOW));
        assert_eq!(settled(Some(NOW - 5), false, NOW), Some(NOW - 5));
        assert_eq!(settled(None, true, NOW), None);
    }

    #[test]
    fn ttls_are_whole_seconds_rounded_up() {
        assert_eq!(ttl_seconds(NOW + 1, NOW), 1);
        assert_eq!(ttl_seconds(NOW, NOW), 1);
        assert_eq!(ttl_seconds(NOW + 15 * MICROS_PER_SECOND, NOW), 15);
        assert_eq!(ttl_seconds(NOW + 15 * MICROS_PER_SECOND + 1, NOW), 16);
    }

    #[test]
    fn a_plan_compares_what_was_relied_on_and_times_what_is_new() {
        let key = |timer: Timer| vec![timer.index() as u8];
        let old: Deadlines = [Some(NOW + 1), None, None, Some(NOW)];
        let new: Deadlines = [
            Some(NOW + 1),
            None,
            Some(NOW + 30 * MICROS_PER_SECOND),
            None,
        ];
        let plan = TimerPlan::of(&old, &new, TimerRevisions([7, 0, 0, 9]), key, NOW);
        assert_eq!(
            plan.compares.len(),
            2,
            "the lease's and the expiry's timers"
        );
        assert_eq!(plan.new.len(), 1, "the lock's");
        assert_eq!(plan.new[0].2, 30);
        let after = plan.revisions_after(TimerRevisions([7, 0, 0, 9]), 12);
        assert_eq!(after, TimerRevisions([7, 0, 12, 9]));
    }
}
