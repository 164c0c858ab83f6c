//! The change feed (docs/spec.md §10, issue "Change feed").

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{options, store, START_MICROS};
use rand::{Rng, SeedableRng};
use tenure::{
    Change, ChangeKind, ChangesOptions, ContainerOptions, ErrorCode, ManualClock, ReadOptions,
    Store, StoreOptions, WriteOptions,
};
use tenure_testkit::SimStorage;

fn all_changes(store: &Store, since: u64, include_values: bool) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut since = since;
    loop {
        let page = store
            .changes(
                since,
                &ChangesOptions {
                    include_values,
                    max_changes: 37,
                    ..ChangesOptions::default()
                },
            )
            .unwrap();
        let Some(last) = page.last() else { break };
        since = last.version;
        changes.extend(page);
    }
    changes
}

type State = BTreeMap<(String, Vec<u8>), Vec<u8>>;

fn apply(state: &mut State, change: &Change) {
    match change.kind {
        ChangeKind::Created | ChangeKind::Updated => {
            state.insert(
                (change.container.clone(), change.key.clone().unwrap()),
                change.value.clone().unwrap(),
            );
        }
        ChangeKind::Deleted | ChangeKind::Expired => {
            state.remove(&(change.container.clone(), change.key.clone().unwrap()));
        }
        ChangeKind::ContainerDeleted => {
            state.retain(|(container, _), _| *container != change.container)
        }
        ChangeKind::ContainerCreated => {}
        _ => unreachable!("no other kinds are produced"),
    }
}

fn snapshot_state(store: &Store) -> State {
    let snapshot = store.snapshot().unwrap();
    let mut state = State::new();
    for container in snapshot.list_containers().unwrap() {
        for item in snapshot
            .list(&container, b"", 10_000, None, true)
            .unwrap()
            .items
        {
            state.insert((container.clone(), item.key), item.value.unwrap());
        }
    }
    state
}

#[test]
fn replaying_the_feed_onto_an_empty_model_equals_the_store_at_every_version() {
    for seed in 0..30u64 {
        let (store, _, _) = store();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut states_by_version = vec![(store.version(), snapshot_state(&store))];
        for step in 0..80u32 {
            let key = [b'k', rng.gen_range(0..6u8)];
            let result = match rng.gen_range(0..10) {
                0..=4 => store
                    .put("c", &key, &step.to_le_bytes(), &WriteOptions::default())
                    .map(|_| ()),
                5..=6 => store.delete("c", &key, &WriteOptions::default()),
                7 => {
                    let mut batch = store.batch();
                    batch
                        .put("c", &key, b"batched", WriteOptions::default())
                        .put("d", &key, b"other", WriteOptions::default());
                    batch.commit().map(|_| ())
                }
                8 => store
                    .create_container("d", &ContainerOptions::default())
                    .map(|_| ()),
                _ => store.delete_container("d", &Default::default()),
            };
            if result.is_ok() {
                states_by_version.push((store.version(), snapshot_state(&store)));
            }
        }
        let changes = all_changes(&store, 0, true);
        assert!(
            changes
                .windows(2)
                .all(|pair| pair[0].version <= pair[1].version),
            "seed {seed}: out of order"
        );
        let mut replayed = State::new();
        let mut next = 0;
        for (version, expected) in &states_by_version {
            while next < changes.len() && changes[next].version <= *version {
                apply(&mut replayed, &changes[next]);
                next += 1;
            }
            assert_eq!(
                &replayed, expected,
                "seed {seed}: feed replayed to version {version}"
            );
        }
    }
}

#[test]
fn kinds_etags_values_and_batches_are_reported() {
    let (store, _, _) = store();
    let start = store.version();
    let created = store
        .put("c", b"k", b"1", &WriteOptions::default())
        .unwrap();
    let updated = store
        .put("c", b"k", b"2", &WriteOptions::default())
        .unwrap();
    store.delete("c", b"k", &WriteOptions::default()).unwrap();
    let mut batch = store.batch();
    batch.put("c", b"a", b"x", WriteOptions::default()).put(
        "c",
        b"b",
        b"y",
        WriteOptions::default(),
    );
    let batch_version = batch.commit().unwrap();
    // Lease operations are not changes.
    store
        .acquire_lease("c", b"a", &tenure::LeaseRequest::seconds(15).unwrap())
        .unwrap();
    let changes = all_changes(&store, start, true);
    let kinds: Vec<(ChangeKind, Option<Vec<u8>>)> = changes
        .iter()
        .map(|change| (change.kind, change.key.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (ChangeKind::Created, Some(b"k".to_vec())),
            (ChangeKind::Updated, Some(b"k".to_vec())),
            (ChangeKind::Deleted, Some(b"k".to_vec())),
            (ChangeKind::Created, Some(b"a".to_vec())),
            (ChangeKind::Created, Some(b"b".to_vec())),
        ]
    );
    assert_eq!(changes[0].etag, Some(created));
    assert_eq!(changes[1].etag, Some(updated));
    assert_eq!(changes[1].value.as_deref(), Some(&b"2"[..]));
    assert_eq!(
        (changes[3].version, changes[4].version),
        (batch_version, batch_version)
    );
    let without_values = store.changes(start, &ChangesOptions::default()).unwrap();
    assert!(without_values.iter().all(|change| change.value.is_none()));
    let only_d = ChangesOptions {
        container: Some("d".into()),
        ..ChangesOptions::default()
    };
    assert!(store.changes(0, &only_d).unwrap().is_empty());
}

