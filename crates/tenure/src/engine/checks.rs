//! The one check chain and the one version builder of every item write: a put, create,
//! replace, delete or metadata change, and each operation of a batch (docs/spec.md §3's order
//! of checks: existence, lease and lock, conditions; then the change itself).

use crate::backend::options::WriteOptions;
use crate::clock::Timestamp;
use crate::error::{Error, ErrorCode, Result};
use crate::index::{coordination_box, NewVersion, Properties, ValueLocation, VersionNode};
use crate::record::{Coordination, ItemWrite};
use crate::rules::conditions::{self, ItemFacts, WriteKind};
use crate::rules::lease::{self, Access, LeaseEffect};
use crate::rules::lock::{self, LockEffect};
use crate::rules::with_current_etag;
use crate::types::{ETag, Version};

/// Steps 3 to 5 of a write against the item as the writer sees it: `facts` (`None`: absent),
/// its lease and lock (`state`), judged at `now`. Returns the lease and lock the written
/// version carries. A refusal carries `current_etag` (the item's, where a caller knows it).
pub(crate) fn check_write(
    kind: WriteKind,
    options: &WriteOptions,
    facts: Option<&ItemFacts>,
    current_etag: Option<ETag>,
    state: &Coordination,
    now: Timestamp,
) -> Result<Coordination> {
    let conditions = &options.conditions;
    // 3. existence
    conditions::check_write_existence(kind, conditions, facts)?;
    // 4. lease and lock
    let coordination = coordination_after_write(state, facts.is_some(), kind, options, now)
        .map_err(|error| with_current_etag(error, current_etag))?;
    // 5. conditions
    conditions::check_write_conditions(kind, conditions, facts)?;
    debug_assert!(
        kind != WriteKind::Delete || coordination.lease.is_none(),
        "a delete drops the item's lease"
    );
    Ok(coordination)
}

/// The version a write of `write` installs, at `version` and with `status`: its value where
/// the record put it, its properties and the lease and lock it carries.
pub(crate) fn written_version(
    write: &ItemWrite<'_>,
    version: Version,
    status: u8,
    value: Option<ValueLocation>,
) -> VersionNode {
    debug_assert_eq!(
        value.is_some(),
        write.value.is_some(),
        "a version has a value exactly when its write has one"
    );
    VersionNode::new(NewVersion {
        version,
        etag_version: version,
        status,
        value,
        last_modified: write.last_modified,
        expires_at: write.expires_at,
        properties: Properties::boxed(write.content_type, write.metadata.to_vec()),
        coordination: write.coordination.cloned().and_then(coordination_box),
    })
}

/// Step 4 of a write (docs/spec.md §3, §4, §6): the lease check, then the lock check, and the
/// coordination state the written version carries. A lease survives a write made with its id
/// and is cleared by a write without an id once Expired or Broken; deleting the item drops it.
/// Every data write releases the item's lock (with its handle, or a plain write replacing it).
fn coordination_after_write(
    state: &Coordination,
    item_present: bool,
    kind: WriteKind,
    options: &WriteOptions,
    now: Timestamp,
) -> Result<Coordination> {
    // Nothing to check and nothing to carry: no lease or lock on the item (a plain head has
    // none), and the write names neither. The rules below give the same.
    if state.is_empty() && options.lease_id.is_none() && options.lock_handle.is_none() {
        return Ok(Coordination::default());
    }
    // The lease of a deleted or expired item went with it.
    let lease_record = state.lease.as_ref().filter(|_| item_present);
    let lease_effect = if kind == WriteKind::Check && options.lease_id.is_none() {
        LeaseEffect::Keep
    } else {
        lease::check_lease_for_item_operation(lease_record, now, options.lease_id, Access::Write)?
    };
    // A key force-locked while absent keeps its lock on a node without a value.
    let key = lock::KeyFacts {
        item_present,
        lock: state.lock.as_ref(),
        now,
    };
    let lock_effect = match (options.lock_handle, kind) {
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
