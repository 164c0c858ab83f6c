//! A `sync` store's two durable paths side by side, in one run: the group commit through
//! io_uring (`StoreOptions::io_uring`, the default) and `pwrite` + `fdatasync`. Rounds
//! alternate between the paths, each on a fresh store, so a change of load on a shared
//! machine hits both; medians of the rounds and their ratio are printed.
//!
//! `cargo run --release -p tenure-benches --bin durable_paths [ROUNDS] [COMMITS]`
//! (default 7 rounds of 2,000 commits per writer count).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tenure::{Durability, IoUringUse, Store, StoreOptions, WriteOptions};

const WRITER_COUNTS: [usize; 4] = [1, 2, 4, 16];

fn open(directory: &Path, io_uring: bool) -> Store {
    let _ = std::fs::remove_dir_all(directory);
    let store = Store::open(
        directory,
        StoreOptions {
            durability: Durability::Sync,
            background_compaction_interval: None,
            io_uring,
            ..StoreOptions::default()
        },
    )
    .expect("open");
    store
        .create_container("c", &Default::default())
        .expect("container");
    store
}

/// Commits per second of `writers` threads, each putting `commits / writers` new keys
/// (24 B keys, 150 B values, one durable commit each).
fn round(directory: &Path, io_uring: bool, writers: usize, commits: usize) -> f64 {
    let store = Arc::new(open(directory, io_uring));
    let expected = if io_uring {
        IoUringUse::Used
    } else {
        IoUringUse::NotUsed
    };
    assert_eq!(store.stats().expect("stat").io_uring, expected);
    let per_writer = commits / writers;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for writer in 0..writers {
            let store = Arc::clone(&store);
            scope.spawn(move || {
                let value = [7u8; 150];
                for index in 0..per_writer {
                    let key = format!("w{writer:03}-k{index:018}");
                    store
                        .put("c", key.as_bytes(), &value, &WriteOptions::default())
                        .expect("put");
                }
            });
        }
    });
    let rate = (per_writer * writers) as f64 / started.elapsed().as_secs_f64();
    drop(store);
    let _ = std::fs::remove_dir_all(directory);
    rate
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let arguments: Vec<usize> = std::env::args()
        .skip(1)
        .map(|text| text.parse().expect("ROUNDS and COMMITS are numbers"))
        .collect();
    let rounds = arguments.first().copied().unwrap_or(7);
    let commits = arguments.get(1).copied().unwrap_or(2_000);
    let directory = std::env::temp_dir().join(format!("tenure-durable-{}", std::process::id()));
    println!("| writers | io_uring | pwrite + fdatasync | io_uring ÷ pwrite |");
    println!("| --- | --- | --- | --- |");
    for writers in WRITER_COUNTS {
        let (mut ring, mut plain) = (Vec::new(), Vec::new());
        for number in 0..rounds {
            // Which path goes first alternates too.
            let order = if number % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for io_uring in order {
                let rate = round(&directory, io_uring, writers, commits);
                if io_uring {
                    ring.push(rate)
                } else {
                    plain.push(rate)
                }
            }
        }
        let (ring, plain) = (median(&mut ring), median(&mut plain));
        let describe = |rate: f64| {
            if writers == 1 {
                format!("{:.1} µs/commit", 1e6 / rate)
            } else {
                format!("{:.1} k commits/s", rate / 1e3)
            }
        };
        println!(
            "| {writers} | {} | {} | {:.3} (rate) |",
            describe(ring),
            describe(plain),
            ring / plain
        );
    }
}
