//! Item writes, lease and lock changes, and container changes: each one decision of the
//! rules against what was read, committed with the compares of what it read.

use crate::cluster::rejected;
use crate::codec::Timer;
use crate::codec::{ContainerRecord, ItemRecord};
use crate::store::{
    decode_container, revision_version, EtcdStore, KeyChange, Stored, MAX_DECISION_ATTEMPTS,
};
use crate::timers::{container_deadlines, TimerPlan};
use etcd_client::{Compare, CompareOp, TxnOp};
use tenure::seam::conditions::{self, WriteKind};
use tenure::seam::item_write::{self, Coordination, WriteRequest};
use tenure::seam::lease::{self, LeaseAction, LeaseContext, LeaseOutcome};
use tenure::seam::lock;
use tenure::seam::{ttl, validate};
use tenure::{
    ContainerWriteOptions, ETag, Error, ErrorCode, Lease, LeaseId, LeaseRequest, Result, Timestamp,
    WriteOptions,
};

pub(crate) fn random_id() -> u128 {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .as_u128()
}

pub(crate) fn lease_of(outcome: &LeaseOutcome) -> Result<Lease> {
    match (outcome.lease_id, outcome.fence) {
        (Some(id), Some(fence)) => Ok(Lease { id, fence }),
        _ => Err(Error::invalid("lease", "the action granted no lease")),
    }
}

pub(crate) fn generated_id_for(action: &LeaseAction) -> Option<LeaseId> {
    matches!(
        action,
        LeaseAction::Acquire {
            proposed_id: None,
            ..
        }
    )
    .then(|| LeaseId(random_id()))
}

pub(crate) fn acquire_action(request: &LeaseRequest) -> LeaseAction {
    LeaseAction::Acquire {
        proposed_id: request.proposed_id,
        duration: request.duration,
        holder: request.holder.clone(),
    }
}

/// The content a data write leaves: value, content type, metadata.
#[derive(Clone, Copy)]
pub(crate) enum DataChange<'a> {
    Value(&'a [u8]),
    Delete,
    /// Keep the value; replace content type and metadata.
    Properties,
    /// Keep the value and content type; replace metadata.
    Metadata,
}

impl EtcdStore {
    /// Step 1 of a data write: its arguments.
    pub(crate) fn validate_write(
        &self,
        container: &str,
        key: &[u8],
        change: DataChange<'_>,
        options: &WriteOptions,
    ) -> Result<()> {
        self.check_writable()?;
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        if let DataChange::Value(value) = change {
            validate::value(value, &self.limits)?;
        }
        validate::metadata(&options.metadata, &self.limits)?;
        validate::content_type(options.content_type.as_deref(), &self.limits)?;
        options.ttl.validate()?;
        Ok(())
    }

    /// Every item write but a batch's: the checks of docs/spec.md §3, then the change.
    /// Returns the new ETag, or `None` for a delete.
    pub(crate) fn write_item(
        &self,
        container: &str,
        key: &[u8],
        kind: WriteKind,
        change: DataChange<'_>,
        options: &WriteOptions,
    ) -> Result<Option<(ETag, Timestamp, Option<Timestamp>)>> {
        self.validate_write(container, key, change, options)?;
        // A write of a whole value (or a delete) never reads the old value: it may be decided
        // on what this handle last saw.
        let from_recent = matches!(change, DataChange::Value(_) | DataChange::Delete);
        let (written, revision) = self.change_item(
            container,
            key,
            from_recent,
            |stored_container, item, now, _| {
                let live = item.filter(|item| item.is_live_at(now));
                let facts = live.map(|item| item.facts());
                let state = item.map(Stored::coordination).unwrap_or_default();
                let request = WriteRequest {
                    kind,
                    conditions: &options.conditions,
                    lease_id: options.lease_id,
                    lock_handle: options.lock_handle,
                };
                let coordination = item_write::check_write(
                    request,
                    facts.as_ref(),
                    facts.map(|facts| facts.etag),
                    &state,
                    now,
                )?;
                let (value, content_type) = match change {
                    DataChange::Delete => return Ok((KeyChange::Delete, None)),
                    DataChange::Value(value) => (value.to_vec(), options.content_type.clone()),
                    DataChange::Properties => (
                        live.map(|item| item.record.value.clone())
                            .unwrap_or_default(),
                        options.content_type.clone(),
                    ),
                    DataChange::Metadata => {
                        let item = live.expect("existence was checked");
                        (item.record.value.clone(), item.record.content_type.clone())
                    }
                };
                let expires_at = ttl::expires_at(
                    now,
                    options.ttl,
                    stored_container.record.default_ttl_seconds,
                );
                let record = ItemRecord {
                    present: true,
                    etag_version: 0,
                    last_modified: now,
                    expires_at,
                    last_fence: item.map_or(0, |item| item.record.last_fence),
                    content_type,
                    metadata: options.metadata.clone(),
                    lease: coordination.lease,
                    lock: coordination.lock,
                    value,
                };
                Ok((KeyChange::Put(Box::new(record)), Some((now, expires_at))))
            },
        )?;
        Ok(written.map(|(now, expires_at)| (ETag(revision_version(revision)), now, expires_at)))
    }

