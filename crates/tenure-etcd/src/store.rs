//! The etcd backend: every operation of docs/spec.md decided by tenure's own rules
//! (`tenure::seam`) against the records read from etcd, and committed with one etcd
//! transaction that compares the `mod_revision` of every key the decision read. A transaction
//! whose compare fails changed nothing; the operation reads again and decides again (bounded).
//! So every rule holds across all clients of the cluster exactly as across the threads of
//! one process: a decision and its write are atomic.
//!
//! ETags and versions are etcd revisions, which increase with every transaction of the
//! cluster; the store's version is the revision of its last change (codec.rs: the head).

use crate::cluster::{corrupt, rejected, Cluster};
use crate::codec::Timer;
use crate::codec::{etag_version, ContainerRecord, ItemRecord, Keys};
use crate::timers::{item_deadlines, settle_container, settle_item, TimerPlan, TimerRevisions};
use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, Txn, TxnOp, TxnOpResponse, TxnResponse,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tenure::seam::conditions::{self, ItemFacts};
use tenure::seam::item_write::Coordination;
use tenure::seam::lease::{self, Access};
use tenure::seam::lock;
use tenure::seam::with_current_etag;
use tenure::{
    Clock, ContainerProperties, ETag, Error, ErrorCode, Item, Limits, ReadOptions, Result,
    Timestamp, Version,
};

/// Tries of one decision against concurrent writers before `Busy` (each failed try means
/// another client's transaction committed, so the cluster as a whole progresses).
pub(crate) const MAX_DECISION_ATTEMPTS: usize = 64;
/// The largest response a listing's page may be (tonic's default is 4 MiB).
const MAX_RESPONSE_BYTES: usize = 1 << 30;
/// How often `acquire_lease_wait` and `wait_for_changes` look again.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// A record as read, with the revisions the commit compares.
#[derive(Debug, Clone)]
pub(crate) struct Stored<R> {
    pub(crate) record: R,
    pub(crate) mod_revision: i64,
    pub(crate) create_revision: i64,
    /// Its timers as read with it (timers.rs); all 0 where they were not read.
    pub(crate) timers: TimerRevisions,
}

/// What one decision read: the container and the item, at one revision.
pub(crate) struct Observed {
    pub(crate) revision: i64,
    pub(crate) container: Option<Stored<ContainerRecord>>,
    pub(crate) item: Option<Stored<ItemRecord>>,
}

/// What a decision does to the item's key.
pub(crate) enum KeyChange {
    Keep,
    Put(Box<ItemRecord>),
    Delete,
}

pub(crate) struct EtcdStore {
    pub(crate) cluster: Cluster,
    pub(crate) keys: Keys,
    pub(crate) limits: Limits,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) read_only: bool,
    /// Revisions of history `compact()` keeps for the change feed.
    pub(crate) retention_versions: Option<u64>,
    pub(crate) closed: AtomicBool,
    pub(crate) snapshots: crate::feed::OpenSnapshots,
    /// What this handle last saw, to decide writes of values without reading first.
    pub(crate) recent: crate::recent::Recent,
    /// The newest revision this handle compacted the cluster to.
    pub(crate) compacted_revision: AtomicU64,
}

pub(crate) fn decode_item(kv: &KeyValue) -> Result<Stored<ItemRecord>> {
    let record = ItemRecord::decode(kv.value()).map_err(|reason| corrupt(kv.key(), reason))?;
    Ok(Stored {
        record,
        mod_revision: kv.mod_revision(),
        create_revision: kv.create_revision(),
        timers: TimerRevisions::default(),
    })
}

pub(crate) fn decode_container(kv: &KeyValue) -> Result<Stored<ContainerRecord>> {
    let record = ContainerRecord::decode(kv.value()).map_err(|reason| corrupt(kv.key(), reason))?;
    Ok(Stored {
        record,
        mod_revision: kv.mod_revision(),
        create_revision: kv.create_revision(),
        timers: TimerRevisions::default(),
    })
}

