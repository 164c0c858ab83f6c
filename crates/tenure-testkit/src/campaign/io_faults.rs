//! I/O errors at every call site (docs/spec.md §11 "Failed flush", §13 "never panics").
//!
//! A case generates one workload (writes, flushes, compactions, clean reopens), runs it once
//! without faults to count the storage calls it makes (syncs, allocations, writes), then once
//! per call: with EIO injected at exactly that call. Each faulty run must return an error (or
//! absorb the fault harmlessly), never panic; after an `Io` error from a failed sync the store
//! must refuse the next write with `Io` (poisoned). Then the store is reopened without faults
//! — on the disk as the process left it, or after a power cut — and must open, hold exactly
//! the acknowledged writes (plus, possibly, the one whose call failed; after a power cut, a
//! prefix down to the last durable write), and accept writes again.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::{Durability, ErrorCode, ManualClock, Store, StoreOptions, WriteOptions};

use super::crash::POLICIES;
use super::image::{store_options, START_MICROS};
use super::workload::{self, Applied, WriteOp};
use crate::model::Model;
use crate::{Faults, SimStorage};

#[derive(Debug, Clone)]
pub enum Step {
    Write(WriteOp),
    Flush,
    Compact,
    Reopen,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallSite {
    Sync(u64),
    Allocation(u64),
    Write(u64),
}

impl CallSite {
    fn faults(self) -> Faults {
        let mut faults = Faults::default();
        match self {
            CallSite::Sync(n) => faults.failing_syncs.push(n),
            CallSite::Allocation(n) => faults.failing_allocations.push(n),
            CallSite::Write(n) => faults.failing_writes.push(n),
        }
        faults
    }
}

pub struct Workload {
    pub durability: Durability,
    pub segment_size_bytes: u64,
    pub steps: Vec<Step>,
}

pub fn random_workload(rng: &mut impl Rng) -> Workload {
    let segment_size_bytes = 4096;
    let length = rng.gen_range(1..14);
    Workload {
        durability: if rng.gen_bool(0.5) {
            Durability::Sync
        } else {
            Durability::Buffered
        },
        segment_size_bytes,
        steps: (0..length)
            .map(|_| match rng.gen_range(0..100) {
                0..=84 => Step::Write(workload::random_write(rng, segment_size_bytes)),
                85..=89 => Step::Flush,
                90..=94 => Step::Compact,
                _ => Step::Reopen,
            })
            .collect(),
    }
}

pub fn case_from_seed(seed: u64) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let workload = random_workload(&mut rng);
    case(&workload, &mut rng)
}

/// A workload with one fault at a call site the random source picks (a fuzz case). A site
/// past the workload's calls never fires: the run must then simply pass.
pub fn single_fault(rng: &mut impl Rng) {
    let workload = random_workload(rng);
    let n = rng.gen_range(1..=64);
    let site = match rng.gen_range(0..3) {
        0 => CallSite::Sync(n),
        1 => CallSite::Allocation(n),
        _ => CallSite::Write(n),
    };
    with_fault(&workload, site, rng);
}

/// Runs `workload` faultless to count its calls, then with a fault at each one. Returns the
/// number of faulty runs.
pub fn case(workload: &Workload, rng: &mut impl Rng) -> u64 {
    let disk = SimStorage::new();
    disk.set_faults(Faults::default());
    let outcome = run(workload, &disk);
    assert!(
        outcome.failure.is_none(),
        "the faultless run failed: {:?}",
        outcome.failure
    );
    let (syncs, allocations, writes) = disk.call_counts();
    let sites = (1..=syncs)
        .map(CallSite::Sync)
        .chain((1..=allocations).map(CallSite::Allocation))
        .chain((1..=writes).map(CallSite::Write));
    let mut runs = 0;
    for site in sites {
        with_fault(workload, site, rng);
        runs += 1;
    }
    runs
}

struct Outcome {
    /// The model after each acknowledged write; `durable` indexes the last one known durable.
    history: Vec<Model>,
    durable: usize,
    /// The first unexpected error, and the model had its write taken effect.
    failure: Option<(tenure::Error, Option<Model>)>,
    store: Option<Store>,
}

fn options(workload: &Workload) -> StoreOptions {
    store_options(
        &ManualClock::new(START_MICROS),
        workload.durability,
        workload.segment_size_bytes,
    )
}

