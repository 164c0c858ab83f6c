//! What a child process runs: one workload against one engine, in a fresh directory.
//!
//! - `kv` (embedded engines): bulk load of `keys` pairs in transactions of 1,000 plus one
//!   sync at the end; resident memory after the load; random gets of existing keys on 1 and
//!   2 threads; 10-entry scans from a random key; compare-and-set on a random key (1 thread,
//!   uncontended), all in the non-durable class.
//! - `churn` (embedded engines): load, overwrite every key 3 times, delete every other key
//!   (each of these five passes in transactions of 1,000 and ending with a sync), compact,
//!   sync; then the bytes on disk against the live bytes (key + value of what is left), with
//!   the engine still open and again after closing it.
//! - `lease` (tenure, redis): acquire + release of a lease and get_and_lock + unlock on
//!   tenure; `SET key value NX PX 15000` + `DEL key` on redis-server and `add key` (15 s
//!   expiry) + `delete key` on memcached, both over loopback.
//! - `limits` (raw): a random DRAM read and a 200 B pwrite + fdatasync.

use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::engines::{self, Engine};
use super::{
    disk_usage, key, resident_bytes, run_for, value, Key, Latencies, Metrics, Rng, Value,
    BATCH_PAIRS, KEY_BYTES, VALUE_BYTES,
};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// What the parent tells a child.
#[derive(Debug, Clone)]
pub struct ChildConfig {
    pub engine: String,
    pub workload: String,
    pub keys: u64,
    /// How long each timed measurement runs.
    pub measure: Duration,
    pub round: u64,
    pub dram_mebibytes: usize,
    pub redis_port: Option<u16>,
    pub memcached_port: Option<u16>,
}

/// Runs the workload in `directory` (which it creates and leaves for the caller to remove).
pub fn run(config: &ChildConfig, directory: &Path) -> Result<Metrics> {
    match (config.workload.as_str(), config.engine.as_str()) {
        ("kv", engine) => kv(config, engine, directory),
        ("churn", engine) => churn(config, engine, directory),
        ("lease", "tenure") => tenure_leases(config, directory),
        ("lease", "redis") => redis_leases(config),
        ("lease", "memcached") => memcached_leases(config),
        ("limits", "raw") => Ok(super::physical::measure(
            directory,
            config.dram_mebibytes,
            config.measure,
        )),
        (workload, engine) => super::extended::run(
            workload,
            engine,
            config.keys,
            config.measure,
            config.round,
            directory,
        )
        .unwrap_or_else(|| Err(format!("no workload {workload} for engine {engine}").into())),
    }
}

/// Writes pairs `0..keys` (generation `generation`) in transactions of [`BATCH_PAIRS`];
/// returns the time spent inside the engine (building the pairs is not timed).
fn write_all(engine: &dyn Engine, keys: u64, generation: u64) -> Result<Duration> {
    let mut pairs: Vec<(Key, Value)> = Vec::with_capacity(BATCH_PAIRS);
    let mut spent = Duration::ZERO;
    let mut index = 0;
    while index < keys {
        pairs.clear();
        let end = (index + BATCH_PAIRS as u64).min(keys);
        pairs.extend((index..end).map(|i| (key(i), value(i, generation))));
        let start = Instant::now();
        engine.write_batch(&pairs)?;
        spent += start.elapsed();
        index = end;
    }
    Ok(spent)
}