/// The `mod_revision` of each timer key a transaction read, in [`Timer::ALL`] order.
pub(crate) fn timer_revisions(
    found: &mut impl Iterator<Item = Option<KeyValue>>,
    count: usize,
) -> TimerRevisions {
    let mut revisions = TimerRevisions::default();
    for index in 0..count {
        revisions.0[index] = found.next().flatten().map_or(0, |kv| kv.mod_revision());
    }
    revisions
}

pub(crate) fn revision_version(revision: i64) -> Version {
    u64::try_from(revision).unwrap_or(0)
}

impl Stored<ItemRecord> {
    /// Moves its deadlines to the side of `now` its timers say (timers.rs).
    pub(crate) fn settle(&mut self, now: Timestamp) {
        settle_item(&mut self.record, self.timers, now);
    }

    pub(crate) fn etag_version(&self) -> u64 {
        etag_version(self.record.etag_version, self.mod_revision)
    }

    /// Present and unexpired at `now` (a live lock suspends expiry).
    pub(crate) fn is_live_at(&self, now: Timestamp) -> bool {
        self.record.present
            && !lock::is_expired_under_lock(self.record.expires_at, self.record.lock.as_ref(), now)
    }

    pub(crate) fn facts(&self) -> ItemFacts {
        ItemFacts {
            etag: ETag(self.etag_version()),
            version: self.etag_version(),
            last_modified: self.record.last_modified,
        }
    }

    pub(crate) fn to_item(&self, key: &[u8], with_value: bool) -> Item {
        Item {
            key: key.to_vec(),
            value: with_value.then(|| self.record.value.clone()),
            etag: ETag(self.etag_version()),
            version: self.etag_version(),
            last_modified: self.record.last_modified,
            content_type: self.record.content_type.clone(),
            metadata: self.record.metadata.clone(),
            expires_at: self.record.expires_at,
        }
    }

    pub(crate) fn coordination(&self) -> Coordination {
        Coordination {
            lease: self.record.lease.clone(),
            lock: self.record.lock,
        }
    }
}

impl Stored<ContainerRecord> {
    pub(crate) fn settle(&mut self, now: Timestamp) {
        settle_container(&mut self.record, self.timers, now);
    }

    pub(crate) fn etag_version(&self) -> u64 {
        etag_version(self.record.etag_version, self.mod_revision)
    }

    pub(crate) fn properties(&self, name: &str) -> ContainerProperties {
        ContainerProperties {
            name: name.to_owned(),
            etag: ETag(self.etag_version()),
            last_modified: self.record.last_modified,
            metadata: self.record.metadata.clone(),
            default_ttl_seconds: self.record.default_ttl_seconds,
        }
    }

    pub(crate) fn facts(&self) -> ItemFacts {
        ItemFacts {
            etag: ETag(self.etag_version()),
            version: self.etag_version(),
            last_modified: self.record.last_modified,
        }
    }
}

/// The checks of a read (docs/spec.md §3) against the item as stored: existence, lease,
/// conditions. Returns the live item.
pub(crate) fn check_read<'s>(
    item: Option<&'s Stored<ItemRecord>>,
    options: &ReadOptions,
    now: Timestamp,
) -> Result<&'s Stored<ItemRecord>> {
    let Some(item) = item.filter(|item| item.is_live_at(now)) else {
        conditions::check_read(&options.conditions, None)?;
        return Err(rejected(ErrorCode::NotFound));
    };
    let facts = item.facts();
    lease::check_lease_for_item_operation(
        item.record.lease.as_ref(),
        now,
        options.lease_id,
        Access::Read,
    )
    .map_err(|error| with_current_etag(error, Some(facts.etag)))?;
    conditions::check_read(&options.conditions, Some(&facts))?;
    Ok(item)
}

impl EtcdStore {
    pub(crate) fn new(
        cluster: Cluster,
        keys: Keys,
        limits: Limits,
        clock: Arc<dyn Clock>,
        read_only: bool,
        retention_versions: Option<u64>,
    ) -> EtcdStore {
        EtcdStore {
            cluster,
            keys,
            limits,
            clock,
            read_only,
            retention_versions,
            closed: AtomicBool::new(false),
            snapshots: crate::feed::OpenSnapshots::default(),
            recent: crate::recent::Recent::default(),
            compacted_revision: AtomicU64::new(0),
        }
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(rejected(ErrorCode::ReadOnly));
        }
        Ok(())
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The cluster's current revision, and the store's version: the revision of its last
    /// change (0 before the first).
    pub(crate) fn head(&self) -> Result<(i64, i64)> {
        self.history().map(|(revision, last, _)| (revision, last))
    }

