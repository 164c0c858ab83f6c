//! Lease and lock schedules (docs/spec.md §4, §5, §6 and §11 together): random schedules of item and
//! container lease actions, data writes and reads with and without lease ids and lock handles,
//! cache-lock calls, batches, container writes, clock jumps (often exactly onto the next
//! deadline, or one microsecond before it), reopens and crashes, run against the store and
//! against the reference model ([`crate::lease_model`]), compared after every step.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::{
    Clock, Durability, ETag, Error, ErrorCode, Item, LeaseDuration, LeaseId, LeaseRequest,
    LockHandle, ManualClock, ReadOptions, Store, StoreOptions, Ttl, WriteOptions,
    MICROS_PER_SECOND,
};

use super::image::START_MICROS;
use crate::lease_model::{LeaseModel, ModelItem, Target, WriteKind, WriteOp};
use crate::{CrashPolicy, SimStorage};

const KEYS: [&[u8]; 2] = [b"k0", b"k1"];
const FIXED_IDS: [LeaseId; 3] = [
    LeaseId(0xaaaa_aaaa_aaaa_4aaa_8aaa_aaaa_aaaa_aaaa),
    LeaseId(0xbbbb_bbbb_bbbb_4bbb_8bbb_bbbb_bbbb_bbbb),
    LeaseId(0xcccc_cccc_cccc_4ccc_8ccc_cccc_cccc_cccc),
];
const SECOND: u64 = MICROS_PER_SECOND;

/// How often each (operation, outcome) occurred over the run: the schedules must reach every
/// refusal code of the tables, or they test less than they claim.
pub static OUTCOMES: std::sync::Mutex<std::collections::BTreeMap<String, usize>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn tally(operation: &str, outcome: &str) {
    *OUTCOMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(format!("{operation} → {outcome}"))
        .or_default() += 1;
}

fn store_options(clock: &ManualClock) -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        segment_size_bytes: 16 << 10,
        clock: Arc::new(clock.clone()),
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

pub struct Schedule<R: Rng> {
    seed: u64,
    rng: R,
    clock: ManualClock,
    disk: SimStorage,
    store: Option<Store>,
    model: LeaseModel,
    /// Lease ids the store generated, and lock handles it issued (for stale-id requests).
    generated: Vec<LeaseId>,
    handles: Vec<LockHandle>,
    step: usize,
    /// What the current step did, for failure messages.
    doing: String,
}

fn item_view(item: &Item) -> (Vec<u8>, Option<ETag>, u64, Option<u64>) {
    (
        item.value.clone().unwrap_or_default(),
        Some(item.etag),
        item.last_modified,
        item.expires_at,
    )
}

fn model_view(item: &ModelItem) -> (Vec<u8>, Option<ETag>, u64, Option<u64>) {
    (
        item.value.clone(),
        item.etag,
        item.last_modified,
        item.expires_at,
    )
}

impl<R: Rng> Schedule<R> {
    pub fn new(seed: u64, rng: R) -> Schedule<R> {
        let clock = ManualClock::new(START_MICROS);
        let disk = SimStorage::new();
        let store =
            Store::open_with_storage(Arc::new(disk.clone()), store_options(&clock)).unwrap();
        store.create_container("c", &Default::default()).unwrap();
        let now = clock.now();
        Schedule {
            seed,
            rng,
            clock,
            disk,
            store: Some(store),
            model: LeaseModel::new(KEYS.len(), now),
            generated: Vec::new(),
            handles: Vec::new(),
            step: 0,
            doing: String::new(),
        }
    }

    fn store(&self) -> &Store {
        self.store.as_ref().expect("open")
    }

    fn now(&self) -> u64 {
        self.clock.now()
    }

    fn fail(&self, what: std::fmt::Arguments<'_>) -> ! {
        panic!(
            "seed {} step {} ({}): {what}",
            self.seed, self.step, self.doing
        )
    }

