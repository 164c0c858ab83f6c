//! Model-based test: random sequences of item and container operations, with Compact, Reopen and Crash
//! steps through the simulated disk, checked after every step against the reference model in
//! tenure-testkit (`tenure_testkit::model_sequences`, which the etcd backend's test runs too).
//! Checkpoints are taken between the steps, so opens after crashes load one and replay the
//! log after it.
//! Replay a failing sequence with TENURE_SEED=<seed> TENURE_SEQUENCES=1.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::Rng;
use tenure::{Durability, ManualClock, Store, StoreOptions};
use tenure_testkit::model_sequences::{run_sequence, Subject};
use tenure_testkit::{CrashPolicy, SimStorage};

/// Segments compaction removed over the whole run: the run must exercise it.
static SEGMENTS_REMOVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Opens that loaded a checkpoint and replayed log after it: the run must exercise them.
static OPENS_ONTO_CHECKPOINT: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);
/// A checkpoint is taken at every this many-th use of the store.
const USES_PER_CHECKPOINT: u64 = 9;
/// Steps of the longest sequence.
const MAX_STEPS: usize = 60;

fn store_options(clock: &ManualClock) -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        segment_size_bytes: 8 << 10,
        clock: Arc::new(clock.clone()),
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

/// A store on the simulated disk: Reopen closes and opens it; Crash cuts the power.
struct Local {
    clock: ManualClock,
    disk: SimStorage,
    store: Option<Store>,
    uses: std::cell::Cell<u64>,
}

impl Local {
    fn new() -> Local {
        let clock = ManualClock::new(1_700_000_000_000_000);
        let disk = SimStorage::new();
        let store =
            Store::open_with_storage(Arc::new(disk.clone()), store_options(&clock)).unwrap();
        Local {
            clock,
            disk,
            store: Some(store),
            uses: std::cell::Cell::new(0),
        }
    }

    fn open(&mut self) {
        let store =
            Store::open_with_storage(Arc::new(self.disk.clone()), store_options(&self.clock))
                .unwrap_or_else(|error| panic!("reopen: {error}"));
        let stats = store.stats().unwrap();
        if stats.opened_from_persisted_index && stats.log_bytes_replayed_at_open > 0 {
            OPENS_ONTO_CHECKPOINT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.store = Some(store);
    }
}

impl Subject for Local {
    fn store(&self) -> &Store {
        let store = self.store.as_ref().expect("open");
        let uses = self.uses.get() + 1;
        self.uses.set(uses);
        if uses % USES_PER_CHECKPOINT == 0 {
            store.checkpoint().unwrap();
        }
        store
    }

    fn reopen(&mut self) {
        self.store.take().expect("open").close().unwrap();
        self.open();
    }

    fn crash(&mut self, rng: &mut StdRng) {
        // Power cut: in sync mode every acknowledged write survives.
        let policy = [
            CrashPolicy::DropAll,
            CrashPolicy::KeepAll,
            CrashPolicy::Random,
        ][rng.gen_range(0..3)];
        let crashed = self.disk.crash(rng, policy);
        drop(self.store.take());
        self.disk = crashed;
        self.open();
    }
}

#[test]
fn random_sequences_match_the_reference_model_across_reopens_and_crashes() {
    let first_seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    let count: u64 = std::env::var("TENURE_SEQUENCES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(2_000);
    for seed in first_seed..first_seed + count {
        if std::panic::catch_unwind(|| {
            let removed = run_sequence(&mut Local::new(), seed, MAX_STEPS);
            SEGMENTS_REMOVED.fetch_add(removed, std::sync::atomic::Ordering::Relaxed);
        })
        .is_err()
        {
            panic!("sequence failed; replay with TENURE_SEED={seed} TENURE_SEQUENCES=1");
        }
    }
    let removed = SEGMENTS_REMOVED.load(std::sync::atomic::Ordering::Relaxed);
    let onto_checkpoint = OPENS_ONTO_CHECKPOINT.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{count} sequences; compaction removed {removed} segments; {onto_checkpoint} opens \
         replayed log onto a checkpoint"
    );
    if count >= 100 {
        assert!(
            removed > 0,
            "compaction never removed a segment: the sequences do not exercise it"
        );
        assert!(
            onto_checkpoint > 0,
            "no open replayed log onto a checkpoint: the sequences do not exercise it"
        );
    }
}
