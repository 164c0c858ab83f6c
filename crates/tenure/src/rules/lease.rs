//! Leases (docs/spec.md §4 for items, §5 for containers): the lease-action state machine and the lease
//! checks of data operations. Items and containers share the state machine and its codes.
//!
//! The state is never stored. The engine persists a [`LeaseRecord`]; [`state`] derives the state
//! from it and the clock at every access, so time alone moves Leased→Expired and
//! Breaking→Broken. "Available" is the absence of a record.

use std::fmt;

use crate::clock::{Timestamp, MICROS_PER_SECOND};
use crate::error::{Error, ErrorCode, Result};

pub const MIN_LEASE_DURATION_SECONDS: u32 = 15;
pub const MAX_LEASE_DURATION_SECONDS: u32 = 60;
pub const MAX_BREAK_PERIOD_SECONDS: u32 = 60;
/// tenure's own limit on the optional holder label shown in lease info.
pub const MAX_HOLDER_BYTES: usize = 256;

/// A lease id: 128 bits, compared by value whatever text form it was given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseId(pub u128);

impl LeaseId {
    /// Parses UUID text: 32 hexadecimal digits, either plain or hyphenated 8-4-4-4-12, in any
    /// case, optionally inside one pair of braces. `argument` names it in the error.
    pub fn parse(argument: &'static str, text: &str) -> Result<LeaseId> {
        let malformed = || {
            Error::invalid(
                argument,
                format!(
                    "a lease id is a UUID such as 3f2504e0-4f89-11d3-9a0c-0305e82c3301, not {text:?}"
                ),
            )
        };
        let inner = match text.strip_prefix('{') {
            Some(rest) => rest.strip_suffix('}').ok_or_else(malformed)?,
            None => text,
        };
        let digits: String = match inner.len() {
            32 => inner.to_owned(),
            36 => {
                let hyphens_in_place = inner
                    .char_indices()
                    .filter(|&(_, character)| character == '-')
                    .map(|(index, _)| index)
                    .eq([8, 13, 18, 23]);
                if !hyphens_in_place {
                    return Err(malformed());
                }
                inner
                    .chars()
                    .filter(|&character| character != '-')
                    .collect()
            }
            _ => return Err(malformed()),
        };
        // Checked digit by digit: from_str_radix alone would accept a leading '+'.
        if !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(malformed());
        }
        u128::from_str_radix(&digits, 16)
            .map(LeaseId)
            .map_err(|_| malformed())
    }
}

impl fmt::Display for LeaseId {
    /// Lower-case hyphenated UUID form.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = self.0;
        write!(
            formatter,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            value >> 96,
            (value >> 80) & 0xFFFF,
            (value >> 64) & 0xFFFF,
            (value >> 48) & 0xFFFF,
            value & 0xFFFF_FFFF_FFFF
        )
    }
}

/// How long a lease lasts from its acquire or renew.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseDuration {
    /// 15..=60 seconds; build it with [`LeaseDuration::fixed`].
    Fixed {
        seconds: u32,
    },
    Infinite,
}

impl LeaseDuration {
    pub fn fixed(seconds: u32) -> Result<LeaseDuration> {
        LeaseDuration::Fixed { seconds }.validate()
    }

    /// Azure's form: `-1` = infinite, 15..=60 = fixed. The error names `duration`.
    pub fn from_seconds(seconds: i64) -> Result<LeaseDuration> {
        if seconds == -1 {
            return Ok(LeaseDuration::Infinite);
        }
        let seconds = u32::try_from(seconds).unwrap_or(u32::MAX);
        LeaseDuration::fixed(seconds)
    }

    pub fn validate(self) -> Result<LeaseDuration> {
        match self {
            LeaseDuration::Fixed { seconds }
                if !(MIN_LEASE_DURATION_SECONDS..=MAX_LEASE_DURATION_SECONDS)
                    .contains(&seconds) =>
            {
                Err(Error::invalid(
                    "duration",
                    format!(
                        "a lease lasts {MIN_LEASE_DURATION_SECONDS}..={MAX_LEASE_DURATION_SECONDS} \
                         seconds or is infinite (-1)"
                    ),
                ))
            }
            _ => Ok(self),
        }
    }

    /// `None` = infinite.
    pub fn micros(self) -> Option<u64> {
        match self {
            LeaseDuration::Fixed { seconds } => Some(u64::from(seconds) * MICROS_PER_SECOND),
            LeaseDuration::Infinite => None,
        }
    }

