//! Leases (docs/spec.md §4, §5) and cache locks (docs/spec.md §6) on the store. Every change is one pure rule
//! decision (rules/lease.rs, rules/lock.rs) applied with the same compare-and-swap as a data
//! write: the new version keeps the item's value and ETag and carries the new lease or lock.
//! So a lease check and a write can never interleave, and a write that passed the check can
//! never land after the lease was released and taken by someone else.
//!
//! Fences are the log version of the grant: strictly increasing per item, across reopen and
//! compaction, with no extra state.

use crate::backend::results::{Lease, LeaseRequest};
use crate::log::SpaceUse;
use std::time::{Duration, Instant};

use crate::backend::options::{Item, WriteOptions};
use crate::clock::Timestamp;
use crate::engine::core::Engine;
use crate::error::{Error, ErrorCode, Result};
use crate::index::{coordination_box, index_key, node_of, NewVersion, VersionNode, COMMITTED};
use crate::record::{self, Coordination};
use crate::rules::lease::{self, LeaseAction, LeaseContext, LeaseId, LeaseInfo, LeaseOutcome};
use crate::rules::lock::{self, LockHandle};
use crate::rules::ttl::{self, Ttl};
use crate::rules::validate;
use crate::rules::with_current_etag;
use crate::types::{ETag, Version};

fn lease_of(outcome: &LeaseOutcome) -> Result<Lease> {
    match (outcome.lease_id, outcome.fence) {
        (Some(id), Some(fence)) => Ok(Lease { id, fence }),
        _ => Err(Error::invalid("lease", "the action granted no lease")),
    }
}

/// 122 random bits in UUID v4 form. The bits come from the thread's ChaCha generator, which
/// the operating system seeds and reseeds: as unguessable as `Uuid::new_v4`, without its
/// `getrandom` system call on every lease action (40k calls for 20k acquire + release pairs).
fn random_v4_id() -> u128 {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .as_u128()
}

/// A fresh lease id for an acquire that proposes none; no other action needs one, and a
/// random id costs about a tenth of a lease action.
fn generated_id_for(action: &LeaseAction) -> Option<LeaseId> {
    matches!(
        action,
        LeaseAction::Acquire {
            proposed_id: None,
            ..
        }
    )
    .then(|| LeaseId(random_v4_id()))
}

fn generated_lock_handle() -> LockHandle {
    LockHandle(random_v4_id())
}

/// A coordination decision: the key's new lease and lock, and what the caller gets back.
struct Decision<T> {
    coordination: Coordination,
    /// A new expiry for the item (an unlock with a new TTL); `None` keeps it.
    expires_at: Option<Option<Timestamp>>,
    output: T,
}

impl Engine {
    /// Applies a lease or lock change to one item with the write path's CAS. `decide` sees
    /// the live item (if any), the current coordination state, now, and the version the
    /// change will take; it may run more than once (on a lost CAS) and must be deterministic.
    fn change_coordination<T>(
        &self,
        container: &str,
        key: &[u8],
        create_slot: bool,
        decide: impl FnMut(
            Option<&VersionNode>,
            &Coordination,
            Timestamp,
            Version,
        ) -> Result<Decision<T>>,
    ) -> Result<T> {
        self.change_coordination_then(container, key, create_slot, decide, |_, _, _| Ok(()))
            .map(|(output, ())| output)
    }

