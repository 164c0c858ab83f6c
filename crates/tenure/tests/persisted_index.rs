//! The persisted index (docs/design.md §3 "The persisted index"): a clean close saves the index,
//! the next open loads it instead of replaying the log, and a file that is damaged, truncated,
//! stale or another store's is never used. Every open here is compared with an open of the
//! same files without the persisted index (a full replay), over items of every shape: plain,
//! with properties, leased, locked, expiring, deleted, in a batch, relocated by compaction, in
//! a deleted container.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tenure::{
    ChangesOptions, Conditions, ContainerOptions, Durability, LeaseRequest, ManualClock,
    ReadOptions, Store, StoreOptions, Ttl, WriteOptions, MICROS_PER_SECOND,
};
use tenure_testkit::{CrashPolicy, Faults, SimStorage};

const START_MICROS: u64 = 1_700_000_000 * MICROS_PER_SECOND;
const CHECKPOINT_FILE: &str = "index.checkpoint";

type Files = BTreeMap<String, Vec<u8>>;

fn options(clock: &ManualClock, read_only: bool) -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        segment_size_bytes: 16 << 10,
        clock: Arc::new(clock.clone()),
        background_compaction_interval: None,
        read_only,
        ..StoreOptions::default()
    }
}

fn open(files: &Files, clock: &ManualClock, read_only: bool) -> Store {
    let disk = SimStorage::with_files(files.clone());
    Store::open_with_storage(Arc::new(disk), options(clock, read_only))
        .unwrap_or_else(|error| panic!("open: {error}"))
}

fn from_persisted_index(store: &Store) -> bool {
    store.stats().unwrap().opened_from_persisted_index
}