    /// When a lease granted or renewed at `now` ends; `None` = never.
    fn deadline_from(self, now: Timestamp) -> Option<Timestamp> {
        self.micros().map(|micros| now.saturating_add(micros))
    }
}

/// Validates a break period (0..=60 seconds). The error names `break_period`.
pub fn break_period_seconds(seconds: i64) -> Result<u32> {
    match u32::try_from(seconds) {
        Ok(seconds) if seconds <= MAX_BREAK_PERIOD_SECONDS => Ok(seconds),
        _ => Err(Error::invalid(
            "break_period",
            format!("a break period is 0..={MAX_BREAK_PERIOD_SECONDS} seconds, not {seconds}"),
        )),
    }
}

/// What the engine persists next to the item or container while a lease exists (any state but
/// Available). Deadlines are absolute wall-clock times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRecord {
    pub id: LeaseId,
    pub duration: LeaseDuration,
    /// End of a fixed lease; `None` for an infinite one.
    pub deadline: Option<Timestamp>,
    /// Set by a break with a period: Breaking until then, Broken after.
    pub break_deadline: Option<Timestamp>,
    /// Broken at once (break with period 0, an Expired lease broken, an infinite lease broken
    /// without a period).
    pub broken: bool,
    /// The fencing token of this grant.
    pub fence: u64,
    /// Optional label given at acquire, shown in lease info.
    pub holder: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseState {
    Available,
    Leased,
    /// A fixed lease past its deadline.
    Expired,
    /// A break was asked for with time left: Broken once the break deadline passes.
    Breaking,
    Broken,
}

impl LeaseRecord {
    /// The state at `now`. Never Available: a record means a lease exists.
    pub fn state(&self, now: Timestamp) -> LeaseState {
        if self.broken {
            return LeaseState::Broken;
        }
        // A break deadline is never later than the lease's own deadline, so it is decided first.
        if let Some(break_deadline) = self.break_deadline {
            return if now >= break_deadline {
                LeaseState::Broken
            } else {
                LeaseState::Breaking
            };
        }
        match self.deadline {
            Some(deadline) if now >= deadline => LeaseState::Expired,
            _ => LeaseState::Leased,
        }
    }

    /// After a reopen, a wall clock that jumped back must not stretch a lease or a break beyond
    /// its full length (docs/spec.md §11): deadlines are clamped to `now` + that length.
    pub fn clamped_after_reopen(&self, now: Timestamp) -> LeaseRecord {
        let longest_break = u64::from(MAX_BREAK_PERIOD_SECONDS) * MICROS_PER_SECOND;
        let longest_lease = self.duration.deadline_from(now);
        let deadline = match (self.deadline, longest_lease) {
            (Some(deadline), Some(longest)) => Some(deadline.min(longest)),
            (deadline, _) => deadline,
        };
        // A break never outlasts the lease it breaks (its period is at most the time left).
        let break_deadline = self.break_deadline.map(|break_deadline| {
            let capped = break_deadline.min(now.saturating_add(longest_break));
            deadline.map_or(capped, |deadline| capped.min(deadline))
        });
        LeaseRecord {
            deadline,
            break_deadline,
            ..self.clone()
        }
    }
}

/// The state of a possibly absent lease at `now`.
pub fn state(record: Option<&LeaseRecord>, now: Timestamp) -> LeaseState {
    record.map_or(LeaseState::Available, |record| record.state(now))
}

/// What lease info shows (docs/spec.md §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    pub state: LeaseState,
    /// `None` when Available.
    pub id: Option<LeaseId>,
    pub fence: Option<u64>,
    /// Time until the lease (Leased, fixed) or the break (Breaking) ends by itself; `None` when
    /// nothing runs out: Available, an infinite lease, Expired, Broken.
    pub remaining_micros: Option<u64>,
    pub holder: Option<String>,
}

pub fn lease_info(record: Option<&LeaseRecord>, now: Timestamp) -> LeaseInfo {
    let current_state = state(record, now);
    let remaining_micros = record.and_then(|record| match current_state {
        LeaseState::Leased => record.deadline,
        LeaseState::Breaking => record.break_deadline,
        _ => None,
    });
    LeaseInfo {
        state: current_state,
        id: record.map(|record| record.id),
        fence: record.map(|record| record.fence),
        remaining_micros: remaining_micros.map(|deadline| deadline.saturating_sub(now)),
        holder: record.and_then(|record| record.holder.clone()),
    }
}