    /// [`Engine::change_coordination`], then `then` on the decision's output and the
    /// node just installed (committed, so visible), under the same epoch guard: a caller that
    /// returns the item reads exactly the version it changed, with no second lookup.
    fn change_coordination_then<T, R>(
        &self,
        container: &str,
        key: &[u8],
        create_slot: bool,
        mut decide: impl FnMut(
            Option<&VersionNode>,
            &Coordination,
            Timestamp,
            Version,
        ) -> Result<Decision<T>>,
        then: impl FnOnce(&T, &VersionNode, &crossbeam_epoch::Guard) -> Result<R>,
    ) -> Result<(T, R)> {
        self.check_open()?;
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        let incarnation = self
            .catalog
            .live(container)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let key_bytes = index_key(incarnation.id, key);
        let slot = if create_slot {
            self.index.get_or_insert(&key_bytes)?
        } else {
            self.index
                .get(&key_bytes)?
                .ok_or_else(|| Error::rejected(ErrorCode::NotFound))?
        };
        let guard = crossbeam_epoch::pin();
        for _ in 0..crate::engine::write::MAX_INSTALL_ATTEMPTS {
            let now = self.now();
            let (head, head_version) = self.settled_version(&slot, &guard)?;
            let head_node = head_version.as_deref();
            let current = head_node.filter(|node| node.is_live_at(now));
            let state = head_node
                .and_then(|node| node.coordination().cloned())
                .unwrap_or_default();
            // The record's size does not depend on the version (fixed-width fields), so
            // decide once to size it, reserve, and decide again with the real version.
            let sizing = match decide(current, &state, now, 0) {
                Ok(sizing) => sizing,
                Err(refusal) => return Err(self.settle_refusal(head_node, refusal)),
            };
            let etag_version = current.map_or(0, |node| node.etag_version());
            let mut reservation = self.log.reserve(
                record::item_coordination_size(key, &sizing.coordination),
                SpaceUse::Ordinary,
            )?;
            let version = reservation.version();
            let decision = match decide(current, &state, now, version) {
                Ok(decision) => decision,
                Err(error) => {
                    reservation.abort();
                    return Err(error);
                }
            };
            let expires_at = match decision.expires_at {
                Some(expires_at) => expires_at,
                None => current.and_then(|node| node.expires_at()),
            };
            record::with_record_scratch(|scratch| {
                record::encode_item_coordination(
                    scratch,
                    incarnation.id,
                    key,
                    etag_version,
                    expires_at,
                    &decision.coordination,
                );
                // Coordination records are fixed-size for a given decision, so the sizing
                // decision reserved exactly this (`write_payload` asserts it).
                reservation.write_payload(scratch)
            })?;
            self.index.note_expiry(expires_at);
            let node = VersionNode::new(NewVersion {
                version,
                etag_version,
                status: COMMITTED,
                value: current.and_then(|node| node.value()),
                last_modified: current.map_or(0, |node| node.last_modified),
                expires_at,
                properties: current.and_then(|node| node.properties().cloned().map(Box::new)),
                coordination: coordination_box(decision.coordination),
            });
            match slot.install(head, node, &guard) {
                Ok(installed) => {
                    reservation.commit()?;
                    self.maybe_prune(&slot, installed, &guard);
                    self.lease_waiters.notify();
                    let installed = node_of(installed).expect("our own node, alive under `guard`");
                    let read = then(&decision.output, installed, &guard)?;
                    return Ok((decision.output, read));
                }
                Err(_) => reservation.abort(),
            }
        }
        // Concurrent writers kept moving the key's head: nothing changed.
        Err(Error::rejected(ErrorCode::Busy))
    }

