//! The log layer's speed targets (issue "Engine foundation", section "Speed"), each measured
//! beside the raw baseline it is judged against, on real files in one directory under the
//! system temp dir (so on one disk):
//!
//! 1. `durable_append_200B`: one writer, `Durability::Sync`, 200 B records — against
//!    `pwrite` + `fdatasync` of 200 B (and, to tell the causes apart, against the same through a
//!    shared mapping, each on a `posix_fallocate`d file and on an already-written one).
//!    Target: tenure ≤ 1.1 × raw.
//! 2. `group_commit_sync_200B`: 1, 4 and 16 writer threads in `Sync` mode; one iteration is one
//!    record, so the reported rate is the aggregate. Target: 16 threads ≥ 0.8 × 16 × one.
//! 3. `buffered_append_200B`: 1 and 2 threads in `Buffered` mode. Target: ≥ 3 M records/s.
//! 4. `recovery_1GiB`: `Log::open` of a 1 GiB log (16 full 64 MiB segments of 4 KiB records)
//!    with a replay callback that touches every record, against `read(2)` of the same files
//!    from the page cache. Target: open ≤ 2 × read.
//!
//! `benches/report.py` turns criterion's estimates into the table with the ratios. Run:
//!
//! ```sh
//! CARGO_TARGET_DIR=/tmp/target-bench cargo bench -p tenure-benches --bench log -- \
//!     --warm-up-time 1 --measurement-time 3
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
use tenure::{Durability, FileStorage, Log, Storage};
use tenure_benches::{
    build_log, log_options, open_log, read_sequentially, segment_files, time_on_threads, Prepared,
    RawAppender, WritePath, SMALL_RECORD_BYTES, SMALL_RECORD_STRIDE,
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

/// Target 1: durable single-writer append vs raw pwrite + fdatasync, side by side.
fn durable_append(c: &mut Criterion) {
    let directory = bench_directory("bench-durable");
    let payload = small_payload();
    let mut group = c.benchmark_group("durable_append_200B");
    group.throughput(Throughput::Elements(1));

    let mut log: Option<Log> = None;
    group.bench_function("tenure_sync", |b| {
        let log =
            log.get_or_insert_with(|| open_log(&directory.path().join("store"), Durability::Sync));
        b.iter(|| log.append(&payload).expect("durable append"));
    });
    drop(log);

    // The baselines write 200 B at the same 224 B stride as tenure's records, into a file as
    // long as one segment.
    let baselines = [
        (
            "raw_pwrite_fdatasync_fallocated",
            Prepared::Fallocated,
            WritePath::Pwrite,
        ),
        (
            "raw_pwrite_fdatasync_prewritten",
            Prepared::Prewritten,
            WritePath::Pwrite,
        ),
        (
            "raw_mmap_fdatasync_fallocated",
            Prepared::Fallocated,
            WritePath::Mmap,
        ),
        (
            "raw_mmap_fdatasync_prewritten",
            Prepared::Prewritten,
            WritePath::Mmap,
        ),
    ];
    for (name, prepared, write_path) in baselines {
        let mut raw: Option<RawAppender> = None;
        group.bench_function(name, |b| {
            let raw = raw.get_or_insert_with(|| {
                RawAppender::create(
                    &directory.path().join(format!("{name}.raw")),
                    log_options(Durability::Sync).segment_size_bytes,
                    SMALL_RECORD_STRIDE,
                    prepared,
                    write_path,
                )
                .expect("create the baseline file")
            });
            b.iter(|| raw.append(&payload).expect("raw durable write"));
        });
    }
    group.finish();
}

/// Target 2: group commit — the aggregate rate of N writers in `Sync` mode.
fn group_commit(c: &mut Criterion) {
    let directory = bench_directory("bench-group-commit");
    let payload = small_payload();
    let mut group = c.benchmark_group("group_commit_sync_200B");
    group.throughput(Throughput::Elements(1));
    let mut log: Option<Log> = None;
    for threads in [1usize, 4, 16] {
        group.bench_with_input(
            BenchmarkId::new("threads", threads),
            &threads,
            |b, &threads| {
                let log = &*log.get_or_insert_with(|| {
                    open_log(&directory.path().join("store"), Durability::Sync)
                });
                b.iter_custom(|iterations| {
                    time_on_threads(threads, iterations, |_, count| {
                        for _ in 0..count {
                            log.append(&payload).expect("durable append");
                        }
                    })
                });
            },
        );
    }
    group.finish();
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
            if let Some(mut log) = self.log.take() {
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
        let segments = segment_files(&store);
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

    group.bench_function("read_page_cache_1MiB_buffer", |b| {
        let log = built.get_or_insert_with(RecoveryLog::build);
        // The first read brings every file into the page cache if it is not there yet.
        read_sequentially(&log.segments, &mut buffer);
        b.iter(|| {
            let (total, touched) = read_sequentially(&log.segments, &mut buffer);
            assert_eq!(total, log.bytes);
            touched
        });
    });
    group.bench_function("tenure_open", |b| {
        let log = built.get_or_insert_with(RecoveryLog::build);
        read_sequentially(&log.segments, &mut buffer);
        b.iter_custom(|iterations| (0..iterations).map(|_| log.time_open()).sum());
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
