//! Compaction: space comes back, nothing live changes (values, ETags, properties, TTLs),
//! across reopen and crash, with snapshots and concurrent writers.

mod common;

use std::sync::Arc;

use common::{options, START_MICROS};
use tenure::{
    Conditions, ContainerOptions, Durability, ErrorCode, ManualClock, ReadOptions, Store,
    StoreOptions, Ttl, WriteOptions,
};
use tenure_testkit::{CrashPolicy, SimStorage};

fn small_segments(clock: &ManualClock) -> StoreOptions {
    StoreOptions {
        segment_size_bytes: 64 << 10,
        ..options(clock)
    }
}

fn value(key: u32, round: u32) -> Vec<u8> {
    format!("value of {key} in round {round}")
        .repeat(5)
        .into_bytes()
}

#[test]
fn churn_then_compact_returns_space_and_keeps_every_live_item_with_its_etag() {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(Arc::new(disk.clone()), small_segments(&clock)).unwrap();
    store
        .create_container(
            "c",
            &ContainerOptions {
                metadata: vec![("k".into(), "v".into())],
                default_ttl_seconds: None,
            },
        )
        .unwrap();
    let keys = 2000u32;
    for round in 0..3 {
        for key in 0..keys {
            store
                .put(
                    "c",
                    &key.to_be_bytes(),
                    &value(key, round),
                    &WriteOptions::default(),
                )
                .unwrap();
        }
    }
    for key in (0..keys).step_by(2) {
        store
            .delete("c", &key.to_be_bytes(), &WriteOptions::default())
            .unwrap();
    }
    let short = WriteOptions {
        ttl: Ttl::Seconds(5),
        ..WriteOptions::default()
    };
    store.put("c", b"expiring", b"soon gone", &short).unwrap();
    let before: Vec<_> = (1..keys)
        .step_by(2)
        .map(|key| {
            store
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
        })
        .collect();
    let bytes_before = store.log_bytes();
    clock.advance_seconds(10);
    let report = store.compact().unwrap();
    let bytes_after = store.log_bytes();
    assert!(report.segments_removed > 0, "{report:?}");
    assert!(
        bytes_after * 2 < bytes_before,
        "before {bytes_before}, after {bytes_after}, {report:?}"
    );
    let live_bytes: usize = before
        .iter()
        .map(|item| item.value.as_ref().unwrap().len() + 4)
        .sum();
    eprintln!("churn: {bytes_before} B before, {bytes_after} B after compaction, {live_bytes} B live ({report:?})");
    let check = |store: &Store| {
        for item in &before {
            let now = store.get("c", &item.key, &ReadOptions::default()).unwrap();
            assert_eq!(&now, item, "an item changed in compaction");
        }
        for key in (0..keys).step_by(2) {
            assert_eq!(
                store
                    .get("c", &key.to_be_bytes(), &ReadOptions::default())
                    .unwrap_err()
                    .code(),
                ErrorCode::NotFound
            );
        }
        assert_eq!(
            store
                .get("c", b"expiring", &ReadOptions::default())
                .unwrap_err()
                .code(),
            ErrorCode::NotFound
        );
        assert_eq!(
            store.container_properties("c").unwrap().metadata,
            vec![("k".to_owned(), "v".to_owned())]
        );
    };
    check(&store);
    // Writes with the ETags read before compaction still match.
    let first = &before[0];
    store
        .put(
            "c",
            &first.key,
            b"after",
            &WriteOptions::with_conditions(Conditions::if_match(first.etag)),
        )
        .unwrap();
    store
        .put(
            "c",
            &first.key,
            &first.value.clone().unwrap(),
            &WriteOptions::default(),
        )
        .unwrap();
    let before: Vec<_> = (1..keys)
        .step_by(2)
        .map(|key| {
            store
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
        })
        .collect();
    store.close().unwrap();
    let reopened =
        Store::open_with_storage(Arc::new(disk.clone()), small_segments(&clock)).unwrap();
    for item in &before {
        assert_eq!(
            &reopened
                .get("c", &item.key, &ReadOptions::default())
                .unwrap(),
            item,
            "after reopen"
        );
    }
    // And again: compacting the compacted log, then a crash.
    reopened
        .put("c", b"late", b"x", &WriteOptions::default())
        .unwrap();
    reopened.compact().unwrap();
    let crashed = disk.crash(&mut rand::thread_rng(), CrashPolicy::Random);
    reopened.log_bytes();
    let mut after_crash_options = small_segments(&clock);
    after_crash_options.durability = Durability::Buffered;
    drop(reopened);
    let recovered = Store::open_with_storage(Arc::new(crashed), after_crash_options).unwrap();
    for item in &before {
        assert_eq!(
            &recovered
                .get("c", &item.key, &ReadOptions::default())
                .unwrap(),
            item,
            "after crash"
        );
    }
}

