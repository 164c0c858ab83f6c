//! Random sequences of item and container operations — puts, creates, conditional puts,
//! deletes, batches, container creates and deletes — with Compact, Reopen and Crash steps,
//! checked after every step against the reference [`Model`]: gets, listings and snapshot scans
//! from several start keys. One source for every backend: the local engine's test runs it on
//! the simulated disk (a crash is a power cut), the etcd backend's on a cluster (a crash is a
//! client dropped without closing).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::{Conditions, ContainerOptions, ETag, ErrorCode, ReadOptions, Store, WriteOptions};

use crate::model::Model;

const CONTAINERS: [&str; 2] = ["a", "b"];
const KEYS: [&[u8]; 6] = [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5"];

/// A store the sequences run on, and what its Reopen and Crash steps do.
pub trait Subject {
    fn store(&self) -> &Store;
    /// Closes the store and opens it again.
    fn reopen(&mut self);
    /// Ends the store's process abruptly (as the backend can) and opens it again: every
    /// acknowledged write must survive.
    fn crash(&mut self, rng: &mut StdRng);
}

fn outcome<T>(result: &Result<T, tenure::Error>) -> Result<(), ErrorCode> {
    result.as_ref().map(|_| ()).map_err(|error| error.code())
}

fn check_against_model(store: &Store, model: &Model, seed: u64, step: usize) {
    for container in CONTAINERS {
        for key in KEYS {
            let expected = model
                .get(container, key)
                .map(|item| (item.value.clone(), item.version));
            let actual = store
                .get(container, key, &ReadOptions::default())
                .map(|item| (item.value.unwrap(), item.version))
                .map_err(|error| error.code());
            assert_eq!(
                actual,
                expected,
                "seed {seed} step {step}: get {container}/{:?}",
                String::from_utf8_lossy(key)
            );
        }
        let listed = store.list(container, b"", 100, None, false);
        match model.containers.get(container) {
            Some(items) => {
                let keys: Vec<Vec<u8>> = listed
                    .unwrap()
                    .items
                    .into_iter()
                    .map(|item| item.key)
                    .collect();
                let expected: Vec<Vec<u8>> = items.keys().cloned().collect();
                assert_eq!(keys, expected, "seed {seed} step {step}: list {container}");
            }
            None => assert_eq!(listed.unwrap_err().code(), ErrorCode::ContainerNotFound),
        }
        // A snapshot scan sees the same items, values and versions, from any start key.
        let snapshot = store.snapshot().unwrap();
        for from in [&b""[..], KEYS[KEYS.len() / 2]] {
            let mut scanned = Vec::new();
            let result = snapshot.scan(container, b"", from, |entry| {
                scanned.push((entry.key.to_vec(), entry.value.to_vec(), entry.version));
                true
            });
            match model.containers.get(container) {
                Some(items) => {
                    assert_eq!(result.unwrap(), scanned.len());
                    let expected: Vec<(Vec<u8>, Vec<u8>, u64)> = items
                        .iter()
                        .filter(|(key, _)| key.as_slice() >= from)
                        .map(|(key, item)| (key.clone(), item.value.clone(), item.version))
                        .collect();
                    assert_eq!(
                        scanned, expected,
                        "seed {seed} step {step}: scan {container} from {from:?}"
                    );
                }
                None => assert_eq!(result.unwrap_err().code(), ErrorCode::ContainerNotFound),
            }
        }
    }
}

/// Runs one seeded sequence of 5 to `max_steps` steps on `subject`, checking it against the
/// model after every step. Returns how many segments compaction removed.
pub fn run_sequence(subject: &mut dyn Subject, seed: u64, max_steps: usize) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = Model::default();
    let mut segments_removed = 0;
    let steps = rng.gen_range(5..max_steps.max(6));
    for step in 0..steps {
        let store = subject.store();
        let container = CONTAINERS[rng.gen_range(0..CONTAINERS.len())];
        let key = KEYS[rng.gen_range(0..KEYS.len())];
        // Mostly small values, some large enough to fill segments so compaction has work.
        let length = if rng.gen_range(0..4) == 0 {
            rng.gen_range(1000..6000)
        } else {
            rng.gen_range(0..40)
        };
        let value: Vec<u8> = (0..length).map(|_| rng.gen()).collect();
        match rng.gen_range(0..100) {
            0..=7 => {
                let result = store.create_container(container, &ContainerOptions::default());
                assert_eq!(
                    outcome(&result),
                    model.create_container(container),
                    "seed {seed} step {step}"
                );
            }
            8..=9 => {
                let result = store.delete_container(container, &Default::default());
                assert_eq!(
                    outcome(&result),
                    model.delete_container(container),
                    "seed {seed} step {step}"
                );
            }
            10..=34 => {
                let verdict = model.check_put(container, key, None, false);
                let result = store.put(container, key, &value, &WriteOptions::default());
                assert_eq!(outcome(&result), verdict, "seed {seed} step {step}: put");
                if let Ok(etag) = result {
                    model.apply_put(container, key, &value, etag.version());
                }
            }
            35..=44 => {
                let verdict = model.check_put(container, key, None, true);
                let result = store.create(container, key, &value, &WriteOptions::default());
                assert_eq!(outcome(&result), verdict, "seed {seed} step {step}: create");
                if let Ok(etag) = result {
                    model.apply_put(container, key, &value, etag.version());
                }
            }
            45..=59 => {
                // if_match with the current ETag, or a stale one.
                let current = model.get(container, key).map(|item| item.version).ok();
                let expected = match current {
                    Some(version) if rng.gen_bool(0.7) => version,
                    Some(version) => version.saturating_sub(1),
                    None => rng.gen_range(1..50),
                };
                let verdict = model.check_put(container, key, Some(expected), false);
                let options = WriteOptions::with_conditions(Conditions::if_match(ETag(expected)));
                let result = store.put(container, key, &value, &options);
                assert_eq!(
                    outcome(&result),
                    verdict,
                    "seed {seed} step {step}: put if_match"
                );
                if let Ok(etag) = result {
                    model.apply_put(container, key, &value, etag.version());
                }
            }
            60..=69 => {
                let verdict = model.check_delete(container, key);
                let result = store.delete(container, key, &WriteOptions::default());
                assert_eq!(outcome(&result), verdict, "seed {seed} step {step}: delete");
                if result.is_ok() {
                    model.apply_delete(container, key);
                }
            }
            70..=81 => {
                // A batch of two puts and a delete; all or nothing.
                let second = KEYS[rng.gen_range(0..KEYS.len())];
                let third = KEYS[rng.gen_range(0..KEYS.len())];
                let mut trial = model.clone();
                let mut verdict = trial.check_put(container, key, None, false);
                if verdict.is_ok() {
                    trial.apply_put(container, key, &value, 0);
                    verdict = trial.check_put(container, second, None, true);
                }
                if verdict.is_ok() {
                    trial.apply_put(container, second, b"second", 0);
                    verdict = trial.check_delete(container, third);
                }
                let mut batch = store.batch();
                batch
                    .put(container, key, &value, WriteOptions::default())
                    .create(container, second, b"second", WriteOptions::default())
                    .delete(container, third, WriteOptions::default());
                let result = batch.commit();
                assert_eq!(outcome(&result), verdict, "seed {seed} step {step}: batch");
                if let Ok(version) = result {
                    model.apply_put(container, key, &value, version);
                    model.apply_put(container, second, b"second", version);
                    model.apply_delete(container, third);
                }
            }
            82..=87 => {
                let report = store
                    .compact()
                    .unwrap_or_else(|error| panic!("seed {seed} step {step}: compact: {error}"));
                segments_removed += report.segments_removed;
            }
            88..=92 => subject.reopen(),
            _ => subject.crash(&mut rng),
        }
        check_against_model(subject.store(), &model, seed, step);
    }
    segments_removed
}