    /// [`Self::head`], and the revision of the store's first change (0 before it): its
    /// history starts there, whatever came before in the cluster.
    pub(crate) fn history(&self) -> Result<(i64, i64, i64)> {
        let (revision, kv) = self.get_key(&self.keys.head(), 0)?;
        Ok((
            revision,
            kv.as_ref().map_or(0, |kv| kv.mod_revision()),
            kv.as_ref().map_or(0, |kv| kv.create_revision()),
        ))
    }

    /// Reads one key, at `revision` (0: the newest).
    pub(crate) fn get_key(&self, key: &[u8], revision: i64) -> Result<(i64, Option<KeyValue>)> {
        let mut options = GetOptions::new();
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let mut response = self.cluster.read(|mut client| {
            let key = key.to_vec();
            let options = options.clone();
            async move { client.get(key, Some(options)).await }
        })?;
        let revision = response.header().map_or(0, |header| header.revision());
        Ok((revision, response.take_kvs().into_iter().next()))
    }

    /// Reads each of `keys` at `revision` (0: the newest) in one transaction: the revision
    /// read at, and each key's value or `None`, in order.
    pub(crate) fn get_keys(
        &self,
        keys: &[Vec<u8>],
        revision: i64,
    ) -> Result<(i64, impl Iterator<Item = Option<KeyValue>>)> {
        let mut options = GetOptions::new();
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let reads: Vec<TxnOp> = keys
            .iter()
            .map(|key| TxnOp::get(key.clone(), Some(options.clone())))
            .collect();
        let response = self.cluster.read(|mut client| {
            let txn = Txn::new().and_then(reads.clone());
            async move { client.txn(txn).await }
        })?;
        let read_at = response.header().map_or(0, |header| header.revision());
        let found = response.op_responses().into_iter().map(|op| match op {
            TxnOpResponse::Get(mut get) => get.take_kvs().into_iter().next(),
            _ => None,
        });
        Ok((read_at, found))
    }

    /// Reads the keys from `start` to `end`, at most `limit` (0: all), at `revision`.
    pub(crate) fn get_range(
        &self,
        start: &[u8],
        end: &[u8],
        limit: i64,
        revision: i64,
    ) -> Result<(i64, Vec<KeyValue>, bool)> {
        let mut options = GetOptions::new().with_range(end.to_vec()).with_limit(limit);
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let mut response = self.cluster.read(|client| {
            let start = start.to_vec();
            let options = options.clone();
            // A page of large values may pass tonic's default 4 MiB for a response.
            let mut kv = client
                .kv_client()
                .max_decoding_message_size(MAX_RESPONSE_BYTES);
            async move { kv.get(start, Some(options)).await }
        })?;
        let revision = response.header().map_or(0, |header| header.revision());
        let more = response.more();
        Ok((revision, response.take_kvs(), more))
    }

    /// The container and the item, read together at one revision (one round trip).
    pub(crate) fn observe(&self, container: &str, key: &[u8]) -> Result<Observed> {
        let reads = self.observation_reads(container, key);
        let response = self.cluster.read(|mut client| {
            let txn = Txn::new().and_then(reads.clone());
            async move { client.txn(txn).await }
        })?;
        self.observed_from(response)
    }

    /// The reads of an observation: the container, the item and the item's timers.
    fn observation_reads(&self, container: &str, key: &[u8]) -> Vec<TxnOp> {
        let mut reads = vec![
            TxnOp::get(self.keys.container(container), None),
            TxnOp::get(self.keys.item(container, key), None),
        ];
        reads.extend(
            Timer::ALL
                .iter()
                .map(|&timer| TxnOp::get(self.keys.item_timer(timer, container, key), None)),
        );
        reads
    }

