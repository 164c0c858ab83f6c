//! Change-feed benchmarks (issue "Change feed"): reading the feed of 150 B values from one
//! thread (changes/s), and how long a waiting consumer takes to see a new commit.
//!
//!     cargo bench -p tenure-benches --bench feed

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tenure::{ChangesOptions, ContainerOptions, Durability, Store, StoreOptions, WriteOptions};

const CHANGES: u64 = 200_000;

fn buffered_store(directory: &std::path::Path) -> Store {
    let options = StoreOptions {
        durability: Durability::Buffered,
        background_compaction_interval: None,
        ..StoreOptions::default()
    };
    let store = Store::open(directory, options).expect("open");
    store
        .create_container("c", &ContainerOptions::default())
        .expect("container");
    store
}

fn read_feed(criterion: &mut Criterion) {
    let directory = tenure_testkit::TempDir::new("bench-feed-read");
    let store = buffered_store(directory.path());
    let value = [7u8; 150];
    let start = store.version();
    for index in 0..CHANGES {
        let key = format!("key-{index:020}");
        store
            .put("c", key.as_bytes(), &value, &WriteOptions::default())
            .expect("put");
    }
    let mut group = criterion.benchmark_group("change_feed_read_150B");
    group.throughput(Throughput::Elements(CHANGES));
    group.sample_size(10);
    group.bench_function("borrowed_visit", |bencher| {
        bencher.iter(|| {
            let options = ChangesOptions {
                include_values: true,
                max_changes: 100_000,
                ..ChangesOptions::default()
            };
            let mut since = start;
            let mut seen = 0u64;
            loop {
                let mut last = None;
                store
                    .visit_changes(since, &options, &mut |change| {
                        seen += u64::from(change.value.is_some_and(|value| value.len() == 150));
                        last = Some(change.version);
                        true
                    })
                    .expect("visit");
                match last {
                    Some(version) => since = version,
                    None => break,
                }
            }
            assert_eq!(seen, CHANGES);
        })
    });
    group.bench_function("copied_with_values", |bencher| {
        bencher.iter(|| {
            let options = ChangesOptions {
                include_values: true,
                max_changes: 100_000,
                ..ChangesOptions::default()
            };
            let mut since = start;
            let mut seen = 0u64;
            loop {
                let page = store.changes(since, &options).expect("changes");
                let Some(last) = page.last() else { break };
                since = last.version;
                seen += page.len() as u64;
            }
            assert_eq!(seen, CHANGES);
        })
    });
    group.finish();
}

fn wake_latency(criterion: &mut Criterion) {
    let directory = tenure_testkit::TempDir::new("bench-feed-wake");
    let store = Arc::new(buffered_store(directory.path()));
    let mut group = criterion.benchmark_group("change_feed_wake");
    group.sample_size(20);
    group.bench_function("commit_to_waiting_consumer", |bencher| {
        bencher.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for index in 0..iterations {
                let since = store.version();
                let consumer = {
                    let store = Arc::clone(&store);
                    std::thread::spawn(move || {
                        assert!(store
                            .wait_for_changes(since, Duration::from_secs(10))
                            .expect("wait"));
                        Instant::now()
                    })
                };
                // Let the consumer block first.
                std::thread::sleep(Duration::from_millis(2));
                let committed = Instant::now();
                store
                    .put("c", &index.to_le_bytes(), b"v", &WriteOptions::default())
                    .expect("put");
                let woke = consumer.join().expect("consumer");
                total += woke.saturating_duration_since(committed);
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, read_feed, wake_latency);
criterion_main!(benches);