/// Runs the workload until its end or its first unexpected error.
fn run(workload: &Workload, disk: &SimStorage) -> Outcome {
    let mut outcome = Outcome {
        history: vec![Model::default()],
        durable: 0,
        failure: None,
        store: None,
    };
    let open = |outcome: &mut Outcome| match Store::open_with_storage(
        Arc::new(disk.clone()),
        options(workload),
    ) {
        Ok(store) => {
            outcome.store = Some(store);
            true
        }
        Err(error) => {
            outcome.failure = Some((error, None));
            false
        }
    };
    if !open(&mut outcome) {
        return outcome;
    }
    for step in &workload.steps {
        let store = outcome.store.as_ref().expect("open");
        let model = outcome.history.last().expect("never empty").clone();
        let result = match step {
            Step::Write(op) => match workload::apply(store, &model, op) {
                Applied::Written(next) => {
                    outcome.history.push(next);
                    if workload.durability == Durability::Sync {
                        outcome.durable = outcome.history.len() - 1;
                    }
                    Ok(())
                }
                Applied::Refused => Ok(()),
                Applied::Failed { error, if_applied } => Err((error, if_applied)),
            },
            Step::Flush => store.flush().map_err(|error| (error, None)).map(|()| {
                outcome.durable = outcome.history.len() - 1;
            }),
            Step::Compact => store.compact().map(|_| ()).map_err(|error| (error, None)),
            Step::Reopen => {
                let closed = outcome.store.take().expect("open").close();
                match closed {
                    Ok(()) => {
                        outcome.durable = outcome.history.len() - 1;
                        if !open(&mut outcome) {
                            return outcome;
                        }
                        Ok(())
                    }
                    Err(error) => Err((error, None)),
                }
            }
        };
        if let Err(failure) = result {
            outcome.failure = Some(failure);
            return outcome;
        }
    }
    outcome
}

fn with_fault(workload: &Workload, site: CallSite, rng: &mut impl Rng) {
    let disk = SimStorage::new();
    disk.set_faults(site.faults());
    let mut outcome = run(workload, &disk);
    if let Some((error, _)) = &outcome.failure {
        assert!(
            matches!(error.code(), ErrorCode::Io | ErrorCode::Closed),
            "{site:?}: failed with {error:?}, not Io"
        );
    }
    // A failed sync poisons the store: the next write is refused with Io, and never lands.
    let fired = match site {
        CallSite::Sync(n) => disk.call_counts().0 >= n,
        _ => false,
    };
    if let (Some(store), true, Some((failure, _))) = (&outcome.store, fired, &outcome.failure) {
        let probe = store.create_container("probe", &Default::default());
        match probe {
            Err(error) if error.code() == ErrorCode::Io => {}
            other => panic!(
                "{site:?}: after {failure:?}, a write returned {other:?}, not Io (not poisoned)"
            ),
        }
    }
    drop(outcome.store.take());
    // Reopen without faults: the disk as the process left it, or as a power cut leaves it.
    let power_cut = rng.gen_bool(0.5);
    let disk = if power_cut {
        let policy = POLICIES[rng.gen_range(0..POLICIES.len())];
        disk.crash(rng, policy)
    } else {
        disk.set_faults(Faults::default());
        disk
    };
    let mut allowed: Vec<Model> = if power_cut {
        outcome.history[outcome.durable..].to_vec()
    } else {
        vec![outcome.history.last().expect("never empty").clone()]
    };
    if let Some((_, Some(if_applied))) = outcome.failure.take() {
        allowed.push(if_applied);
    }
    let store = Store::open_with_storage(Arc::new(disk), options(workload))
        .unwrap_or_else(|error| panic!("{site:?}: the reopen without faults failed: {error:?}"));
    let state = workload::read_state(&store)
        .unwrap_or_else(|error| panic!("{site:?}: reading the reopened store: {error:?}"));
    workload::match_state(&allowed, &state)
        .unwrap_or_else(|message| panic!("{site:?} (power cut after: {power_cut}): {message}"));
    if state.containers.is_empty() {
        store
            .create_container("a", &Default::default())
            .unwrap_or_else(|error| panic!("{site:?}: writable again after reopen: {error:?}"));
    } else {
        let container = state.containers.keys().next().expect("checked").clone();
        store
            .put(&container, b"after", b"reopen", &WriteOptions::default())
            .unwrap_or_else(|error| panic!("{site:?}: writable again after reopen: {error:?}"));
    }
}
