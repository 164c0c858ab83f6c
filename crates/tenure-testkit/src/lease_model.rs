//! A reference model of docs/spec.md §4 (item leases), §5 (container leases) and §6 (cache locks),
//! written straight from the spec's tables as plain code: a map of keys, each with an optional
//! item, lease and lock, and one container with its own lease. It shares no code with the
//! engine's rules; tests drive the store and the model with the same calls and compare.
//!
//! Time is explicit: every call takes `now` (microseconds, the store's manual clock). Leases
//! and locks keep absolute deadlines; the state is derived from them at every call.
//!
//! Ids the store chooses (a lease id when the acquire proposed none, lock handles, ETags,
//! fences) are unknown to the model: the caller checks what the model says about them and then
//! records the store's value (`record_grant`, `record_lock_handle`, `record_etag`).

use std::collections::BTreeMap;

use tenure::{ErrorCode, LeaseId, LeaseInfo, LeaseState, LockHandle, Ttl, MICROS_PER_SECOND};

const SECOND: u64 = MICROS_PER_SECOND;

/// A lease as the model keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLease {
    pub id: LeaseId,
    /// Seconds; `None` = infinite.
    pub seconds: Option<u32>,
    /// End of a fixed lease.
    pub deadline: Option<u64>,
    /// End of a break with time left.
    pub break_deadline: Option<u64>,
    /// Broken at once.
    pub broken: bool,
    pub fence: u64,
    pub holder: Option<String>,
}

impl ModelLease {
    pub fn state(&self, now: u64) -> LeaseState {
        if self.broken {
            LeaseState::Broken
        } else if let Some(end) = self.break_deadline {
            if now < end {
                LeaseState::Breaking
            } else {
                LeaseState::Broken
            }
        } else if self.deadline.is_some_and(|end| now >= end) {
            LeaseState::Expired
        } else {
            LeaseState::Leased
        }
    }

    fn held(&self, now: u64) -> bool {
        matches!(self.state(now), LeaseState::Leased | LeaseState::Breaking)
    }
}

fn state_of(lease: Option<&ModelLease>, now: u64) -> LeaseState {
    lease.map_or(LeaseState::Available, |lease| lease.state(now))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelItem {
    pub value: Vec<u8>,
    /// Recorded from the store after each write.
    pub etag: Option<tenure::ETag>,
    pub last_modified: u64,
    pub expires_at: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLock {
    /// `None` until the caller records the handle the store chose.
    pub handle: Option<LockHandle>,
    pub until: u64,
}

#[derive(Debug, Clone, Default)]
pub struct KeyModel {
    pub item: Option<ModelItem>,
    pub lease: Option<ModelLease>,
    pub lock: Option<ModelLock>,
}

#[derive(Debug, Clone)]
pub struct ContainerModel {
    pub lease: Option<ModelLease>,
    pub last_modified: u64,
}

/// What a lease action is applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Item(usize),
    Container,
}

/// What the model expects of a granted acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// `None`: the store generates the id.
    pub id: Option<LeaseId>,
    /// `Some(f)`: the grant keeps fence `f`; `None`: a new fence above `above`.
    pub kept_fence: Option<u64>,
    pub above: u64,
}

/// A data write, as the store's `put`/`delete`/`set_properties`/`put_and_unlock` and batch
/// operations make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteKind {
    Put { value: Vec<u8>, ttl: Ttl },
    Delete,
    SetProperties { ttl: Ttl },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOp {
    pub key: usize,
    pub kind: WriteKind,
    pub lease_id: Option<LeaseId>,
    pub lock_handle: Option<LockHandle>,
}

#[derive(Debug, Clone)]
pub struct LeaseModel {
    pub keys: Vec<KeyModel>,
    pub container: ContainerModel,
    /// The highest fence granted per target (never reset: fences only grow).
    pub highest_fence: BTreeMap<Option<usize>, u64>,
}

fn target_key(target: Target) -> Option<usize> {
    match target {
        Target::Item(key) => Some(key),
        Target::Container => None,
    }
}

fn expiry(now: u64, ttl: Ttl) -> Option<u64> {
    match ttl {
        // The model's container has no default TTL.
        Ttl::ContainerDefault | Ttl::Never => None,
        Ttl::Seconds(seconds) => Some(now + u64::from(seconds) * SECOND),
    }
}

