//! The workloads beyond `kv`/`churn`/`lease`/`limits` (issue "Benchmarks"), each run by one
//! child process against one embedded engine in a fresh directory:
//!
//! - `get`: random gets of 24 B keys / 150 B values — uniform hits, Zipf hits (θ = 0.99),
//!   misses (keys never written), and uniform hits on 8 threads (oversubscribed on a
//!   2-CPU machine); non-durable class.
//! - `shape16`: the same load and 1-thread gets with 16 B keys and 100 B values.
//! - `blob`: values of 4 KiB, 64 KiB and 1 MiB: one put per commit (non-durable), then
//!   random gets that read every cache line of the value.
//! - `commit`: in each engine's durable class (every commit on stable storage before it
//!   returns): single-put commits on 1 thread, batches of 1,000 puts, single-put commits from
//!   2, 4 and 16 writer threads (group commit where the engine has it); then, reopened
//!   non-durable, single-put commits.
//! - `cas`: compare-and-set on 16 hot keys from 2 threads: each reads the item's version
//!   (ETag) on its own, then writes under the condition that it is unchanged; successes and
//!   stale-version rejections are counted.
//! - `snapshot`: 100-entry scans in an explicit snapshot (read transaction), idle and while a
//!   writer thread overwrites random keys (sled has no snapshots and is left out).
//! - `open`: a store of `keys` pairs is closed and opened again: the time to open and read
//!   one key (tenure rebuilds its index from the log; page cache warm).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use super::engines::{self, Engine};
use super::{key, run_for, shaped_key, shaped_value, value, Latencies, Metrics, Rng, Zipf};
use super::{BATCH_PAIRS, KEY_BYTES, VALUE_BYTES};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, Error>;

/// The new workloads, in run order.
pub const WORKLOADS: [&str; 8] = [
    "get",
    "shape16",
    "blob",
    "commit",
    "cas",
    "snapshot",
    "open",
    "open_after_kill",
];

/// Zipf exponent of the skewed gets.
pub const ZIPF_THETA: f64 = 0.99;
/// Threads of the oversubscribed get row.
pub const OVERSUBSCRIBED_THREADS: u64 = 8;
/// Writer threads of the group-commit rows.
pub const GROUP_THREADS: [u64; 3] = [2, 4, 16];
/// Hot keys of the contended compare-and-set row.
pub const HOT_KEYS: u64 = 16;
/// Blob sizes: (metric label, bytes).
pub const BLOBS: [(&str, usize); 3] = [("4k", 4 << 10), ("64k", 64 << 10), ("1m", 1 << 20)];

/// Runs workload `workload` against `engine`, or `None` when it is not one of these.
pub fn run(
    workload: &str,
    engine: &str,
    keys: u64,
    measure: Duration,
    round: u64,
    directory: &Path,
) -> Option<Result<Metrics>> {
    let seed = round.wrapping_mul(1_000_003) ^ 0xE7;
    Some(match workload {
        "get" => gets(
            engine,
            keys,
            measure,
            seed,
            directory,
            KEY_BYTES,
            VALUE_BYTES,
            "",
        ),
        "shape16" => gets(engine, keys, measure, seed, directory, 16, 100, "s16_"),
        "blob" => blobs(engine, keys, measure, seed, directory),
        "commit" => commits(engine, measure, directory),
        "cas" => hot_cas(engine, measure, seed, directory),
        "snapshot" => snapshot_scans(engine, keys, measure, seed, directory),
        "open" => reopen(engine, keys, directory, "open"),
        "open_large" => reopen(engine, keys, directory, "open_large"),
        "open_after_kill" => reopen_after_kill(engine, keys, round, directory),
        // Not a workload of its own: the process `open_after_kill` kills.
        LOAD_AND_WAIT => load_and_wait(engine, keys, directory),
        _ => return None,
    })
}

