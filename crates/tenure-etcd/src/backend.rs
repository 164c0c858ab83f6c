//! `tenure::seam::Backend` for the etcd store: each method checks its arguments and hands
//! over to the decisions of store.rs, writes.rs and batch.rs.

use crate::cluster::rejected;
use crate::codec::Timer;
use crate::codec::{prefix_end, ContainerRecord};
use crate::store::{revision_version, EtcdStore, MAX_DECISION_ATTEMPTS, POLL_INTERVAL};
use crate::writes::{acquire_action, lease_of, random_id, DataChange};
use etcd_client::{Compare, CompareOp, TxnOp};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tenure::seam::conditions::WriteKind;
use tenure::seam::item_write::Coordination;
use tenure::seam::lease::{self, LeaseAction};
use tenure::seam::lock;
use tenure::seam::{ttl, validate, with_current_etag};
use tenure::seam::{Backend, BackendSnapshot, BatchOperations, PutKind};
use tenure::{
    ChangeRef, ChangesOptions, CompactionReport, ContainerOptions, ContainerProperties,
    ContainerStats, ContainerWriteOptions, ETag, Error, ErrorCode, Item, ItemRef, Lease, LeaseId,
    LeaseInfo, LeaseRequest, LockHandle, Page, ReadOptions, Result, StoreStats, Ttl, Version,
    WriteOptions,
};

