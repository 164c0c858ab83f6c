//! Shared helpers for the item tests.
#![allow(dead_code)]

use std::sync::Arc;

use tenure::{
    Conditions, Durability, ManualClock, ReadOptions, Store, StoreOptions, MICROS_PER_SECOND,
};
use tenure_testkit::SimStorage;

pub const START_MICROS: u64 = 1_700_000_000 * MICROS_PER_SECOND;

pub fn options(clock: &ManualClock) -> StoreOptions {
    StoreOptions {
        durability: Durability::Buffered,
        segment_size_bytes: 1 << 20,
        clock: Arc::new(clock.clone()),
        // Tests compact explicitly; `compaction::background_compaction_…` covers the thread.
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

/// A store on a simulated disk with a manual clock and one container "c".
pub fn store() -> (Store, ManualClock, SimStorage) {
    let clock = ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock)).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    (store, clock, disk)
}

/// Read options with `conditions`.
pub fn read(conditions: Conditions) -> ReadOptions {
    ReadOptions {
        conditions,
        ..ReadOptions::default()
    }
}