/// Writes items `0..keys` of the shape in commits of [`BATCH_PAIRS`], then syncs. Returns
/// the time spent in the engine (building the pairs is not timed).
fn load(
    engine: &dyn Engine,
    keys: u64,
    key_length: usize,
    value_length: usize,
) -> Result<Duration> {
    let mut spent = Duration::ZERO;
    let mut owned: Vec<(super::Key, Vec<u8>)> = Vec::with_capacity(BATCH_PAIRS);
    let mut index = 0;
    while index < keys {
        let end = (index + BATCH_PAIRS as u64).min(keys);
        owned.clear();
        for i in index..end {
            let mut value = Vec::with_capacity(value_length);
            shaped_value(i, 0, value_length, &mut value);
            owned.push((shaped_key(i, key_length), value));
        }
        let pairs: Vec<(&[u8], &[u8])> = owned
            .iter()
            .map(|(key, value)| (&key[..key_length], &value[..]))
            .collect();
        let start = Instant::now();
        engine.put_many(&pairs)?;
        spent += start.elapsed();
        index = end;
    }
    let start = Instant::now();
    engine.sync()?;
    Ok(spent + start.elapsed())
}

/// Which keys a get pass reads.
#[derive(Clone, Copy)]
enum Pick {
    Uniform,
    Zipf,
    Miss,
}

/// Nanoseconds per get on one thread, `measure` long.
#[allow(clippy::too_many_arguments)]
fn get_pass(
    engine: &dyn Engine,
    keys: u64,
    key_length: usize,
    pick: Pick,
    zipf: &Zipf,
    measure: Duration,
    seed: u64,
    sink: &mut u64,
) -> Result<f64> {
    let mut reader = engine.reader()?;
    let mut rng = Rng::new(seed);
    let mut failed: Option<Error> = None;
    let (count, elapsed) = run_for(measure, |_| {
        let (index, hit) = match pick {
            Pick::Uniform => (rng.below(keys), true),
            Pick::Zipf => (zipf.index(&mut rng), true),
            // Never written: past the loaded range, same key format.
            Pick::Miss => (keys + rng.below(keys), false),
        };
        let key = shaped_key(index, key_length);
        match reader.lookup(&key[..key_length], false) {
            Ok(Some(fold)) if hit => *sink = sink.wrapping_add(fold),
            Ok(None) if !hit => *sink = sink.wrapping_add(1),
            Ok(found) => {
                failed = Some(format!("key {index}: expected hit={hit}, got {found:?}").into())
            }
            Err(error) => failed = Some(error),
        }
    });
    match failed {
        Some(error) => Err(error),
        None => Ok(elapsed.as_nanos() as f64 / count as f64),
    }
}