/// A lease action (the rows of the docs/spec.md §4 lease-action table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseAction {
    Acquire {
        proposed_id: Option<LeaseId>,
        duration: LeaseDuration,
        holder: Option<String>,
    },
    Renew {
        id: LeaseId,
    },
    Change {
        id: LeaseId,
        proposed_id: LeaseId,
    },
    Release {
        id: LeaseId,
    },
    Break {
        /// `None` = no period given.
        period_seconds: Option<u32>,
    },
}

/// Everything besides the record a lease action depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseContext {
    pub now: Timestamp,
    /// Freshly generated (uuid v4) by the caller for an acquire that proposes no id (see
    /// `generated_id_for`); `None` for every other action, which never needs one.
    pub generated_id: Option<LeaseId>,
    /// The highest fence ever granted for this item or container (0 if none).
    pub last_fence: u64,
    /// When the leased item or container was last written.
    pub last_modified: Timestamp,
}

/// The result of a lease action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOutcome {
    /// What to persist: `None` after a release (Available).
    pub record: Option<LeaseRecord>,
    /// Returned by acquire, renew and change.
    pub lease_id: Option<LeaseId>,
    /// Returned by acquire, renew and change.
    pub fence: Option<u64>,
    /// Returned by break: time until a new lease can be acquired (0 when broken at once).
    pub break_time_left_micros: Option<u64>,
}

impl LeaseOutcome {
    fn granted(record: LeaseRecord) -> LeaseOutcome {
        LeaseOutcome {
            lease_id: Some(record.id),
            fence: Some(record.fence),
            record: Some(record),
            break_time_left_micros: None,
        }
    }

    fn breaking(record: LeaseRecord, now: Timestamp) -> LeaseOutcome {
        let time_left_micros = match record.state(now) {
            LeaseState::Breaking => record
                .break_deadline
                .map_or(0, |deadline| deadline.saturating_sub(now)),
            _ => 0,
        };
        LeaseOutcome {
            record: Some(record),
            lease_id: None,
            fence: None,
            break_time_left_micros: Some(time_left_micros),
        }
    }
}

/// Applies one lease action: every cell of the docs/spec.md §4 lease-action table, shared by items and
/// containers. Refusals are 409s (`Error::Rejected`, without an ETag: lease actions do not
/// report one). Arguments are validated first (durations, break periods, holder length).
///
/// Fencing: a new grant (acquire when Available, Expired or Broken) takes a fence above every
/// earlier one; re-acquire of a live lease with its own id, renew and change keep the fence.
pub fn apply_lease_action(
    record: Option<&LeaseRecord>,
    action: LeaseAction,
    context: LeaseContext,
) -> Result<LeaseOutcome> {
    validate_action(&action)?;
    match action {
        LeaseAction::Acquire {
            proposed_id,
            duration,
            holder,
        } => acquire(record, proposed_id, duration, holder, context),
        LeaseAction::Renew { id } => renew(record, id, context),
        LeaseAction::Change { id, proposed_id } => change(record, id, proposed_id, context.now),
        LeaseAction::Release { id } => release(record, id),
        LeaseAction::Break { period_seconds } => break_lease(record, period_seconds, context.now),
    }
}

/// Step 1 of every lease action: its arguments (durations, break periods, holder label),
/// checked before anything is looked up.
pub fn validate_action(action: &LeaseAction) -> Result<()> {
    match action {
        LeaseAction::Acquire {
            duration, holder, ..
        } => {
            duration.validate()?;
            if holder
                .as_ref()
                .is_some_and(|holder| holder.len() > MAX_HOLDER_BYTES)
            {
                return Err(Error::invalid(
                    "holder",
                    format!("a holder label is at most {MAX_HOLDER_BYTES} bytes"),
                ));
            }
            Ok(())
        }
        LeaseAction::Break {
            period_seconds: Some(seconds),
        } => break_period_seconds(i64::from(*seconds)).map(drop),
        _ => Ok(()),
    }
}