impl LeaseModel {
    pub fn new(keys: usize, now: u64) -> LeaseModel {
        LeaseModel {
            keys: vec![KeyModel::default(); keys],
            container: ContainerModel {
                lease: None,
                last_modified: now,
            },
            highest_fence: BTreeMap::new(),
        }
    }

    /// Applies what time alone does: a lock past its timeout is gone; an item past its expiry
    /// and not held by a live lock is gone, with its lease.
    pub fn settle(&mut self, now: u64) {
        for key in &mut self.keys {
            if key.lock.as_ref().is_some_and(|lock| now >= lock.until) {
                key.lock = None;
            }
            let expired = key
                .item
                .as_ref()
                .is_some_and(|item| item.expires_at.is_some_and(|end| now >= end));
            if expired && key.lock.is_none() {
                key.item = None;
            }
            if key.item.is_none() {
                key.lease = None;
            }
        }
    }

    fn lease_slot(&mut self, target: Target) -> &mut Option<ModelLease> {
        match target {
            Target::Item(key) => &mut self.keys[key].lease,
            Target::Container => &mut self.container.lease,
        }
    }

    /// Item must exist for item lease actions.
    fn lease_target(&mut self, target: Target, now: u64) -> Result<(), ErrorCode> {
        self.settle(now);
        if let Target::Item(key) = target {
            if self.keys[key].item.is_none() {
                return Err(ErrorCode::NotFound);
            }
        }
        Ok(())
    }

    fn last_written(&self, target: Target) -> u64 {
        match target {
            Target::Item(key) => self.keys[key]
                .item
                .as_ref()
                .map_or(0, |item| item.last_modified),
            Target::Container => self.container.last_modified,
        }
    }

    fn highest(&self, target: Target) -> u64 {
        self.highest_fence
            .get(&target_key(target))
            .copied()
            .unwrap_or(0)
    }

    // ----- lease actions (docs/spec.md §4 lease-action table) -----

    /// acquire: on success the lease is in place with a placeholder id/fence until
    /// `record_grant`.
    pub fn acquire(
        &mut self,
        target: Target,
        proposed: Option<LeaseId>,
        seconds: Option<u32>,
        holder: Option<String>,
        now: u64,
    ) -> Result<Grant, ErrorCode> {
        self.lease_target(target, now)?;
        if let Target::Item(key) = target {
            if self.keys[key].lock.is_some() {
                return Err(ErrorCode::LeaseAlreadyPresent);
            }
        }
        let above = self.highest(target);
        let deadline = seconds.map(|seconds| now + u64::from(seconds) * SECOND);
        let slot = self.lease_slot(target);
        match slot.as_ref().map(|lease| (lease.state(now), lease.id)) {
            Some((LeaseState::Leased, current)) => {
                if proposed != Some(current) {
                    return Err(ErrorCode::LeaseAlreadyPresent);
                }
                let lease = slot.as_mut().expect("leased");
                lease.seconds = seconds;
                lease.deadline = deadline;
                lease.holder = holder;
                Ok(Grant {
                    id: Some(current),
                    kept_fence: Some(lease.fence),
                    above,
                })
            }
            Some((LeaseState::Breaking, current)) => Err(if proposed == Some(current) {
                ErrorCode::LeaseIsBreakingAndCannotBeAcquired
            } else {
                ErrorCode::LeaseAlreadyPresent
            }),
            _ => {
                *slot = Some(ModelLease {
                    id: proposed.unwrap_or(LeaseId(0)),
                    seconds,
                    deadline,
                    break_deadline: None,
                    broken: false,
                    fence: 0,
                    holder,
                });
                Ok(Grant {
                    id: proposed,
                    kept_fence: None,
                    above,
                })
            }
        }
    }

    /// Records the id and fence the store gave a granted acquire.
    pub fn record_grant(&mut self, target: Target, id: LeaseId, fence: u64) {
        let lease = self.lease_slot(target).as_mut().expect("a granted lease");
        lease.id = id;
        lease.fence = fence;
        let highest = self.highest_fence.entry(target_key(target)).or_insert(0);
        *highest = (*highest).max(fence);
    }