/// Uniform hits on `threads` threads at once: gets/s of all of them over the longest wall time.
fn get_threads(
    engine: &dyn Engine,
    keys: u64,
    key_length: usize,
    threads: u64,
    measure: Duration,
    seed: u64,
) -> Result<f64> {
    let barrier = Barrier::new(threads as usize);
    let results: Vec<Result<(u64, Duration)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let barrier = &barrier;
                scope.spawn(move || -> Result<(u64, Duration)> {
                    let mut reader = engine.reader()?;
                    let mut rng = Rng::new(seed ^ (thread + 100));
                    let mut failed: Option<Error> = None;
                    let mut fold = 0u64;
                    barrier.wait();
                    let (count, elapsed) = run_for(measure, |_| {
                        let key = shaped_key(rng.below(keys), key_length);
                        match reader.lookup(&key[..key_length], false) {
                            Ok(Some(value)) => fold = fold.wrapping_add(value),
                            Ok(None) => failed = Some("a written key is missing".into()),
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
    Ok(total as f64 / longest.as_secs_f64())
}

#[allow(clippy::too_many_arguments)]
fn gets(
    name: &str,
    keys: u64,
    measure: Duration,
    seed: u64,
    directory: &Path,
    key_length: usize,
    value_length: usize,
    prefix: &str,
) -> Result<Metrics> {
    let engine = engines::open(name, directory)?;
    let mut metrics = Metrics::new();
    let loaded = load(&*engine, keys, key_length, value_length)?;
    metrics.insert(
        format!("{prefix}load_pairs_per_s"),
        keys as f64 / loaded.as_secs_f64(),
    );
    let zipf = Zipf::new(keys, ZIPF_THETA);
    let mut sink = 0u64;
    // Untimed warm-up, then each distribution once.
    get_pass(
        &*engine,
        keys,
        key_length,
        Pick::Uniform,
        &zipf,
        measure / 4,
        seed ^ 1,
        &mut sink,
    )?;
    for (label, pick, salt) in [
        ("uniform", Pick::Uniform, 2),
        ("zipf", Pick::Zipf, 3),
        ("miss", Pick::Miss, 4),
    ] {
        let ns = get_pass(
            &*engine,
            keys,
            key_length,
            pick,
            &zipf,
            measure,
            seed ^ salt,
            &mut sink,
        )?;
        metrics.insert(format!("{prefix}get_{label}_ns"), ns);
    }
    if prefix.is_empty() {
        let rate = get_threads(
            &*engine,
            keys,
            key_length,
            OVERSUBSCRIBED_THREADS,
            measure,
            seed ^ 5,
        )?;
        metrics.insert("get8_ops_per_s".into(), rate);
        metrics.insert("get8_vs_1t".into(), rate * metrics["get_uniform_ns"] / 1e9);
    }
    std::hint::black_box(sink);
    Ok(metrics)
}

/// Incompressible bytes the blobs are cut from (2 MiB + 8), so building one costs a copy.
fn blob_pool(seed: u64) -> Vec<u8> {
    let mut pool = Vec::new();
    shaped_value(seed, 0, (2 << 20) + 8, &mut pool);
    pool
}

/// Blob `index` of `size` bytes: its index in the first 8 bytes, then a slice of the pool
/// starting at a hashed, 8-aligned offset.
fn blob(pool: &[u8], index: u64, size: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&index.to_le_bytes());
    let offset = (super::mix(index) % (1 << 20)) as usize & !7;
    out.extend_from_slice(&pool[offset..offset + size - 8]);
}

fn blobs(name: &str, keys: u64, measure: Duration, seed: u64, directory: &Path) -> Result<Metrics> {
    let engine = engines::open(name, directory)?;
    let mut metrics = Metrics::new();
    let pool = blob_pool(seed);
    // Bytes written per size: `keys` KiB, between 4 and 128 MiB (and at least 8 blobs).
    let budget = (keys << 10).clamp(4 << 20, 128 << 20) as usize;
    let mut buffer = Vec::with_capacity((1 << 20) + 8);
    let mut sink = 0u64;
    for (size_index, (label, size)) in BLOBS.iter().enumerate() {
        let count = (budget / size).max(8) as u64;
        // Keys of this size's blobs: their own range of indexes.
        let base = (size_index as u64 + 1) << 40;
        let mut samples = Vec::with_capacity(count as usize);
        for index in 0..count {
            let key = key(base + index);
            blob(&pool, base + index, *size, &mut buffer);
            let start = Instant::now();
            engine.put_many(&[(&key[..], &buffer[..])])?;
            samples.push(start.elapsed().as_nanos() as u64);
        }
        let puts = Latencies(samples);
        metrics.insert(format!("blob_{label}_put_ns"), puts.mean());
        metrics.insert(format!("blob_{label}_put_p99_ns"), puts.quantile(0.99));
        engine.sync()?;
        let mut reader = engine.reader()?;
        let mut rng = Rng::new(seed ^ size_index as u64);
        let mut failed: Option<Error> = None;
        let mut pass = |sink: &mut u64, measure: Duration| {
            run_for(measure, |_| {
                let key = key(base + rng.below(count));
                match reader.lookup(&key, true) {
                    Ok(Some(fold)) => *sink = sink.wrapping_add(fold),
                    Ok(None) => failed = Some("a written blob is missing".into()),
                    Err(error) => failed = Some(error),
                }
            })
        };
        pass(&mut sink, measure / 4);
        let (done, elapsed) = pass(&mut sink, measure);
        if let Some(error) = failed {
            return Err(error);
        }
        metrics.insert(
            format!("blob_{label}_get_ns"),
            elapsed.as_nanos() as f64 / done as f64,
        );
    }
    std::hint::black_box(sink);
    Ok(metrics)
}

/// Times single-put commits of new keys from `first` on, `measure` long (at least 16).
fn single_commits(engine: &dyn Engine, first: u64, measure: Duration) -> Result<Latencies> {
    let mut samples = Vec::new();
    let begun = Instant::now();
    let mut index = first;
    while samples.len() < 16 || begun.elapsed() < measure {
        let key = key(index);
        let value = value(index, 0);
        let start = Instant::now();
        engine.put_many(&[(&key[..], &value[..])])?;
        samples.push(start.elapsed().as_nanos() as u64);
        index += 1;
    }
    Ok(Latencies(samples))
}

fn commits(name: &str, measure: Duration, directory: &Path) -> Result<Metrics> {
    let mut metrics = Metrics::new();
    let durable = engines::open_with(name, &directory.join("durable"), true)?;
    // Single durable commits, one thread (a short untimed warm-up first).
    single_commits(&*durable, 1 << 50, measure / 4)?;
    let single = single_commits(&*durable, 0, measure)?;
    metrics.insert("commit_sync_ns".into(), single.mean());
    metrics.insert("commit_sync_p99_ns".into(), single.quantile(0.99));
    let single_rate = 1e9 / single.mean();

    // Durable batches of 1,000 puts (at least 3 batches).
    {
        let mut pairs_owned: Vec<(super::Key, super::Value)> = Vec::with_capacity(BATCH_PAIRS);
        let mut batches = 0u64;
        let mut spent = Duration::ZERO;
        let mut index = 1u64 << 40;
        while batches < 3 || spent < measure {
            pairs_owned.clear();
            pairs_owned.extend((index..index + BATCH_PAIRS as u64).map(|i| (key(i), value(i, 0))));
            index += BATCH_PAIRS as u64;
            let pairs: Vec<(&[u8], &[u8])> = pairs_owned
                .iter()
                .map(|(key, value)| (&key[..], &value[..]))
                .collect();
            let start = Instant::now();
            durable.put_many(&pairs)?;
            spent += start.elapsed();
            batches += 1;
        }
        metrics.insert(
            "batch_sync_pairs_per_s".into(),
            (batches * BATCH_PAIRS as u64) as f64 / spent.as_secs_f64(),
        );
        metrics.insert(
            "batch_sync_ns".into(),
            spent.as_nanos() as f64 / batches as f64,
        );
    }

    // Group commit: `threads` writers, each committing single puts of its own new keys.
    for threads in GROUP_THREADS {
        let barrier = Barrier::new(threads as usize);
        let engine = &*durable;
        let results: Vec<Result<(u64, Duration)>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|thread| {
                    let barrier = &barrier;
                    scope.spawn(move || -> Result<(u64, Duration)> {
                        let base = (threads << 44) + ((thread + 1) << 32);
                        barrier.wait();
                        // Until the time is up (a durable commit is slow enough to check
                        // the clock after each), at least one commit per thread.
                        let start = Instant::now();
                        let mut count = 0u64;
                        loop {
                            let key = key(base + count);
                            let value = value(base + count, 0);
                            engine.put_many(&[(&key[..], &value[..])])?;
                            count += 1;
                            if start.elapsed() >= measure {
                                return Ok((count, start.elapsed()));
                            }
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("a writer thread panicked"))
                .collect()
        });
        let mut total = 0u64;
        let mut longest = Duration::ZERO;
        for result in results {
            let (count, elapsed) = result?;
            total += count;
            longest = longest.max(elapsed);
        }
        let rate = total as f64 / longest.as_secs_f64();
        metrics.insert(format!("group{threads}_commits_per_s"), rate);
        metrics.insert(format!("group{threads}_vs_1t"), rate / single_rate);
    }
    drop(durable);

    // Non-durable single commits, in a store of its own.
    let buffered = engines::open_with(name, &directory.join("buffered"), false)?;
    single_commits(&*buffered, 1 << 50, measure / 4)?;
    let single = single_commits(&*buffered, 0, measure)?;
    metrics.insert("commit_buffered_ns".into(), single.mean());
    metrics.insert("commit_buffered_p99_ns".into(), single.quantile(0.99));
    Ok(metrics)
}

fn hot_cas(name: &str, measure: Duration, seed: u64, directory: &Path) -> Result<Metrics> {
    let engine = engines::open(name, directory)?;
    load(&*engine, HOT_KEYS, KEY_BYTES, VALUE_BYTES)?;
    let barrier = Barrier::new(2);
    let engine = &*engine;
    let results: Vec<Result<(u64, u64, Duration)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2u64)
            .map(|thread| {
                let barrier = &barrier;
                scope.spawn(move || -> Result<(u64, u64, Duration)> {
                    let mut rng = Rng::new(seed ^ (thread + 50));
                    let mut written = 0u64;
                    let mut refused = 0u64;
                    let mut failed: Option<Error> = None;
                    let mut buffer = Vec::with_capacity(VALUE_BYTES);
                    barrier.wait();
                    let (_, elapsed) = run_for(measure, |_| {
                        let index = rng.below(HOT_KEYS);
                        let key = key(index);
                        let result = engine.version_of(&key).and_then(|version| {
                            shaped_value(index, version + 1, VALUE_BYTES, &mut buffer);
                            engine.put_if_version(&key, version, &buffer)
                        });
                        match result {
                            Ok(true) => written += 1,
                            Ok(false) => refused += 1,
                            Err(error) => failed = Some(error),
                        }
                    });
                    match failed {
                        Some(error) => Err(error),
                        None => Ok((written, refused, elapsed)),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().expect("a CAS thread panicked"))
            .collect()
    });
    let (mut written, mut refused, mut longest) = (0u64, 0u64, Duration::ZERO);
    for result in results {
        let (w, r, elapsed) = result?;
        written += w;
        refused += r;
        longest = longest.max(elapsed);
    }
    if written == 0 {
        return Err("no compare-and-set succeeded".into());
    }
    let seconds = longest.as_secs_f64();
    let mut metrics = Metrics::new();
    metrics.insert("cas_hot_ok_per_s".into(), written as f64 / seconds);
    metrics.insert(
        "cas_hot_attempts_per_s".into(),
        (written + refused) as f64 / seconds,
    );
    metrics.insert(
        "cas_hot_reject_pct".into(),
        100.0 * refused as f64 / (written + refused) as f64,
    );
    Ok(metrics)
}

/// Nanoseconds per 100-entry snapshot scan from random start keys, `measure` long.
fn scan_pass(
    engine: &dyn Engine,
    starts: &[Vec<u8>],
    measure: Duration,
    sink: &mut u64,
) -> Result<f64> {
    let mut reader = engine.reader()?;
    let mut failed: Option<Error> = None;
    let (count, elapsed) = run_for(measure, |done| {
        match reader.snapshot_scan(&starts[(done as usize) % starts.len()], 100) {
            Ok(fold) => *sink = sink.wrapping_add(fold),
            Err(error) => failed = Some(error),
        }
    });
    match failed {
        Some(error) => Err(error),
        None => Ok(elapsed.as_nanos() as f64 / count as f64),
    }
}

fn snapshot_scans(
    name: &str,
    keys: u64,
    measure: Duration,
    seed: u64,
    directory: &Path,
) -> Result<Metrics> {
    let engine = engines::open(name, directory)?;
    if !engine.has_snapshots() {
        return Err(format!("{name} has no snapshots").into());
    }
    load(&*engine, keys, KEY_BYTES, VALUE_BYTES)?;
    let mut rng = Rng::new(seed ^ 9);
    let starts: Vec<Vec<u8>> = (0..4096).map(|_| key(rng.below(keys)).to_vec()).collect();
    let mut metrics = Metrics::new();
    let mut sink = 0u64;
    scan_pass(&*engine, &starts, measure / 4, &mut sink)?;
    let idle = scan_pass(&*engine, &starts, measure, &mut sink)?;
    metrics.insert("scan100_ns".into(), idle);

    // The same scans while one writer overwrites random keys, one non-durable commit each.
    let stop = AtomicBool::new(false);
    let engine = &*engine;
    let (busy, writes) = std::thread::scope(|scope| -> Result<(f64, f64)> {
        let stop = &stop;
        let writer = scope.spawn(move || -> Result<(u64, Duration)> {
            let mut rng = Rng::new(seed ^ 13);
            let mut buffer = Vec::with_capacity(VALUE_BYTES);
            let start = Instant::now();
            let mut written = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let index = rng.below(keys);
                shaped_value(index, written + 1, VALUE_BYTES, &mut buffer);
                engine.put_many(&[(&key(index)[..], &buffer[..])])?;
                written += 1;
            }
            Ok((written, start.elapsed()))
        });
        // Let the writer get going, then time the scans.
        std::thread::sleep(Duration::from_millis(20));
        let scanned = scan_pass(engine, &starts, measure, &mut sink);
        stop.store(true, Ordering::Relaxed);
        let written = writer.join().expect("the writer panicked");
        let busy = scanned?;
        let (count, elapsed) = written?;
        Ok((busy, count as f64 / elapsed.as_secs_f64()))
    })?;
    metrics.insert("scan100_busy_ns".into(), busy);
    metrics.insert("scan100_writer_commits_per_s".into(), writes);
    metrics.insert("scan100_busy_vs_idle".into(), busy / idle);
    std::hint::black_box(sink);
    Ok(metrics)
}

/// Attempts at the timed reopen before its error is the run's (20 ms apart).
const REOPEN_ATTEMPTS: u32 = 50;

/// Loads `keys` items, closes, and times an open and one read; the metrics are named after
/// `workload` (`{workload}_ns`, `{workload}_disk_bytes`).
/// The process that `open_after_kill` starts runs this: loads the keys (synced, as `load`
/// ends), says so on stdout, and waits to be killed without closing its engine.
const LOAD_AND_WAIT: &str = "load_and_wait";
/// How long a loaded process waits for its SIGKILL before it gives up.
const LOAD_AND_WAIT_LIMIT: Duration = Duration::from_secs(600);

fn load_and_wait(name: &str, keys: u64, directory: &Path) -> Result<Metrics> {
    let engine = engines::open(name, directory)?;
    load(&*engine, keys, KEY_BYTES, VALUE_BYTES)?;
    use std::io::Write as _;
    println!("loaded");
    std::io::stdout().flush()?;
    std::thread::sleep(LOAD_AND_WAIT_LIMIT);
    drop(engine);
    Err("nobody killed the loaded process".into())
}

/// `open_after_kill`: a process of its own loads the keys and is killed with SIGKILL once they
/// are synced, its engine never closed; then the open and the read of one key are timed, as
/// in `open`. Recovery after a crash, where `open` measures it after a clean close.
fn reopen_after_kill(name: &str, keys: u64, round: u64, directory: &Path) -> Result<Metrics> {
    use std::io::BufRead as _;
    let mut loader = std::process::Command::new(std::env::current_exe()?)
        .arg("--child")
        .args(["--engine", name, "--workload", LOAD_AND_WAIT])
        .args(["--keys", &keys.to_string(), "--round", &round.to_string()])
        .arg("--dir")
        .arg(directory)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let stdout = loader.stdout.take().ok_or("no stdout from the loader")?;
    let loaded = std::io::BufReader::new(stdout)
        .lines()
        .any(|line| line.is_ok_and(|line| line == "loaded"));
    loader.kill()?;
    loader.wait()?;
    if !loaded {
        return Err("the loader ended before it loaded the keys".into());
    }
    let (disk, _) = super::disk_usage(directory);
    let probe = key(keys / 2);
    let start = Instant::now();
    let engine = engines::open(name, directory)?;
    let found = engine.reader()?.lookup(&probe, false)?;
    let elapsed = start.elapsed();
    if found.is_none() {
        return Err("a key synced before the kill is missing after the reopen".into());
    }
    let mut metrics = Metrics::new();
    metrics.insert("open_after_kill_ns".into(), elapsed.as_nanos() as f64);
    metrics.insert("open_after_kill_disk_bytes".into(), disk as f64);
    Ok(metrics)
}

fn reopen(name: &str, keys: u64, directory: &Path, workload: &str) -> Result<Metrics> {
    let close_started = {
        let engine = engines::open(name, directory)?;
        load(&*engine, keys, KEY_BYTES, VALUE_BYTES)?;
        Instant::now()
    };
    // The engine was dropped (closed) at the end of the block: tenure saves its index there.
    let close = close_started.elapsed();
    let (disk, _) = super::disk_usage(directory);
    let probe = key(keys / 2);
    // sled's flusher thread can hold its file lock for a moment after the handle is dropped,
    // so a failed open is retried a bounded number of times; each attempt is timed afresh.
    let mut attempt = 1;
    let (engine, start) = loop {
        let start = Instant::now();
        match engines::open(name, directory) {
            Ok(engine) => break (engine, start),
            Err(error) if attempt >= REOPEN_ATTEMPTS => return Err(error),
            Err(_) => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    let found = engine.reader()?.lookup(&probe, false)?;
    let elapsed = start.elapsed();
    if found.is_none() {
        return Err("a key written before the close is missing after the reopen".into());
    }
    let mut metrics = Metrics::new();
    metrics.insert(format!("{workload}_ns"), elapsed.as_nanos() as f64);
    metrics.insert(format!("{workload}_close_ns"), close.as_nanos() as f64);
    metrics.insert(format!("{workload}_disk_bytes"), disk as f64);
    Ok(metrics)
}