#[test]
fn a_container_created_in_a_compacted_segment_keeps_its_later_items_across_reopen() {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(Arc::new(disk.clone()), small_segments(&clock)).unwrap();
    store
        .create_container("early", &ContainerOptions::default())
        .unwrap();
    store
        .create_container("gone", &ContainerOptions::default())
        .unwrap();
    // Fill several segments, with items of both containers spread over them.
    for key in 0..3000u32 {
        let container = if key % 3 == 0 { "gone" } else { "early" };
        store
            .put(
                container,
                &key.to_be_bytes(),
                &value(key, 0),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    store.delete_container("gone", &Default::default()).unwrap();
    // Compact only the oldest segments: a later segment still holds items of "early" that
    // come before the relocated container state in the log.
    store.compact().unwrap();
    store.close().unwrap();
    let store = Store::open_with_storage(Arc::new(disk), small_segments(&clock)).unwrap();
    for key in 0..3000u32 {
        let got = store.get("early", &key.to_be_bytes(), &ReadOptions::default());
        if key % 3 == 0 {
            assert_eq!(got.unwrap_err().code(), ErrorCode::NotFound);
        } else {
            assert_eq!(got.unwrap().value.unwrap(), value(key, 0));
        }
    }
    assert_eq!(store.list_containers().unwrap(), vec!["early".to_owned()]);
}

#[test]
fn an_open_snapshot_defers_removal_and_keeps_reading_old_versions() {
    let clock = ManualClock::new(START_MICROS);
    let store =
        Store::open_with_storage(Arc::new(SimStorage::new()), small_segments(&clock)).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for key in 0..1000u32 {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &value(key, 0),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let snapshot = store.snapshot().unwrap();
    for key in 0..1000u32 {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &value(key, 1),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let report = store.compact().unwrap();
    assert!(report.deferred_by_snapshot, "{report:?}");
    assert_eq!(report.segments_removed, 0);
    for key in (0..1000u32).step_by(37) {
        assert_eq!(
            snapshot
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
                .value
                .unwrap(),
            value(key, 0)
        );
    }
    drop(snapshot);
    let report = store.compact().unwrap();
    assert!(report.segments_removed > 0, "{report:?}");
    for key in 0..1000u32 {
        assert_eq!(
            store
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
                .value
                .unwrap(),
            value(key, 1)
        );
    }
}

#[test]
fn compaction_while_writers_and_readers_run_loses_nothing() {
    let clock = ManualClock::new(START_MICROS);
    let store = Arc::new(
        Store::open_with_storage(Arc::new(SimStorage::new()), small_segments(&clock)).unwrap(),
    );
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let writers: Vec<_> = (0..2u32)
        .map(|thread| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for round in 0..20u32 {
                    for key in 0..300u32 {
                        let key = key * 2 + thread;
                        store
                            .put(
                                "c",
                                &key.to_be_bytes(),
                                &value(key, round),
                                &WriteOptions::default(),
                            )
                            .unwrap();
                        let item = store
                            .get("c", &key.to_be_bytes(), &ReadOptions::default())
                            .unwrap();
                        assert_eq!(item.value.unwrap(), value(key, round));
                    }
                }
            })
        })
        .collect();
    let mut removed = 0;
    while writers.iter().any(|writer| !writer.is_finished()) {
        removed += store.compact().unwrap().segments_removed;
    }
    for writer in writers {
        writer.join().unwrap();
    }
    removed += store.compact().unwrap().segments_removed;
    assert!(removed > 0);
    for key in 0..600u32 {
        assert_eq!(
            store
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
                .value
                .unwrap(),
            value(key, 19)
        );
    }
}

#[test]
fn background_compaction_reclaims_space_without_being_asked() {
    let clock = ManualClock::new(START_MICROS);
    let options = StoreOptions {
        background_compaction_interval: Some(std::time::Duration::from_millis(5)),
        background_compaction_sealed_segments: 2,
        ..small_segments(&clock)
    };
    let store = Store::open_with_storage(Arc::new(SimStorage::new()), options).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let mut peak = 0;
    for round in 0..10u32 {
        for key in 0..200u32 {
            store
                .put(
                    "c",
                    &key.to_be_bytes(),
                    &value(key, round),
                    &WriteOptions::default(),
                )
                .unwrap();
        }
        peak = peak.max(store.log_bytes());
    }
    store.flush().unwrap();
    // The compactor runs on its own schedule: wait for it (bounded), never for a clock.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while store.log_bytes() * 2 > peak && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        store.log_bytes() * 2 <= peak,
        "peak {peak} B, now {} B",
        store.log_bytes()
    );
    for key in 0..200u32 {
        assert_eq!(
            store
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
                .value
                .unwrap(),
            value(key, 9)
        );
    }
    store.close().unwrap();
}