    /// renew: returns the lease (id, fence).
    pub fn renew(
        &mut self,
        target: Target,
        id: LeaseId,
        now: u64,
    ) -> Result<(LeaseId, u64), ErrorCode> {
        self.lease_target(target, now)?;
        let written = self.last_written(target);
        let slot = self.lease_slot(target);
        let Some(lease) = slot.as_mut().filter(|lease| lease.id == id) else {
            return Err(ErrorCode::LeaseIdMismatchWithLeaseOperation);
        };
        match lease.state(now) {
            LeaseState::Leased => {}
            LeaseState::Expired => {
                let expired_at = lease.deadline.expect("only fixed leases expire");
                if written >= expired_at {
                    return Err(ErrorCode::LeaseIdMismatchWithLeaseOperation);
                }
            }
            LeaseState::Breaking | LeaseState::Broken => {
                return Err(ErrorCode::LeaseIsBrokenAndCannotBeRenewed)
            }
            LeaseState::Available => unreachable!("a lease record is never Available"),
        }
        lease.deadline = lease
            .seconds
            .map(|seconds| now + u64::from(seconds) * SECOND);
        Ok((lease.id, lease.fence))
    }

    pub fn change(
        &mut self,
        target: Target,
        id: LeaseId,
        proposed: LeaseId,
        now: u64,
    ) -> Result<(LeaseId, u64), ErrorCode> {
        self.lease_target(target, now)?;
        let slot = self.lease_slot(target);
        let Some(lease) = slot.as_mut() else {
            return Err(ErrorCode::LeaseNotPresentWithLeaseOperation);
        };
        match lease.state(now) {
            LeaseState::Leased => {
                if id == lease.id {
                    lease.id = proposed;
                } else if proposed != lease.id {
                    return Err(ErrorCode::LeaseIdMismatchWithLeaseOperation);
                }
                Ok((lease.id, lease.fence))
            }
            LeaseState::Breaking => Err(if id == lease.id {
                ErrorCode::LeaseIsBreakingAndCannotBeChanged
            } else {
                ErrorCode::LeaseIdMismatchWithLeaseOperation
            }),
            _ => Err(ErrorCode::LeaseNotPresentWithLeaseOperation),
        }
    }

    pub fn release(&mut self, target: Target, id: LeaseId, now: u64) -> Result<(), ErrorCode> {
        self.lease_target(target, now)?;
        let slot = self.lease_slot(target);
        if slot.as_ref().is_some_and(|lease| lease.id == id) {
            *slot = None;
            Ok(())
        } else {
            Err(ErrorCode::LeaseIdMismatchWithLeaseOperation)
        }
    }

    /// break: returns the time left (µs) until a new lease can be acquired.
    pub fn break_lease(
        &mut self,
        target: Target,
        period: Option<u32>,
        now: u64,
    ) -> Result<u64, ErrorCode> {
        self.lease_target(target, now)?;
        let slot = self.lease_slot(target);
        let Some(lease) = slot.as_mut() else {
            return Err(ErrorCode::LeaseNotPresentWithLeaseOperation);
        };
        let period_end = period.map(|seconds| now + u64::from(seconds) * SECOND);
        match (lease.state(now), period) {
            (LeaseState::Leased | LeaseState::Breaking, Some(0)) => lease.broken = true,
            (LeaseState::Leased, Some(_)) => {
                let end = period_end.expect("a period");
                lease.break_deadline =
                    Some(lease.deadline.map_or(end, |deadline| deadline.min(end)));
            }
            (LeaseState::Leased, None) => match lease.deadline {
                None => lease.broken = true,
                Some(deadline) => lease.break_deadline = Some(deadline),
            },
            (LeaseState::Breaking, Some(_)) => {
                let old = lease.break_deadline.expect("breaking");
                lease.break_deadline = Some(old.min(period_end.expect("a period")));
            }
            (LeaseState::Breaking | LeaseState::Broken, None) | (LeaseState::Broken, Some(_)) => {}
            (LeaseState::Expired, _) => lease.broken = true,
            (LeaseState::Available, _) => unreachable!("a lease record is never Available"),
        }
        Ok(match lease.state(now) {
            LeaseState::Breaking => lease.break_deadline.expect("breaking") - now,
            _ => 0,
        })
    }

    pub fn lease_info(&mut self, target: Target, now: u64) -> Result<LeaseInfo, ErrorCode> {
        self.lease_target(target, now)?;
        let lease = self.lease_slot(target).as_ref();
        let state = state_of(lease, now);
        Ok(LeaseInfo {
            state,
            id: lease.map(|lease| lease.id),
            fence: lease.map(|lease| lease.fence),
            remaining_micros: lease.and_then(|lease| match state {
                LeaseState::Leased => lease.deadline.map(|end| end - now),
                LeaseState::Breaking => lease.break_deadline.map(|end| end - now),
                _ => None,
            }),
            holder: lease.and_then(|lease| lease.holder.clone()),
        })
    }

