//! The log layer's speed targets (issue "Engine foundation", section "Speed"), each measured
//! beside the raw baseline it is judged against, on real files in one directory under the
//! system temp dir (so on one disk):
//!
//! 1. `durable_append_200B`: one writer, `Durability::Sync`, 200 B records — against
//!    `pwrite` + `fdatasync` of 200 B (and, to tell the causes apart, against the same through a
//!    shared mapping, each on a `posix_fallocate`d file and on an already-written one; and
//!    tenure again on a segment whose blocks were written beforehand). The writers take turns,
//!    one write each per round, and the group ends by printing the paired per-round ratios.
//!    Target: tenure ≤ 1.1 × raw.
//! 2. `group_commit_sync_200B`: 1, 4 and 16 writer threads in `Sync` mode; one iteration is one
//!    record per thread, so the reported elements/s are the aggregate records/s. Each timed
//!    sample is followed by as long an untimed run of the compared configuration, and the
//!    group ends by printing the ratio per pair of a 16-thread sample and the one-writer run
//!    after it. Target: 16 threads ≥ 0.8 × 16 × one.
//! 3. `buffered_append_200B`: 1 and 2 threads in `Buffered` mode. Target: ≥ 3 M records/s.
//! 4. `recovery_1GiB`: `Log::open` of a 1 GiB log (16 full 64 MiB segments of 4 KiB records)
//!    with a replay callback that touches every record, against `read(2)` of the same files
//!    from the page cache, each timed open paired with an untimed read and the other way round.
//!    Target: open ≤ 2 × read.
//!
//! `benches/report.py` turns criterion's estimates into the table with the ratios. Run:
//!
//! ```sh
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench -j1 -p tenure-benches --bench log -- \
//!     --warm-up-time 1 --measurement-time 3 --sample-size 20
//! python3 benches/report.py /tmp/target-bench/criterion
//! ```
//!
//! `TENURE_BENCH_RECOVERY_MIB` (default 1024) sets the size of the recovery log.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use tenure::internals::{FileStorage, Log, Storage};
use tenure::Durability;
use tenure_benches::{
    build_log, log_options, open_log, open_log_with_written_segment, read_sequentially,
    segment_files, time_on_threads, Prepared, RawAppender, WorkerPool, WritePath,
    SMALL_RECORD_BYTES, SMALL_RECORD_STRIDE,
};
use tenure_testkit::TempDir;

/// A fresh directory under the system temp dir, removed when dropped.
fn bench_directory(label: &str) -> TempDir {
    let directory = TempDir::new(label);
    std::fs::create_dir_all(directory.path()).expect("create the benchmark directory");
    directory
}

fn small_payload() -> Vec<u8> {
    (0..SMALL_RECORD_BYTES).map(|index| index as u8).collect()
}

/// The durable writers compared in target 1: tenure and its raw baselines.
const DURABLE_WRITERS: [&str; 6] = [
    "tenure_sync",
    "tenure_sync_written_segment",
    "raw_pwrite_fdatasync_fallocated",
    "raw_pwrite_fdatasync_prewritten",
    "raw_mmap_fdatasync_fallocated",
    "raw_mmap_fdatasync_prewritten",
];

/// The length of each baseline file: more than a short run writes at the 224 B stride, and
/// small enough that preparing it is not a write burst that slows the disk for what follows.
const BASELINE_FILE_BYTES: u64 = 32 << 20;

/// tenure and its raw baselines, written in turn. The disk's flush latency drifts by an order
/// of magnitude on these machines (other I/O, the host), so each measured write is taken in a
/// round that also writes once with every other writer: all of them meet the same conditions,
/// and their ratio stays meaningful even when the absolute figures move.
struct DurableRig {
    _directory: TempDir,
    log: Log,
    /// tenure again, on a segment whose blocks were all written beforehand.
    written: Log,
    raws: Vec<RawAppender>,
    payload: Vec<u8>,
    /// Every write's latency, per writer, in round order: rounds are paired samples.
    latencies: Vec<Vec<Duration>>,
    /// The state of the shuffle's random numbers.
    shuffle_state: u64,
}