#[test]
fn a_value_borrowed_through_a_snapshot_stays_valid_while_writers_and_compaction_run() {
    let clock = ManualClock::new(START_MICROS);
    let store =
        Store::open_with_storage(Arc::new(SimStorage::new()), small_segments(&clock)).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for key in 0..500u32 {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &value(key, 0),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let snapshot = store.snapshot().unwrap();
    let borrowed: Vec<_> = (0..500u32)
        .step_by(50)
        .map(|key| {
            snapshot
                .get_borrowed("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
        })
        .collect();
    for round in 1..4u32 {
        for key in 0..500u32 {
            store
                .put(
                    "c",
                    &key.to_be_bytes(),
                    &value(key, round),
                    &WriteOptions::default(),
                )
                .unwrap();
        }
    }
    let report = store.compact().unwrap();
    assert!(report.deferred_by_snapshot, "{report:?}");
    for (borrowed, key) in borrowed.iter().zip((0..500u32).step_by(50)) {
        assert_eq!(
            borrowed.value,
            &value(key, 0)[..],
            "borrowed bytes unchanged"
        );
        assert_eq!(borrowed.item.value, None);
        assert_eq!(
            snapshot
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
                .value
                .unwrap(),
            borrowed.value
        );
    }
    drop(borrowed);
    drop(snapshot);
    assert!(store.compact().unwrap().segments_removed > 0);
}

/// Found by the I/O-fault campaign (`torture --campaign io-faults --seed 446`): a failed
/// fdatasync of the superblock while compaction removed a segment returned `Io` but left the
/// store writable. Every failed sync during a compaction must poison the store (docs/spec.md §11).
#[test]
fn a_failed_sync_during_compaction_poisons_the_store() {
    let scenario = |faults: tenure_testkit::Faults| {
        let clock = ManualClock::new(START_MICROS);
        let disk = SimStorage::new();
        let options = StoreOptions {
            segment_size_bytes: 4096,
            durability: Durability::Sync,
            ..options(&clock)
        };
        let store = Store::open_with_storage(Arc::new(disk.clone()), options).unwrap();
        store.create_container("c", &Default::default()).unwrap();
        for round in 0..4u32 {
            for key in 0..8u32 {
                store
                    .put(
                        "c",
                        &key.to_be_bytes(),
                        &[round as u8; 300],
                        &WriteOptions::default(),
                    )
                    .unwrap();
            }
        }
        disk.set_faults(faults);
        let compacted = store.compact();
        (store, disk, compacted)
    };
    // The store stays open while the syncs are counted: its close syncs too.
    let (_store, disk, compacted) = scenario(Default::default());
    let report = compacted.unwrap();
    assert!(
        report.segments_removed > 0,
        "the scenario must remove segments"
    );
    let syncs = disk.sync_count();
    assert!(syncs > 0);
    let mut failed = 0;
    for n in 1..=syncs {
        let (store, _, compacted) = scenario(tenure_testkit::Faults {
            failing_syncs: vec![n],
            ..Default::default()
        });
        // The failed sync may be the compaction's own or a log flush it waited for; either
        // way the store must now refuse writes.
        if let Err(error) = compacted {
            assert_eq!(error.code(), ErrorCode::Io, "sync {n}: {error}");
        }
        let after = store.put("c", b"after", b"x", &WriteOptions::default());
        assert_eq!(
            after.map_err(|error| error.code()).err(),
            Some(ErrorCode::Io),
            "sync {n}: the store still accepts writes after a failed sync"
        );
        failed += 1;
    }
    assert_eq!(failed, syncs);
}

/// Lease actions carry an item's value location forward and prune the versions below them.
/// Compaction used to look an item up at the version it read when it began; an item whose
/// every older version a lease action had pruned meanwhile was found nowhere, was not copied,
/// and kept pointing into the removed segment: its value was gone, also after a reopen.
#[test]
fn lease_actions_racing_compaction_never_leave_a_value_in_a_removed_segment() {
    const KEYS: u32 = 200;
    let clock = ManualClock::new(START_MICROS);
    let storage = Arc::new(SimStorage::new());
    let open = || {
        Store::open_with_storage(
            Arc::clone(&storage) as Arc<dyn tenure::internals::Storage>,
            StoreOptions {
                durability: Durability::Buffered,
                ..small_segments(&clock)
            },
        )
        .unwrap()
    };
    let store = open();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for key in 0..KEYS {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &value(key, 0),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let request = tenure::LeaseRequest::seconds(15).unwrap();
    // The lease actions go on until compaction has removed segments under them (on a loaded
    // machine the compacting thread may get no CPU for the first 40,000), within a bound.
    let compaction_removed = std::sync::atomic::AtomicBool::new(false);
    let removed = std::thread::scope(|scope| {
        let leases = scope.spawn(|| {
            for action in 0..2_000_000u32 {
                if action >= 40_000 && compaction_removed.load(std::sync::atomic::Ordering::Acquire)
                {
                    break;
                }
                let key = (action % KEYS).to_be_bytes();
                let lease = store.acquire_lease("c", &key, &request).unwrap();
                store.release_lease("c", &key, lease.id).unwrap();
            }
        });
        let mut removed = 0;
        while !leases.is_finished() {
            removed += store.compact().unwrap().segments_removed;
            if removed > 0 {
                compaction_removed.store(true, std::sync::atomic::Ordering::Release);
            }
        }
        leases.join().unwrap();
        removed
    });
    assert!(removed > 0, "compaction must have removed segments");
    let read_all = |store: &Store| {
        for key in 0..KEYS {
            let item = store
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap_or_else(|error| panic!("key {key}: {error}"));
            assert_eq!(item.value.unwrap(), value(key, 0), "key {key}");
        }
    };
    read_all(&store);
    store.close().unwrap();
    read_all(&open());
}

/// Bytes of the store's segment files as the file system sees them.
fn segment_file_bytes(directory: &std::path::Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for entry in std::fs::read_dir(directory).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name().to_string_lossy().starts_with("segment-") {
            files += 1;
            bytes += entry.metadata().unwrap().len();
        }
    }
    (files, bytes)
}

#[test]
fn compact_rewrites_the_tail_segment_too_and_gives_the_disk_back_before_it_returns() {
    let clock = ManualClock::new(START_MICROS);
    let directory = tenure_testkit::TempDir::new("compact-disk");
    let segment_bytes = 64u64 << 10;
    let options = || StoreOptions {
        background_compaction_interval: None,
        ..small_segments(&clock)
    };
    let store = Store::open(directory.path(), options()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let keys = 400u32;
    for round in 0..4 {
        for key in 0..keys {
            let value = value(key, round);
            store
                .put("c", &key.to_be_bytes(), &value, &WriteOptions::default())
                .unwrap();
        }
    }
    for key in (0..keys).step_by(2) {
        store
            .delete("c", &key.to_be_bytes(), &WriteOptions::default())
            .unwrap();
    }
    let live: Vec<_> = (1..keys)
        .step_by(2)
        .map(|key| {
            store
                .get("c", &key.to_be_bytes(), &ReadOptions::default())
                .unwrap()
        })
        .collect();
    let live_bytes: u64 = live
        .iter()
        .map(|item| (item.key.len() + item.value.as_ref().unwrap().len()) as u64)
        .sum();
    let (files_before, _) = segment_file_bytes(directory.path());
    assert!(files_before > 4, "the churn fills several segments");

    let report = store.compact().unwrap();
    // Every live item was copied forward, the tail segment's too.
    assert_eq!(report.items_relocated, live.len() as u64, "{report:?}");
    let (files_after, bytes_after) = segment_file_bytes(directory.path());
    assert_eq!(
        files_after as u64,
        store.log_bytes() / segment_bytes,
        "removed segments' files are gone when compact returns"
    );
    // Only the live data and its record overhead remain, in as few segments as hold it.
    let needed_segments = (live_bytes * 3 / 2).div_ceil(segment_bytes) + 1;
    assert!(
        files_after as u64 <= needed_segments,
        "{files_after} segment files ({bytes_after} B) for {live_bytes} B of live data"
    );

    // Nothing written since: a second compact has nothing to rewrite.
    let again = store.compact().unwrap();
    assert_eq!(
        (again.items_relocated, again.segments_removed),
        (0, 0),
        "{again:?}"
    );
    for item in &live {
        let now = store.get("c", &item.key, &ReadOptions::default()).unwrap();
        assert_eq!(&now, item);
    }
    store.close().unwrap();
    let reopened = Store::open(directory.path(), options()).unwrap();
    for item in &live {
        let now = reopened
            .get("c", &item.key, &ReadOptions::default())
            .unwrap();
        assert_eq!(&now, item, "after reopen");
    }
    // (A segment prepared ahead of the tail, still empty, is dropped at open.)
    assert!(segment_file_bytes(directory.path()).0 <= files_after);
}

/// Snapshots that come and go while compaction runs (a busy store's readers) do not keep
/// segments forever: one opened after the copies were swapped in reads only the copies, so
/// compaction waits briefly for the older ones and removes the segments. Before, any open
/// snapshot deferred the removal, so a store whose readers always had one open never gave
/// space back. The snapshots read exactly their versions throughout.
#[test]
fn a_stream_of_short_snapshots_does_not_keep_segments_forever() {
    let clock = ManualClock::new(START_MICROS);
    let store =
        Store::open_with_storage(Arc::new(SimStorage::new()), small_segments(&clock)).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for round in 0..3u32 {
        for key in 0..1000u32 {
            let value = value(key, round);
            store
                .put("c", &key.to_be_bytes(), &value, &WriteOptions::default())
                .unwrap();
        }
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let snapshots_taken = std::sync::atomic::AtomicU64::new(0);
    let report = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut snapshots = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                let snapshot = store.snapshot().unwrap();
                let key = (snapshots % 1000) as u32;
                let item = snapshot
                    .get("c", &key.to_be_bytes(), &ReadOptions::default())
                    .unwrap();
                assert_eq!(item.value.unwrap(), value(key, 2));
                snapshots += 1;
                snapshots_taken.store(snapshots, std::sync::atomic::Ordering::Release);
            }
            snapshots
        });
        // The reader is under way before compaction starts: on a loaded machine a compaction
        // of this small store could otherwise finish before the reader's first snapshot.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while snapshots_taken.load(std::sync::atomic::Ordering::Acquire) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the reader never started"
            );
            std::thread::yield_now();
        }
        let report = store.compact().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Release);
        assert!(reader.join().unwrap() > 0);
        report
    });
    assert!(report.segments_removed > 0, "{report:?}");
    assert!(!report.deferred_by_snapshot, "{report:?}");
    for key in 0..1000u32 {
        let item = store
            .get("c", &key.to_be_bytes(), &ReadOptions::default())
            .unwrap();
        assert_eq!(item.value.unwrap(), value(key, 2));
    }
}