    // ----- data operations (docs/spec.md §4 data-operation table, §6) -----

    /// The lease check of a data operation; `Ok(true)` = the write clears the lease.
    fn check_lease(
        lease: Option<&ModelLease>,
        given: Option<LeaseId>,
        write: bool,
        now: u64,
    ) -> Result<bool, ErrorCode> {
        match (state_of(lease, now), given) {
            (LeaseState::Available, None) => Ok(false),
            (LeaseState::Available, Some(_)) => Err(ErrorCode::LeaseNotPresentWithBlobOperation),
            (LeaseState::Leased | LeaseState::Breaking, Some(id)) => {
                if Some(id) == lease.map(|lease| lease.id) {
                    Ok(false)
                } else {
                    Err(ErrorCode::LeaseIdMismatchWithBlobOperation)
                }
            }
            (LeaseState::Leased | LeaseState::Breaking, None) => {
                if write {
                    Err(ErrorCode::LeaseIdMissing)
                } else {
                    Ok(false)
                }
            }
            (LeaseState::Broken | LeaseState::Expired, Some(_)) => Err(ErrorCode::LeaseLost),
            (LeaseState::Broken | LeaseState::Expired, None) => Ok(write),
        }
    }

    /// One write. On success the written item has no ETag until `record_etag`.
    pub fn write(&mut self, op: &WriteOp, now: u64) -> Result<(), ErrorCode> {
        self.settle(now);
        let key = &mut self.keys[op.key];
        let present = key.item.is_some();
        // 3. existence
        if matches!(op.kind, WriteKind::Delete | WriteKind::SetProperties { .. }) && !present {
            return Err(ErrorCode::NotFound);
        }
        // 4. lease, then lock
        let clear = Self::check_lease(key.lease.as_ref(), op.lease_id, true, now)?;
        if let Some(handle) = op.lock_handle {
            match &key.lock {
                None if !present => return Err(ErrorCode::NotFound),
                None => return Err(ErrorCode::ObjectNotLocked),
                Some(lock) if lock.handle != Some(handle) => {
                    return Err(ErrorCode::InvalidLockHandle)
                }
                Some(_) => {}
            }
        }
        // 6. the change: every write ends the lock; a delete drops the lease.
        key.lock = None;
        if clear {
            key.lease = None;
        }
        match &op.kind {
            WriteKind::Put { value, ttl } => {
                key.item = Some(ModelItem {
                    value: value.clone(),
                    etag: None,
                    last_modified: now,
                    expires_at: expiry(now, *ttl),
                });
            }
            WriteKind::SetProperties { ttl } => {
                let item = key.item.as_mut().expect("present");
                item.etag = None;
                item.last_modified = now;
                item.expires_at = expiry(now, *ttl);
            }
            WriteKind::Delete => {
                key.item = None;
                key.lease = None;
            }
        }
        Ok(())
    }

    /// Operations applied in order, all or nothing; the error names the failing index.
    pub fn batch(&mut self, ops: &[WriteOp], now: u64) -> Result<(), (usize, ErrorCode)> {
        let mut trial = self.clone();
        for (index, op) in ops.iter().enumerate() {
            trial.write(op, now).map_err(|code| (index, code))?;
        }
        *self = trial;
        Ok(())
    }

    pub fn record_etag(&mut self, key: usize, etag: tenure::ETag) {
        if let Some(item) = self.keys[key].item.as_mut() {
            item.etag = Some(etag);
        }
    }

    pub fn read(
        &mut self,
        key: usize,
        lease_id: Option<LeaseId>,
        now: u64,
    ) -> Result<ModelItem, ErrorCode> {
        self.settle(now);
        let key = &self.keys[key];
        let Some(item) = &key.item else {
            return Err(ErrorCode::NotFound);
        };
        Self::check_lease(key.lease.as_ref(), lease_id, false, now)?;
        Ok(item.clone())
    }

    // ----- cache locks (docs/spec.md §6) -----