#[test]
fn a_consumer_resumes_after_a_reopen_from_the_last_version_it_processed() {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock)).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for index in 0..50u32 {
        store
            .put("c", &index.to_be_bytes(), b"v", &WriteOptions::default())
            .unwrap();
    }
    let first_half = store
        .changes(
            0,
            &ChangesOptions {
                max_changes: 26,
                ..ChangesOptions::default()
            },
        )
        .unwrap();
    let processed = first_half.last().unwrap().version;
    store.close().unwrap();
    let store = Store::open_with_storage(Arc::new(disk), options(&clock)).unwrap();
    let rest = all_changes(&store, processed, false);
    let keys: Vec<Vec<u8>> = first_half
        .iter()
        .chain(&rest)
        .filter_map(|change| change.key.clone())
        .collect();
    let expected: Vec<Vec<u8>> = (0..50u32)
        .map(|index| index.to_be_bytes().to_vec())
        .collect();
    assert_eq!(
        keys, expected,
        "every change exactly once across the reopen"
    );
}

#[test]
fn asking_for_versions_compaction_removed_names_the_oldest_available() {
    let clock = ManualClock::new(START_MICROS);
    let small = StoreOptions {
        segment_size_bytes: 64 << 10,
        ..options(&clock)
    };
    let store = Store::open_with_storage(Arc::new(SimStorage::new()), small).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for round in 0..4u32 {
        for key in 0..500u32 {
            store
                .put(
                    "c",
                    &key.to_be_bytes(),
                    &[round as u8; 100],
                    &WriteOptions::default(),
                )
                .unwrap();
        }
    }
    assert!(store.compact().unwrap().segments_removed > 0);
    let error = store.changes(0, &ChangesOptions::default()).unwrap_err();
    assert_eq!(error.code(), ErrorCode::Compacted);
    assert_eq!(error.status(), 410);
    assert!(
        error.to_string().contains("oldest available version"),
        "{error}"
    );
}

#[test]
fn compaction_respects_the_retention_horizon() {
    let clock = ManualClock::new(START_MICROS);
    let retained = StoreOptions {
        segment_size_bytes: 64 << 10,
        change_feed_retention_versions: Some(10_000),
        ..options(&clock)
    };
    let store = Store::open_with_storage(Arc::new(SimStorage::new()), retained).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for round in 0..4u32 {
        for key in 0..500u32 {
            store
                .put(
                    "c",
                    &key.to_be_bytes(),
                    &[round as u8; 100],
                    &WriteOptions::default(),
                )
                .unwrap();
        }
    }
    let report = store.compact().unwrap();
    assert_eq!(report.segments_removed, 0, "{report:?}");
    assert!(report.retained_for_change_feed);
    assert_eq!(all_changes(&store, 0, false).len(), 1 + 2000);
}

