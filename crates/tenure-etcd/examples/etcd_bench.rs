//! tenure over etcd beside the raw etcd client, on the same cluster in the same run:
//!
//! - a conditional put (tenure `put` with `if_match`) against a raw `Txn` doing the same
//!   compare-and-put (compare the key's `mod_revision`, put);
//! - a get against a raw range read of the key;
//! - 16 concurrent writers, each compare-and-putting its own key: throughput and p50/p99.
//!
//! ```sh
//! scripts/etcd-cluster.sh cargo run --release -p tenure-etcd --example etcd_bench
//! ```
//!
//! Options: `--operations N` per measurement (default 2,000), `--rounds N` (3; the two sides
//! alternate, and each row reports the median of the rounds' medians), `--seconds S` for the
//! concurrent rows (5).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use etcd_client::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp};
use tenure::{Conditions, ETag, ReadOptions, Store, StoreOptions, WriteOptions};

const WRITERS: usize = 16;
const VALUE: [u8; 150] = [7; 150];

struct Settings {
    operations: usize,
    rounds: usize,
    seconds: u64,
}

fn settings() -> Settings {
    let mut settings = Settings {
        operations: 2_000,
        rounds: 3,
        seconds: 5,
    };
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    for pair in arguments.chunks(2) {
        let value = pair.get(1).and_then(|text| text.parse().ok());
        match (pair[0].as_str(), value) {
            ("--operations", Some(value)) => settings.operations = value as usize,
            ("--rounds", Some(value)) => settings.rounds = value as usize,
            ("--seconds", Some(value)) => settings.seconds = value,
            _ => panic!("usage: etcd_bench [--operations N] [--rounds N] [--seconds S]"),
        }
    }
    settings
}