    /// An observation from a transaction whose responses are [`Self::observation_reads`].
    fn observed_from(&self, response: TxnResponse) -> Result<Observed> {
        let revision = response.header().map_or(0, |header| header.revision());
        let mut found = response.op_responses().into_iter().map(|op| match op {
            TxnOpResponse::Get(mut get) => get.take_kvs().into_iter().next(),
            _ => None,
        });
        let container = found
            .next()
            .flatten()
            .map(|kv| decode_container(&kv))
            .transpose()?;
        let mut item = found
            .next()
            .flatten()
            .map(|kv| decode_item(&kv))
            .transpose()?;
        let timers = timer_revisions(&mut found, Timer::ALL.len());
        if let Some(item) = item.as_mut() {
            item.timers = timers;
        }
        Ok(Observed {
            revision,
            container,
            item,
        })
    }

    /// Commits `operations` if every compare holds. `Ok(None)`: another client changed a key
    /// the decision read; nothing was written.
    pub(crate) fn commit(
        &self,
        compares: Vec<Compare>,
        operations: Vec<TxnOp>,
    ) -> Result<Option<i64>> {
        self.commit_noting(compares, operations, Vec::new())
    }

    /// [`EtcdStore::commit`], rewriting the head with `note` (the keys a sweep deleted).
    pub(crate) fn commit_noting(
        &self,
        compares: Vec<Compare>,
        mut operations: Vec<TxnOp>,
        note: Vec<u8>,
    ) -> Result<Option<i64>> {
        operations.push(TxnOp::put(self.keys.head(), note, None));
        let response = self.cluster.write(|mut client| {
            let txn = Txn::new()
                .when(compares.clone())
                .and_then(operations.clone());
            async move { client.txn(txn).await }
        })?;
        if !response.succeeded() {
            return Ok(None);
        }
        Ok(Some(
            response.header().map_or(0, |header| header.revision()),
        ))
    }

    /// Decides a change to one item against the container and item as stored, and commits it
    /// atomically with what was read. `decide` may run more than once and must be
    /// deterministic given its inputs. Returns its output and the commit's revision.
    ///
    /// With `from_recent`, the first decision is made on what this handle last saw
    /// (recent.rs), without a read; only a write of a whole value may ask for it, since the
    /// value is not remembered.
    pub(crate) fn change_item<T>(
        &self,
        container: &str,
        key: &[u8],
        from_recent: bool,
        mut decide: impl FnMut(
            &Stored<ContainerRecord>,
            Option<&Stored<ItemRecord>>,
            Timestamp,
            i64,
        ) -> Result<(KeyChange, T)>,
    ) -> Result<(T, i64)> {
        let item_key = self.keys.item(container, key);
        let container_key = self.keys.container(container);
        let mut next = if from_recent {
            self.recalled(container, &item_key)
        } else {
            None
        };
        for _ in 0..MAX_DECISION_ATTEMPTS {
            let (mut observed, fresh) = match next.take() {
                Some(recalled) => (recalled, false),
                None => (self.observe(container, key)?, true),
            };
            if fresh {
                self.recent
                    .remember_container(container, observed.container.as_ref());
                self.recent.remember_item(&item_key, observed.item.as_ref());
            }
            let Some(stored_container) = observed.container.as_ref() else {
                return Err(rejected(ErrorCode::ContainerNotFound));
            };
            let now = self.now();
            if let Some(item) = observed.item.as_mut() {
                item.settle(now);
            }
            let decided = decide(
                stored_container,
                observed.item.as_ref(),
                now,
                observed.revision,
            );
            // A refusal, or nothing to write, is reported only from what is stored now.
            let (change, output) = match decided {
                Ok(decided) => decided,
                Err(refusal) if fresh => return Err(refusal),
                Err(_) => continue,
            };
            let (operation, written) = match change {
                KeyChange::Keep if fresh => return Ok((output, observed.revision)),
                KeyChange::Keep => continue,
                KeyChange::Put(record) => {
                    let operation = TxnOp::put(item_key.clone(), record.encode(), None);
                    (operation, Some(record))
                }
                KeyChange::Delete => (TxnOp::delete(item_key.clone(), None), None),
            };
            let item_revision = observed.item.as_ref().map_or(0, |item| item.mod_revision);
            let old_timers = observed
                .item
                .as_ref()
                .map(|item| item.timers)
                .unwrap_or_default();
            let plan = TimerPlan::of(
                &observed
                    .item
                    .as_ref()
                    .map_or([None; 4], |item| item_deadlines(&item.record)),
                &written
                    .as_ref()
                    .map_or([None; 4], |record| item_deadlines(record)),
                old_timers,
                |timer| self.keys.item_timer(timer, container, key),
                now,
            );
            let mut compares = vec![
                // The same incarnation of the container: not deleted (and made again) since.
                Compare::create_revision(
                    container_key.clone(),
                    CompareOp::Equal,
                    stored_container.create_revision,
                ),
                Compare::mod_revision(item_key.clone(), CompareOp::Equal, item_revision),
            ];
            compares.extend(plan.compares.iter().cloned());
            let leases = self.grant_timers(&plan)?;
            let mut operations = vec![operation];
            operations.extend(plan.puts(&leases));
            let reads = self.observation_reads(container, key);
            match self.commit_or_read(compares, operations, reads) {
                Ok(Ok(revision)) => {
                    let create_revision = match &observed.item {
                        Some(item) if written.is_some() => item.create_revision,
                        _ => revision,
                    };
                    let written = written.map(|record| Stored {
                        record: *record,
                        mod_revision: revision,
                        create_revision,
                        timers: plan.revisions_after(old_timers, revision),
                    });
                    self.recent.remember_item(&item_key, written.as_ref());
                    return Ok((output, revision));
                }
                // Someone else changed what was compared, or a timer ran out: decide again
                // on what the failed transaction read.
                Ok(Err(read)) => {
                    self.cluster.revoke(&leases);
                    next = Some(self.observed_from(read)?);
                }
                Err(error) => {
                    self.cluster.revoke(&leases);
                    return Err(error);
                }
            }
        }
        Err(rejected(ErrorCode::Busy))
    }