    fn lease_action(
        &self,
        container: &str,
        key: &[u8],
        action: LeaseAction,
    ) -> Result<LeaseOutcome> {
        lease::validate_action(&action)?;
        let generated_id = generated_id_for(&action);
        let acquiring = matches!(action, LeaseAction::Acquire { .. });
        self.change_coordination(container, key, false, |current, state, now, version| {
            let Some(item) = current else {
                return Err(Error::rejected(ErrorCode::NotFound));
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
                    last_fence: version.saturating_sub(1),
                    last_modified: item.last_modified,
                },
            )?;
            Ok(Decision {
                coordination: Coordination {
                    lease: outcome.record.clone(),
                    lock: state.lock,
                },
                expires_at: None,
                output: outcome,
            })
        })
    }

    /// Acquires the item's lease (docs/spec.md §4). Never waits: see `acquire_lease_wait`.
    pub(crate) fn acquire_lease(
        &self,
        container: &str,
        key: &[u8],
        request: &LeaseRequest,
    ) -> Result<Lease> {
        let action = LeaseAction::Acquire {
            proposed_id: request.proposed_id,
            duration: request.duration,
            holder: request.holder.clone(),
        };
        lease_of(&self.lease_action(container, key, action)?)
    }

    pub(crate) fn renew_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<Lease> {
        lease_of(&self.lease_action(container, key, LeaseAction::Renew { id })?)
    }

    pub(crate) fn change_lease(
        &self,
        container: &str,
        key: &[u8],
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        let action = LeaseAction::Change { id, proposed_id };
        lease_of(&self.lease_action(container, key, action)?)
    }

    pub(crate) fn release_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<()> {
        self.lease_action(container, key, LeaseAction::Release { id })
            .map(|_| ())
    }

    /// Breaks the lease; returns the time until a new lease can be acquired (zero when broken
    /// at once). `period_seconds`: 0–60, or `None` (see docs/spec.md §4).
    pub(crate) fn break_lease(
        &self,
        container: &str,
        key: &[u8],
        period_seconds: Option<u32>,
    ) -> Result<Duration> {
        let outcome = self.lease_action(container, key, LeaseAction::Break { period_seconds })?;
        Ok(Duration::from_micros(
            outcome.break_time_left_micros.unwrap_or(0),
        ))
    }

    /// The item's lease as of now: state, id, fence, time left, holder.
    pub(crate) fn lease_info(&self, container: &str, key: &[u8]) -> Result<LeaseInfo> {
        self.check_open()?;
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        let now = self.now();
        let incarnation = self
            .catalog
            .live(container)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let guard = crossbeam_epoch::pin();
        self.index
            .with_slot(&index_key(incarnation.id, key), |slot| {
                let head_version = match slot {
                    Some(slot) => self.settled_version(slot, &guard)?.1,
                    None => None,
                };
                let current = head_version.as_deref().filter(|node| node.is_live_at(now));
                let Some(item) = current else {
                    return Err(Error::rejected(ErrorCode::NotFound));
                };
                Ok(lease::lease_info(item.lease(), now))
            })?
    }

    /// Acquires the lease, waiting (first come, first served among waiters, no busy loop) up to
    /// `timeout` for it to become free; `LeaseAlreadyPresent` when the time is up.
    pub(crate) fn acquire_lease_wait(
        &self,
        container: &str,
        key: &[u8],
        request: &LeaseRequest,
        timeout: Duration,
    ) -> Result<Lease> {
        self.check_open()?;
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        if timeout > Duration::from_secs(24 * 3600) {
            return Err(Error::invalid("timeout", "at most 24 hours"));
        }
        let deadline = Instant::now() + timeout;
        let queue_key: Box<[u8]> = index_key(0, &[container.as_bytes(), &[0], key].concat()).into();
        let ticket = self
            .lease_waiters
            .join(&queue_key)
            .ok_or_else(|| Error::rejected(ErrorCode::LeaseAlreadyPresent))?;
        loop {
            if self.lease_waiters.is_first(&queue_key, ticket) {
                match self.acquire_lease(container, key, request) {
                    Ok(lease) => {
                        self.lease_waiters.leave(&queue_key, ticket);
                        return Ok(lease);
                    }
                    Err(error)
                        if matches!(
                            error.code(),
                            ErrorCode::LeaseAlreadyPresent
                                | ErrorCode::LeaseIsBreakingAndCannotBeAcquired
                        ) => {}
                    Err(error) => {
                        self.lease_waiters.leave(&queue_key, ticket);
                        return Err(error);
                    }
                }
            }
            let now = Instant::now();
            if now >= deadline {
                self.lease_waiters.leave(&queue_key, ticket);
                return Err(Error::rejected(ErrorCode::LeaseAlreadyPresent));
            }
            self.lease_waiters.wait(deadline - now);
        }
    }

    // ----- cache locks (docs/spec.md §6) -----

    /// Locks the item for `lock_timeout` and returns it with an unguessable handle. With
    /// `force`, an absent key is locked too (no item comes back). Never waits.
    pub(crate) fn get_and_lock(
        &self,
        container: &str,
        key: &[u8],
        lock_timeout: Duration,
        force: bool,
    ) -> Result<(Option<Item>, LockHandle)> {
        let lock_timeout_micros = u64::try_from(lock_timeout.as_micros()).unwrap_or(u64::MAX);
        // Step 1: arguments, before anything is looked up.
        if lock_timeout_micros == 0 {
            return Err(Error::invalid(
                "lock_timeout",
                "a lock timeout must be greater than 0",
            ));
        }
        let handle = generated_lock_handle();
        // The item is read from the node the lock installed (it keeps the item's value,
        // properties and ETag), not looked up again: exactly the version locked, even if a
        // plain put replaces the lock right after.
        let (_, item) = self.change_coordination_then(
            container,
            key,
            force,
            |current, state, now, _| {
                let lease_state =
                    lease::state(state.lease.as_ref().filter(|_| current.is_some()), now);
                let facts = lock::KeyFacts {
                    item_present: current.is_some(),
                    lock: state.lock.as_ref(),
                    now,
                };
                let grant =
                    lock::get_and_lock(facts, lease_state, lock_timeout_micros, force, handle)
                        .map_err(|error| {
                            with_current_etag(error, current.map(|node| ETag(node.etag_version())))
                        })?;
                let lease = if grant.clear_lease {
                    None
                } else {
                    state.lease.clone().filter(|_| current.is_some())
                };
                Ok(Decision {
                    coordination: Coordination {
                        lease,
                        lock: Some(grant.lock),
                    },
                    expires_at: None,
                    output: current.is_some(),
                })
            },
            |item_present, node, guard| {
                if *item_present {
                    self.item_from(key, node, true, guard).map(Some)
                } else {
                    Ok(None)
                }
            },
        )?;
        Ok((item, handle))
    }

    /// Replaces the locked item's value and unlocks it (`NotFound`, `ObjectNotLocked`,
    /// `InvalidLockHandle` per docs/spec.md §6). `ttl` as for put.
    pub(crate) fn put_and_unlock(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        handle: LockHandle,
        ttl: Ttl,
    ) -> Result<ETag> {
        let options = WriteOptions {
            lock_handle: Some(handle),
            ttl,
            ..WriteOptions::default()
        };
        self.put(container, key, value, &options)
    }

    /// Releases the lock. Without a new `ttl`, an item already past its expiry is gone at once
    /// (the lock had suspended its expiry); with one, its expiry restarts from now. The ETag
    /// does not change either way.
    pub(crate) fn unlock(
        &self,
        container: &str,
        key: &[u8],
        handle: LockHandle,
        ttl: Option<Ttl>,
    ) -> Result<()> {
        if let Some(ttl) = ttl {
            ttl.validate()?;
        }
        let default_ttl_seconds = self
            .catalog
            .live(container)
            .and_then(|incarnation| incarnation.default_ttl_seconds);
        self.change_coordination(container, key, false, |current, state, now, _| {
            let facts = lock::KeyFacts {
                item_present: current.is_some(),
                lock: state.lock.as_ref(),
                now,
            };
            lock::unlock(facts, handle)?;
            Ok(Decision {
                coordination: Coordination {
                    lease: state.lease.clone(),
                    lock: None,
                },
                expires_at: ttl.map(|ttl| ttl::expires_at(now, ttl, default_ttl_seconds)),
                output: (),
            })
        })
    }
}