    /// get_and_lock: the item (if present) comes back; the lock's handle is recorded with
    /// `record_lock_handle`.
    pub fn get_and_lock(
        &mut self,
        key: usize,
        timeout_micros: u64,
        force: bool,
        now: u64,
    ) -> Result<Option<ModelItem>, ErrorCode> {
        self.settle(now);
        let key = &mut self.keys[key];
        if key.item.is_none() && !force {
            return Err(ErrorCode::NotFound);
        }
        if key.lock.is_some() || key.lease.as_ref().is_some_and(|lease| lease.held(now)) {
            return Err(ErrorCode::ObjectLocked);
        }
        // An Expired or Broken lease is cleared by the lock.
        key.lease = None;
        key.lock = Some(ModelLock {
            handle: None,
            until: now + timeout_micros,
        });
        Ok(key.item.clone())
    }

    pub fn record_lock_handle(&mut self, key: usize, handle: LockHandle) {
        self.keys[key].lock.as_mut().expect("locked").handle = Some(handle);
    }

    pub fn unlock(
        &mut self,
        key: usize,
        handle: LockHandle,
        ttl: Option<Ttl>,
        now: u64,
    ) -> Result<(), ErrorCode> {
        self.settle(now);
        let slot = &mut self.keys[key];
        match &slot.lock {
            None if slot.item.is_none() => return Err(ErrorCode::NotFound),
            None => return Err(ErrorCode::ObjectNotLocked),
            Some(lock) if lock.handle != Some(handle) => return Err(ErrorCode::InvalidLockHandle),
            Some(_) => {}
        }
        slot.lock = None;
        if let (Some(ttl), Some(item)) = (ttl, slot.item.as_mut()) {
            item.expires_at = expiry(now, ttl);
        }
        // Past its expiry and no longer locked: gone at once.
        self.settle(now);
        Ok(())
    }

    /// The live lock's handle, if any.
    pub fn lock_handle(&mut self, key: usize, now: u64) -> Option<LockHandle> {
        self.settle(now);
        self.keys[key].lock.as_ref().and_then(|lock| lock.handle)
    }

    // ----- container operations (docs/spec.md §5) -----

    fn check_container(
        &self,
        given: Option<LeaseId>,
        delete: bool,
        now: u64,
    ) -> Result<(), ErrorCode> {
        let lease = self.container.lease.as_ref();
        match (state_of(lease, now), given) {
            (LeaseState::Leased | LeaseState::Breaking, None) if delete => {
                Err(ErrorCode::LeaseIdMissing)
            }
            (_, None) => Ok(()),
            (LeaseState::Available, Some(_)) => {
                Err(ErrorCode::LeaseNotPresentWithContainerOperation)
            }
            (LeaseState::Leased | LeaseState::Breaking, Some(id)) => {
                if Some(id) == lease.map(|lease| lease.id) {
                    Ok(())
                } else {
                    Err(ErrorCode::LeaseIdMismatchWithContainerOperation)
                }
            }
            (LeaseState::Broken | LeaseState::Expired, Some(_)) => Err(ErrorCode::LeaseLost),
        }
    }

    /// set_container_metadata: a container write; it never clears the container's lease.
    pub fn set_container_metadata(
        &mut self,
        lease_id: Option<LeaseId>,
        now: u64,
    ) -> Result<(), ErrorCode> {
        self.settle(now);
        self.check_container(lease_id, false, now)?;
        self.container.last_modified = now;
        Ok(())
    }

    /// delete_container: every item, lease and lock of the container goes with it.
    pub fn delete_container(
        &mut self,
        lease_id: Option<LeaseId>,
        now: u64,
    ) -> Result<(), ErrorCode> {
        self.settle(now);
        self.check_container(lease_id, true, now)?;
        for key in &mut self.keys {
            *key = KeyModel::default();
        }
        self.container.lease = None;
        Ok(())
    }

    /// The container was created again (after a delete).
    pub fn container_created(&mut self, now: u64) {
        self.container = ContainerModel {
            lease: None,
            last_modified: now,
        };
    }

    /// The earliest instant after `now` at which time alone changes something (a lease or
    /// break deadline, a lock timeout, an item expiry): schedules jump exactly there.
    pub fn next_deadline(&self, now: u64) -> Option<u64> {
        let mut instants = Vec::new();
        let leases = self
            .keys
            .iter()
            .filter_map(|key| key.lease.as_ref())
            .chain(self.container.lease.as_ref());
        for lease in leases {
            instants.extend(lease.deadline);
            instants.extend(lease.break_deadline);
        }
        for key in &self.keys {
            instants.extend(key.lock.as_ref().map(|lock| lock.until));
            instants.extend(key.item.as_ref().and_then(|item| item.expires_at));
        }
        instants.into_iter().filter(|&instant| instant > now).min()
    }
}
