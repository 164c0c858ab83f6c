//! Compaction's cost: `compact()` of a store whose every item was written twice (so half the
//! log is dead), timed per byte of live data it copies forward, and the bytes on disk after.
//! The store is built afresh for every sample (outside the timing).
//!
//! ```sh
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench -j1 -p tenure-benches --bench compaction
//! ```

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tenure::{Durability, Store, StoreOptions, WriteOptions};
use tenure_testkit::TempDir;

const ITEMS: usize = 200_000;
const KEY_BYTES: usize = 24;
const VALUE_BYTES: usize = 150;

fn options() -> StoreOptions {
    StoreOptions {
        durability: Durability::Buffered,
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

fn key(index: usize) -> Vec<u8> {
    format!("{index:0width$}", width = KEY_BYTES).into_bytes()
}

/// A store of `ITEMS` items, each written twice, flushed.
fn build(directory: &TempDir) -> Store {
    let store = Store::open(directory.path(), options()).expect("open");
    store
        .create_container("c", &Default::default())
        .expect("container");
    for round in 0..2u8 {
        for index in 0..ITEMS {
            let value = vec![round ^ index as u8; VALUE_BYTES];
            store
                .put("c", &key(index), &value, &WriteOptions::default())
                .expect("put");
        }
    }
    store.flush().expect("flush");
    store
}

fn disk_bytes(directory: &TempDir) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(directory.path())
        .expect("list")
        .map(|entry| entry.expect("entry").metadata().expect("metadata").blocks() * 512)
        .sum()
}

fn compaction(c: &mut Criterion) {
    let mut group = c.benchmark_group("compaction_200k_items_written_twice");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(
        (ITEMS * (KEY_BYTES + VALUE_BYTES)) as u64,
    ));
    let mut disk_after = Vec::new();
    group.bench_function("compact", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let directory = TempDir::new("bench-compaction");
                std::fs::create_dir_all(directory.path()).expect("directory");
                let store = build(&directory);
                let started = Instant::now();
                store.compact().expect("compact");
                total += started.elapsed();
                store.close().expect("close");
                disk_after.push(disk_bytes(&directory));
            }
            total
        });
    });
    group.finish();
    disk_after.sort_unstable();
    let live = (ITEMS * (KEY_BYTES + VALUE_BYTES)) as f64;
    let median = disk_after[disk_after.len() / 2] as f64;
    println!(
        "\ncompaction: disk after compact (median of {}): {median:.0} bytes = {:.3}x the live key and value bytes",
        disk_after.len(),
        median / live
    );
}

criterion_group!(benches, compaction);
criterion_main!(benches);
