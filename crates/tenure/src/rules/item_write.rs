//! The check chain of every item write — a put, create, replace, delete, metadata change and
//! each operation of a batch — as one pure function: docs/spec.md §3's order of checks
//! (existence, lease and lock, conditions) against the item as the writer sees it, and the
//! lease and lock the written version carries. Every backend decides writes with it.

use crate::clock::Timestamp;
use crate::error::{Error, ErrorCode, Result};
use crate::rules::conditions::{self, Conditions, ItemFacts, WriteKind};
use crate::rules::lease::{self, Access, LeaseEffect, LeaseId, LeaseRecord};
use crate::rules::lock::{self, LockEffect, LockHandle, LockRecord};
use crate::rules::with_current_etag;
use crate::types::ETag;

/// An item's pessimistic-concurrency state: its lease and its cache lock (at most one live).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coordination {
    pub lease: Option<LeaseRecord>,
    pub lock: Option<LockRecord>,
}

impl Coordination {
    pub fn is_empty(&self) -> bool {
        self.lease.is_none() && self.lock.is_none()
    }
}

/// What a write asks, as far as the checks go: its conditions and the lease id and lock
/// handle it presents.
#[derive(Debug, Clone, Copy)]
pub struct WriteRequest<'a> {
    pub kind: WriteKind,
    pub conditions: &'a Conditions,
    pub lease_id: Option<LeaseId>,
    pub lock_handle: Option<LockHandle>,
}

/// Steps 3 to 5 of a write against the item as the writer sees it: `facts` (`None`: absent),
/// its lease and lock (`state`), judged at `now`. Returns the lease and lock the written
/// version carries. A refusal carries `current_etag` (the item's, where a caller knows it).
pub fn check_write(
    request: WriteRequest<'_>,
    facts: Option<&ItemFacts>,
    current_etag: Option<ETag>,
    state: &Coordination,
    now: Timestamp,
) -> Result<Coordination> {
    let kind = request.kind;
    // 3. existence
    conditions::check_write_existence(kind, request.conditions, facts)?;
    // 4. lease and lock
    let coordination = coordination_after_write(state, facts.is_some(), request, now)
        .map_err(|error| with_current_etag(error, current_etag))?;
    // 5. conditions
    conditions::check_write_conditions(kind, request.conditions, facts)?;
    debug_assert!(
        kind != WriteKind::Delete || coordination.lease.is_none(),
        "a delete drops the item's lease"
    );
    Ok(coordination)
}

/// Step 4 of a write (docs/spec.md §3, §4, §6): the lease check, then the lock check, and the
/// coordination state the written version carries. A lease survives a write made with its id
/// and is cleared by a write without an id once Expired or Broken; deleting the item drops it.
/// Every data write releases the item's lock (with its handle, or a plain write replacing it).
fn coordination_after_write(
    state: &Coordination,
    item_present: bool,
    request: WriteRequest<'_>,
    now: Timestamp,
) -> Result<Coordination> {
    let kind = request.kind;
    // Nothing to check and nothing to carry: no lease or lock on the item (a plain head has
    // none), and the write names neither. The rules below give the same.
    if state.is_empty() && request.lease_id.is_none() && request.lock_handle.is_none() {
        return Ok(Coordination::default());
    }
    // The lease of a deleted or expired item went with it.
    let lease_record = state.lease.as_ref().filter(|_| item_present);
    let lease_effect = if kind == WriteKind::Check && request.lease_id.is_none() {
        LeaseEffect::Keep
    } else {
        lease::check_lease_for_item_operation(lease_record, now, request.lease_id, Access::Write)?
    };
    // A key force-locked while absent keeps its lock on a node without a value.
    let key = lock::KeyFacts {
        item_present,
        lock: state.lock.as_ref(),
        now,
    };
    let lock_effect = match (request.lock_handle, kind) {
        (Some(handle), WriteKind::Delete) => lock::delete_with_handle(key, handle)?,
        (Some(handle), WriteKind::Check) => {
            lock::check_lock_for_read(key)?;
            match lock::live_lock(key.lock, now) {
                Some(live) if live.handle == handle => LockEffect::Keep,
                Some(_) => return Err(Error::rejected(ErrorCode::InvalidLockHandle)),
                None => return Err(Error::rejected(ErrorCode::ObjectNotLocked)),
            }
        }
        (Some(handle), _) => lock::put_and_unlock(key, handle)?,
        (None, WriteKind::Check) => LockEffect::Keep,
        // A plain write is never refused by a lock: it replaces the item and ends the lock.
        (None, _) => lock::plain_write(key),
    };
    if kind == WriteKind::Check {
        return Ok(state.clone());
    }
    let lease = match (kind, lease_effect) {
        (WriteKind::Delete, _) | (_, LeaseEffect::Clear) => None,
        (_, LeaseEffect::Keep) => lease_record.cloned(),
    };
    let lock = match lock_effect {
        LockEffect::Keep => state.lock,
        LockEffect::Release => None,
    };
    Ok(Coordination { lease, lock })
}
