//! Snapshot isolation (docs/spec.md §8 batches, §9 snapshots): the bank-transfer invariant.
//!
//! A few accounts start with equal balances. Transfer threads move money between two
//! accounts with one batch of two conditional puts (each `if_match` the ETag the thread read),
//! retrying on a conflict; reader threads take snapshots and sum every balance — by point
//! reads and by a listing. Every snapshot must see the total conserved (no half-applied
//! batch, no mix of versions), and so must the store at the end, and after a power cut.
//! The operations are seeded; the interleaving is not.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tenure::{
    Conditions, Durability, ErrorCode, ManualClock, ReadOptions, Store, StoreOptions, WriteOptions,
};

use super::crash::POLICIES;
use super::image::START_MICROS;
use crate::SimStorage;

const CONTAINER: &str = "bank";
const INITIAL_BALANCE: u64 = 1_000;

fn account_key(account: usize) -> Vec<u8> {
    format!("account-{account}").into_bytes()
}

fn balance(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(
        bytes
            .try_into()
            .unwrap_or_else(|_| panic!("a balance of {} bytes", bytes.len())),
    )
}

fn options(durability: Durability) -> StoreOptions {
    StoreOptions {
        durability,
        segment_size_bytes: 64 << 10,
        clock: Arc::new(ManualClock::new(START_MICROS)),
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

/// The sum of every balance in a snapshot, read key by key and by one listing.
fn snapshot_totals(store: &Store, accounts: usize) -> (u64, u64) {
    let snapshot = store.snapshot().expect("snapshot");
    let by_key = (0..accounts)
        .map(|account| {
            let item = snapshot
                .get(CONTAINER, &account_key(account), &ReadOptions::default())
                .expect("an account is never missing");
            balance(&item.value.expect("get returns the value"))
        })
        .sum();
    let page = snapshot
        .list(CONTAINER, b"account-", 1000, None, true)
        .expect("list");
    assert_eq!(page.items.len(), accounts, "a listing lost an account");
    let listed = page
        .items
        .iter()
        .map(|item| balance(item.value.as_deref().expect("listed with values")))
        .sum();
    (by_key, listed)
}

/// Moves money until `transfers` succeeded; returns the number of conflicts met.
fn transfer(store: &Store, rng: &mut SmallRng, accounts: usize, transfers: usize) -> u64 {
    let mut conflicts = 0;
    let mut done = 0;
    while done < transfers {
        let from = rng.gen_range(0..accounts);
        let to = (from + rng.gen_range(1..accounts)) % accounts;
        let read = |account: usize| {
            let item = store
                .get(CONTAINER, &account_key(account), &ReadOptions::default())
                .expect("an account is never missing");
            (balance(&item.value.expect("value")), item.etag)
        };
        let (from_balance, from_etag) = read(from);
        let (to_balance, to_etag) = read(to);
        let amount = rng.gen_range(0..=from_balance.min(200));
        let mut batch = store.batch();
        batch
            .put(
                CONTAINER,
                &account_key(from),
                &(from_balance - amount).to_le_bytes(),
                WriteOptions::with_conditions(Conditions::if_match(from_etag)),
            )
            .put(
                CONTAINER,
                &account_key(to),
                &(to_balance + amount).to_le_bytes(),
                WriteOptions::with_conditions(Conditions::if_match(to_etag)),
            );
        match batch.commit() {
            Ok(_) => done += 1,
            Err(error) if error.code() == ErrorCode::ConditionNotMet => conflicts += 1,
            Err(error) => panic!("transfer {from} → {to}: {error:?}"),
        }
    }
    conflicts
}

/// One bank history; returns the number of snapshots checked.
pub fn case(seed: u64) -> u64 {
    let mut rng = SmallRng::seed_from_u64(seed);
    let accounts = rng.gen_range(2..=6);
    let transferers = rng.gen_range(1..=2);
    let transfers = rng.gen_range(20..60);
    let durability = if rng.gen_bool(0.5) {
        Durability::Sync
    } else {
        Durability::Buffered
    };
    let disk = SimStorage::new();
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(durability))
        .expect("open a new store");
    store
        .create_container(CONTAINER, &Default::default())
        .expect("create the container");
    let mut setup = store.batch();
    for account in 0..accounts {
        setup.put(
            CONTAINER,
            &account_key(account),
            &INITIAL_BALANCE.to_le_bytes(),
            WriteOptions::default(),
        );
    }
    setup.commit().expect("open the accounts");
    // Durable, so a power cut at the end always finds the accounts.
    store.flush().expect("flush the setup");
    let total = INITIAL_BALANCE * accounts as u64;
    let finished = AtomicBool::new(false);
    let snapshots = AtomicU64::new(0);
    let seeds: Vec<u64> = (0..transferers).map(|_| rng.gen()).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = seeds
            .iter()
            .map(|&seed| {
                let store = &store;
                scope.spawn(move || {
                    transfer(
                        store,
                        &mut SmallRng::seed_from_u64(seed),
                        accounts,
                        transfers,
                    )
                })
            })
            .collect();
        for _ in 0..2 {
            scope.spawn(|| {
                // At least a few snapshots even if the transfers finish first.
                let mut taken = 0;
                while taken < 3 || !finished.load(Ordering::Acquire) {
                    let (by_key, listed) = snapshot_totals(&store, accounts);
                    assert_eq!(by_key, total, "a snapshot's point reads broke the total");
                    assert_eq!(listed, total, "a snapshot's listing broke the total");
                    taken += 1;
                }
                snapshots.fetch_add(taken, Ordering::Relaxed);
            });
        }
        for worker in workers {
            worker.join().expect("a transfer thread panicked");
        }
        finished.store(true, Ordering::Release);
    });
    assert_eq!(snapshot_totals(&store, accounts), (total, total));
    // A power cut keeps a prefix of the batches: whole ones only.
    let policy = POLICIES[rng.gen_range(0..POLICIES.len())];
    let crashed = disk.crash(&mut rng, policy);
    drop(store);
    let store = Store::open_with_storage(Arc::new(crashed), options(durability))
        .unwrap_or_else(|error| panic!("reopen after a power cut ({policy:?}): {error:?}"));
    assert_eq!(
        snapshot_totals(&store, accounts),
        (total, total),
        "after a power cut ({policy:?}, {durability:?})"
    );
    snapshots.into_inner()
}