    /// What this handle last saw of the container and the item, as an observation to decide
    /// on; `None` when the container is not remembered.
    fn recalled(&self, container: &str, item_key: &[u8]) -> Option<Observed> {
        let stored_container = self.recent.container(container)?;
        let item = self.recent.item(item_key).flatten();
        let revision = item
            .as_ref()
            .map_or(0, |item| item.mod_revision)
            .max(stored_container.mod_revision);
        Some(Observed {
            revision,
            container: Some(stored_container),
            item,
        })
    }

    /// The etcd leases of a plan's new timers, granted before the commit that puts them.
    pub(crate) fn grant_timers(&self, plan: &TimerPlan) -> Result<Vec<i64>> {
        let mut leases = Vec::with_capacity(plan.new.len());
        for (_, _, ttl_seconds) in &plan.new {
            match self.cluster.grant(*ttl_seconds) {
                Ok(lease) => leases.push(lease),
                Err(error) => {
                    self.cluster.revoke(&leases);
                    return Err(error);
                }
            }
        }
        Ok(leases)
    }

    /// Commits `operations` (and the head) if every compare holds; otherwise runs `reads` in
    /// the same round trip. `Ok(Ok(revision))`: committed; `Ok(Err(read))`: nothing was
    /// written, and this is what the reads found.
    fn commit_or_read(
        &self,
        compares: Vec<Compare>,
        mut operations: Vec<TxnOp>,
        otherwise: Vec<TxnOp>,
    ) -> Result<std::result::Result<i64, TxnResponse>> {
        operations.push(TxnOp::put(self.keys.head(), Vec::new(), None));
        let response = self.cluster.write(|mut client| {
            let txn = Txn::new()
                .when(compares.clone())
                .and_then(operations.clone())
                .or_else(otherwise.clone());
            async move { client.txn(txn).await }
        })?;
        if response.succeeded() {
            return Ok(Ok(response.header().map_or(0, |header| header.revision())));
        }
        Ok(Err(response))
    }
}