fn acquire(
    record: Option<&LeaseRecord>,
    proposed_id: Option<LeaseId>,
    duration: LeaseDuration,
    holder: Option<String>,
    context: LeaseContext,
) -> Result<LeaseOutcome> {
    let now = context.now;
    match record {
        Some(current) if current.state(now) == LeaseState::Leased => {
            if proposed_id != Some(current.id) {
                return Err(refused(ErrorCode::LeaseAlreadyPresent));
            }
            // Re-acquire with its own id: the same grant (and fence) with a new duration.
            Ok(LeaseOutcome::granted(LeaseRecord {
                duration,
                deadline: duration.deadline_from(now),
                holder,
                ..current.clone()
            }))
        }
        Some(current) if current.state(now) == LeaseState::Breaking => {
            if proposed_id == Some(current.id) {
                Err(refused(ErrorCode::LeaseIsBreakingAndCannotBeAcquired))
            } else {
                Err(refused(ErrorCode::LeaseAlreadyPresent))
            }
        }
        // Available, Expired or Broken: the lease is not held, so this is a new grant.
        _ => {
            let highest_fence = record.map_or(0, |current| current.fence);
            // u64 fences cannot run out in practice; saturating keeps a hostile stored value
            // from wrapping to a fence that looks old.
            let fence = context.last_fence.max(highest_fence).saturating_add(1);
            Ok(LeaseOutcome::granted(LeaseRecord {
                id: proposed_id
                    .or(context.generated_id)
                    .expect("an acquire without a proposed id carries a generated one"),
                duration,
                deadline: duration.deadline_from(now),
                break_deadline: None,
                broken: false,
                fence,
                holder,
            }))
        }
    }
}

fn renew(record: Option<&LeaseRecord>, id: LeaseId, context: LeaseContext) -> Result<LeaseOutcome> {
    let now = context.now;
    let current = match record {
        Some(current) if current.id == id => current,
        _ => return Err(refused(ErrorCode::LeaseIdMismatchWithLeaseOperation)),
    };
    let renewed = || {
        Ok(LeaseOutcome::granted(LeaseRecord {
            deadline: current.duration.deadline_from(now),
            ..current.clone()
        }))
    };
    match current.state(now) {
        LeaseState::Leased => renewed(),
        LeaseState::Expired => {
            // Azure's rule: an expired lease can be renewed while nobody wrote the item since.
            let written_since_expiry = current
                .deadline
                .is_some_and(|expired_at| context.last_modified >= expired_at);
            if written_since_expiry {
                Err(refused(ErrorCode::LeaseIdMismatchWithLeaseOperation))
            } else {
                renewed()
            }
        }
        LeaseState::Breaking | LeaseState::Broken => {
            Err(refused(ErrorCode::LeaseIsBrokenAndCannotBeRenewed))
        }
        LeaseState::Available => Err(refused(ErrorCode::LeaseIdMismatchWithLeaseOperation)),
    }
}

/// Change A→B. When the given id is right, the state decides; when it is not, only
/// "proposed = current" on a Leased lease succeeds (a retried change is idempotent).
fn change(
    record: Option<&LeaseRecord>,
    id: LeaseId,
    proposed_id: LeaseId,
    now: Timestamp,
) -> Result<LeaseOutcome> {
    let Some(current) = record else {
        return Err(refused(ErrorCode::LeaseNotPresentWithLeaseOperation));
    };
    match current.state(now) {
        LeaseState::Leased if id == current.id || proposed_id == current.id => {
            Ok(LeaseOutcome::granted(LeaseRecord {
                id: proposed_id,
                ..current.clone()
            }))
        }
        LeaseState::Breaking if id == current.id => {
            Err(refused(ErrorCode::LeaseIsBreakingAndCannotBeChanged))
        }
        LeaseState::Leased | LeaseState::Breaking => {
            Err(refused(ErrorCode::LeaseIdMismatchWithLeaseOperation))
        }
        LeaseState::Available | LeaseState::Expired | LeaseState::Broken => {
            Err(refused(ErrorCode::LeaseNotPresentWithLeaseOperation))
        }
    }
}

fn release(record: Option<&LeaseRecord>, id: LeaseId) -> Result<LeaseOutcome> {
    match record {
        Some(current) if current.id == id => Ok(LeaseOutcome {
            record: None,
            lease_id: None,
            fence: None,
            break_time_left_micros: None,
        }),
        _ => Err(refused(ErrorCode::LeaseIdMismatchWithLeaseOperation)),
    }
}

