//! The persisted index (docs/design.md §3 "The persisted index"): a clean close saves the index,
//! the next open loads it and replays only the log written after it, and a file that is
//! damaged, truncated, another store's or of a log that compaction has moved on from is never
//! used. Every open here is compared with an open of the
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
    // A writer loads it, keeps it (it still describes the log up to its tail), and works on.
    let disk = SimStorage::with_files(files.clone());
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    assert!(from_persisted_index(&store));
    assert_eq!(store.stats().unwrap().log_bytes_replayed_at_open, 0);
    assert_eq!(dump(&store), expected);
    assert!(has_checkpoint(&disk));
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

/// After a crash the open loads the index the last clean close saved and replays only the log
/// written since (the writer's open, a put, a delete, a batch, a lease): the same content as a
/// replay of the whole log.
#[test]
fn after_a_crash_the_open_loads_the_last_saved_index_and_replays_only_the_rest() {
    let (files, _, clock) = closed_store(50, b"last");
    let disk = SimStorage::with_files(files);
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    store
        .put("alpha", b"acknowledged", b"yes", &WriteOptions::default())
        .unwrap();
    store
        .delete("alpha", b"key-00009", &WriteOptions::default())
        .unwrap();
    let mut batch = store.batch();
    batch.put("beta", b"batch-00", b"again", WriteOptions::default());
    batch.put("beta", b"batch-new", b"new", WriteOptions::default());
    batch.commit().unwrap();
    store
        .acquire_lease("alpha", b"key-00004", &LeaseRequest::seconds(60).unwrap())
        .unwrap();
    let expected = dump(&store);
    let crashed = disk.crash(&mut StdRng::seed_from_u64(1), CrashPolicy::DropAll);
    drop(store);
    let files = crashed.current_files();
    let store = open(&files, &clock, true);
    assert!(from_persisted_index(&store));
    let stats = store.stats().unwrap();
    assert!(
        stats.log_bytes_replayed_at_open > 0 && stats.log_bytes_replayed_at_open < stats.log_bytes,
        "replayed {} of {} log bytes",
        stats.log_bytes_replayed_at_open,
        stats.log_bytes
    );
    assert_eq!(dump(&store), expected);
    let replayed = open(&without_checkpoint(&files), &clock, true);
    assert!(!from_persisted_index(&replayed));
    assert_eq!(dump(&replayed), expected);
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

/// A file whose checksums hold but one of whose items does not decode (made here by
/// rewriting an item's kind and both checksums: damage does not do that): the open uses it,
/// since it restores shards only as they are needed; a lookup in that item's shard fails as
/// `Corruption` naming the file, and never reads as a missing key. A writer deletes the file,
/// and the next open replays the log.
#[test]
fn a_shard_of_the_persisted_index_that_does_not_decode_fails_its_lookups_and_is_dropped() {
    let (files, expected, clock) = closed_store(300, b"last");
    let key = b"key-00007";
    let mut forged = files.clone();
    let file = forged.get_mut(CHECKPOINT_FILE).unwrap();
    let kind_at = file
        .windows(key.len())
        .position(|bytes| bytes == key)
        .expect("the key is in the file")
        + key.len();
    file[kind_at] = 0;
    let body_crc = crc32fast::hash(&file[148..]);
    file[136..140].copy_from_slice(&body_crc.to_le_bytes());
    let header_crc = crc32fast::hash(&file[..144]);
    file[144..148].copy_from_slice(&header_crc.to_le_bytes());
    let fails_as_corruption = |store: &Store| match store.get("alpha", key, &ReadOptions::default())
    {
        Err(tenure::Error::Corruption { file, .. }) => assert!(file.ends_with(CHECKPOINT_FILE)),
        other => panic!("a key of the shard that did not decode: {other:?}"),
    };

    let store = open(&forged, &clock, true);
    fails_as_corruption(&store);
    // So does whatever reads every item.
    assert!(matches!(
        store.list("alpha", b"", 1_000, None, false),
        Err(tenure::Error::Corruption { .. })
    ));
    assert!(store.stats().is_err());
    drop(store);

    let disk = SimStorage::with_files(forged);
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    fails_as_corruption(&store);
    store.close().unwrap();
    assert!(
        !has_checkpoint(&disk),
        "the writer deletes a file it could not restore"
    );
    let store = open(&disk.current_files(), &clock, true);
    assert!(!from_persisted_index(&store));
    assert_eq!(dump(&store), expected);
}

/// Damage below the saved index's tail, which an open from it does not read: the check right
/// after the open finds it, and from then on every call fails with that `Corruption`, read-only
/// open or writer alike. The writer deletes the saved index, so the next open reads the whole
/// log and refuses, as an open before this change did at once.
#[test]
fn damage_below_the_persisted_index_fails_every_call_once_the_check_after_the_open_finds_it() {
    let (files, _, clock) = closed_store(300, b"last");
    // A value in the middle of the log: the saved index's fingerprint covers the log's first
    // and last 4 KiB, and damage there makes the open refuse the file and read everything.
    let mut damaged = files.clone();
    let needle = b"value ";
    let values: Vec<(String, usize)> = damaged
        .iter()
        .filter(|(name, _)| name.starts_with("segment-"))
        .flat_map(|(name, bytes)| {
            bytes
                .windows(needle.len())
                .enumerate()
                .filter(|(_, window)| window == needle)
                .map(|(at, _)| (name.clone(), at))
                .collect::<Vec<_>>()
        })
        .collect();
    let (segment, at) = values[values.len() / 2].clone();
    damaged.get_mut(&segment).unwrap()[at] ^= 0xFF;
    let fails_once_checked = |store: &Store| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match store.get("alpha", b"key-00020", &ReadOptions::default()) {
                Err(error) => {
                    assert_eq!(error.code(), tenure::ErrorCode::Corruption, "{error}");
                    break;
                }
                Ok(_) => {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the check never failed the store"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        let write = store.put("alpha", b"new", b"v", &WriteOptions::default());
        assert!(
            matches!(write, Err(tenure::Error::Corruption { .. })),
            "{write:?}"
        );
    };

    let store = open(&damaged, &clock, true);
    fails_once_checked(&store);
    drop(store);

    let disk = SimStorage::with_files(damaged);
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    fails_once_checked(&store);
    store.close().unwrap();
    assert!(!has_checkpoint(&disk), "the writer deletes the saved index");
    let refused = Store::open_with_storage(Arc::new(disk), options(&clock, false));
    let error = refused
        .err()
        .expect("the next open reads the whole log and refuses");
    assert_eq!(error.code(), tenure::ErrorCode::Corruption);
}

/// An open of a cleanly closed store writes nothing until something is written (an open to
/// read pays no sync): the first write syncs the superblock's new generation before its
/// record, so a power cut right after that acknowledged write keeps it.
#[test]
fn a_clean_open_writes_nothing_until_the_first_write_which_survives_a_power_cut() {
    let (files, _, clock) = closed_store(50, b"last");
    let disk = SimStorage::with_files(files.clone());
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    store
        .get("alpha", b"key-00001", &ReadOptions::default())
        .unwrap();
    assert_eq!(
        disk.current_files()["superblock"],
        files["superblock"],
        "an open that only reads writes no superblock"
    );
    store
        .put(
            "alpha",
            b"after-open",
            b"acknowledged",
            &WriteOptions::default(),
        )
        .unwrap();
    let crashed = disk.crash(&mut StdRng::seed_from_u64(7), CrashPolicy::DropAll);
    drop(store);
    let store = open(&crashed.current_files(), &clock, true);
    let item = store
        .get("alpha", b"after-open", &ReadOptions::default())
        .unwrap();
    assert_eq!(item.value.as_deref(), Some(&b"acknowledged"[..]));
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

/// An older persisted index of the same log still describes the log up to its tail, and loads
/// with the rest replayed; once compaction has removed a segment it names, it is refused.
#[test]
fn an_older_persisted_index_loads_until_compaction_removes_its_segments() {
    let (files, _, clock) = closed_store(40, b"last");
    let older = files[CHECKPOINT_FILE].clone();
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
    // The old file put back (a backup restored over a newer store, say).
    files.insert(CHECKPOINT_FILE.into(), older.clone());
    let store = open(&files, &clock, true);
    assert!(from_persisted_index(&store));
    assert!(store.stats().unwrap().log_bytes_replayed_at_open > 0);
    assert_eq!(dump(&store), expected);
    // Every item rewritten (but the leased and the locked one) and the store compacted: the
    // oldest segments go.
    let disk = SimStorage::with_files(files);
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    for round in 0..3 {
        for index in 3..40 {
            let key = format!("key-{index:05}");
            store
                .put(
                    "alpha",
                    key.as_bytes(),
                    format!("round {round}").as_bytes(),
                    &WriteOptions::default(),
                )
                .unwrap();
        }
        store.compact().unwrap();
    }
    store.close().unwrap();
    let mut files = disk.current_files();
    let expected = dump(&open(&without_checkpoint(&files), &clock, true));
    files.insert(CHECKPOINT_FILE.into(), older);
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

/// 140,000 items: gets right after the open, while the background thread is still restoring
/// shards (each get restores its own), then a listing of everything, read the same as a
/// replay.
#[test]
fn a_large_persisted_index_reads_as_the_replay_key_by_key_and_whole() {
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
    let replayed = open(&without_checkpoint(&files), &clock, true);
    assert!(!from_persisted_index(&replayed));
    let loaded = open(&files, &clock, true);
    for number in (0..140_000u32).step_by(997).chain([140_001]) {
        let key = number.to_be_bytes();
        let read = |store: &Store| store.get("many", &key, &ReadOptions::default());
        assert_eq!(
            format!("{:?}", read(&loaded)),
            format!("{:?}", read(&replayed))
        );
    }
    assert!(from_persisted_index(&loaded));
    let items = everything(&loaded);
    assert_eq!(items.len(), 140_000);
    assert_eq!(items, everything(&replayed));
    assert_eq!(loaded.stats().unwrap().items, 140_000);
}

/// Writers of every kind of write run on three threads while the main thread takes
/// checkpoints; after the last one more writes follow, then the power is cut (`sync`: what was
/// not synced is dropped) or the process dies (`buffered`: the page cache is kept). The open
/// loads the last checkpoint, replays only the log after it, and reads exactly as before the
/// crash and as a replay of the whole log.
#[test]
fn a_checkpoint_taken_while_writers_run_reads_as_the_replay_after_a_crash() {
    for (durability, policy) in [
        (Durability::Sync, CrashPolicy::DropAll),
        (Durability::Buffered, CrashPolicy::KeepAll),
    ] {
        let clock = ManualClock::new(START_MICROS);
        let disk = SimStorage::new();
        let store = Arc::new(
            Store::open_with_storage(
                Arc::new(disk.clone()),
                StoreOptions {
                    durability,
                    ..options(&clock, false)
                },
            )
            .unwrap(),
        );
        store
            .create_container("alpha", &Default::default())
            .unwrap();
        store.create_container("beta", &Default::default()).unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..3u64)
            .map(|writer| {
                let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
                std::thread::spawn(move || write_until_stopped(&store, &stop, writer))
            })
            .collect();
        let mut saved = 0;
        for _ in 0..12 {
            std::thread::sleep(Duration::from_millis(3));
            saved += usize::from(store.checkpoint().unwrap());
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let writes: u64 = writers
            .into_iter()
            .map(|writer| writer.join().unwrap())
            .sum();
        assert!(
            saved > 0 && writes > 100,
            "{saved} checkpoints, {writes} writes"
        );
        for index in 0..30u32 {
            store
                .put(
                    "beta",
                    &index.to_be_bytes(),
                    b"after the last checkpoint",
                    &WriteOptions::default(),
                )
                .unwrap();
        }
        let expected = dump(&store);
        let crashed = disk.crash(&mut StdRng::seed_from_u64(3), policy);
        drop(store);
        let files = crashed.current_files();
        let store = open(&files, &clock, true);
        let stats = store.stats().unwrap();
        assert!(from_persisted_index(&store), "{durability:?}");
        assert!(
            stats.log_bytes_replayed_at_open > 0
                && stats.log_bytes_replayed_at_open < stats.log_bytes,
            "{durability:?}: replayed {} of {} log bytes",
            stats.log_bytes_replayed_at_open,
            stats.log_bytes
        );
        assert_eq!(dump(&store), expected, "{durability:?}");
        let replayed = open(&without_checkpoint(&files), &clock, true);
        assert_eq!(dump(&replayed), expected, "{durability:?}");
    }
}

/// One writer's share of the writes above: plain puts, conditional replacements, deletes,
/// batches, properties, leases, and now and then a container's metadata. Returns how many
/// writes it made.
fn write_until_stopped(store: &Store, stop: &std::sync::atomic::AtomicBool, writer: u64) -> u64 {
    let mut writes = 0u64;
    let mut rng = StdRng::seed_from_u64(writer);
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        use rand::Rng;
        let key = format!("key-{:03}", rng.gen_range(0..150));
        let value = format!("writer {writer} write {writes}");
        let outcome = match rng.gen_range(0..10) {
            0..=3 => store
                .put(
                    "alpha",
                    key.as_bytes(),
                    value.as_bytes(),
                    &WriteOptions::default(),
                )
                .map(drop),
            4 => match store.get("alpha", key.as_bytes(), &ReadOptions::default()) {
                Ok(item) => store
                    .put(
                        "alpha",
                        key.as_bytes(),
                        value.as_bytes(),
                        &WriteOptions::with_conditions(Conditions::if_match(item.etag)),
                    )
                    .map(drop),
                Err(error) => Err(error),
            },
            5 => store.delete("alpha", key.as_bytes(), &WriteOptions::default()),
            6 => {
                let mut batch = store.batch();
                for offset in 0..3 {
                    let key = format!("batch-{writer}-{:03}", (writes + offset) % 40);
                    batch.put(
                        "beta",
                        key.as_bytes(),
                        value.as_bytes(),
                        WriteOptions::default(),
                    );
                }
                batch.commit().map(drop)
            }
            7 => store
                .put(
                    "beta",
                    key.as_bytes(),
                    value.as_bytes(),
                    &WriteOptions {
                        content_type: Some("text/plain".into()),
                        metadata: vec![("writer".into(), writer.to_string())],
                        ttl: Ttl::seconds(600).unwrap(),
                        ..WriteOptions::default()
                    },
                )
                .map(drop),
            8 => store
                .acquire_lease("beta", key.as_bytes(), &LeaseRequest::seconds(60).unwrap())
                .map(drop),
            _ => store
                .set_container_metadata(
                    "alpha",
                    &[("last".into(), value.clone())],
                    &Default::default(),
                )
                .map(drop),
        };
        // Rejections (a lease held, an ETag moved, an item gone) are outcomes, not failures.
        if let Err(error) = outcome {
            assert!(
                matches!(error, tenure::Error::Rejected { .. }),
                "writer {writer}: {error}"
            );
        }
        writes += 1;
    }
    writes
}

/// Each step of a running store's checkpoint fails in turn (each write, allocation and sync),
/// then a write follows and the power is cut, dropping, keeping or tearing what was not
/// synced. The next open is always correct; and a checkpoint that returned having saved is
/// loaded after every kind of cut (it is synced before it replaces the last), with only the
/// write after it replayed.
#[test]
fn a_crash_at_every_step_of_a_running_checkpoint_leaves_a_store_that_opens_bounded() {
    let build = || {
        let clock = ManualClock::new(START_MICROS);
        let disk = SimStorage::new();
        let store = fill(&disk, &clock, 40, b"last");
        (clock, disk, store)
    };
    let (_, disk, store) = build();
    disk.set_faults(Faults::default());
    assert!(store.checkpoint().unwrap());
    let (syncs, allocations, writes) = disk.call_counts();
    assert!(
        writes >= 2 && syncs >= 1 && allocations >= 1,
        "a checkpoint writes, allocates and syncs"
    );
    // No step failing first: the checkpoint is saved.
    let plans: Vec<Option<(Step, u64)>> = std::iter::once(None)
        .chain((1..=writes).map(|write| Some((Step::Write, write))))
        .chain((1..=syncs).map(|sync| Some((Step::Sync, sync))))
        .chain((1..=allocations).map(|allocation| Some((Step::Allocation, allocation))))
        .collect();
    let mut rng = StdRng::seed_from_u64(9);
    let mut saved_and_loaded = 0;
    for plan in plans {
        for policy in [
            CrashPolicy::DropAll,
            CrashPolicy::KeepAll,
            CrashPolicy::Random,
        ] {
            let (clock, disk, store) = build();
            disk.set_faults(match plan {
                None => Faults::default(),
                Some((Step::Write, number)) => Faults {
                    failing_writes: vec![number],
                    ..Faults::default()
                },
                Some((Step::Sync, number)) => Faults {
                    failing_syncs: vec![number],
                    ..Faults::default()
                },
                Some((Step::Allocation, number)) => Faults {
                    failing_allocations: vec![number],
                    ..Faults::default()
                },
            });
            let saved = store.checkpoint();
            disk.set_faults(Faults::default());
            store
                .put(
                    "alpha",
                    b"after",
                    b"the checkpoint",
                    &WriteOptions::default(),
                )
                .unwrap();
            let expected = dump(&store);
            let crashed = disk.crash(&mut rng, policy);
            drop(store);
            let step = format!("{plan:?} fails ({saved:?}), then {policy:?}");
            let store = Store::open_with_storage(Arc::new(crashed), options(&clock, false))
                .unwrap_or_else(|error| panic!("{step}: {error}"));
            assert_eq!(dump(&store), expected, "{step}");
            if matches!(saved, Ok(true)) {
                let stats = store.stats().unwrap();
                assert!(from_persisted_index(&store), "{step}");
                assert!(
                    stats.log_bytes_replayed_at_open > 0 && stats.log_bytes_replayed_at_open < 4096,
                    "{step}: replayed {} bytes",
                    stats.log_bytes_replayed_at_open
                );
                saved_and_loaded += 1;
            }
        }
    }
    assert!(saved_and_loaded >= 3, "the plan without a failure saves it");
}

/// The background thread takes a checkpoint once the log since the last (here: since the
/// start) passes 64 MiB, without any call: the open after a crash then replays only what
/// followed it.
#[test]
fn the_background_thread_takes_a_checkpoint_once_the_log_has_grown() {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(
        Arc::new(disk.clone()),
        StoreOptions {
            durability: Durability::Buffered,
            segment_size_bytes: 8 << 20,
            background_compaction_interval: Some(Duration::from_millis(10)),
            ..options(&clock, false)
        },
    )
    .unwrap();
    store.create_container("big", &Default::default()).unwrap();
    let value = vec![7u8; 16 << 10];
    let put_keys = |keys: std::ops::Range<u32>| {
        for key in keys {
            store
                .put("big", &key.to_be_bytes(), &value, &WriteOptions::default())
                .unwrap();
        }
    };
    // 60 MiB: not due yet.
    put_keys(0..3_840);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!has_checkpoint(&disk), "a checkpoint before 64 MiB of log");
    // Past 64 MiB: due at the next look.
    put_keys(3_840..4_400);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !has_checkpoint(&disk) {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint within 30 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    store
        .put("big", b"after", b"the checkpoint", &WriteOptions::default())
        .unwrap();
    // (Not `dump`: printing 70 MB of values twice would take most of the test's time.)
    let summary = |store: &Store| {
        let stats = store.stats().unwrap();
        let read = |key: &[u8]| store.get("big", key, &ReadOptions::default()).unwrap();
        (
            store.version(),
            stats.items,
            read(&0u32.to_be_bytes()),
            read(&4_399u32.to_be_bytes()),
            read(b"after"),
        )
    };
    let expected = summary(&store);
    let crashed = disk.crash(&mut StdRng::seed_from_u64(4), CrashPolicy::KeepAll);
    drop(store);
    let files = crashed.current_files();
    let store = open(&files, &clock, true);
    let stats = store.stats().unwrap();
    assert!(from_persisted_index(&store));
    assert!(
        stats.log_bytes_replayed_at_open < stats.log_bytes / 4,
        "replayed {} of {} log bytes",
        stats.log_bytes_replayed_at_open,
        stats.log_bytes
    );
    assert_eq!(summary(&store), expected);
}

/// A new store on a new disk, with one container, "c".
fn new_store_with_container_c() -> (ManualClock, SimStorage, Store) {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    (clock, disk, store)
}

fn has_checkpoint(disk: &SimStorage) -> bool {
    disk.file_names().iter().any(|name| name == CHECKPOINT_FILE)
}

/// The item count a persisted index's header gives (`index/checkpoint/mod.rs`: items u64 at 80).
fn saved_items(files: &Files) -> u64 {
    let header = &files[CHECKPOINT_FILE];
    u64::from_le_bytes(header[80..88].try_into().unwrap())
}

/// A deleted key is left out of the saved index (the log's compaction drops its record too):
/// the file holds the live items, and the open reads as a replay, also once the deleted keys
/// are written again after it.
#[test]
fn a_saved_index_leaves_out_deleted_keys_and_reads_as_the_replay() {
    let (clock, disk, store) = new_store_with_container_c();
    let key = |index: u32| format!("key-{index:05}").into_bytes();
    for index in 0..200 {
        store
            .put("c", &key(index), b"value", &WriteOptions::default())
            .unwrap();
    }
    for index in (0..200).step_by(2) {
        store
            .delete("c", &key(index), &WriteOptions::default())
            .unwrap();
    }
    assert!(store.checkpoint().unwrap());
    assert_eq!(saved_items(&disk.current_files()), 100);
    // Written again after the checkpoint: the replay after it brings them back.
    for index in (0..20).step_by(2) {
        store
            .put("c", &key(index), b"again", &WriteOptions::default())
            .unwrap();
    }
    store.compact().unwrap();
    let expected = dump(&store);
    let crashed = disk.crash(&mut StdRng::seed_from_u64(5), CrashPolicy::DropAll);
    drop(store);
    let files = crashed.current_files();
    for files in [files.clone(), without_checkpoint(&files)] {
        let store = open(&files, &clock, true);
        assert_eq!(dump(&store), expected);
    }
    let store = open(&files, &clock, false);
    store.close().unwrap();
}

/// Once compaction removes a segment the saved index names, the file is deleted at once: no
/// open could use it, and it would take as much disk as the index. A writer's open deletes a
/// file it could not use the same way.
#[test]
fn a_saved_index_that_no_longer_describes_the_log_is_deleted() {
    let (clock, disk, store) = new_store_with_container_c();
    for round in 0..3 {
        for index in 0..100u32 {
            store
                .put(
                    "c",
                    &index.to_be_bytes(),
                    format!("round {round}").as_bytes(),
                    &WriteOptions::default(),
                )
                .unwrap();
        }
        if round == 0 {
            assert!(store.checkpoint().unwrap());
            assert!(has_checkpoint(&disk));
        }
    }
    let report = store.compact().unwrap();
    assert!(report.segments_removed > 0);
    assert!(!has_checkpoint(&disk), "a stale saved index left on disk");
    let expected = dump(&store);
    let crashed = disk.crash(&mut StdRng::seed_from_u64(6), CrashPolicy::DropAll);
    drop(store);
    let files = crashed.current_files();
    let store = open(&files, &clock, true);
    assert!(!from_persisted_index(&store));
    assert_eq!(dump(&store), expected);
    drop(store);
    // A damaged file: a read-only open leaves it, a writer's open deletes it.
    let (mut files, expected, clock) = closed_store(12, b"last");
    files.get_mut(CHECKPOINT_FILE).unwrap()[100] ^= 0xFF;
    let store = open(&files, &clock, true);
    assert!(!from_persisted_index(&store));
    drop(store);
    let disk = SimStorage::with_files(files);
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock, false)).unwrap();
    assert!(!from_persisted_index(&store));
    assert!(
        !has_checkpoint(&disk),
        "an unusable saved index left on disk"
    );
    assert_eq!(dump(&store), expected);
}
