//! Soak: a mixed load from many threads with compaction running, for a fixed time, watching
//! the process's anonymous memory (heap and index, not the mapped log) and checking every
//! thread's own items as it goes and after a reopen.
//!
//! ```text
//! cargo run --release -p tenure-testkit --bin soak -- --duration-seconds 600   # the full soak
//! cargo run --release -p tenure-testkit --bin soak -- --duration-seconds 120   # the CI version
//! ```
//!
//! Exit status 0 when every check held and the live heap grew at most `--max-growth-percent`
//! after warm-up; 1 otherwise. Resident anonymous memory is reported beside it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tenure::{
    Conditions, ContainerOptions, Durability, ErrorCode, LeaseRequest, ReadOptions, Store,
    StoreOptions, Ttl, Version, WriteOptions,
};
use tenure_testkit::TempDir;

/// Counts the bytes the process holds on the heap, so the report can tell a leak (live heap
/// bytes grow) from allocator fragmentation (resident memory grows, live bytes do not).
struct CountingAllocator;

static LIVE_HEAP_BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is kept.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let pointer = std::alloc::System.alloc(layout);
        if !pointer.is_null() {
            LIVE_HEAP_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(pointer, layout);
        LIVE_HEAP_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
    }

    unsafe fn realloc(
        &self,
        pointer: *mut u8,
        layout: std::alloc::Layout,
        new_size: usize,
    ) -> *mut u8 {
        let moved = std::alloc::System.realloc(pointer, layout, new_size);
        if !moved.is_null() {
            LIVE_HEAP_BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
            LIVE_HEAP_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const CONTAINER: &str = "soak";
/// Items each thread owns and checks (only that thread writes them).
const OWNED_KEYS_PER_THREAD: u32 = 4_000;
/// Items every thread contends on with conditional writes, leases and locks.
const SHARED_KEYS: u32 = 256;
const VALUE_BYTES_MAX: usize = 400;
/// Anonymous memory is sampled this often.
const SAMPLE_INTERVAL: Duration = Duration::from_millis(500);

struct Settings {
    duration: Duration,
    warmup: Duration,
    threads: usize,
    max_growth_percent: f64,
    seed: u64,
    directory: Option<PathBuf>,
}

fn parse_settings() -> Result<Settings, String> {
    let mut settings = Settings {
        duration: Duration::from_secs(600),
        warmup: Duration::ZERO,
        threads: 8,
        max_growth_percent: 10.0,
        seed: 1,
        directory: None,
    };
    let mut warmup_given = false;
    let mut arguments = std::env::args().skip(1);
    while let Some(flag) = arguments.next() {
        let mut value = || {
            arguments
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let number = |text: String, name: &str| -> Result<u64, String> {
            text.parse::<u64>()
                .map_err(|_| format!("{name}: expected a whole number, got {text:?}"))
        };
        match flag.as_str() {
            "--duration-seconds" => {
                settings.duration = Duration::from_secs(number(value()?, "--duration-seconds")?)
            }
            "--warmup-seconds" => {
                settings.warmup = Duration::from_secs(number(value()?, "--warmup-seconds")?);
                warmup_given = true;
            }
            "--threads" => settings.threads = number(value()?, "--threads")? as usize,
            "--max-growth-percent" => {
                let text = value()?;
                settings.max_growth_percent = text
                    .parse()
                    .map_err(|_| format!("--max-growth-percent: expected a number, got {text:?}"))?
            }
            "--seed" => settings.seed = number(value()?, "--seed")?,
            "--dir" => settings.directory = Some(PathBuf::from(value()?)),
            "--help" | "-h" => {
                return Err(
                    "usage: soak [--duration-seconds N] [--warmup-seconds N] [--threads N] \
                            [--max-growth-percent P] [--seed S] [--dir DIR]"
                        .to_string(),
                )
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if settings.threads == 0 || settings.threads > 256 {
        return Err("--threads: must be 1..=256".to_string());
    }
    if settings.duration < Duration::from_secs(30) {
        return Err("--duration-seconds: must be at least 30".to_string());
    }
    if !warmup_given {
        // A fifth of the run, and at least a minute: the index, the allocator's per-thread
        // arenas and epoch garbage reach their working size within it (in a 2-minute trial
        // anonymous memory rose from 44 to 58 MiB between 30 and 40 s, then stayed flat).
        settings.warmup =
            (settings.duration / 5).max(Duration::from_secs(60).min(settings.duration / 2));
    }
    if settings.warmup >= settings.duration {
        return Err("--warmup-seconds: must be shorter than the run".to_string());
    }
    Ok(settings)
}

fn store_options() -> StoreOptions {
    StoreOptions {
        durability: Durability::Buffered,
        // Small segments so compaction runs many times in the soak.
        segment_size_bytes: 4 << 20,
        background_compaction_interval: Some(Duration::from_millis(100)),
        background_compaction_sealed_segments: 2,
        ..StoreOptions::default()
    }
}

/// Anonymous resident bytes (heap, index, thread stacks) from /proc/self/status: the mapped
/// log segments are file-backed and do not count.
fn anonymous_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("RssAnon:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kibibytes| kibibytes * 1024)
}

fn owned_key(thread: usize, index: u32) -> Vec<u8> {
    format!("t{thread:03}/k{index:06}").into_bytes()
}

fn shared_key(index: u32) -> Vec<u8> {
    format!("shared/{index:04}").into_bytes()
}

fn value_of(rng: &mut SmallRng, thread: usize, counter: u64) -> Vec<u8> {
    let length = rng.gen_range(16..VALUE_BYTES_MAX);
    let mut value = format!("{thread}:{counter}:").into_bytes();
    value.resize(length.max(value.len()), b'v');
    value
}

#[derive(Default)]
struct Counts {
    operations: AtomicU64,
    conflicts: AtomicU64,
    failures: AtomicU64,
}

/// What one thread expects of the items it owns: the value (None = deleted) and its version.
type Expected = HashMap<u32, Option<(Vec<u8>, Version)>>;

/// Failures printed in full; the rest are only counted.
const FAILURES_PRINTED: u64 = 20;

fn fail(counts: &Counts, message: String) {
    if counts.failures.fetch_add(1, Ordering::Relaxed) < FAILURES_PRINTED {
        eprintln!("FAIL: {message}");
    }
}

/// Rejections a correct store gives under contention; anything else is a failure. A plain or
/// conditional write on a locked item replaces it and releases the lock (docs/spec.md §6), so the
/// locker's put_and_unlock may then find no lock, or another client's lock.
fn expected_contention(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::ConditionNotMet
            | ErrorCode::LeaseAlreadyPresent
            | ErrorCode::LeaseIdMissing
            | ErrorCode::ObjectLocked
            | ErrorCode::ObjectNotLocked
            | ErrorCode::InvalidLockHandle
            | ErrorCode::NotFound
            | ErrorCode::LeaseIdMismatchWithLeaseOperation
    )
}

fn worker(
    store: &Store,
    thread: usize,
    seed: u64,
    stop: &AtomicBool,
    counts: &Counts,
    expected: &mut Expected,
) {
    let mut rng = SmallRng::seed_from_u64(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9));
    let mut counter = 0u64;
    let read = ReadOptions::default();
    let plain = WriteOptions::default();
    while !stop.load(Ordering::Relaxed) {
        counter += 1;
        let owned = rng.gen_range(0..OWNED_KEYS_PER_THREAD);
        let key = owned_key(thread, owned);
        let choice = rng.gen_range(0..100);
        let outcome: Result<(), tenure::Error> = match choice {
            // Reads of own items: must see exactly what this thread last wrote.
            0..=34 => {
                let got = store.get(CONTAINER, &key, &read);
                match (expected.get(&owned).cloned().flatten(), got) {
                    (Some((value, version)), Ok(item)) => {
                        if item.value.as_deref() != Some(&value[..]) || item.version != version {
                            fail(
                                counts,
                                format!("thread {thread}: key {owned} read a stale item"),
                            );
                        }
                    }
                    (None, Err(error)) if error.code() == ErrorCode::NotFound => {}
                    (want, got) => fail(
                        counts,
                        format!(
                            "thread {thread}: key {owned} expected present={} got {:?}",
                            want.is_some(),
                            got.map(|item| item.version)
                        ),
                    ),
                }
                Ok(())
            }
            35..=59 => {
                let value = value_of(&mut rng, thread, counter);
                store.put(CONTAINER, &key, &value, &plain).map(|etag| {
                    expected.insert(owned, Some((value, etag.version())));
                })
            }
            // A conditional write on the thread's own item: it must always win.
            60..=64 => match expected.get(&owned).cloned().flatten() {
                Some((_, version)) => {
                    let value = value_of(&mut rng, thread, counter);
                    let options = WriteOptions::with_conditions(Conditions::if_version(version));
                    store.put(CONTAINER, &key, &value, &options).map(|etag| {
                        expected.insert(owned, Some((value, etag.version())));
                    })
                }
                None => Ok(()),
            },
            65..=69 => match store.delete(CONTAINER, &key, &plain) {
                Ok(()) => {
                    expected.insert(owned, None);
                    Ok(())
                }
                Err(error) if error.code() == ErrorCode::NotFound => {
                    expected.insert(owned, None);
                    Ok(())
                }
                Err(error) => Err(error),
            },
            70..=74 => {
                let mut batch = store.batch();
                let mut written = Vec::new();
                for _ in 0..8 {
                    let index = rng.gen_range(0..OWNED_KEYS_PER_THREAD);
                    if written.iter().any(|(existing, _)| *existing == index) {
                        continue;
                    }
                    let value = value_of(&mut rng, thread, counter);
                    batch.put(CONTAINER, &owned_key(thread, index), &value, plain.clone());
                    written.push((index, value));
                }
                batch.commit().map(|version| {
                    for (index, value) in written {
                        expected.insert(index, Some((value, version)));
                    }
                })
            }
            // Contended read-modify-write on shared items.
            75..=84 => {
                let shared = shared_key(rng.gen_range(0..SHARED_KEYS));
                store
                    .update(CONTAINER, &shared, 100, |current| {
                        let mut next = current.to_vec();
                        next.truncate(VALUE_BYTES_MAX - 8);
                        next.push(b'+');
                        next
                    })
                    .map(|_| ())
            }
            85..=89 => {
                let shared = shared_key(rng.gen_range(0..SHARED_KEYS));
                match store.acquire_lease(CONTAINER, &shared, &LeaseRequest::infinite()) {
                    Ok(lease) => {
                        let options = WriteOptions {
                            lease_id: Some(lease.id),
                            ..WriteOptions::default()
                        };
                        let value = value_of(&mut rng, thread, counter);
                        store
                            .put(CONTAINER, &shared, &value, &options)
                            .and_then(|_| store.release_lease(CONTAINER, &shared, lease.id))
                    }
                    Err(error) => Err(error),
                }
            }
            90..=93 => {
                let shared = shared_key(rng.gen_range(0..SHARED_KEYS));
                match store.get_and_lock(CONTAINER, &shared, Duration::from_secs(30), false) {
                    Ok((_, handle)) => {
                        let value = value_of(&mut rng, thread, counter);
                        store
                            .put_and_unlock(
                                CONTAINER,
                                &shared,
                                &value,
                                handle,
                                Ttl::ContainerDefault,
                            )
                            .map(|_| ())
                    }
                    Err(error) => Err(error),
                }
            }
            94..=97 => {
                let prefix = format!("t{thread:03}/").into_bytes();
                store.list(CONTAINER, &prefix, 20, None, true).map(|page| {
                    if page.items.iter().any(|item| !item.key.starts_with(&prefix)) {
                        fail(counts, format!("thread {thread}: list left its prefix"));
                    }
                })
            }
            _ => store.snapshot().and_then(|snapshot| {
                // Every item this thread owns that the snapshot sees is at or below it.
                snapshot.get(CONTAINER, &key, &read).map_or(Ok(()), |item| {
                    if item.version > snapshot.version() {
                        fail(
                            counts,
                            format!("thread {thread}: snapshot saw a later version"),
                        );
                    }
                    Ok(())
                })
            }),
        };
        match outcome {
            Ok(()) => {}
            Err(error) if expected_contention(error.code()) => {
                counts.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => fail(counts, format!("thread {thread}: unexpected error {error}")),
        }
        counts.operations.fetch_add(1, Ordering::Relaxed);
    }
}

fn check_after_reopen(store: &Store, expected: &[Expected], counts: &Counts) {
    for (thread, items) in expected.iter().enumerate() {
        for (index, want) in items {
            let got = store.get(
                CONTAINER,
                &owned_key(thread, *index),
                &ReadOptions::default(),
            );
            let same = match (want, &got) {
                (Some((value, version)), Ok(item)) => {
                    item.value.as_deref() == Some(&value[..]) && item.version == *version
                }
                (None, Err(error)) => error.code() == ErrorCode::NotFound,
                _ => false,
            };
            if !same {
                fail(
                    counts,
                    format!(
                        "after reopen: thread {thread} key {index} differs from what was written"
                    ),
                );
            }
        }
    }
}

/// The line `intercept + slope * x` closest to `points` (least squares); flat through the
/// mean when there are fewer than two distinct x.
fn least_squares(points: &[(f64, f64)]) -> (f64, f64) {
    let count = points.len().max(1) as f64;
    let mean_x = points.iter().map(|point| point.0).sum::<f64>() / count;
    let mean_y = points.iter().map(|point| point.1).sum::<f64>() / count;
    let spread: f64 = points.iter().map(|point| (point.0 - mean_x).powi(2)).sum();
    let covariance: f64 = points
        .iter()
        .map(|point| (point.0 - mean_x) * (point.1 - mean_y))
        .sum();
    let slope = if spread > 0.0 {
        covariance / spread
    } else {
        0.0
    };
    (mean_y - slope * mean_x, slope)
}

struct Sample {
    at: Duration,
    resident_bytes: u64,
    heap_bytes: u64,
}

/// One memory figure over the run: the least-squares line through every sample after warm-up,
/// read at the end of warm-up and at the end of the run. The heap is a sawtooth (compaction
/// frees and allocates in bursts); a trend fitted to all samples measures a leak, where two
/// short windows would let where the teeth fall decide it.
struct Growth {
    after_warmup_bytes: u64,
    end_bytes: u64,
    peak_bytes: u64,
    percent: f64,
}

impl Growth {
    fn of(
        samples: &[Sample],
        warmup: Duration,
        elapsed: Duration,
        figure: impl Fn(&Sample) -> u64,
    ) -> Growth {
        let points: Vec<(f64, f64)> = samples
            .iter()
            .filter(|sample| sample.at >= warmup)
            .map(|sample| (sample.at.as_secs_f64(), figure(sample) as f64))
            .collect();
        let (intercept, slope) = least_squares(&points);
        let at = |time: Duration| (intercept + slope * time.as_secs_f64()).max(0.0);
        let (after_warmup, end) = (at(warmup), at(elapsed));
        Growth {
            after_warmup_bytes: after_warmup as u64,
            end_bytes: end as u64,
            peak_bytes: samples.iter().map(&figure).max().unwrap_or(0),
            percent: (end / after_warmup.max(1.0) - 1.0) * 100.0,
        }
    }

    fn describe(&self) -> String {
        let mebibytes = |bytes: u64| bytes as f64 / (1 << 20) as f64;
        format!(
            "{:.1} MiB after warm-up, {:.1} MiB at the end (least-squares trend), peak {:.1} MiB: growth {:+.1} %",
            mebibytes(self.after_warmup_bytes),
            mebibytes(self.end_bytes),
            mebibytes(self.peak_bytes),
            self.percent
        )
    }
}

fn run(settings: &Settings) -> Result<bool, tenure::Error> {
    let temporary;
    let directory = match &settings.directory {
        Some(directory) => directory.clone(),
        None => {
            temporary = TempDir::new("soak");
            temporary.path().join("store")
        }
    };
    let store = Store::open(&directory, store_options())?;
    store.create_container(CONTAINER, &ContainerOptions::default())?;
    for index in 0..SHARED_KEYS {
        store.put(
            CONTAINER,
            &shared_key(index),
            b"0",
            &WriteOptions::default(),
        )?;
    }
    println!(
        "soak: {} threads, {} s ({} s warm-up), store at {}",
        settings.threads,
        settings.duration.as_secs(),
        settings.warmup.as_secs(),
        directory.display()
    );

    let stop = AtomicBool::new(false);
    let counts = Counts::default();
    let mut expected: Vec<Expected> = (0..settings.threads).map(|_| Expected::new()).collect();
    let mut samples: Vec<Sample> = Vec::new();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for (thread, items) in expected.iter_mut().enumerate() {
            let (store, stop, counts) = (&store, &stop, &counts);
            scope.spawn(move || worker(store, thread, settings.seed, stop, counts, items));
        }
        let mut next_report = Duration::from_secs(10);
        while started.elapsed() < settings.duration {
            std::thread::sleep(SAMPLE_INTERVAL);
            let elapsed = started.elapsed();
            samples.push(Sample {
                at: elapsed,
                resident_bytes: anonymous_resident_bytes(),
                heap_bytes: LIVE_HEAP_BYTES.load(Ordering::Relaxed),
            });
            if elapsed >= next_report {
                next_report += Duration::from_secs(10);
                println!(
                    "  {:>4} s: {} operations, anonymous memory {:.1} MiB (live heap {:.1} MiB), \
                     log {:.1} MiB",
                    elapsed.as_secs(),
                    counts.operations.load(Ordering::Relaxed),
                    samples.last().map_or(0, |sample| sample.resident_bytes) as f64
                        / (1 << 20) as f64,
                    samples.last().map_or(0, |sample| sample.heap_bytes) as f64 / (1 << 20) as f64,
                    store.log_bytes() as f64 / (1 << 20) as f64
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed();

    let heap = Growth::of(&samples, settings.warmup, elapsed, |sample| {
        sample.heap_bytes
    });
    let resident = Growth::of(&samples, settings.warmup, elapsed, |sample| {
        sample.resident_bytes
    });

    store.close()?;
    let reopened = Store::open(&directory, store_options())?;
    check_after_reopen(&reopened, &expected, &counts);
    reopened.close()?;

    let operations = counts.operations.load(Ordering::Relaxed);
    let failures = counts.failures.load(Ordering::Relaxed);
    println!(
        "operations: {operations} in {:.0} s ({:.0}/s), {} rejected by contention as expected",
        elapsed.as_secs_f64(),
        operations as f64 / elapsed.as_secs_f64(),
        counts.conflicts.load(Ordering::Relaxed)
    );
    println!("live heap:        {}", heap.describe());
    println!("anonymous memory: {}", resident.describe());
    // The gate is the live heap, what tenure holds. Resident anonymous memory also counts what
    // glibc's per-thread arenas keep of freed memory: in a 200 s run it rose from 43 to 60 MiB
    // while the live heap stayed at 22-24 MiB. It is reported, not gated.
    let memory_ok = heap.percent <= settings.max_growth_percent;
    if !memory_ok {
        eprintln!(
            "FAIL: the live heap grew {:.1} % after warm-up (limit {} %)",
            heap.percent, settings.max_growth_percent
        );
    }
    println!("checks failed: {failures}");
    Ok(memory_ok && failures == 0 && operations > 0)
}

fn main() -> ExitCode {
    let settings = match parse_settings() {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("soak: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&settings) {
        Ok(true) => {
            println!("soak passed");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("soak FAILED");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("soak: the store failed: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::least_squares;

    #[test]
    fn least_squares_finds_a_line_through_noise() {
        // y = 100 + 2x with alternating noise of ±30: the noise cancels, the trend stays.
        let points: Vec<(f64, f64)> = (0..100)
            .map(|x| {
                let noise = if x % 2 == 0 { 30.0 } else { -30.0 };
                (x as f64, 100.0 + 2.0 * x as f64 + noise)
            })
            .collect();
        let (intercept, slope) = least_squares(&points);
        assert!((slope - 2.0).abs() < 0.05, "slope {slope}");
        assert!((intercept - 100.0).abs() < 3.0, "intercept {intercept}");
        assert_eq!(least_squares(&[(5.0, 7.0)]), (7.0, 0.0));
        assert_eq!(least_squares(&[]), (0.0, 0.0));
    }
}