impl DurableRig {
    fn new() -> DurableRig {
        let directory = bench_directory("bench-durable");
        let log = open_log(&directory.path().join("store"), Durability::Sync);
        let written =
            open_log_with_written_segment(&directory.path().join("written"), Durability::Sync);
        // The baselines write 200 B at the same 224 B stride as tenure's records, into a file
        // as long as one segment.
        let raws = [
            (Prepared::Fallocated, WritePath::Pwrite),
            (Prepared::Prewritten, WritePath::Pwrite),
            (Prepared::Fallocated, WritePath::Mmap),
            (Prepared::Prewritten, WritePath::Mmap),
        ]
        .into_iter()
        .zip(&DURABLE_WRITERS[2..])
        .map(|((prepared, write_path), name)| {
            RawAppender::create(
                &directory.path().join(format!("{name}.raw")),
                BASELINE_FILE_BYTES,
                SMALL_RECORD_STRIDE,
                prepared,
                write_path,
            )
            .expect("create a baseline file")
        })
        .collect();
        DurableRig {
            _directory: directory,
            log,
            written,
            raws,
            payload: small_payload(),
            latencies: vec![Vec::new(); DURABLE_WRITERS.len()],
            shuffle_state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn write(&mut self, writer: usize) {
        if writer == 0 {
            self.log.append(&self.payload).expect("durable append");
        } else if writer == 1 {
            self.written.append(&self.payload).expect("durable append");
        } else {
            self.raws[writer - 2]
                .append(&self.payload)
                .expect("raw durable write");
        }
    }

    /// One durable write with every writer, in an order shuffled afresh each round (so no
    /// writer always follows the same other one); returns how long `timed`'s write took.
    fn round(&mut self, timed: usize) -> Duration {
        let mut order: [usize; DURABLE_WRITERS.len()] = std::array::from_fn(|writer| writer);
        for index in (1..order.len()).rev() {
            // xorshift64: enough to shuffle, and the same sequence every run.
            self.shuffle_state ^= self.shuffle_state << 13;
            self.shuffle_state ^= self.shuffle_state >> 7;
            self.shuffle_state ^= self.shuffle_state << 17;
            order.swap(index, (self.shuffle_state % (index as u64 + 1)) as usize);
        }
        let mut elapsed = Duration::ZERO;
        for writer in order {
            let started = Instant::now();
            self.write(writer);
            let latency = started.elapsed();
            self.latencies[writer].push(latency);
            if writer == timed {
                elapsed = latency;
            }
        }
        elapsed
    }

    /// Criterion times each writer in its own benchmark, so a drift of the disk between them
    /// (these disks switch between ~60 µs and ~600 µs flushes) still skews their medians. Every
    /// round, though, timed all the writers back to back: the median over rounds of the ratio
    /// tenure / baseline is the paired figure, immune to that drift.
    fn print_paired(&self) {
        let median = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        let rounds = self.latencies[0].len();
        println!(
            "\ndurable_append_200B, paired over {rounds} rounds (every writer once per round):"
        );
        for (writer, name) in DURABLE_WRITERS.iter().enumerate() {
            let micros = |latency: &Duration| latency.as_secs_f64() * 1e6;
            let own = median(self.latencies[writer].iter().map(micros).collect());
            let ratio = median(
                self.latencies[0]
                    .iter()
                    .zip(&self.latencies[writer])
                    .map(|(tenure, other)| tenure.as_secs_f64() / other.as_secs_f64())
                    .collect(),
            );
            println!("  {name:<34} median {own:8.1} µs   tenure_sync / this, median per round {ratio:5.2}×");
        }
    }
}

/// Target 1: durable single-writer append vs raw pwrite + fdatasync, side by side.
fn durable_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable_append_200B");
    group.throughput(Throughput::Elements(1));
    let mut rig: Option<DurableRig> = None;
    for (timed, name) in DURABLE_WRITERS.iter().enumerate() {
        group.bench_function(*name, |b| {
            let rig = rig.get_or_insert_with(DurableRig::new);
            b.iter_custom(|iterations| (0..iterations).map(|_| rig.round(timed)).sum());
        });
    }
    group.finish();
    if let Some(rig) = &rig {
        if !rig.latencies[0].is_empty() {
            rig.print_paired();
        }
    }
}

/// Target 2: group commit — the aggregate rate of N writers in `Sync` mode. One iteration is
/// one record *per thread* (so a sample keeps every thread busy for many group commits, not
/// just the start-up transient); the throughput is N records per iteration. Each sample of one
/// configuration is followed by as long a run of its companion (1 thread ↔ 16 threads; 4 → 1),
/// untimed, so the configurations whose rates are compared meet the same disk conditions.
fn group_commit(c: &mut Criterion) {
    let directory = bench_directory("bench-group-commit");
    let payload = small_payload();
    let log = open_log(&directory.path().join("store"), Durability::Sync);
    let append = |_: usize, count: u64| {
        for _ in 0..count {
            log.append(&payload).expect("durable append");
        }
    };
    let mut group = c.benchmark_group("group_commit_sync_200B");
    std::thread::scope(|scope| {
        let pools: Vec<(usize, WorkerPool<'_>)> = [1usize, 4, 16]
            .into_iter()
            .map(|threads| (threads, WorkerPool::new(scope, threads, &append)))
            .collect();
        let pool_of = |threads: usize| {
            &pools
                .iter()
                .find(|(size, _)| *size == threads)
                .expect("a pool of that size")
                .1
        };
        // 16-thread samples and the one-writer run right after each: (records/s, records/s).
        let mut sixteen_beside_one: Vec<(f64, f64)> = Vec::new();
        for threads in [1usize, 4, 16] {
            let companion = pool_of(if threads == 1 { 16 } else { 1 });
            let pool = pool_of(threads);
            group.throughput(Throughput::Elements(threads as u64));
            group.bench_with_input(BenchmarkId::new("threads", threads), &threads, |b, _| {
                b.iter_custom(|iterations| {
                    let records = iterations * threads as u64;
                    let elapsed = pool.time(records);
                    // As many records on the companion as took about as long, untimed.
                    let companion_batch = records.clamp(1, 4096);
                    let (mut spent, mut companion_records) = (Duration::ZERO, 0);
                    while spent < elapsed {
                        spent += companion.time(companion_batch);
                        companion_records += companion_batch;
                    }
                    if threads == 16 {
                        sixteen_beside_one.push((
                            records as f64 / elapsed.as_secs_f64(),
                            companion_records as f64 / spent.as_secs_f64(),
                        ));
                    }
                    elapsed
                });
            });
        }
        group.finish();
        drop(pools);
        print_group_commit_paired(&sixteen_beside_one);
    });
}

/// The group-commit ratio per pair of a 16-thread sample and the one-writer run right after
/// it. The one-writer rate drifts with the disk (8.1–11.4 k/s between runs here) while the
/// 16-thread rate holds, so criterion's ratio of medians, taken minutes apart, follows the
/// drift; the median of per-pair ratios does not.
fn print_group_commit_paired(sixteen_beside_one: &[(f64, f64)]) {
    if sixteen_beside_one.is_empty() {
        return;
    }
    let mut ratios: Vec<f64> = sixteen_beside_one
        .iter()
        .map(|(sixteen, one)| sixteen / (16.0 * one))
        .collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    println!(
        "\ngroup_commit_sync_200B, paired over {} samples (16 threads, then one writer as long): \
         16 threads ÷ 16 × one writer, median per pair {median:.2} (lowest {:.2}, highest {:.2})",
        ratios.len(),
        ratios[0],
        ratios[ratios.len() - 1],
    );
}

/// A buffered store that is replaced by a fresh one once it holds a GiB, so a long run
/// neither fills the disk nor measures an ever larger page cache.
struct RollingStore {
    directory: Option<TempDir>,
    log: Option<Log>,
}

impl RollingStore {
    const LIMIT_BYTES: u64 = 1 << 30;

    fn log(&mut self) -> &Log {
        let full = self
            .log
            .as_ref()
            .is_some_and(|log| log.tail_offset() >= Self::LIMIT_BYTES);
        if full || self.log.is_none() {
            if let Some(log) = self.log.take() {
                log.close().expect("close the full buffered store");
            }
            self.directory = None;
            let directory = bench_directory("bench-buffered");
            self.log = Some(open_log(
                &directory.path().join("store"),
                Durability::Buffered,
            ));
            self.directory = Some(directory);
        }
        self.log.as_ref().expect("just opened")
    }
}

impl Drop for RollingStore {
    fn drop(&mut self) {
        // The log goes before its directory.
        self.log = None;
    }
}

/// Target 3: buffered appends of 200 B records.
fn buffered_append(c: &mut Criterion) {
    let payload = small_payload();
    let mut group = c.benchmark_group("buffered_append_200B");
    group.throughput(Throughput::Elements(1));
    let mut store = RollingStore {
        directory: None,
        log: None,
    };
    for threads in [1usize, 2] {
        group.bench_with_input(
            BenchmarkId::new("threads", threads),
            &threads,
            |b, &threads| {
                b.iter_custom(|iterations| {
                    let log = store.log();
                    time_on_threads(threads, iterations, |_, count| {
                        for _ in 0..count {
                            log.append(&payload).expect("buffered append");
                        }
                    })
                });
            },
        );
    }
    group.finish();
}

fn recovery_log_bytes() -> u64 {
    let mebibytes: u64 = std::env::var("TENURE_BENCH_RECOVERY_MIB")
        .ok()
        .map(|value| {
            value
                .parse()
                .expect("TENURE_BENCH_RECOVERY_MIB is a number")
        })
        .unwrap_or(1024);
    mebibytes << 20
}

/// A closed store whose segments hold `recovery_log_bytes()` of 4 KiB records.
struct RecoveryLog {
    _directory: TempDir,
    store: PathBuf,
    segments: Vec<PathBuf>,
    records: u64,
    bytes: u64,
}

impl RecoveryLog {
    const PAYLOAD_BYTES: usize = 4096;

    fn build() -> RecoveryLog {
        let directory = bench_directory("bench-recovery");
        let store = directory.path().join("store");
        let segment_bytes = log_options(Durability::Sync).segment_size_bytes;
        let record_bytes = (24 + Self::PAYLOAD_BYTES as u64).div_ceil(8) * 8;
        let segment_count = recovery_log_bytes().div_ceil(segment_bytes);
        // Whole segments' worth: the last record ends within the last segment's final record
        // slot, so no further segment is created.
        let records = segment_count * (segment_bytes / record_bytes);
        let started = Instant::now();
        build_log(&store, records, Self::PAYLOAD_BYTES);
        // Only the segments that hold records: the log prepares its next (empty) segment
        // ahead, and an open removes it again as stale, so that file comes and goes.
        let mut segments = segment_files(&store);
        segments.truncate(segment_count as usize);
        let bytes = segments
            .iter()
            .map(|path| std::fs::metadata(path).expect("stat a segment").len())
            .sum();
        eprintln!(
            "recovery_1GiB: built {records} records of {} B in {} segment files ({} MiB) in {:.1?}",
            Self::PAYLOAD_BYTES,
            segments.len(),
            bytes >> 20,
            started.elapsed()
        );
        RecoveryLog {
            _directory: directory,
            store,
            segments,
            records,
            bytes,
        }
    }

    /// Opens the store, touching every record, and returns the time `Log::open` took.
    fn time_open(&self) -> Duration {
        let storage: Arc<dyn Storage> = Arc::new(FileStorage::new(&self.store));
        let mut records = 0u64;
        let mut touched = 0u64;
        let started = Instant::now();
        let log = Log::open(storage, &log_options(Durability::Sync), &mut |record| {
            records += 1;
            touched = touched.wrapping_add(record.payload.len() as u64);
            Ok(())
        })
        .expect("reopen the recovery log");
        let elapsed = started.elapsed();
        drop(log);
        assert_eq!(records, self.records, "the scan found every record");
        std::hint::black_box(touched);
        elapsed
    }
}

/// Target 4: open (recovery scan) of a 1 GiB log vs reading its files from the page cache.
fn recovery(c: &mut Criterion) {
    let mut group = c.benchmark_group("recovery_1GiB");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    let mut built: Option<RecoveryLog> = None;
    let mut buffer = vec![0u8; 1 << 20];
    let bytes = recovery_log_bytes();
    group.throughput(Throughput::Bytes(bytes));

    // Each timed open is paired with an untimed read and the other way round, so both meet
    // the same CPU and memory contention.
    group.bench_function("read_page_cache_1MiB_buffer", |b| {
        let log = built.get_or_insert_with(RecoveryLog::build);
        // The first read brings every file into the page cache if it is not there yet.
        read_sequentially(&log.segments, &mut buffer);
        b.iter_custom(|iterations| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iterations {
                let started = Instant::now();
                let (total, touched) = read_sequentially(&log.segments, &mut buffer);
                elapsed += started.elapsed();
                assert_eq!(total, log.bytes);
                std::hint::black_box(touched);
                log.time_open();
            }
            elapsed
        });
    });
    group.bench_function("tenure_open", |b| {
        let log = built.get_or_insert_with(RecoveryLog::build);
        read_sequentially(&log.segments, &mut buffer);
        b.iter_custom(|iterations| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iterations {
                elapsed += log.time_open();
                read_sequentially(&log.segments, &mut buffer);
            }
            elapsed
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = durable_append, group_commit, buffered_append, recovery
}
criterion_main!(benches);