fn kv(config: &ChildConfig, name: &str, directory: &Path) -> Result<Metrics> {
    let mut metrics = Metrics::new();
    let keys = config.keys;
    let (rss_before, anon_before, _) = resident_bytes();
    let engine = engines::open(name, directory)?;

    // Bulk load: non-durable transactions of 1,000 pairs, then one sync.
    let writing = write_all(&*engine, keys, 0)?;
    let start = Instant::now();
    engine.sync()?;
    let load = writing + start.elapsed();
    metrics.insert("load_pairs_per_s".into(), keys as f64 / load.as_secs_f64());

    // Memory, right after the load.
    let (rss_after, anon_after, file_after) = resident_bytes();
    metrics.insert(
        "rss_bytes_per_key".into(),
        rss_after.saturating_sub(rss_before) as f64 / keys as f64,
    );
    metrics.insert(
        "anon_bytes_per_key".into(),
        anon_after.saturating_sub(anon_before) as f64 / keys as f64,
    );
    metrics.insert(
        "file_mapped_bytes_per_key".into(),
        file_after as f64 / keys as f64,
    );
    metrics.insert(
        "disk_bytes_per_key".into(),
        disk_usage(directory).0 as f64 / keys as f64,
    );

    // Random gets: 1 thread (after an untimed warm-up of the same length), 2 threads, and 1
    // thread again; the 1-thread figure is the mean of the two runs around the 2-thread one,
    // so an engine still busy in the background after the load (an LSM compacting) does not
    // show a 2-thread "speedup" that is only the background work ending.
    let seed = config.round.wrapping_mul(1_000_003);
    let mut sink = 0u64;
    let single = |pass_seed: u64, sink: &mut u64| -> Result<f64> {
        let mut reader = engine.reader()?;
        let mut rng = Rng::new(pass_seed);
        let mut failed = None;
        let (count, elapsed) = run_for(config.measure, |_| {
            match reader.get(&key(rng.below(keys))) {
                Ok(fold) => *sink = sink.wrapping_add(fold),
                Err(error) => failed = Some(error),
            }
        });
        match failed {
            Some(error) => Err(error),
            None => Ok(elapsed.as_nanos() as f64 / count as f64),
        }
    };
    single(seed ^ 1, &mut sink)?;
    let before = single(seed ^ 2, &mut sink)?;

    // 2 threads: each runs for the measurement time; the rate is all gets over the wall
    // time, the latency is per get on one thread.
    let rate = {
        let barrier = Barrier::new(2);
        let results: Vec<Result<(u64, Duration)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2u64)
                .map(|thread| {
                    let engine = &*engine;
                    let barrier = &barrier;
                    scope.spawn(move || -> Result<(u64, Duration)> {
                        let mut reader = engine.reader()?;
                        let mut rng = Rng::new(seed ^ (thread + 3));
                        let mut failed = None;
                        let mut fold = 0u64;
                        barrier.wait();
                        let (count, elapsed) = run_for(config.measure, |_| {
                            match reader.get(&key(rng.below(keys))) {
                                Ok(value) => fold = fold.wrapping_add(value),
                                Err(error) => failed = Some(error),
                            }
                        });
                        std::hint::black_box(fold);
                        match failed {
                            Some(error) => Err(error),
                            None => Ok((count, elapsed)),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("a reader thread panicked"))
                .collect()
        });
        let mut total = 0u64;
        let mut longest = Duration::ZERO;
        for result in results {
            let (count, elapsed) = result?;
            total += count;
            longest = longest.max(elapsed);
        }
        total as f64 / longest.as_secs_f64()
    };
    let after = single(seed ^ 5, &mut sink)?;
    let get_ns = (before + after) / 2.0;
    metrics.insert("get_ns".into(), get_ns);
    metrics.insert("get_ns_before_2t".into(), before);
    metrics.insert("get_ns_after_2t".into(), after);
    metrics.insert("get2_ops_per_s".into(), rate);
    metrics.insert("get2_ns".into(), 2e9 / rate);
    metrics.insert("get_speedup_2t".into(), rate * get_ns / 1e9);

    // 10-entry scans from a random key. The start arguments are prepared before timing.
    {
        let mut rng = Rng::new(seed ^ 7);
        let starts: Vec<Vec<u8>> = (0..65_536).map(|_| key(rng.below(keys)).to_vec()).collect();
        let mut reader = engine.reader()?;
        let mut failed = None;
        for pass in 0..2 {
            let (count, elapsed) = run_for(config.measure, |done| {
                match reader.scan(&starts[(done as usize) % starts.len()], 10) {
                    Ok(fold) => sink = sink.wrapping_add(fold),
                    Err(error) => failed = Some(error),
                }
            });
            if pass == 1 {
                metrics.insert("scan10_ns".into(), elapsed.as_nanos() as f64 / count as f64);
            }
        }
        if let Some(error) = failed {
            return Err(error);
        }
    }

    // Compare-and-set, uncontended: read the version, write with that condition. The key and
    // the new value are made before each call is timed.
    {
        let mut rng = Rng::new(seed ^ 11);
        let mut failed = None;
        let mut refused = 0u64;
        let mut generation = 1u64;
        let prepare = |_| {
            let index = rng.below(keys);
            generation += 1;
            (key(index), value(index, generation))
        };
        let latencies = Latencies::measure_prepared(config.measure, prepare, |(key, value)| {
            match engine.check_and_write(&key, &value) {
                Ok(true) => {}
                Ok(false) => refused += 1,
                Err(error) => failed = Some(error),
            }
        });
        if let Some(error) = failed {
            return Err(error);
        }
        if refused > 0 {
            return Err(format!("{refused} uncontended compare-and-sets were refused").into());
        }
        metrics.insert("cas_ns".into(), latencies.mean());
        metrics.insert("cas_p50_ns".into(), latencies.quantile(0.5));
        metrics.insert("cas_p99_ns".into(), latencies.quantile(0.99));
    }
    std::hint::black_box(sink);
    drop(engine);
    Ok(metrics)
}

fn churn(config: &ChildConfig, name: &str, directory: &Path) -> Result<Metrics> {
    let mut metrics = Metrics::new();
    let keys = config.keys;
    let (_, anon_before, _) = resident_bytes();
    let mut engine = engines::open(name, directory)?;
    let start = Instant::now();
    // Every phase ends with a sync (redb frees pages only at a durable commit).
    for generation in 0..=3 {
        write_all(&*engine, keys, generation)?;
        engine.sync()?;
    }
    // Delete every other key.
    let mut batch: Vec<Key> = Vec::with_capacity(BATCH_PAIRS);
    let mut deleted = 0u64;
    for index in (0..keys).step_by(2) {
        batch.push(key(index));
        deleted += 1;
        if batch.len() == BATCH_PAIRS {
            engine.delete_batch(&batch)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        engine.delete_batch(&batch)?;
    }
    engine.sync()?;
    let before = disk_usage(directory);
    let writes_done = start.elapsed();
    let compacting = Instant::now();
    let reported = engine.compact()?;
    engine.sync()?;
    let compaction = compacting.elapsed();
    let after = disk_usage(directory);
    let (_, anon_after, _) = resident_bytes();
    let live_keys = keys - deleted;
    let live = live_keys * (KEY_BYTES + VALUE_BYTES) as u64;
    metrics.extend(reported);
    metrics.insert("churn_write_s".into(), writes_done.as_secs_f64());
    metrics.insert("churn_compact_s".into(), compaction.as_secs_f64());
    metrics.insert("churn_live_bytes".into(), live as f64);
    metrics.insert("churn_disk_bytes_before_compact".into(), before.0 as f64);
    metrics.insert("churn_disk_bytes".into(), after.0 as f64);
    metrics.insert("churn_apparent_bytes".into(), after.1 as f64);
    metrics.insert("churn_ratio".into(), after.0 as f64 / live as f64);
    metrics.insert(
        "churn_ratio_before_compact".into(),
        before.0 as f64 / live as f64,
    );
    metrics.insert("churn_ratio_apparent".into(), after.1 as f64 / live as f64);
    metrics.insert(
        "churn_anon_bytes_per_live_key".into(),
        anon_after.saturating_sub(anon_before) as f64 / live_keys as f64,
    );
    // And once the engine is closed (some engines give space back only then).
    drop(engine);
    let closed = disk_usage(directory);
    metrics.insert("churn_ratio_closed".into(), closed.0 as f64 / live as f64);
    Ok(metrics)
}

/// Keys the lease rows cycle through (each is acquired and released before it comes back).
const LEASE_KEYS: u64 = 1000;

fn tenure_leases(config: &ChildConfig, directory: &Path) -> Result<Metrics> {
    let store = tenure::Store::open(
        directory,
        tenure::StoreOptions {
            durability: tenure::Durability::Buffered,
            ..tenure::StoreOptions::default()
        },
    )?;
    store.create_container("leases", &tenure::ContainerOptions::default())?;
    for index in 0..LEASE_KEYS {
        store.put(
            "leases",
            &key(index),
            &value(index, 0),
            &tenure::WriteOptions::default(),
        )?;
    }
    let request = tenure::LeaseRequest::seconds(15)?;
    let mut metrics = Metrics::new();
    let mut failed: Option<tenure::Error> = None;
    for pass in 0..2 {
        let latencies = Latencies::measure(config.measure, |done| {
            let key = key(done % LEASE_KEYS);
            let result = store
                .acquire_lease("leases", &key, &request)
                .and_then(|lease| store.release_lease("leases", &key, lease.id));
            if let Err(error) = result {
                failed = Some(error);
            }
        });
        if pass == 1 {
            metrics.insert("lease_pair_ns".into(), latencies.mean());
            metrics.insert("lease_pair_p99_ns".into(), latencies.quantile(0.99));
        }
    }
    for pass in 0..2 {
        let latencies = Latencies::measure(config.measure, |done| {
            let key = key(done % LEASE_KEYS);
            let result = store
                .get_and_lock("leases", &key, Duration::from_secs(15), false)
                .and_then(|(_, handle)| store.unlock("leases", &key, handle, None));
            if let Err(error) = result {
                failed = Some(error);
            }
        });
        if pass == 1 {
            metrics.insert("lock_pair_ns".into(), latencies.mean());
            metrics.insert("lock_pair_p99_ns".into(), latencies.quantile(0.99));
        }
    }
    if let Some(error) = failed {
        return Err(error.into());
    }
    store.close()?;
    Ok(metrics)
}

fn redis_leases(config: &ChildConfig) -> Result<Metrics> {
    let port = config
        .redis_port
        .ok_or("the redis rows need --redis-port")?;
    let mut client = super::redis::Client::connect(port)?;
    let keys: Vec<Vec<u8>> = (0..LEASE_KEYS)
        .map(|index| format!("lease:{index:06}").into_bytes())
        .collect();
    // A 16-byte holder id, as a lease id would be.
    let holder = b"0123456789abcdef";
    let mut metrics = Metrics::new();
    let mut failed: Option<String> = None;
    for pass in 0..2 {
        let latencies = Latencies::measure(config.measure, |done| {
            let key = &keys[(done % LEASE_KEYS) as usize];
            let set = client.command(&[b"SET", key, holder, b"NX", b"PX", b"15000"]);
            let del = client.command(&[b"DEL", key]);
            match (set, del) {
                (Ok(set), Ok(del)) if set == "+OK" && del == ":1" => {}
                (set, del) => failed = Some(format!("SET NX PX → {set:?}, DEL → {del:?}")),
            }
        });
        if pass == 1 {
            metrics.insert("redis_pair_ns".into(), latencies.mean());
            metrics.insert("redis_pair_p99_ns".into(), latencies.quantile(0.99));
        }
    }
    if let Some(error) = failed {
        return Err(error.into());
    }
    Ok(metrics)
}

fn memcached_leases(config: &ChildConfig) -> Result<Metrics> {
    let port = config
        .memcached_port
        .ok_or("the memcached rows need --memcached-port")?;
    let mut client = super::memcached::Client::connect(port)?;
    let keys: Vec<Vec<u8>> = (0..LEASE_KEYS)
        .map(|index| format!("lease:{index:06}").into_bytes())
        .collect();
    // A 16-byte holder id, as a lease id would be.
    let holder = b"0123456789abcdef";
    let mut metrics = Metrics::new();
    let mut failed: Option<String> = None;
    for pass in 0..2 {
        let latencies = Latencies::measure(config.measure, |done| {
            let key = &keys[(done % LEASE_KEYS) as usize];
            let added = client.add(key, holder, 15);
            let deleted = client.delete(key);
            match (added, deleted) {
                (Ok(true), Ok(true)) => {}
                (added, deleted) => failed = Some(format!("add → {added:?}, delete → {deleted:?}")),
            }
        });
        if pass == 1 {
            metrics.insert("memcached_pair_ns".into(), latencies.mean());
            metrics.insert("memcached_pair_p99_ns".into(), latencies.quantile(0.99));
        }
    }
    if let Some(error) = failed {
        return Err(error.into());
    }
    Ok(metrics)
}
