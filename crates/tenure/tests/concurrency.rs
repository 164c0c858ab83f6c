//! Concurrency: compare-and-swap races, the update() retry loop, and snapshot isolation of
//! batches (docs/spec.md §3 step 6, §8, §9).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use common::store;
use tenure::{Conditions, ErrorCode, ReadOptions, WriteOptions};

#[test]
fn racing_writers_with_the_same_etag_exactly_one_wins_each_round() {
    let (store, _, _) = store();
    let store = Arc::new(store);
    let threads = 4;
    for round in 0..200u32 {
        let etag = store
            .put("c", b"hot", &round.to_le_bytes(), &WriteOptions::default())
            .unwrap();
        let barrier = Arc::new(Barrier::new(threads));
        let winners = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let (store, barrier, winners) = (
                    Arc::clone(&store),
                    Arc::clone(&barrier),
                    Arc::clone(&winners),
                );
                std::thread::spawn(move || {
                    barrier.wait();
                    let options = WriteOptions::with_conditions(Conditions::if_match(etag));
                    match store.put("c", b"hot", &[thread as u8], &options) {
                        Ok(_) => {
                            winners.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(error) => assert_eq!(error.code(), ErrorCode::ConditionNotMet),
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(winners.load(Ordering::SeqCst), 1, "round {round}");
    }
}

#[test]
fn four_threads_of_ten_thousand_update_increments_end_at_forty_thousand() {
    let (store, _, _) = store();
    store
        .put(
            "c",
            b"counter",
            &0u64.to_le_bytes(),
            &WriteOptions::default(),
        )
        .unwrap();
    let store = Arc::new(store);
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    store
                        .update("c", b"counter", 10_000, |bytes| {
                            let count = u64::from_le_bytes(bytes.try_into().unwrap());
                            (count + 1).to_le_bytes().to_vec()
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let value = store
        .get("c", b"counter", &ReadOptions::default())
        .unwrap()
        .value
        .unwrap();
    assert_eq!(u64::from_le_bytes(value.try_into().unwrap()), 40_000);
}

#[test]
fn bank_transfers_in_batches_keep_the_total_constant_in_every_snapshot() {
    let (store, _, _) = store();
    const ACCOUNTS: u64 = 8;
    const INITIAL: u64 = 1000;
    for account in 0..ACCOUNTS {
        store
            .put(
                "c",
                &account.to_be_bytes(),
                &INITIAL.to_le_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let store = Arc::new(store);
    // Writers go on until the checker has taken this many snapshots while they ran: on 2 CPUs
    // they could otherwise finish their transfers before it took one.
    const SNAPSHOTS_WHILE_WRITING: u64 = 100;
    let snapshots_checked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let read_balance =
        |item: tenure::Item| u64::from_le_bytes(item.value.unwrap().try_into().unwrap());
    let writers: Vec<_> = (0..2u64)
        .map(|thread| {
            let store = Arc::clone(&store);
            let snapshots_checked = Arc::clone(&snapshots_checked);
            std::thread::spawn(move || {
                let mut transfers = 0;
                let mut seed = thread + 1;
                while transfers < 1500
                    || snapshots_checked.load(std::sync::atomic::Ordering::Relaxed)
                        < SNAPSHOTS_WHILE_WRITING
                {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let from = (seed >> 33) % ACCOUNTS;
                    let to = (seed >> 40) % ACCOUNTS;
                    if from == to {
                        continue;
                    }
                    let source = store
                        .get("c", &from.to_be_bytes(), &ReadOptions::default())
                        .unwrap();
                    let target = store
                        .get("c", &to.to_be_bytes(), &ReadOptions::default())
                        .unwrap();
                    let (source_balance, target_balance) =
                        (read_balance(source.clone()), read_balance(target.clone()));
                    let amount = (seed % 7).min(source_balance);
                    let mut batch = store.batch();
                    batch
                        .replace(
                            "c",
                            &from.to_be_bytes(),
                            &(source_balance - amount).to_le_bytes(),
                            WriteOptions::with_conditions(Conditions::if_match(source.etag)),
                        )
                        .replace(
                            "c",
                            &to.to_be_bytes(),
                            &(target_balance + amount).to_le_bytes(),
                            WriteOptions::with_conditions(Conditions::if_match(target.etag)),
                        );
                    match batch.commit() {
                        Ok(_) => transfers += 1,
                        Err(error) => {
                            assert_eq!(error.code(), ErrorCode::ConditionNotMet, "{error}")
                        }
                    }
                }
            })
        })
        .collect();
    while writers.iter().any(|writer| !writer.is_finished()) {
        let snapshot = store.snapshot().unwrap();
        let total: u64 = (0..ACCOUNTS)
            .map(|account| {
                read_balance(
                    snapshot
                        .get("c", &account.to_be_bytes(), &ReadOptions::default())
                        .unwrap(),
                )
            })
            .sum();
        assert_eq!(total, ACCOUNTS * INITIAL, "a snapshot saw half a transfer");
        let listed: u64 = snapshot
            .list("c", b"", 100, None, true)
            .unwrap()
            .items
            .into_iter()
            .map(read_balance)
            .sum();
        assert_eq!(listed, ACCOUNTS * INITIAL);
        snapshots_checked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    for writer in writers {
        writer.join().unwrap();
    }
    assert!(
        snapshots_checked.load(std::sync::atomic::Ordering::Relaxed) >= SNAPSHOTS_WHILE_WRITING
    );
}

/// A put over a key whose only version is a plain head replaces that head outright while no
/// snapshot is open, and keeps the old version (a node over it) while one is: in both cases a
/// key written 4 times holds 1 version in the index, or more.
#[test]
fn puts_replace_a_plain_head_outright_only_while_no_snapshot_is_open() {
    let (store, _, _) = store();
    let keys: Vec<[u8; 8]> = (0..16u64).map(u64::to_be_bytes).collect();
    for round in 0..4u8 {
        for key in &keys {
            store
                .put("c", key, &[round; 20], &WriteOptions::default())
                .unwrap();
        }
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.items, stats.item_versions), (16, 16));
    let snapshot = store.snapshot().unwrap();
    for key in &keys {
        store
            .put("c", key, &[9; 20], &WriteOptions::default())
            .unwrap();
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.items, stats.item_versions), (16, 32));
    for key in &keys {
        let seen = snapshot.get("c", key, &ReadOptions::default()).unwrap();
        assert_eq!(seen.value.unwrap(), [3; 20]);
    }
}

/// A plain put replaces a head that is a node (a version with metadata, or one compaction
/// copied forward) and the chain under it outright while no snapshot is open: the key keeps
/// one version, and reads see the plain write alone.
#[test]
fn a_plain_put_replaces_a_chain_of_nodes_while_no_snapshot_is_open() {
    let (store, _, _) = store();
    let with_metadata = WriteOptions {
        metadata: vec![("owner".into(), "writer".into())],
        ..WriteOptions::default()
    };
    for key in 0..8u64 {
        for _ in 0..3 {
            store
                .put("c", &key.to_be_bytes(), b"with metadata", &with_metadata)
                .unwrap();
        }
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.items, stats.item_versions), (8, 24));
    for key in 0..8u64 {
        store
            .put("c", &key.to_be_bytes(), b"plain", &WriteOptions::default())
            .unwrap();
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.items, stats.item_versions), (8, 8));
    for key in 0..8u64 {
        let item = store
            .get("c", &key.to_be_bytes(), &ReadOptions::default())
            .unwrap();
        assert_eq!(item.value.unwrap(), b"plain");
        assert!(item.metadata.is_empty());
    }
}

/// Writers replace plain heads outright while readers read (`plain.rs`): a plain read never
/// misses an item and never goes back to an older value, and every snapshot — taken while the
/// writes race — sees every item, the same one at each read.
#[test]
fn puts_replacing_plain_heads_hide_no_item_from_plain_reads_or_snapshots() {
    const KEYS: u64 = 16;
    const WRITES_PER_WRITER: u64 = 50_000;
    const SNAPSHOTS_WHILE_WRITING: u64 = 200;
    let (store, _, _) = store();
    for key in 0..KEYS {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &0u64.to_le_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let store = Arc::new(store);
    let snapshots_checked = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let counter = |item: tenure::Item| u64::from_le_bytes(item.value.unwrap().try_into().unwrap());
    // Writer `w` writes the keys `k` with `k % 2 == w`, each value its own count of writes
    // so far: per key, the values only grow.
    let writers: Vec<_> = (0..2u64)
        .map(|writer| {
            let store = Arc::clone(&store);
            let snapshots_checked = Arc::clone(&snapshots_checked);
            std::thread::spawn(move || {
                let mut written = 0u64;
                while written < WRITES_PER_WRITER
                    || snapshots_checked.load(Ordering::Relaxed) < SNAPSHOTS_WHILE_WRITING
                {
                    written += 1;
                    let key = (written % (KEYS / 2)) * 2 + writer;
                    store
                        .put(
                            "c",
                            &key.to_be_bytes(),
                            &written.to_le_bytes(),
                            &WriteOptions::default(),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    let reader = {
        let (store, writing) = (Arc::clone(&store), Arc::clone(&writing));
        std::thread::spawn(move || {
            let mut newest_seen = [0u64; KEYS as usize];
            let mut reads = 0u64;
            while writing.load(Ordering::Relaxed) {
                let key = reads % KEYS;
                reads += 1;
                let item = store
                    .get("c", &key.to_be_bytes(), &ReadOptions::default())
                    .unwrap_or_else(|error| panic!("read {reads} of key {key}: {error}"));
                let value = counter(item);
                assert!(value >= newest_seen[key as usize], "key {key} went back");
                newest_seen[key as usize] = value;
            }
            reads
        })
    };
    while writers.iter().any(|writer| !writer.is_finished()) {
        let snapshot = store.snapshot().unwrap();
        let first: Vec<tenure::Item> = (0..KEYS)
            .map(|key| {
                snapshot
                    .get("c", &key.to_be_bytes(), &ReadOptions::default())
                    .unwrap_or_else(|error| panic!("a snapshot lost key {key}: {error}"))
            })
            .collect();
        let listed = snapshot.list("c", b"", 100, None, true).unwrap().items;
        assert_eq!(listed, first, "a snapshot's list and gets disagree");
        for (key, item) in first.iter().enumerate() {
            let again = snapshot
                .get("c", &(key as u64).to_be_bytes(), &ReadOptions::default())
                .unwrap();
            assert_eq!(&again, item, "a snapshot's read of key {key} changed");
        }
        snapshots_checked.fetch_add(1, Ordering::Relaxed);
    }
    for writer in writers {
        writer.join().unwrap();
    }
    writing.store(false, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    assert!(snapshots_checked.load(Ordering::Relaxed) >= SNAPSHOTS_WHILE_WRITING);
}

/// In a `sync` store a value's record reaches the file only with its group's sync
/// (log/staging.rs). A metadata change copies the item's value from its newest version, which
/// may still be waiting for that sync: the change must wait for it and copy the written value,
/// never the not-yet-written bytes.
#[test]
fn metadata_changes_racing_value_writes_in_a_sync_store_copy_a_written_value() {
    const ROUNDS: usize = 400;
    let clock = tenure::ManualClock::new(common::START_MICROS);
    let disk = tenure_testkit::SimStorage::new();
    let options = tenure::StoreOptions {
        durability: tenure::Durability::Sync,
        ..common::options(&clock)
    };
    let store = Arc::new(tenure::Store::open_with_storage(Arc::new(disk), options).unwrap());
    store.create_container("c", &Default::default()).unwrap();
    let value_of = |round: usize| format!("value {round:06} ").repeat(10).into_bytes();
    store
        .put("c", b"key", &value_of(0), &WriteOptions::default())
        .unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let writer = {
        let (store, barrier) = (Arc::clone(&store), Arc::clone(&barrier));
        std::thread::spawn(move || {
            barrier.wait();
            for round in 1..=ROUNDS {
                store
                    .put("c", b"key", &value_of(round), &WriteOptions::default())
                    .unwrap();
            }
        })
    };
    barrier.wait();
    for round in 0..ROUNDS {
        let options = WriteOptions {
            metadata: vec![("round".into(), round.to_string())],
            ..WriteOptions::default()
        };
        store.set_metadata("c", b"key", &options).unwrap();
        let item = store.get("c", b"key", &ReadOptions::default()).unwrap();
        let value = item.value.unwrap();
        assert!(
            (0..=ROUNDS).any(|written| value == value_of(written)),
            "round {round}: the item holds bytes no put wrote: {:?}",
            String::from_utf8_lossy(&value[..value.len().min(40)])
        );
    }
    writer.join().unwrap();
}