    /// Both sides refused with the same code, or both succeeded (returning the values).
    fn agree<S: std::fmt::Debug, M: std::fmt::Debug>(
        &self,
        store: tenure::Result<S>,
        model: Result<M, ErrorCode>,
    ) -> Option<(S, M)> {
        let operation = self.doing.split(' ').next().unwrap_or_default().to_owned();
        match (store, model) {
            (Ok(store), Ok(model)) => {
                tally(&operation, "ok");
                Some((store, model))
            }
            (Err(error), Err(code)) => {
                tally(&operation, code.name());
                if error.code() != code {
                    self.fail(format_args!(
                        "store refused with {error:?}, the model with {code:?}"
                    ));
                }
                None
            }
            (store, model) => self.fail(format_args!("store: {store:?}, model: {model:?}")),
        }
    }

    fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.rng.gen_range(0..choices.len())]
    }

    fn current_id(&mut self, target: Target) -> Option<LeaseId> {
        let now = self.now();
        self.model
            .lease_info(target, now)
            .ok()
            .and_then(|info| info.id)
    }

    /// A lease id: mostly the current one, else a fixed or a stale generated one.
    fn pick_id(&mut self, target: Target) -> LeaseId {
        let current = self.current_id(target);
        match self.rng.gen_range(0..10) {
            0..=4 if current.is_some() => current.expect("checked"),
            5 if !self.generated.is_empty() => {
                let index = self.rng.gen_range(0..self.generated.len());
                self.generated[index]
            }
            _ => self.pick(&FIXED_IDS),
        }
    }

    fn pick_optional_id(&mut self, target: Target) -> Option<LeaseId> {
        if self.rng.gen_bool(0.45) {
            None
        } else {
            Some(self.pick_id(target))
        }
    }

    fn pick_handle(&mut self, key: usize) -> LockHandle {
        let now = self.now();
        let current = self.model.lock_handle(key, now);
        match self.rng.gen_range(0..10) {
            0..=5 if current.is_some() => current.expect("checked"),
            6..=7 if !self.handles.is_empty() => {
                let index = self.rng.gen_range(0..self.handles.len());
                self.handles[index]
            }
            _ => LockHandle(self.rng.gen()),
        }
    }

    fn pick_ttl(&mut self) -> Ttl {
        self.pick(&[
            Ttl::ContainerDefault,
            Ttl::ContainerDefault,
            Ttl::ContainerDefault,
            Ttl::Never,
            Ttl::Seconds(3),
            Ttl::Seconds(20),
            Ttl::Seconds(60),
        ])
    }

    fn pick_value(&mut self) -> Vec<u8> {
        let length = self.rng.gen_range(0..12);
        (0..length)
            .map(|_| self.rng.gen_range(b'a'..=b'z'))
            .collect()
    }

    fn pick_write(&mut self, key: usize, in_batch: bool) -> WriteOp {
        let target = Target::Item(key);
        let kind = match self.rng.gen_range(0..10) {
            0..=6 => WriteKind::Put {
                value: self.pick_value(),
                ttl: if in_batch {
                    Ttl::ContainerDefault
                } else {
                    self.pick_ttl()
                },
            },
            7 => WriteKind::Delete,
            _ if in_batch => WriteKind::Delete,
            _ => WriteKind::SetProperties {
                ttl: self.pick_ttl(),
            },
        };
        let lease_id = self.pick_optional_id(target);
        let lock_handle = if self.rng.gen_bool(0.2) {
            Some(self.pick_handle(key))
        } else {
            None
        };
        WriteOp {
            key,
            kind,
            lease_id,
            lock_handle,
        }
    }

    fn write_options(op: &WriteOp) -> WriteOptions {
        WriteOptions {
            lease_id: op.lease_id,
            lock_handle: op.lock_handle,
            ttl: match op.kind {
                WriteKind::Put { ttl, .. } | WriteKind::SetProperties { ttl } => ttl,
                WriteKind::Delete => Ttl::ContainerDefault,
            },
            ..WriteOptions::default()
        }
    }

    fn run_step(&mut self) {
        let now = self.now();
        let key = self.rng.gen_range(0..KEYS.len());
        let target = if self.rng.gen_bool(0.25) {
            Target::Container
        } else {
            Target::Item(key)
        };
        // Items vanish (deletes, TTLs, container deletes); bring them back often, so most
        // steps meet an item to lease or lock.
        let missing = self.model.read(key, None, now) == Err(ErrorCode::NotFound);
        let revive = missing && self.rng.gen_bool(0.6);
        let choice = if revive {
            32
        } else {
            self.rng.gen_range(0..100)
        };
        match choice {
            0..=11 => {
                let proposed = if self.rng.gen_bool(0.4) {
                    None
                } else {
                    Some(self.pick_id(target))
                };
                let seconds = self.pick(&[Some(15), Some(30), Some(60), None]);
                let holder = self
                    .pick(&[None, Some("h1"), Some("h2")])
                    .map(str::to_owned);
                self.doing = format!("acquire {target:?} proposed {proposed:?} for {seconds:?} s");
                let request = LeaseRequest {
                    duration: seconds.map_or(LeaseDuration::Infinite, |seconds| {
                        LeaseDuration::fixed(seconds).unwrap()
                    }),
                    proposed_id: proposed,
                    holder: holder.clone(),
                };
                let result = match target {
                    Target::Item(key) => self.store().acquire_lease("c", KEYS[key], &request),
                    Target::Container => self.store().acquire_container_lease("c", &request),
                };
                let expected = self.model.acquire(target, proposed, seconds, holder, now);
                if let Some((lease, grant)) = self.agree(result, expected) {
                    match grant.id {
                        Some(id) if lease.id != id => {
                            self.fail(format_args!("granted id {} not {id}", lease.id))
                        }
                        Some(_) => {}
                        None => {
                            if FIXED_IDS.contains(&lease.id) || self.generated.contains(&lease.id) {
                                self.fail(format_args!("generated id {} is not fresh", lease.id));
                            }
                            self.generated.push(lease.id);
                        }
                    }
                    match grant.kept_fence {
                        Some(fence) if lease.fence != fence => self.fail(format_args!(
                            "fence {} should be kept at {fence}",
                            lease.fence
                        )),
                        None if lease.fence <= grant.above => self.fail(format_args!(
                            "new fence {} not above {}",
                            lease.fence, grant.above
                        )),
                        _ => {}
                    }
                    self.model.record_grant(target, lease.id, lease.fence);
                }
            }
            12..=16 => {
                let id = self.pick_id(target);
                self.doing = format!("renew {target:?} with {id}");
                let result = match target {
                    Target::Item(key) => self.store().renew_lease("c", KEYS[key], id),
                    Target::Container => self.store().renew_container_lease("c", id),
                };
                let expected = self.model.renew(target, id, now);
                if let Some((lease, (id, fence))) = self.agree(result, expected) {
                    if (lease.id, lease.fence) != (id, fence) {
                        self.fail(format_args!("renewed {lease:?}, model ({id}, {fence})"));
                    }
                }
            }
            17..=20 => {
                let id = self.pick_id(target);
                let proposed = self.pick_id(target);
                self.doing = format!("change {target:?} {id} → {proposed}");
                let result = match target {
                    Target::Item(key) => self.store().change_lease("c", KEYS[key], id, proposed),
                    Target::Container => self.store().change_container_lease("c", id, proposed),
                };
                let expected = self.model.change(target, id, proposed, now);
                if let Some((lease, (id, fence))) = self.agree(result, expected) {
                    if (lease.id, lease.fence) != (id, fence) {
                        self.fail(format_args!("changed {lease:?}, model ({id}, {fence})"));
                    }
                }
            }
            21..=25 => {
                let id = self.pick_id(target);
                self.doing = format!("release {target:?} {id}");
                let result = match target {
                    Target::Item(key) => self.store().release_lease("c", KEYS[key], id),
                    Target::Container => self.store().release_container_lease("c", id),
                };
                let expected = self.model.release(target, id, now);
                self.agree(result, expected);
            }
            26..=31 => {
                let period = self.pick(&[None, Some(0), Some(1), Some(5), Some(30), Some(60)]);
                self.doing = format!("break {target:?} period {period:?}");
                let result = match target {
                    Target::Item(key) => self.store().break_lease("c", KEYS[key], period),
                    Target::Container => self.store().break_container_lease("c", period),
                };
                let expected = self.model.break_lease(target, period, now);
                if let Some((left, micros)) = self.agree(result, expected) {
                    if left != Duration::from_micros(micros) {
                        self.fail(format_args!("break reported {left:?}, model {micros} µs"));
                    }
                }
            }
            32..=45 => {
                let op = if revive {
                    WriteOp {
                        key,
                        kind: WriteKind::Put {
                            value: self.pick_value(),
                            ttl: Ttl::ContainerDefault,
                        },
                        lease_id: None,
                        lock_handle: None,
                    }
                } else {
                    self.pick_write(key, false)
                };
                self.doing = format!("write {op:?}");
                let options = Self::write_options(&op);
                let store = self.store();
                let result = match &op.kind {
                    WriteKind::Put { value, .. } => {
                        store.put("c", KEYS[key], value, &options).map(Some)
                    }
                    WriteKind::Delete => store.delete("c", KEYS[key], &options).map(|()| None),
                    WriteKind::SetProperties { .. } => {
                        store.set_properties("c", KEYS[key], &options).map(Some)
                    }
                };
                let expected = self.model.write(&op, now);
                if let Some((Some(etag), ())) = self.agree(result, expected) {
                    self.model.record_etag(key, etag);
                }
            }
            46..=51 => {
                let count = self.rng.gen_range(1..=3);
                let ops: Vec<WriteOp> = (0..count)
                    .map(|_| {
                        let key = self.rng.gen_range(0..KEYS.len());
                        self.pick_write(key, true)
                    })
                    .collect();
                self.doing = format!("batch {ops:?}");
                let mut batch = self.store().batch();
                for op in &ops {
                    let options = Self::write_options(op);
                    match &op.kind {
                        WriteKind::Put { value, .. } => {
                            batch.put("c", KEYS[op.key], value, options)
                        }
                        _ => batch.delete("c", KEYS[op.key], options),
                    };
                }
                let result = batch.commit();
                let expected = self.model.batch(&ops, now);
                match (result, expected) {
                    (Ok(version), Ok(())) => {
                        tally("batch", "ok");
                        for op in &ops {
                            self.model.record_etag(op.key, ETag(version));
                        }
                    }
                    (Err(Error::BatchFailed { index, error, .. }), Err((at, code))) => {
                        tally("batch", code.name());
                        if (index, error.code()) != (at, code) {
                            self.fail(format_args!(
                                "batch failed at {index} with {error:?}, model at {at} with {code:?}"
                            ));
                        }
                    }
                    (result, expected) => {
                        self.fail(format_args!("batch: store {result:?}, model {expected:?}"))
                    }
                }
            }
            52..=57 => {
                let lease_id = self.pick_optional_id(Target::Item(key));
                self.doing = format!("get k{key} with {lease_id:?}");
                let result = self.store().get(
                    "c",
                    KEYS[key],
                    &ReadOptions {
                        lease_id,
                        ..ReadOptions::default()
                    },
                );
                let expected = self.model.read(key, lease_id, now);
                if let Some((item, model)) = self.agree(result, expected) {
                    if item_view(&item) != model_view(&model) {
                        self.fail(format_args!("read {item:?}, model {model:?}"));
                    }
                }
            }
            58..=65 => {
                let force = self.rng.gen_bool(0.35);
                let timeout = self.pick(&[1, SECOND, 5 * SECOND, 20 * SECOND, 60 * SECOND]);
                self.doing = format!("get_and_lock k{key} for {timeout} µs force={force}");
                let result = self.store().get_and_lock(
                    "c",
                    KEYS[key],
                    Duration::from_micros(timeout),
                    force,
                );
                let expected = self.model.get_and_lock(key, timeout, force, now);
                if let Some(((item, handle), model)) = self.agree(result, expected) {
                    let same = match (&item, &model) {
                        (Some(item), Some(model)) => item_view(item) == model_view(model),
                        (None, None) => true,
                        _ => false,
                    };
                    if !same {
                        self.fail(format_args!("locked {item:?}, model {model:?}"));
                    }
                    if self.handles.contains(&handle) {
                        self.fail(format_args!("handle {handle} issued twice"));
                    }
                    self.handles.push(handle);
                    self.model.record_lock_handle(key, handle);
                }
            }
            66..=70 => {
                let handle = self.pick_handle(key);
                let value = self.pick_value();
                let ttl = self.pick_ttl();
                self.doing = format!("put_and_unlock k{key} {handle} ttl {ttl:?}");
                let result = self
                    .store()
                    .put_and_unlock("c", KEYS[key], &value, handle, ttl);
                let op = WriteOp {
                    key,
                    kind: WriteKind::Put { value, ttl },
                    lease_id: None,
                    lock_handle: Some(handle),
                };
                let expected = self.model.write(&op, now);
                if let Some((etag, ())) = self.agree(result, expected) {
                    self.model.record_etag(key, etag);
                }
            }
            71..=75 => {
                let handle = self.pick_handle(key);
                let ttl = if self.rng.gen_bool(0.5) {
                    None
                } else {
                    Some(self.pick_ttl())
                };
                self.doing = format!("unlock k{key} {handle} ttl {ttl:?}");
                let result = self.store().unlock("c", KEYS[key], handle, ttl);
                let expected = self.model.unlock(key, handle, ttl, now);
                self.agree(result, expected);
            }
            76..=79 => {
                let lease_id = self.pick_optional_id(Target::Container);
                self.doing = format!("set_container_metadata with {lease_id:?}");
                let result = self.store().set_container_metadata(
                    "c",
                    &[("step".into(), self.step.to_string())],
                    &tenure::ContainerWriteOptions {
                        lease_id,
                        ..Default::default()
                    },
                );
                let expected = self.model.set_container_metadata(lease_id, now);
                self.agree(result, expected);
            }
            80 => {
                let lease_id = self.pick_optional_id(Target::Container);
                self.doing = format!("delete_container with {lease_id:?}");
                let result = self.store().delete_container(
                    "c",
                    &tenure::ContainerWriteOptions {
                        lease_id,
                        ..Default::default()
                    },
                );
                let expected = self.model.delete_container(lease_id, now);
                if self.agree(result, expected).is_some() {
                    self.store()
                        .create_container("c", &Default::default())
                        .unwrap();
                    self.model.container_created(now);
                }
            }
            81..=94 => {
                let next = self.model.next_deadline(now);
                let advance = match (self.rng.gen_range(0..6), next) {
                    (0..=1, Some(next)) => next - now,
                    (2, Some(next)) => next - now - 1,
                    (3, _) => self.rng.gen_range(0..3 * SECOND),
                    _ => self.rng.gen_range(0..70) * SECOND,
                };
                self.doing = format!("advance the clock {advance} µs");
                self.clock.advance_micros(advance);
            }
            95..=97 => {
                self.doing = "reopen".into();
                self.store.take().unwrap().close().unwrap();
                self.store = Some(
                    Store::open_with_storage(
                        Arc::new(self.disk.clone()),
                        store_options(&self.clock),
                    )
                    .unwrap(),
                );
            }
            _ => {
                let policy = self.pick(&[
                    CrashPolicy::DropAll,
                    CrashPolicy::KeepAll,
                    CrashPolicy::Random,
                ]);
                self.doing = format!("crash ({policy:?})");
                let crashed = self.disk.crash(&mut self.rng, policy);
                drop(self.store.take());
                self.disk = crashed;
                let reopened = Store::open_with_storage(
                    Arc::new(self.disk.clone()),
                    store_options(&self.clock),
                );
                match reopened {
                    Ok(store) => self.store = Some(store),
                    Err(error) => self.fail(format_args!("reopen after crash: {error:?}")),
                }
            }
        }
    }

    /// Every key's item and lease, and the container's lease, as the model says.
    fn check(&mut self) {
        let now = self.now();
        for (key, name) in KEYS.iter().enumerate() {
            let item = self.store().get("c", name, &ReadOptions::default());
            let expected = self.model.read(key, None, now);
            match (&item, &expected) {
                (Ok(item), Ok(model)) if item_view(item) == model_view(model) => {}
                (Err(error), Err(code)) if error.code() == *code => {}
                _ => self.fail(format_args!(
                    "check k{key}: store {item:?}, model {expected:?}"
                )),
            }
            let info = self
                .store()
                .lease_info("c", name)
                .map_err(|error| error.code());
            let expected = self.model.lease_info(Target::Item(key), now);
            if info != expected {
                self.fail(format_args!(
                    "check lease of k{key}: store {info:?}, model {expected:?}"
                ));
            }
        }
        let info = self
            .store()
            .container_lease_info("c")
            .map_err(|error| error.code());
        let expected = self.model.lease_info(Target::Container, now);
        if info != expected {
            self.fail(format_args!(
                "check container lease: store {info:?}, model {expected:?}"
            ));
        }
    }
}