/// Writes items of every shape into a new store on `disk`; `items` plain puts in "alpha".
/// `last_value` is the value of the very last write (so two stores can differ at the end).
fn fill(disk: &SimStorage, clock: &ManualClock, items: usize, last_value: &[u8]) -> Store {
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(clock, false)).unwrap();
    let with_properties = WriteOptions {
        content_type: Some("text/plain".into()),
        metadata: vec![("owner".into(), "alice".into())],
        ..WriteOptions::default()
    };
    store
        .create_container(
            "alpha",
            &ContainerOptions {
                metadata: vec![("team".into(), "a".into())],
                default_ttl_seconds: None,
            },
        )
        .unwrap();
    store
        .create_container(
            "beta",
            &ContainerOptions {
                metadata: Vec::new(),
                default_ttl_seconds: Some(3600),
            },
        )
        .unwrap();
    store.create_container("gone", &Default::default()).unwrap();
    store
        .put("gone", b"k", b"v", &WriteOptions::default())
        .unwrap();
    store.delete_container("gone", &Default::default()).unwrap();
    for index in 0..items {
        let key = format!("key-{index:05}");
        let value = format!("value {index} ").repeat(1 + index % 5);
        store
            .put(
                "alpha",
                key.as_bytes(),
                value.as_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    // Overwrites, deletes, properties, TTLs, a conditional update.
    for index in (0..items).step_by(7) {
        let key = format!("key-{index:05}");
        store
            .put("alpha", key.as_bytes(), b"rewritten", &with_properties)
            .unwrap();
    }
    for index in (3..items).step_by(11) {
        let key = format!("key-{index:05}");
        store
            .delete("alpha", key.as_bytes(), &WriteOptions::default())
            .unwrap();
    }
    let etag = store
        .put("beta", b"counter", b"1", &WriteOptions::default())
        .unwrap();
    store
        .put(
            "beta",
            b"counter",
            b"2",
            &WriteOptions::with_conditions(Conditions::if_match(etag)),
        )
        .unwrap();
    store
        .put(
            "beta",
            b"short-lived",
            b"x",
            &WriteOptions {
                ttl: Ttl::seconds(30).unwrap(),
                ..WriteOptions::default()
            },
        )
        .unwrap();
    store
        .put("beta", b"default-ttl", b"y", &WriteOptions::default())
        .unwrap();
    let mut batch = store.batch();
    for index in 0..20 {
        let key = format!("batch-{index:02}");
        batch.put(
            "beta",
            key.as_bytes(),
            b"in a batch",
            WriteOptions::default(),
        );
    }
    batch.commit().unwrap();
    // Coordination: an item lease, a cache lock, a lock on an absent key, a container lease.
    let mut request = LeaseRequest::seconds(60).unwrap();
    request.holder = Some("worker-1".into());
    store
        .acquire_lease("alpha", b"key-00001", &request)
        .unwrap();
    store
        .get_and_lock("alpha", b"key-00002", Duration::from_secs(20), false)
        .unwrap();
    store
        .get_and_lock("beta", b"absent", Duration::from_secs(20), true)
        .unwrap();
    store
        .acquire_container_lease("beta", &LeaseRequest::infinite())
        .unwrap();
    store
        .set_container_metadata("alpha", &[("team".into(), "b".into())], &Default::default())
        .unwrap();
    // Compaction relocates live items into new segments and removes old ones.
    store.compact().unwrap();
    clock.advance_seconds(5);
    store
        .put("alpha", b"zz-last", last_value, &WriteOptions::default())
        .unwrap();
    store
}

/// Everything a client can read, as text: the version, containers with their properties and
/// leases, every item with its value and properties and lease, the counts of leases and locks,
/// and the whole change feed.
fn dump(store: &Store) -> String {
    let mut out = format!("version {}\n", store.version());
    for name in store.list_containers().unwrap() {
        out += &format!(
            "container {name}: {:?}\n",
            store.container_properties(&name)
        );
        out += &format!("  lease {:?}\n", store.container_lease_info(&name));
        let mut continuation = None;
        loop {
            let page = store
                .list(&name, b"", 50, continuation.as_deref(), true)
                .unwrap();
            for item in &page.items {
                out += &format!("  {item:?}\n");
                out += &format!(
                    "    get {:?}\n    lease {:?}\n",
                    store.get(&name, &item.key, &ReadOptions::default()),
                    store.lease_info(&name, &item.key)
                );
            }
            match page.continuation {
                Some(next) => continuation = Some(next),
                None => break,
            }
        }
    }
    let stats = store.stats().unwrap();
    out += &format!(
        "items {} leases {} locks {}\n",
        stats.items, stats.active_leases, stats.active_locks
    );
    let feed_options = ChangesOptions {
        container: None,
        include_values: true,
        max_changes: 100_000,
    };
    // The feed from its oldest retained change (compaction drops what came before).
    let changes = match store.changes(0, &feed_options) {
        Err(tenure::Error::Compacted {
            oldest_available, ..
        }) => {
            out += &format!("feed starts at {oldest_available}\n");
            store.changes(oldest_available - 1, &feed_options)
        }
        other => other,
    }
    .unwrap();
    for change in changes {
        out += &format!("change {change:?}\n");
    }
    out
}

/// The files of a store filled and closed cleanly, and the dump of a full replay of them.
fn closed_store(items: usize, last_value: &[u8]) -> (Files, String, ManualClock) {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    fill(&disk, &clock, items, last_value).close().unwrap();
    let files = disk.current_files();
    assert!(
        files.contains_key(CHECKPOINT_FILE),
        "a clean close saves the index"
    );
    let replayed = without_checkpoint(&files);
    let store = open(&replayed, &clock, true);
    assert!(!from_persisted_index(&store));
    let expected = dump(&store);
    (files, expected, clock)
}

fn without_checkpoint(files: &Files) -> Files {
    let mut files = files.clone();
    files.remove(CHECKPOINT_FILE);
    files
}

#[test]
fn a_clean_close_saves_the_index_and_the_next_open_loads_it_with_the_same_content() {
    let (files, expected, clock) = closed_store(300, b"last");
    // Read-only: loads it and leaves it.
    let store = open(&files, &clock, true);
    assert!(from_persisted_index(&store));
    assert_eq!(dump(&store), expected);
    drop(store);
    // A writer loads it, removes it (its open moves the log on), and works on from there.
    let disk = SimStorage::with_files(files.clone());
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    assert!(from_persisted_index(&store));
    assert_eq!(dump(&store), expected);
    assert!(!disk.file_names().iter().any(|name| name == CHECKPOINT_FILE));
    store
        .put("alpha", b"after", b"reopen", &WriteOptions::default())
        .unwrap();
    store
        .delete("alpha", b"key-00000", &WriteOptions::default())
        .unwrap();
    let expected_after = dump(&store);
    store.close().unwrap();
    let files = disk.current_files();
    let store = open(&files, &clock, true);
    assert!(from_persisted_index(&store));
    assert_eq!(dump(&store), expected_after);
    let store = open(&without_checkpoint(&files), &clock, true);
    assert_eq!(dump(&store), expected_after);
}

#[test]
fn after_a_crash_there_is_no_persisted_index_and_the_open_replays() {
    let (files, _, clock) = closed_store(50, b"last");
    let disk = SimStorage::with_files(files);
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    store
        .put("alpha", b"acknowledged", b"yes", &WriteOptions::default())
        .unwrap();
    let expected = dump(&store);
    let crashed = disk.crash(&mut StdRng::seed_from_u64(1), CrashPolicy::DropAll);
    drop(store);
    let files = crashed.current_files();
    assert!(!files.contains_key(CHECKPOINT_FILE));
    let store = open(&files, &clock, true);
    assert!(!from_persisted_index(&store));
    assert_eq!(dump(&store), expected);
}

#[test]
fn every_byte_of_the_persisted_index_flipped_in_turn_is_detected_and_the_open_replays() {
    let (files, expected, clock) = closed_store(12, b"last");
    let pristine = files[CHECKPOINT_FILE].clone();
    for position in 0..pristine.len() {
        let mut damaged = files.clone();
        damaged.get_mut(CHECKPOINT_FILE).unwrap()[position] ^= 0xFF;
        let store = open(&damaged, &clock, true);
        assert!(
            !from_persisted_index(&store),
            "byte {position} of {} flipped and still loaded",
            pristine.len()
        );
        assert_eq!(dump(&store), expected, "byte {position} flipped");
    }
}

#[test]
fn a_truncated_persisted_index_is_detected_and_the_open_replays() {
    let (files, expected, clock) = closed_store(12, b"last");
    let pristine = files[CHECKPOINT_FILE].clone();
    for length in (0..pristine.len()).step_by(7).chain([pristine.len() - 1]) {
        let mut truncated = files.clone();
        truncated.insert(CHECKPOINT_FILE.into(), pristine[..length].to_vec());
        let store = open(&truncated, &clock, true);
        assert!(!from_persisted_index(&store), "truncated to {length}");
        assert_eq!(dump(&store), expected, "truncated to {length}");
    }
    // Bytes appended after it are damage too.
    let mut longer = files.clone();
    longer
        .get_mut(CHECKPOINT_FILE)
        .unwrap()
        .extend_from_slice(&[0; 8]);
    assert!(!from_persisted_index(&open(&longer, &clock, true)));
}

#[test]
fn a_stale_persisted_index_is_not_used() {
    let (files, _, clock) = closed_store(40, b"last");
    let stale = files[CHECKPOINT_FILE].clone();
    // A later session changes the store and closes cleanly: its own index replaces the old.
    let disk = SimStorage::with_files(files);
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    store
        .put(
            "alpha",
            b"key-00005",
            b"changed later",
            &WriteOptions::default(),
        )
        .unwrap();
    store.close().unwrap();
    let mut files = disk.current_files();
    let expected = dump(&open(&without_checkpoint(&files), &clock, true));
    // The old file put back (a backup restored over a newer store, say): refused.
    files.insert(CHECKPOINT_FILE.into(), stale);
    let store = open(&files, &clock, true);
    assert!(!from_persisted_index(&store));
    assert_eq!(dump(&store), expected);
}

#[test]
fn another_stores_persisted_index_is_not_used() {
    // Two stores with the same history of superblocks, lengths and versions; only the last
    // value differs.
    let (files, expected, clock) = closed_store(40, b"mine");
    let (other, _, _) = closed_store(40, b"them");
    let mut mixed = files.clone();
    mixed.insert(CHECKPOINT_FILE.into(), other[CHECKPOINT_FILE].clone());
    let store = open(&mixed, &clock, true);
    assert!(!from_persisted_index(&store));
    assert_eq!(dump(&store), expected);
}

/// Each step of a close that writes the persisted index fails in turn (each write, allocation
/// and sync), then the power is cut, dropping, keeping (what a kill -9 leaves: the page cache)
/// or tearing what was not synced. The next open is always correct; the file, never synced,
/// does not survive a cut that drops what was not synced.
#[test]
fn a_crash_at_every_step_of_saving_the_index_leaves_a_store_that_opens_correctly() {
    let build = || {
        let clock = ManualClock::new(START_MICROS);
        let disk = SimStorage::new();
        let store = fill(&disk, &clock, 40, b"last");
        let expected = dump(&store);
        (clock, disk, store, expected)
    };
    let (_, disk, store, _) = build();
    disk.set_faults(Faults::default());
    store.close().unwrap();
    let (syncs, allocations, writes) = disk.call_counts();
    assert!(
        writes >= 2 && syncs >= 1 && allocations >= 1,
        "the close writes, allocates and syncs"
    );
    let plans: Vec<(Step, u64)> = (1..=writes)
        .map(|write| (Step::Write, write))
        .chain((1..=syncs).map(|sync| (Step::Sync, sync)))
        .chain((1..=allocations).map(|allocation| (Step::Allocation, allocation)))
        .collect();
    let total = plans.len();
    let mut rng = StdRng::seed_from_u64(7);
    let mut loaded = 0;
    for (step, number) in plans {
        for policy in [
            CrashPolicy::DropAll,
            CrashPolicy::KeepAll,
            CrashPolicy::Random,
        ] {
            let (clock, disk, store, expected) = build();
            let failing = vec![number];
            disk.set_faults(match step {
                Step::Write => Faults {
                    failing_writes: failing,
                    ..Faults::default()
                },
                Step::Sync => Faults {
                    failing_syncs: failing,
                    ..Faults::default()
                },
                Step::Allocation => Faults {
                    failing_allocations: failing,
                    ..Faults::default()
                },
            });
            let _ = store.close();
            let crashed = disk.crash(&mut rng, policy);
            let step = format!("{step:?} {number} fails, then {policy:?}");
            let store = Store::open_with_storage(Arc::new(crashed), options(&clock, false))
                .unwrap_or_else(|error| panic!("{step}: {error}"));
            let from_file = from_persisted_index(&store);
            assert!(!(from_file && policy == CrashPolicy::DropAll), "{step}");
            loaded += usize::from(from_file);
            assert_eq!(dump(&store), expected, "{step}");
        }
    }
    // The file is never synced: a power cut that drops what was not synced never leaves it.
    assert!(loaded < 3 * total, "not every plan can have saved it");
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Write,
    Sync,
    Allocation,
}

/// More items than one load chunk (65,536): the open loads them on several threads where the
/// machine has them, and reads the same as a replay.
#[test]
fn a_persisted_index_of_several_load_chunks_reads_as_the_replay() {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(
        Arc::new(disk.clone()),
        StoreOptions {
            segment_size_bytes: 4 << 20,
            ..options(&clock, false)
        },
    )
    .unwrap();
    store.create_container("many", &Default::default()).unwrap();
    for first in (0..140_000u32).step_by(1_000) {
        let mut batch = store.batch();
        for number in first..first + 1_000 {
            batch.put(
                "many",
                &number.to_be_bytes(),
                &number.to_le_bytes(),
                WriteOptions::default(),
            );
        }
        batch.commit().unwrap();
    }
    store.close().unwrap();
    let files = disk.current_files();
    let everything = |store: &Store| {
        let mut items = Vec::new();
        let mut continuation = None;
        loop {
            let page = store
                .list("many", b"", 10_000, continuation.as_deref(), true)
                .unwrap();
            items.extend(page.items);
            match page.continuation {
                Some(next) => continuation = Some(next),
                None => break items,
            }
        }
    };
    let loaded = open(&files, &clock, true);
    assert!(from_persisted_index(&loaded));
    let replayed = open(&without_checkpoint(&files), &clock, true);
    assert!(!from_persisted_index(&replayed));
    let items = everything(&loaded);
    assert_eq!(items.len(), 140_000);
    assert_eq!(items, everything(&replayed));
    assert_eq!(loaded.stats().unwrap().items, 140_000);
}