impl Backend for EtcdStore {
    fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        // Every acknowledged write is committed by a quorum, on its members' disks.
        self.check_open()
    }

    fn version(&self) -> Version {
        self.head().map_or(0, |(_, head)| revision_version(head))
    }

    fn create_container(
        &self,
        name: &str,
        options: &ContainerOptions,
    ) -> Result<ContainerProperties> {
        self.check_writable()?;
        validate::container_name(name)?;
        validate::metadata(&options.metadata, &self.limits)?;
        ttl::container_default_ttl_seconds(options.default_ttl_seconds.map(i64::from))?;
        let key = self.keys.container(name);
        let now = self.now();
        let record = ContainerRecord {
            etag_version: 0,
            last_modified: now,
            default_ttl_seconds: options.default_ttl_seconds,
            last_fence: 0,
            metadata: options.metadata.clone(),
            lease: None,
        };
        let compares = vec![Compare::version(key.clone(), CompareOp::Equal, 0)];
        let Some(revision) = self.commit(compares, vec![TxnOp::put(key, record.encode(), None)])?
        else {
            return Err(rejected(ErrorCode::ContainerAlreadyExists));
        };
        Ok(ContainerProperties {
            name: name.to_owned(),
            etag: ETag(revision_version(revision)),
            last_modified: now,
            metadata: options.metadata.clone(),
            default_ttl_seconds: options.default_ttl_seconds,
        })
    }

    fn delete_container(&self, name: &str, options: &ContainerWriteOptions) -> Result<()> {
        self.check_writable()?;
        validate::container_name(name)?;
        validate::container_conditions(&options.conditions)?;
        let key = self.keys.container(name);
        let items = self.keys.items(name);
        let range = |start: Vec<u8>| {
            let end = prefix_end(&start);
            TxnOp::delete(
                start,
                Some(etcd_client::DeleteOptions::new().with_range(end)),
            )
        };
        for _ in 0..MAX_DECISION_ATTEMPTS {
            let now = self.now();
            let (_, stored) = self.stored_container_at(name, 0, now)?;
            Self::check_container_write(&stored, options, lease::ContainerOperation::Delete, now)?;
            let mut compares = vec![Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                stored.mod_revision,
            )];
            // The lease check relied on the container's timers.
            compares.extend(self.container_timer_plan(name, &stored, None, now).compares);
            // The container, its items, and their timers and its own.
            let mut operations = vec![TxnOp::delete(key.clone(), None), range(items.clone())];
            operations.extend(
                Timer::ALL
                    .iter()
                    .map(|&timer| range(self.keys.item_timers(timer, name))),
            );
            operations.extend(
                Timer::OF_CONTAINERS
                    .iter()
                    .map(|&timer| TxnOp::delete(self.keys.container_timer(timer, name), None)),
            );
            if self.commit(compares, operations)?.is_some() {
                return Ok(());
            }
        }
        Err(rejected(ErrorCode::Busy))
    }

    fn container_properties(&self, name: &str) -> Result<ContainerProperties> {
        self.check_open()?;
        validate::container_name(name)?;
        Ok(self.stored_container(name, 0)?.properties(name))
    }

    fn set_container_metadata(
        &self,
        name: &str,
        metadata: &[(String, String)],
        options: &ContainerWriteOptions,
    ) -> Result<ETag> {
        self.check_writable()?;
        validate::container_name(name)?;
        validate::metadata(metadata, &self.limits)?;
        validate::container_conditions(&options.conditions)?;
        let ((), revision) = self.change_container(name, |stored, now, _| {
            Self::check_container_write(stored, options, lease::ContainerOperation::Other, now)?;
            let mut record = stored.record.clone();
            record.metadata = metadata.to_vec();
            record.etag_version = 0;
            record.last_modified = now;
            Ok((Some(record), ()))
        })?;
        Ok(ETag(revision_version(revision)))
    }

    fn list_containers(&self) -> Result<Vec<String>> {
        self.check_open()?;
        self.container_names_at(0)
    }

    fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        Ok(self.read_at(0, container, key, options)?.to_item(key, true))
    }

    fn get_properties(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        Ok(self
            .read_at(0, container, key, options)?
            .to_item(key, false))
    }

    fn get_with(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        read: &mut dyn FnMut(ItemRef<'_>),
    ) -> Result<()> {
        let stored = self.read_at(0, container, key, options)?;
        let etag_version = stored.etag_version();
        let record = &stored.record;
        read(ItemRef {
            key,
            value: &record.value,
            etag: ETag(etag_version),
            version: etag_version,
            last_modified: record.last_modified,
            content_type: record.content_type.as_deref(),
            metadata: &record.metadata,
            expires_at: record.expires_at,
        });
        Ok(())
    }

    fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.check_open()?;
        self.list_at(
            0,
            container,
            prefix,
            page_size,
            continuation,
            include_values,
        )
    }

    fn put(
        &self,
        kind: PutKind,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        let kind = match kind {
            PutKind::Put => WriteKind::Put,
            PutKind::Create => WriteKind::Create,
            PutKind::Replace => WriteKind::Replace,
        };
        self.write_value(kind, container, key, value, options)
    }

    fn delete(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<()> {
        self.write_item(
            container,
            key,
            WriteKind::Delete,
            DataChange::Delete,
            options,
        )
        .map(|_| ())
    }

    fn set_properties(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<ETag> {
        let written = self.write_item(
            container,
            key,
            WriteKind::SetMetadata,
            DataChange::Properties,
            options,
        )?;
        Ok(written.expect("set_properties writes").0)
    }

    fn set_metadata(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<ETag> {
        if options.content_type.is_some() {
            return Err(Error::invalid(
                "content_type",
                "set_metadata keeps the content type; set_properties replaces it",
            ));
        }
        let written = self.write_item(
            container,
            key,
            WriteKind::SetMetadata,
            DataChange::Metadata,
            options,
        )?;
        Ok(written.expect("set_metadata writes").0)
    }

    fn update(
        &self,
        container: &str,
        key: &[u8],
        max_attempts: usize,
        change: &mut dyn FnMut(&[u8]) -> Vec<u8>,
    ) -> Result<Item> {
        if max_attempts == 0 || max_attempts > 10_000 {
            return Err(Error::invalid("max_attempts", "must be 1..=10000"));
        }
        let mut last_conflict = None;
        for attempt in 0..max_attempts {
            let current = self.get(container, key, &ReadOptions::default())?;
            let new_value = change(current.value.as_deref().unwrap_or(&[]));
            let options = WriteOptions {
                conditions: tenure::Conditions::if_match(current.etag),
                content_type: current.content_type.clone(),
                metadata: current.metadata.clone(),
                ..WriteOptions::default()
            };
            match self.write_item(
                container,
                key,
                WriteKind::Put,
                DataChange::Value(&new_value),
                &options,
            ) {
                Ok(written) => {
                    let (etag, last_modified, expires_at) = written.expect("a put writes");
                    return Ok(Item {
                        value: Some(new_value),
                        etag,
                        version: etag.version(),
                        last_modified,
                        expires_at,
                        ..current
                    });
                }
                Err(error) if error.code() == ErrorCode::ConditionNotMet => {
                    last_conflict = Some(error);
                    let ceiling_micros = 1_000u64 << attempt.min(8);
                    let pause = rand::random::<u64>() % (ceiling_micros + 1);
                    std::thread::sleep(Duration::from_micros(pause));
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_conflict.expect("at least one attempt ran"))
    }

    fn commit_batch(&self, batch: &BatchOperations) -> Result<Version> {
        self.check_writable()?;
        batch.validate(&self.limits)?;
        for _ in 0..MAX_DECISION_ATTEMPTS {
            if let Some(version) = self.attempt_batch(batch)? {
                return Ok(version);
            }
        }
        Err(rejected(ErrorCode::Busy))
    }

    fn snapshot(&self) -> Result<Box<dyn BackendSnapshot + '_>> {
        self.check_open()?;
        let (revision, head) = self.head()?;
        Ok(Box::new(crate::snapshot::EtcdSnapshot::new(
            self,
            revision,
            revision_version(head),
        )))
    }

    fn acquire_lease(&self, container: &str, key: &[u8], request: &LeaseRequest) -> Result<Lease> {
        lease_of(&self.lease_action(container, key, acquire_action(request))?)
    }

    fn acquire_lease_wait(
        &self,
        container: &str,
        key: &[u8],
        request: &LeaseRequest,
        timeout: Duration,
    ) -> Result<Lease> {
        if timeout > Duration::from_secs(24 * 3600) {
            return Err(Error::invalid("timeout", "at most 24 hours"));
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.acquire_lease(container, key, request) {
                Err(error)
                    if matches!(
                        error.code(),
                        ErrorCode::LeaseAlreadyPresent
                            | ErrorCode::LeaseIsBreakingAndCannotBeAcquired
                    ) =>
                {
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(rejected(ErrorCode::LeaseAlreadyPresent));
                    }
                    std::thread::sleep(POLL_INTERVAL.min(deadline - now));
                }
                other => return other,
            }
        }
    }

    fn renew_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<Lease> {
        lease_of(&self.lease_action(container, key, LeaseAction::Renew { id })?)
    }

    fn change_lease(
        &self,
        container: &str,
        key: &[u8],
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        lease_of(&self.lease_action(container, key, LeaseAction::Change { id, proposed_id })?)
    }

    fn release_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<()> {
        self.lease_action(container, key, LeaseAction::Release { id })
            .map(|_| ())
    }

    fn break_lease(
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

    fn lease_info(&self, container: &str, key: &[u8]) -> Result<LeaseInfo> {
        self.check_open()?;
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        let observed = self.observe(container, key)?;
        if observed.container.is_none() {
            return Err(rejected(ErrorCode::ContainerNotFound));
        }
        let now = self.now();
        let mut item = observed.item;
        if let Some(item) = item.as_mut() {
            item.settle(now);
        }
        let Some(item) = item.filter(|item| item.is_live_at(now)) else {
            return Err(rejected(ErrorCode::NotFound));
        };
        Ok(lease::lease_info(item.record.lease.as_ref(), now))
    }

    fn acquire_container_lease(&self, name: &str, request: &LeaseRequest) -> Result<Lease> {
        lease_of(&self.container_lease_action(name, acquire_action(request))?)
    }

    fn renew_container_lease(&self, name: &str, id: LeaseId) -> Result<Lease> {
        lease_of(&self.container_lease_action(name, LeaseAction::Renew { id })?)
    }

    fn change_container_lease(
        &self,
        name: &str,
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        lease_of(&self.container_lease_action(name, LeaseAction::Change { id, proposed_id })?)
    }

    fn release_container_lease(&self, name: &str, id: LeaseId) -> Result<()> {
        self.container_lease_action(name, LeaseAction::Release { id })
            .map(|_| ())
    }

    fn break_container_lease(&self, name: &str, period_seconds: Option<u32>) -> Result<Duration> {
        let outcome = self.container_lease_action(name, LeaseAction::Break { period_seconds })?;
        Ok(Duration::from_micros(
            outcome.break_time_left_micros.unwrap_or(0),
        ))
    }

    fn container_lease_info(&self, name: &str) -> Result<LeaseInfo> {
        self.check_open()?;
        validate::container_name(name)?;
        let stored = self.stored_container(name, 0)?;
        Ok(lease::lease_info(stored.record.lease.as_ref(), self.now()))
    }

    fn get_and_lock(
        &self,
        container: &str,
        key: &[u8],
        lock_timeout: Duration,
        force: bool,
    ) -> Result<(Option<Item>, LockHandle)> {
        let lock_timeout_micros = u64::try_from(lock_timeout.as_micros()).unwrap_or(u64::MAX);
        if lock_timeout_micros == 0 {
            return Err(Error::invalid(
                "lock_timeout",
                "a lock timeout must be greater than 0",
            ));
        }
        let handle = LockHandle(random_id());
        let item = self.change_coordination(container, key, |current, state, now, _| {
            let lease_state = lease::state(state.lease.as_ref().filter(|_| current.is_some()), now);
            let facts = lock::KeyFacts {
                item_present: current.is_some(),
                lock: state.lock.as_ref(),
                now,
            };
            let grant = lock::get_and_lock(facts, lease_state, lock_timeout_micros, force, handle)
                .map_err(|error| {
                    with_current_etag(error, current.map(|item| ETag(item.etag_version())))
                })?;
            let lease = if grant.clear_lease {
                None
            } else {
                state.lease.clone().filter(|_| current.is_some())
            };
            let coordination = Coordination {
                lease,
                lock: Some(grant.lock),
            };
            Ok((
                coordination,
                None,
                current.map(|item| item.to_item(key, true)),
            ))
        })?;
        Ok((item, handle))
    }

    fn put_and_unlock(
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
        self.write_value(WriteKind::Put, container, key, value, &options)
    }

    fn unlock(
        &self,
        container: &str,
        key: &[u8],
        handle: LockHandle,
        ttl: Option<Ttl>,
    ) -> Result<()> {
        if let Some(ttl) = ttl {
            ttl.validate()?;
        }
        let default_ttl_seconds = match self.stored_container(container, 0) {
            Ok(stored) => stored.record.default_ttl_seconds,
            Err(_) => None,
        };
        self.change_coordination(container, key, |current, state, now, _| {
            let facts = lock::KeyFacts {
                item_present: current.is_some(),
                lock: state.lock.as_ref(),
                now,
            };
            lock::unlock(facts, handle)?;
            let coordination = Coordination {
                lease: state.lease.clone(),
                lock: None,
            };
            let expires_at = ttl.map(|ttl| ttl::expires_at(now, ttl, default_ttl_seconds));
            Ok((coordination, expires_at, ()))
        })
    }

    fn visit_changes(
        &self,
        since: Version,
        options: &ChangesOptions,
        visit: &mut dyn FnMut(ChangeRef<'_>) -> bool,
    ) -> Result<()> {
        self.check_open()?;
        crate::feed::visit_changes(self, since, options, visit)
    }

    fn wait_for_changes(&self, since: Version, timeout: Duration) -> Result<bool> {
        self.check_open()?;
        if timeout > Duration::from_secs(24 * 3600) {
            return Err(Error::invalid("timeout", "at most 24 hours"));
        }
        let deadline = Instant::now() + timeout;
        loop {
            if self.version() > since {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            std::thread::sleep(POLL_INTERVAL.min(deadline - now));
        }
    }

    fn compact(&self) -> Result<CompactionReport> {
        self.check_writable()?;
        crate::feed::compact(self)
    }

    /// The cluster keeps every member's state itself: an open replays nothing to save.
    fn checkpoint(&self) -> Result<bool> {
        self.check_writable()?;
        Ok(false)
    }

    fn sweep_expired(&self, max_items: usize) -> Result<usize> {
        self.check_writable()?;
        crate::feed::sweep_expired(self, max_items)
    }

    fn stats(&self) -> Result<StoreStats> {
        self.check_open()?;
        let (revision, head) = self.head()?;
        let now = self.now();
        let mut containers = Vec::new();
        let mut total_items = 0;
        let mut total_leases = 0;
        let mut total_locks = 0;
        let mut live_bytes = 0;
        for name in self.container_names_at(revision)? {
            let stored = self.stored_container(&name, revision)?;
            let mut stats = ContainerStats {
                name: name.clone(),
                items: 0,
                value_bytes: 0,
                active_leases: 0,
                active_locks: 0,
                lease_state: Some(lease::state(stored.record.lease.as_ref(), now)),
            };
            self.walk_items(&name, b"", b"", revision, now, &mut |key, item| {
                if item.is_live_at(now) {
                    stats.items += 1;
                    stats.value_bytes += item.record.value.len() as u64;
                    live_bytes += (key.len() + item.record.value.len()) as u64;
                    if matches!(
                        lease::state(item.record.lease.as_ref(), now),
                        tenure::LeaseState::Leased | tenure::LeaseState::Breaking
                    ) {
                        stats.active_leases += 1;
                    }
                }
                if lock::live_lock(item.record.lock.as_ref(), now).is_some() {
                    stats.active_locks += 1;
                }
                Ok(true)
            })?;
            total_items += stats.items;
            total_leases += stats.active_leases;
            total_locks += stats.active_locks;
            containers.push(stats);
        }
        let db_bytes = crate::feed::db_size_bytes(self)?;
        Ok(StoreStats {
            version: revision_version(head),
            containers,
            items: total_items,
            item_versions: total_items,
            segments: 0,
            segment_size_bytes: 0,
            allocated_bytes: db_bytes,
            log_bytes: db_bytes,
            live_bytes,
            dead_bytes: db_bytes.saturating_sub(live_bytes),
            active_leases: total_leases,
            active_locks: total_locks,
            storage_full: false,
            free_bytes: None,
            reserve_bytes: 0,
            quota_bytes: None,
            store_bytes: db_bytes,
            io_uring: tenure::IoUringUse::NotUsed,
            opened_from_persisted_index: false,
            log_bytes_replayed_at_open: 0,
            log_verified: true,
        })
    }

    fn log_bytes(&self) -> u64 {
        crate::feed::db_size_bytes(self).unwrap_or(0)
    }

    fn compaction_progress(&self) -> (u64, u64) {
        (self.compacted_revision.load(Ordering::Relaxed), 0)
    }
}