/// Per-operation latencies in microseconds, sorted.
fn percentile(sorted: &[u64], fraction: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Raw {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl Raw {
    fn connect(endpoints: &[String]) -> Raw {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let members: Vec<String> = endpoints.iter().map(|e| format!("http://{e}")).collect();
        let client = runtime.block_on(Client::connect(members, None)).unwrap();
        Raw { runtime, client }
    }

    /// Compare-and-put: succeeds when the key is still at `revision`; returns the new one.
    fn compare_and_put(&self, key: &[u8], revision: i64) -> i64 {
        let mut client = self.client.clone();
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key.to_vec(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([TxnOp::put(key.to_vec(), VALUE.to_vec(), None)]);
        let response = self.runtime.block_on(client.txn(txn)).unwrap();
        assert!(response.succeeded(), "a raw compare-and-put lost its race");
        response.header().unwrap().revision()
    }

    fn get(&self, key: &[u8]) -> usize {
        let mut client = self.client.clone();
        let response = self
            .runtime
            .block_on(client.get(key.to_vec(), Some(GetOptions::new())))
            .unwrap();
        response.kvs()[0].value().len()
    }
}

/// Median latency (µs) of `operations` calls of `call`.
fn timed(operations: usize, mut call: impl FnMut()) -> (f64, f64) {
    let mut latencies = Vec::with_capacity(operations);
    let started = Instant::now();
    for _ in 0..operations {
        let begun = Instant::now();
        call();
        latencies.push(begun.elapsed().as_micros() as u64);
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    (
        percentile(&latencies, 0.5) as f64,
        elapsed.as_micros() as f64 / operations as f64,
    )
}

/// `WRITERS` threads, each compare-and-putting its own key for `seconds`: operations per
/// second, p50 and p99 in microseconds.
fn concurrent<'a>(
    seconds: u64,
    writer: impl Fn(usize) -> Box<dyn FnMut() + Send + 'a>,
) -> (f64, u64, u64) {
    let barrier = Barrier::new(WRITERS);
    let deadline = Duration::from_secs(seconds);
    let latencies: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|index| {
                let mut call = writer(index);
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let started = Instant::now();
                    let mut latencies = Vec::new();
                    while started.elapsed() < deadline {
                        let begun = Instant::now();
                        call();
                        latencies.push(begun.elapsed().as_micros() as u64);
                    }
                    latencies
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let mut all: Vec<u64> = latencies.into_iter().flatten().collect();
    all.sort_unstable();
    let throughput = all.len() as f64 / seconds as f64;
    (throughput, percentile(&all, 0.5), percentile(&all, 0.99))
}

fn main() {
    let settings = settings();
    let endpoints: Vec<String> = std::env::var("TENURE_ETCD_ENDPOINTS")
        .expect("TENURE_ETCD_ENDPOINTS: run under scripts/etcd-cluster.sh")
        .split(',')
        .map(str::to_owned)
        .collect();
    let url = format!(
        "etcd://{}/bench/{}",
        endpoints.join(","),
        uuid::Uuid::new_v4()
    );
    let store: Store = tenure_etcd::open(&url, StoreOptions::default()).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    let raw = Raw::connect(&endpoints);
    let raw_key = format!("/raw-bench/{}", uuid::Uuid::new_v4()).into_bytes();

    let mut put_raw = Vec::new();
    let mut put_tenure = Vec::new();
    let mut get_raw = Vec::new();
    let mut get_tenure = Vec::new();
    let mut etag = store
        .put("c", b"k", &VALUE, &WriteOptions::default())
        .unwrap();
    let mut revision = raw.compare_and_put(&raw_key, 0);
    for _ in 0..settings.rounds {
        put_raw.push(timed(settings.operations, || {
            revision = raw.compare_and_put(&raw_key, revision)
        }));
        put_tenure.push(timed(settings.operations, || {
            let options = WriteOptions::with_conditions(Conditions::if_match(etag));
            etag = store.put("c", b"k", &VALUE, &options).unwrap();
        }));
        get_raw.push(timed(settings.operations, || {
            assert_eq!(raw.get(&raw_key), VALUE.len());
        }));
        get_tenure.push(timed(settings.operations, || {
            let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
            assert_eq!(item.value.map(|value| value.len()), Some(VALUE.len()));
        }));
    }
    let medians = |samples: &[(f64, f64)]| {
        let mut p50: Vec<f64> = samples.iter().map(|sample| sample.0).collect();
        let mut mean: Vec<f64> = samples.iter().map(|sample| sample.1).collect();
        (median(&mut p50), median(&mut mean))
    };
    println!("| row | raw etcd-client p50 (mean) µs | tenure p50 (mean) µs | ratio of p50s |");
    println!("| --- | --- | --- | --- |");
    for (row, raw_samples, tenure_samples) in [
        ("conditional put (compare-and-put)", &put_raw, &put_tenure),
        ("get", &get_raw, &get_tenure),
    ] {
        let (raw_p50, raw_mean) = medians(raw_samples);
        let (tenure_p50, tenure_mean) = medians(tenure_samples);
        println!(
            "| {row} | {raw_p50:.0} ({raw_mean:.0}) | {tenure_p50:.0} ({tenure_mean:.0}) | {:.2}× |",
            tenure_p50 / raw_p50
        );
    }

    let raw = Arc::new(raw);
    let raw_keys: Vec<Vec<u8>> = (0..WRITERS)
        .map(|index| format!("{}/{index}", String::from_utf8_lossy(&raw_key)).into_bytes())
        .collect();
    let raw_row = concurrent(settings.seconds, |index| {
        let raw = Arc::clone(&raw);
        let key = raw_keys[index].clone();
        let mut revision = raw.compare_and_put(&key, 0);
        Box::new(move || revision = raw.compare_and_put(&key, revision))
    });
    let store = &store;
    let tenure_row = concurrent(settings.seconds, |index| {
        let key = format!("w{index}").into_bytes();
        let mut etag: ETag = store
            .put("c", &key, &VALUE, &WriteOptions::default())
            .unwrap();
        Box::new(move || {
            let options = WriteOptions::with_conditions(Conditions::if_match(etag));
            etag = store.put("c", &key, &VALUE, &options).unwrap();
        })
    });
    println!();
    println!("| {WRITERS} concurrent writers, compare-and-put of own key | operations/s | p50 µs | p99 µs |");
    println!("| --- | --- | --- | --- |");
    for (side, (throughput, p50, p99)) in [("raw etcd-client", raw_row), ("tenure", tenure_row)] {
        println!("| {side} | {throughput:.0} | {p50} | {p99} |");
    }
}