#[test]
fn four_writers_two_consumers_each_consumer_sees_every_change_once_in_order() {
    let (store, _, _) = store();
    let store = Arc::new(store);
    let start = store.version();
    const WRITES_PER_WRITER: u32 = 500;
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut since = start;
                while seen.len() < 4 * WRITES_PER_WRITER as usize {
                    store
                        .wait_for_changes(since, Duration::from_secs(10))
                        .unwrap();
                    for change in store.changes(since, &ChangesOptions::default()).unwrap() {
                        assert!(
                            change.version > since,
                            "a change seen twice or out of order"
                        );
                        since = change.version;
                        seen.push(change.key.unwrap());
                    }
                }
                seen
            })
        })
        .collect();
    let writers: Vec<_> = (0..4u32)
        .map(|writer| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for index in 0..WRITES_PER_WRITER {
                    let key = [writer.to_be_bytes(), index.to_be_bytes()].concat();
                    store
                        .put("c", &key, b"v", &WriteOptions::default())
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    for consumer in consumers {
        let mut seen = consumer.join().unwrap();
        assert_eq!(seen.len(), 4 * WRITES_PER_WRITER as usize);
        seen.sort();
        seen.dedup();
        assert_eq!(
            seen.len(),
            4 * WRITES_PER_WRITER as usize,
            "every change exactly once"
        );
    }
}

#[test]
fn a_waiting_consumer_wakes_on_a_commit_and_times_out_without_one() {
    let (store, _, _) = store();
    let store = Arc::new(store);
    let since = store.version();
    assert!(!store
        .wait_for_changes(since, Duration::from_millis(20))
        .unwrap());
    let waiter = {
        let store = Arc::clone(&store);
        std::thread::spawn(move || {
            store
                .wait_for_changes(since, Duration::from_secs(30))
                .unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(10));
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    assert!(waiter.join().unwrap());
    assert_eq!(
        store
            .get("c", b"k", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"v"
    );
    assert_eq!(
        store
            .changes(
                0,
                &ChangesOptions {
                    max_changes: 0,
                    ..Default::default()
                }
            )
            .unwrap_err()
            .code(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn an_expiry_is_recorded_once_at_its_own_version_and_the_feed_reports_it() {
    let (store, clock, disk) = store();
    let short = WriteOptions {
        ttl: tenure::Ttl::Seconds(5),
        ..WriteOptions::default()
    };
    let written = store.put("c", b"short", b"v", &short).unwrap();
    store
        .put("c", b"long", b"v", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store.sweep_expired(100).unwrap(),
        0,
        "nothing has expired yet"
    );
    clock.advance_seconds(5);
    // Invisible at once, recorded later.
    assert_eq!(
        store
            .get("c", b"short", &ReadOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    let before_sweep = store.version();
    assert_eq!(store.sweep_expired(100).unwrap(), 1);
    assert_eq!(store.sweep_expired(100).unwrap(), 0, "recorded once");
    let changes = all_changes(&store, written.version(), false);
    let expiries: Vec<&Change> = changes
        .iter()
        .filter(|change| change.kind == ChangeKind::Expired)
        .collect();
    assert_eq!(expiries.len(), 1);
    assert_eq!(expiries[0].key.as_deref(), Some(&b"short"[..]));
    assert!(
        expiries[0].version > before_sweep,
        "the expiry takes its own version"
    );
    // A locked item never expires, so it is not swept.
    let (_, _handle) = store
        .get_and_lock("c", b"long", Duration::from_secs(600), false)
        .unwrap();
    store.close().unwrap();
    let store = Store::open_with_storage(Arc::new(disk), options(&clock)).unwrap();
    assert_eq!(
        store
            .get("c", b"short", &ReadOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        all_changes(&store, 0, false)
            .iter()
            .filter(|change| change.kind == ChangeKind::Expired)
            .count(),
        1
    );
}

#[test]
fn visiting_borrowed_changes_sees_the_same_changes_as_copying_them() {
    let (store, _, _) = store();
    for index in 0..100u32 {
        store
            .put(
                "c",
                &index.to_be_bytes(),
                &index.to_le_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    store
        .delete("c", &7u32.to_be_bytes(), &WriteOptions::default())
        .unwrap();
    let options = ChangesOptions {
        include_values: true,
        max_changes: 1000,
        ..ChangesOptions::default()
    };
    let copied = store.changes(0, &options).unwrap();
    let mut visited = Vec::new();
    store
        .visit_changes(0, &options, &mut |change| {
            visited.push(change.to_owned(true));
            true
        })
        .unwrap();
    assert_eq!(visited, copied);
    let mut first_three = 0;
    store
        .visit_changes(0, &options, &mut |_| {
            first_three += 1;
            first_three < 3
        })
        .unwrap();
    assert_eq!(first_three, 3, "returning false stops the visit");
}

/// A page never ends inside a batch: its changes share one version, and a reader resumes after
/// the last version it saw, so a split batch would lose its rest.
#[test]
fn a_page_of_changes_never_splits_a_batch() {
    let (store, _clock, _disk) = store();
    store
        .put("c", b"before", b"v", &WriteOptions::default())
        .unwrap();
    let mut batch = store.batch();
    for index in 0..30u32 {
        batch.put("c", &index.to_be_bytes(), b"v", WriteOptions::default());
    }
    let batch_version = batch.commit().unwrap();
    store
        .put("c", b"after", b"v", &WriteOptions::default())
        .unwrap();
    let options = ChangesOptions {
        max_changes: 10,
        ..ChangesOptions::default()
    };
    let mut since = 0;
    let mut seen = Vec::new();
    for _ in 0..100 {
        let page = store.changes(since, &options).unwrap();
        let Some(last) = page.last() else { break };
        since = last.version;
        let in_batch = page
            .iter()
            .filter(|change| change.version == batch_version)
            .count();
        assert!(
            in_batch == 0 || in_batch == 30,
            "a page split the batch: {in_batch}"
        );
        seen.extend(page);
    }
    let keys: Vec<_> = seen
        .iter()
        .filter(|change| change.version == batch_version)
        .collect();
    assert_eq!(keys.len(), 30);
    assert!(seen
        .iter()
        .any(|change| change.key.as_deref() == Some(&b"after"[..])));
}