fn break_lease(
    record: Option<&LeaseRecord>,
    period_seconds: Option<u32>,
    now: Timestamp,
) -> Result<LeaseOutcome> {
    let Some(current) = record else {
        return Err(refused(ErrorCode::LeaseNotPresentWithLeaseOperation));
    };
    let broken_now = LeaseRecord {
        broken: true,
        ..current.clone()
    };
    let breaking_until = |break_deadline: Timestamp| LeaseRecord {
        break_deadline: Some(break_deadline),
        ..current.clone()
    };
    let next = match (current.state(now), period_seconds) {
        (LeaseState::Leased | LeaseState::Breaking, Some(0)) => broken_now,
        // Breaking until now + min(p, time left); an infinite lease has all the time: p.
        (LeaseState::Leased, Some(seconds)) => {
            let period_end = now.saturating_add(u64::from(seconds) * MICROS_PER_SECOND);
            breaking_until(
                current
                    .deadline
                    .map_or(period_end, |deadline| deadline.min(period_end)),
            )
        }
        (LeaseState::Leased, None) => match current.deadline {
            None => broken_now,
            Some(deadline) => breaking_until(deadline),
        },
        // A second break may shorten a break, never lengthen it.
        (LeaseState::Breaking, Some(seconds)) => {
            let period_end = now.saturating_add(u64::from(seconds) * MICROS_PER_SECOND);
            breaking_until(
                current
                    .break_deadline
                    .map_or(period_end, |old| old.min(period_end)),
            )
        }
        (LeaseState::Breaking | LeaseState::Broken, _) => current.clone(),
        (LeaseState::Expired, _) => broken_now,
        (LeaseState::Available, _) => {
            return Err(refused(ErrorCode::LeaseNotPresentWithLeaseOperation))
        }
    };
    Ok(LeaseOutcome::breaking(next, now))
}

/// Whether a data operation reads or writes the item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
}

/// What a data operation that passed the lease check does to the lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseEffect {
    Keep,
    /// A write without a lease id on a Broken or Expired lease clears it to Available.
    Clear,
}

/// The lease check of a data operation on an item (docs/spec.md §4 data-operation table, step 4 of a
/// write). Refusals are 412 without an ETag; the engine adds the item's current one
/// (`rules::with_current_etag`).
///
/// A put with a lease id on a missing item is the Available column (`record` is `None`):
/// `LeaseNotPresentWithBlobOperation`.
pub fn check_lease_for_item_operation(
    record: Option<&LeaseRecord>,
    now: Timestamp,
    given: Option<LeaseId>,
    access: Access,
) -> Result<LeaseEffect> {
    let current = state(record, now);
    let current_id = record.map(|record| record.id);
    match (current, given) {
        (LeaseState::Available, None) => Ok(LeaseEffect::Keep),
        (LeaseState::Available, Some(_)) => {
            Err(refused(ErrorCode::LeaseNotPresentWithBlobOperation))
        }
        (LeaseState::Leased | LeaseState::Breaking, Some(id)) if Some(id) == current_id => {
            Ok(LeaseEffect::Keep)
        }
        (LeaseState::Leased | LeaseState::Breaking, Some(_)) => {
            Err(refused(ErrorCode::LeaseIdMismatchWithBlobOperation))
        }
        (LeaseState::Leased | LeaseState::Breaking, None) => match access {
            Access::Read => Ok(LeaseEffect::Keep),
            Access::Write => Err(refused(ErrorCode::LeaseIdMissing)),
        },
        (LeaseState::Broken | LeaseState::Expired, Some(_)) => Err(refused(ErrorCode::LeaseLost)),
        (LeaseState::Broken | LeaseState::Expired, None) => match access {
            Access::Read => Ok(LeaseEffect::Keep),
            Access::Write => Ok(LeaseEffect::Clear),
        },
    }
}

/// Container operations as far as their lease is concerned (docs/spec.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContainerOperation {
    /// Delete container: the only operation guarded by the lease.
    Delete,
    /// Every other container operation: a lease id is optional but must match if given.
    Other,
}

/// The lease check of a container operation (docs/spec.md §5). Refusals are 412. Unlike items, nothing
/// here clears an Expired or Broken lease, and item leases inside the container never matter.
pub fn check_lease_for_container_operation(
    record: Option<&LeaseRecord>,
    now: Timestamp,
    given: Option<LeaseId>,
    operation: ContainerOperation,
) -> Result<()> {
    let current = state(record, now);
    let current_id = record.map(|record| record.id);
    match (current, given) {
        (_, None) => {
            let locked = matches!(current, LeaseState::Leased | LeaseState::Breaking);
            if locked && operation == ContainerOperation::Delete {
                Err(refused(ErrorCode::LeaseIdMissing))
            } else {
                Ok(())
            }
        }
        (LeaseState::Available, Some(_)) => {
            Err(refused(ErrorCode::LeaseNotPresentWithContainerOperation))
        }
        (LeaseState::Leased | LeaseState::Breaking, Some(id)) if Some(id) == current_id => Ok(()),
        (LeaseState::Leased | LeaseState::Breaking, Some(_)) => {
            Err(refused(ErrorCode::LeaseIdMismatchWithContainerOperation))
        }
        (LeaseState::Broken | LeaseState::Expired, Some(_)) => Err(refused(ErrorCode::LeaseLost)),
    }
}

fn refused(code: ErrorCode) -> Error {
    Error::rejected(code)
}