    pub(crate) fn write_value(
        &self,
        kind: WriteKind,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        let written = self.write_item(container, key, kind, DataChange::Value(value), options)?;
        Ok(written.expect("a write of a value writes").0)
    }

    /// A lease or lock change: the item's value and ETag stay, its coordination changes.
    pub(crate) fn change_coordination<T>(
        &self,
        container: &str,
        key: &[u8],
        mut decide: impl FnMut(
            Option<&Stored<ItemRecord>>,
            &Coordination,
            Timestamp,
            i64,
        ) -> Result<(Coordination, Option<Option<Timestamp>>, T)>,
    ) -> Result<T> {
        self.check_writable()?;
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        let (output, _) = self.change_item(container, key, false, |_, item, now, revision| {
            let live = item.filter(|item| item.is_live_at(now));
            let state = item.map(Stored::coordination).unwrap_or_default();
            let (coordination, expires_at, output) = decide(live, &state, now, revision)?;
            let change = match item {
                Some(item) => {
                    let mut record = item.record.clone();
                    record.etag_version = item.etag_version();
                    if let Some(expires_at) = expires_at {
                        record.expires_at = expires_at;
                    }
                    // A key force-locked while absent and now unlocked holds nothing.
                    if !record.present && coordination.is_empty() {
                        return Ok((KeyChange::Delete, output));
                    }
                    record.lease = coordination.lease;
                    record.lock = coordination.lock;
                    KeyChange::Put(Box::new(record))
                }
                None if coordination.lock.is_some() => KeyChange::Put(Box::new(ItemRecord {
                    present: false,
                    lock: coordination.lock,
                    ..ItemRecord::default()
                })),
                None => KeyChange::Keep,
            };
            Ok((change, output))
        })?;
        Ok(output)
    }

    pub(crate) fn lease_action(
        &self,
        container: &str,
        key: &[u8],
        action: LeaseAction,
    ) -> Result<LeaseOutcome> {
        lease::validate_action(&action)?;
        let generated_id = generated_id_for(&action);
        let acquiring = matches!(action, LeaseAction::Acquire { .. });
        self.change_coordination(container, key, |current, state, now, revision| {
            let Some(item) = current else {
                return Err(rejected(ErrorCode::NotFound));
            };
            if acquiring {
                lock::check_lock_for_lease_acquire(state.lock.as_ref(), now)?;
            }
            let outcome = lease::apply_lease_action(
                state.lease.as_ref(),
                action.clone(),
                LeaseContext {
                    now,
                    generated_id,
                    // The commit lands above the revision read: fences grow with it.
                    last_fence: revision_version(revision).max(item.record.last_fence),
                    last_modified: item.record.last_modified,
                },
            )?;
            let coordination = Coordination {
                lease: outcome.record.clone(),
                lock: state.lock,
            };
            Ok((coordination, None, outcome))
        })
    }

    /// A container's record with its timers, settled at now, or `ContainerNotFound`.
    pub(crate) fn stored_container(
        &self,
        name: &str,
        revision: i64,
    ) -> Result<Stored<ContainerRecord>> {
        self.stored_container_at(name, revision, self.now())
            .map(|(_, stored)| stored)
    }