/// The store-level counterpart of [`lease_info`] for containers, and container leases.
impl Engine {
    fn container_lease_action(&self, name: &str, action: LeaseAction) -> Result<LeaseOutcome> {
        self.check_open()?;
        lease::validate_action(&action)?;
        validate::container_name(name)?;
        let generated_id = generated_id_for(&action);
        let _changes = self.catalog.changes.lock();
        let incarnation = self
            .catalog
            .live(name)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let now = self.now();
        let (current_lease, last_modified) = {
            let state = incarnation.state.lock();
            (state.lease.clone(), state.last_modified)
        };
        // Decide with the version the record will take (the fence of a new grant).
        let probe = lease::apply_lease_action(
            current_lease.as_ref(),
            action.clone(),
            LeaseContext {
                now,
                generated_id,
                last_fence: 0,
                last_modified,
            },
        )?;
        let size = record::encode_container_lease(incarnation.id, probe.record.as_ref()).len();
        let mut reservation = self.log.reserve(size, SpaceUse::Ordinary)?;
        let version = reservation.version();
        let outcome = lease::apply_lease_action(
            current_lease.as_ref(),
            action,
            LeaseContext {
                now,
                generated_id,
                last_fence: version.saturating_sub(1),
                last_modified,
            },
        )?;
        let payload = record::encode_container_lease(incarnation.id, outcome.record.as_ref());
        reservation.write_payload(&payload)?;
        incarnation.state.lock().lease = outcome.record.clone();
        reservation.commit()?;
        Ok(outcome)
    }

    pub(crate) fn acquire_container_lease(
        &self,
        name: &str,
        request: &LeaseRequest,
    ) -> Result<Lease> {
        let action = LeaseAction::Acquire {
            proposed_id: request.proposed_id,
            duration: request.duration,
            holder: request.holder.clone(),
        };
        lease_of(&self.container_lease_action(name, action)?)
    }

    pub(crate) fn renew_container_lease(&self, name: &str, id: LeaseId) -> Result<Lease> {
        lease_of(&self.container_lease_action(name, LeaseAction::Renew { id })?)
    }

    pub(crate) fn change_container_lease(
        &self,
        name: &str,
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        lease_of(&self.container_lease_action(name, LeaseAction::Change { id, proposed_id })?)
    }

    pub(crate) fn release_container_lease(&self, name: &str, id: LeaseId) -> Result<()> {
        self.container_lease_action(name, LeaseAction::Release { id })
            .map(|_| ())
    }

    pub(crate) fn break_container_lease(
        &self,
        name: &str,
        period_seconds: Option<u32>,
    ) -> Result<Duration> {
        let outcome = self.container_lease_action(name, LeaseAction::Break { period_seconds })?;
        Ok(Duration::from_micros(
            outcome.break_time_left_micros.unwrap_or(0),
        ))
    }

    pub(crate) fn container_lease_info(&self, name: &str) -> Result<LeaseInfo> {
        self.check_open()?;
        validate::container_name(name)?;
        let incarnation = self
            .catalog
            .live(name)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let lease = incarnation.state.lock().lease.clone();
        Ok(lease::lease_info(lease.as_ref(), self.now()))
    }
}
