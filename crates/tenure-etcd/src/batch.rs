//! Batches (docs/spec.md §8): every key and container read in one transaction, every
//! operation decided in order, all of it committed in one transaction or none.

use crate::cluster::rejected;
use crate::codec::ItemRecord;
use crate::codec::Timer;
use crate::store::{decode_container, decode_item, revision_version, EtcdStore, Stored};
use crate::timers::{has_deadlines, item_deadlines, TimerPlan};
use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use tenure::seam::conditions::{ItemFacts, WriteKind};
use tenure::seam::item_write::{self, Coordination, WriteRequest};
use tenure::seam::ttl;
use tenure::seam::{BatchOperations, Operation};
use tenure::{ETag, ErrorCode, Result, Timestamp, Version};

impl EtcdStore {
    /// One try at a batch: read every key and container it names in one transaction, decide
    /// every operation in order, commit all of it in one transaction comparing what was read.
    /// `Ok(None)`: another client changed something read; try again.
    pub(crate) fn attempt_batch(&self, batch: &BatchOperations) -> Result<Option<Version>> {
        let operations = batch.operations();
        let bytes = batch.bytes();
        // Distinct containers and keys, in first-seen order.
        let mut containers: Vec<&str> = Vec::new();
        let mut targets: Vec<(&str, &[u8])> = Vec::new();
        for operation in operations {
            let (container, key) = operation.target(bytes);
            if !containers.contains(&container) {
                containers.push(container);
            }
            if !targets.contains(&(container, key)) {
                targets.push((container, key));
            }
        }
        let mut reads: Vec<TxnOp> = vec![TxnOp::get(self.keys.head(), None)];
        reads.extend(
            containers
                .iter()
                .map(|name| TxnOp::get(self.keys.container(name), None)),
        );
        reads.extend(
            targets
                .iter()
                .map(|(container, key)| TxnOp::get(self.keys.item(container, key), None)),
        );
        let response = self.cluster.read(|mut client| {
            let txn = Txn::new().and_then(reads.clone());
            async move { client.txn(txn).await }
        })?;
        let read_at = response.header().map_or(0, |header| header.revision());
        let mut found = response.op_responses().into_iter().map(|op| match op {
            TxnOpResponse::Get(mut get) => get.take_kvs().into_iter().next(),
            _ => None,
        });
        let head = found.next().flatten().map_or(0, |kv| kv.mod_revision());
        let mut stored_containers = Vec::with_capacity(containers.len());
        for _ in &containers {
            stored_containers.push(
                found
                    .next()
                    .flatten()
                    .map(|kv| decode_container(&kv))
                    .transpose()?,
            );
        }
        let mut stored_items = Vec::with_capacity(targets.len());
        for _ in &targets {
            stored_items.push(
                found
                    .next()
                    .flatten()
                    .map(|kv| decode_item(&kv))
                    .transpose()?,
            );
        }
        let now = self.now();
        self.settle_targets(&targets, &mut stored_items, read_at, now)?;
        // Per key: what the batch sees so far, its coordination, and its final write.
        struct KeyState {
            facts: Option<ItemFacts>,
            coordination: Coordination,
            final_write: Option<usize>,
        }
        let mut states: Vec<KeyState> = stored_items
            .iter()
            .map(|item| KeyState {
                facts: item
                    .as_ref()
                    .filter(|item| item.is_live_at(now))
                    .map(|item| item.facts()),
                coordination: item.as_ref().map(Stored::coordination).unwrap_or_default(),
                final_write: None,
            })
            .collect();
        for (index, operation) in operations.iter().enumerate() {
            let (container, key) = operation.target(bytes);
            let container_index = containers
                .iter()
                .position(|name| *name == container)
                .expect("collected");
            if stored_containers[container_index].is_none() {
                return Err(batch.failed(index, rejected(ErrorCode::ContainerNotFound)));
            }
            let position = targets
                .iter()
                .position(|target| *target == (container, key))
                .expect("collected");
            let state = &mut states[position];
            let (kind, options) = match operation {
                Operation::Write { kind, options, .. } => (*kind, options),
                Operation::Check { options, .. } => (WriteKind::Check, options),
            };
            // An item written earlier in the batch has no ETag a caller knows yet.
            let current_etag = state
                .facts
                .map(|facts| facts.etag)
                .filter(|etag| etag.version() != Version::MAX);
            let request = WriteRequest {
                kind,
                conditions: &options.conditions,
                lease_id: options.lease_id,
                lock_handle: options.lock_handle,
            };
            state.coordination = item_write::check_write(
                request,
                state.facts.as_ref(),
                current_etag,
                &state.coordination,
                now,
            )
            .map_err(|error| batch.failed(index, error))?;
            if let Operation::Write { value, .. } = operation {
                state.facts = value.map(|_| ItemFacts {
                    etag: ETag(Version::MAX),
                    version: Version::MAX,
                    last_modified: now,
                });
                state.final_write = Some(index);
            }
        }
        let mut compares = Vec::with_capacity(containers.len() + targets.len());
        for (name, stored) in containers.iter().zip(&stored_containers) {
            let stored = stored.as_ref().expect("checked above");
            compares.push(Compare::create_revision(
                self.keys.container(name),
                CompareOp::Equal,
                stored.create_revision,
            ));
        }
        let mut writes = Vec::new();
        let mut plans = Vec::new();
        for (((container, key), stored), state) in targets.iter().zip(&stored_items).zip(&states) {
            let item_key = self.keys.item(container, key);
            compares.push(Compare::mod_revision(
                item_key.clone(),
                CompareOp::Equal,
                stored.as_ref().map_or(0, |item| item.mod_revision),
            ));
            let old_deadlines = stored
                .as_ref()
                .map_or([None; 4], |item| item_deadlines(&item.record));
            let timers = stored.as_ref().map(|item| item.timers).unwrap_or_default();
            let timer_key = |timer| self.keys.item_timer(timer, container, key);
            let Some(index) = state.final_write else {
                // Checked only: the deadlines it relied on must still stand.
                let plan = TimerPlan::of(&old_deadlines, &old_deadlines, timers, timer_key, now);
                compares.extend(plan.compares);
                continue;
            };
            let Operation::Write { value, options, .. } = &operations[index] else {
                unreachable!("a final write is a write");
            };
            let mut new_deadlines = [None; 4];
            writes.push(match value {
                None if state.coordination.lock.is_none() => TxnOp::delete(item_key, None),
                value => {
                    let container_index = containers
                        .iter()
                        .position(|name| name == container)
                        .expect("collected");
                    let default_ttl = stored_containers[container_index]
                        .as_ref()
                        .and_then(|stored| stored.record.default_ttl_seconds);
                    let record = ItemRecord {
                        present: value.is_some(),
                        etag_version: 0,
                        last_modified: now,
                        expires_at: value
                            .and_then(|_| ttl::expires_at(now, options.ttl, default_ttl)),
                        last_fence: stored.as_ref().map_or(0, |item| item.record.last_fence),
                        content_type: options.content_type.clone(),
                        metadata: options.metadata.clone(),
                        lease: state.coordination.lease.clone(),
                        lock: state.coordination.lock,
                        value: value
                            .map(|value| value.of(bytes).to_vec())
                            .unwrap_or_default(),
                    };
                    new_deadlines = item_deadlines(&record);
                    TxnOp::put(item_key, record.encode(), None)
                }
            });
            let plan = TimerPlan::of(&old_deadlines, &new_deadlines, timers, timer_key, now);
            compares.extend(plan.compares.iter().cloned());
            plans.push(plan);
        }
        if writes.is_empty() {
            // Checks only: they held at the version read.
            return Ok(Some(revision_version(head)));
        }
        let mut leases = Vec::new();
        for plan in &plans {
            match self.grant_timers(plan) {
                Ok(granted) => {
                    writes.extend(plan.puts(&granted));
                    leases.extend(granted);
                }
                Err(error) => {
                    self.cluster.revoke(&leases);
                    return Err(error);
                }
            }
        }
        match self.commit(compares, writes) {
            Ok(Some(revision)) => Ok(Some(revision_version(revision))),
            Ok(None) => {
                self.cluster.revoke(&leases);
                Ok(None)
            }
            Err(error) => {
                self.cluster.revoke(&leases);
                Err(error)
            }
        }
    }