    /// [`Self::stored_container`] settled at `now`, and the revision it was read at.
    pub(crate) fn stored_container_at(
        &self,
        name: &str,
        revision: i64,
        now: Timestamp,
    ) -> Result<(i64, Stored<ContainerRecord>)> {
        let mut keys = vec![self.keys.container(name)];
        keys.extend(
            Timer::OF_CONTAINERS
                .iter()
                .map(|&timer| self.keys.container_timer(timer, name)),
        );
        let (read_at, mut found) = self.get_keys(&keys, revision)?;
        let mut stored = found
            .next()
            .flatten()
            .map(|kv| decode_container(&kv))
            .transpose()?
            .ok_or_else(|| rejected(ErrorCode::ContainerNotFound))?;
        for timer in Timer::OF_CONTAINERS {
            stored.timers.0[timer.index()] =
                found.next().flatten().map_or(0, |kv| kv.mod_revision());
        }
        stored.settle(now);
        Ok((read_at, stored))
    }

    /// What a change of a container's record from `old` to `new` does to its timers.
    pub(crate) fn container_timer_plan(
        &self,
        name: &str,
        old: &Stored<ContainerRecord>,
        new: Option<&ContainerRecord>,
        now: Timestamp,
    ) -> TimerPlan {
        TimerPlan::of(
            &container_deadlines(&old.record),
            &new.map_or([None; 4], container_deadlines),
            old.timers,
            |timer| self.keys.container_timer(timer, name),
            now,
        )
    }

    /// Decides a change to a container's record and commits it if the record is unchanged.
    pub(crate) fn change_container<T>(
        &self,
        name: &str,
        mut decide: impl FnMut(
            &Stored<ContainerRecord>,
            Timestamp,
            i64,
        ) -> Result<(Option<ContainerRecord>, T)>,
    ) -> Result<(T, i64)> {
        let key = self.keys.container(name);
        for _ in 0..MAX_DECISION_ATTEMPTS {
            let now = self.now();
            let (revision, stored) = self.stored_container_at(name, 0, now)?;
            let (record, output) = decide(&stored, now, revision)?;
            let Some(record) = record else {
                return Ok((output, revision));
            };
            let plan = self.container_timer_plan(name, &stored, Some(&record), now);
            let mut compares = vec![Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                stored.mod_revision,
            )];
            compares.extend(plan.compares.iter().cloned());
            let leases = self.grant_timers(&plan)?;
            let mut operations = vec![TxnOp::put(key.clone(), record.encode(), None)];
            operations.extend(plan.puts(&leases));
            match self.commit(compares, operations) {
                Ok(Some(revision)) => return Ok((output, revision)),
                Ok(None) => self.cluster.revoke(&leases),
                Err(error) => {
                    self.cluster.revoke(&leases);
                    return Err(error);
                }
            }
        }
        Err(rejected(ErrorCode::Busy))
    }

    pub(crate) fn container_lease_action(
        &self,
        name: &str,
        action: LeaseAction,
    ) -> Result<LeaseOutcome> {
        self.check_writable()?;
        validate::container_name(name)?;
        lease::validate_action(&action)?;
        let generated_id = generated_id_for(&action);
        let (outcome, _) = self.change_container(name, |stored, now, revision| {
            let outcome = lease::apply_lease_action(
                stored.record.lease.as_ref(),
                action.clone(),
                LeaseContext {
                    now,
                    generated_id,
                    last_fence: revision_version(revision).max(stored.record.last_fence),
                    last_modified: stored.record.last_modified,
                },
            )?;
            let mut record = stored.record.clone();
            record.etag_version = stored.etag_version();
            record.lease = outcome.record.clone();
            record.last_fence = record.last_fence.max(outcome.fence.unwrap_or(0));
            Ok((Some(record), outcome))
        })?;
        Ok(outcome)
    }

    pub(crate) fn check_container_write(
        stored: &Stored<ContainerRecord>,
        options: &ContainerWriteOptions,
        operation: lease::ContainerOperation,
        now: Timestamp,
    ) -> Result<()> {
        lease::check_lease_for_container_operation(
            stored.record.lease.as_ref(),
            now,
            options.lease_id,
            operation,
        )?;
        conditions::check_write_conditions(
            WriteKind::SetMetadata,
            &options.conditions,
            Some(&stored.facts()),
        )
    }
}