/// Runs one schedule from `rng`; `seed` only names it in failure messages.
pub fn run_schedule<R: Rng>(seed: u64, rng: R) {
    let mut schedule = Schedule::new(seed, rng);
    let steps = schedule.rng.gen_range(5..45);
    for step in 0..steps {
        schedule.step = step;
        schedule.run_step();
        schedule.check();
    }
}

/// One schedule from `seed`; returns 1.
pub fn case_from_seed(seed: u64) -> u64 {
    run_schedule(seed, StdRng::seed_from_u64(seed));
    1
}

/// Every (operation, outcome) a long enough run must reach, or the schedules test less than
/// they claim.
pub const REQUIRED_OUTCOMES: [&str; 47] = [
    "acquire → ok",
    "acquire → LeaseAlreadyPresent",
    "acquire → LeaseIsBreakingAndCannotBeAcquired",
    "acquire → NotFound",
    "renew → ok",
    "renew → LeaseIdMismatchWithLeaseOperation",
    "renew → LeaseIsBrokenAndCannotBeRenewed",
    "change → ok",
    "change → LeaseIdMismatchWithLeaseOperation",
    "change → LeaseNotPresentWithLeaseOperation",
    "change → LeaseIsBreakingAndCannotBeChanged",
    "release → ok",
    "release → LeaseIdMismatchWithLeaseOperation",
    "break → ok",
    "break → LeaseNotPresentWithLeaseOperation",
    "write → ok",
    "write → LeaseIdMissing",
    "write → LeaseIdMismatchWithBlobOperation",
    "write → LeaseNotPresentWithBlobOperation",
    "write → LeaseLost",
    "write → ObjectNotLocked",
    "write → InvalidLockHandle",
    "write → NotFound",
    "batch → ok",
    "batch → LeaseIdMissing",
    "batch → LeaseLost",
    "get → ok",
    "get → LeaseIdMismatchWithBlobOperation",
    "get → LeaseNotPresentWithBlobOperation",
    "get → LeaseLost",
    "get_and_lock → ok",
    "get_and_lock → ObjectLocked",
    "get_and_lock → NotFound",
    "put_and_unlock → ok",
    "put_and_unlock → NotFound",
    "put_and_unlock → ObjectNotLocked",
    "put_and_unlock → InvalidLockHandle",
    "unlock → ok",
    "unlock → NotFound",
    "unlock → ObjectNotLocked",
    "unlock → InvalidLockHandle",
    "set_container_metadata → ok",
    "set_container_metadata → LeaseIdMismatchWithContainerOperation",
    "set_container_metadata → LeaseNotPresentWithContainerOperation",
    "set_container_metadata → LeaseLost",
    "delete_container → ok",
    "delete_container → LeaseIdMissing",
];

/// The outcomes of `REQUIRED_OUTCOMES` that no schedule of this process reached yet.
pub fn missing_outcomes() -> Vec<&'static str> {
    let outcomes = OUTCOMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    REQUIRED_OUTCOMES
        .iter()
        .copied()
        .filter(|outcome| !outcomes.contains_key(*outcome))
        .collect()
}