    /// Reads, at `revision`, the timers of every target that holds a deadline, and settles
    /// every target at `now`.
    fn settle_targets(
        &self,
        targets: &[(&str, &[u8])],
        items: &mut [Option<Stored<ItemRecord>>],
        revision: i64,
        now: Timestamp,
    ) -> Result<()> {
        const TARGETS_PER_READ: usize = 25;
        let timed: Vec<usize> = (0..items.len())
            .filter(|&index| {
                items[index]
                    .as_ref()
                    .is_some_and(|item| has_deadlines(&item_deadlines(&item.record)))
            })
            .collect();
        for chunk in timed.chunks(TARGETS_PER_READ) {
            let keys: Vec<Vec<u8>> = chunk
                .iter()
                .flat_map(|&index| {
                    let (container, key) = targets[index];
                    Timer::ALL
                        .iter()
                        .map(move |&timer| self.keys.item_timer(timer, container, key))
                })
                .collect();
            let (_, mut found) = self.get_keys(&keys, revision)?;
            for &index in chunk {
                let item = items[index].as_mut().expect("timed items exist");
                for timer in Timer::ALL {
                    item.timers.0[timer.index()] =
                        found.next().flatten().map_or(0, |kv| kv.mod_revision());
                }
            }
        }
        for item in items.iter_mut().flatten() {
            item.settle(now);
        }
        Ok(())
    }
}
