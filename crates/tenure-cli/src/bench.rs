//! `tenure bench`: built-in workloads on a scratch store, one thread, printed as a table.
//! The demo's throughput run uses the same workloads.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use tenure::{
    Conditions, ContainerOptions, Durability, ETag, LeaseRequest, Store, StoreOptions, WriteOptions,
};

use crate::common::{self, CliError, CliResult, Output};

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Read one item (value copied out).
    Get,
    /// Unconditional put (last writer wins).
    Put,
    /// Put with --if-match the item's current ETag.
    ConditionalPut,
    /// Acquire a 15 s lease and release it (one op = both).
    Lease,
    /// Get-and-lock then unlock (one op = both).
    Lock,
    /// A batch of 10 puts, all or nothing.
    Batch,
    /// One page of 100 items, with values.
    List,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Get => "get",
            Workload::Put => "put",
            Workload::ConditionalPut => "conditional put",
            Workload::Lease => "lease acquire+release",
            Workload::Lock => "get-and-lock+unlock",
            Workload::Batch => "batch of 10 puts",
            Workload::List => "list page of 100",
        }
    }
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurabilityArg {
    /// A write returns once it is on stable storage (fdatasync, group commit).
    Sync,
    /// A write returns once it is in the page cache.
    Buffered,
}

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Scratch store directory; it must not exist yet. Default: a new directory under the
    /// system's temporary directory, removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// How long each workload runs, in milliseconds (1..=600000).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    pub duration_ms: u64,
    /// Workloads to run, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "get,put,conditional-put,lease,lock,batch,list"
    )]
    pub workloads: Vec<Workload>,
    /// Items preloaded and cycled through (1..=1000000).
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    pub keys: u64,
    /// Value size in bytes (0..=1048576).
    #[arg(long, default_value_t = 100, allow_negative_numbers = true)]
    pub value_size: usize,
    #[arg(long, value_enum, default_value = "sync")]
    pub durability: DurabilityArg,
}

/// One workload's result.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub workload: Workload,
    pub operations: u64,
    pub elapsed: Duration,
    /// Per-operation latencies in nanoseconds, sorted.
    pub latencies: Vec<u64>,
}

impl Measurement {
    pub fn per_second(&self) -> f64 {
        self.operations as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn percentile_micros(&self, fraction: f64) -> f64 {
        if self.latencies.is_empty() {
            return 0.0;
        }
        let index = ((self.latencies.len() - 1) as f64 * fraction).round() as usize;
        self.latencies[index] as f64 / 1000.0
    }

    fn mean_micros(&self) -> f64 {
        self.elapsed.as_secs_f64() * 1e6 / (self.operations.max(1) as f64)
    }
}

/// A container of `keys` items of `value_size` bytes, ready for the workloads.
pub struct Bed {
    pub container: String,
    pub keys: Vec<Vec<u8>>,
    pub etags: Vec<ETag>,
    pub value: Vec<u8>,
}

/// Most latencies kept per workload (the rest are counted, not sampled).
const MAX_SAMPLES: usize = 2_000_000;

pub fn prepare(store: &Store, container: &str, keys: u64, value_size: usize) -> CliResult<Bed> {
    match store.create_container(container, &ContainerOptions::default()) {
        Ok(_) => {}
        Err(error) if error.code() == tenure::ErrorCode::ContainerAlreadyExists => {}
        Err(error) => return Err(error.into()),
    }
    let value: Vec<u8> = (0..value_size)
        .map(|index| b'a' + (index % 26) as u8)
        .collect();
    let keys: Vec<Vec<u8>> = (0..keys)
        .map(|index| format!("key-{index:07}").into_bytes())
        .collect();
    for chunk in keys.chunks(500) {
        let mut batch = store.batch();
        for key in chunk {
            batch.put(container, key, &value, WriteOptions::default());
        }
        batch.commit()?;
    }
    let etags = keys
        .iter()
        .map(|key| {
            store
                .get_properties(container, key, &Default::default())
                .map(|item| item.etag)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Bed {
        container: container.to_owned(),
        keys,
        etags,
        value,
    })
}

/// Runs one workload for `duration`; `tick(elapsed)` is called now and then for progress.
pub fn measure(
    store: &Store,
    bed: &mut Bed,
    workload: Workload,
    duration: Duration,
    tick: &mut dyn FnMut(Duration),
) -> CliResult<Measurement> {
    let container = bed.container.clone();
    let count = bed.keys.len();
    let lease = LeaseRequest::seconds(15)?;
    let mut latencies = Vec::new();
    let mut operations = 0u64;
    let start = Instant::now();
    let mut index = 0usize;
    while start.elapsed() < duration {
        let key = &bed.keys[index % count];
        let began = Instant::now();
        match workload {
            Workload::Get => {
                store.get(&container, key, &Default::default())?;
            }
            Workload::Put => {
                store.put(&container, key, &bed.value, &WriteOptions::default())?;
            }
            Workload::ConditionalPut => {
                let options =
                    WriteOptions::with_conditions(Conditions::if_match(bed.etags[index % count]));
                bed.etags[index % count] = store.put(&container, key, &bed.value, &options)?;
            }
            Workload::Lease => {
                let granted = store.acquire_lease(&container, key, &lease)?;
                store.release_lease(&container, key, granted.id)?;
            }
            Workload::Lock => {
                let (_, handle) =
                    store.get_and_lock(&container, key, Duration::from_secs(30), false)?;
                store.unlock(&container, key, handle, None)?;
            }
            Workload::Batch => {
                let mut batch = store.batch();
                for offset in 0..10 {
                    let key = &bed.keys[(index + offset) % count];
                    batch.put(&container, key, &bed.value, WriteOptions::default());
                }
                batch.commit()?;
            }
            Workload::List => {
                store.list(&container, b"", 100, None, true)?;
            }
        }
        if latencies.len() < MAX_SAMPLES {
            latencies.push(began.elapsed().as_nanos() as u64);
        }
        operations += 1;
        index += 1;
        if operations % 256 == 0 {
            tick(start.elapsed());
        }
    }
    let elapsed = start.elapsed();
    if matches!(workload, Workload::Put | Workload::Batch) {
        // Unconditional writes moved the ETags on: re-read them for later conditional puts.
        for (key, etag) in bed.keys.iter().zip(bed.etags.iter_mut()) {
            *etag = store
                .get_properties(&container, key, &Default::default())?
                .etag;
        }
    }
    latencies.sort_unstable();
    Ok(Measurement {
        workload,
        operations,
        elapsed,
        latencies,
    })
}

pub fn print_table(measurements: &[Measurement]) {
    println!(
        "{:<24} {:>10} {:>12} {:>10} {:>10} {:>10}",
        "workload", "ops", "ops/s", "mean µs", "p50 µs", "p99 µs"
    );
    for measurement in measurements {
        println!(
            "{:<24} {:>10} {:>12.0} {:>10.1} {:>10.1} {:>10.1}",
            measurement.workload.name(),
            measurement.operations,
            measurement.per_second(),
            measurement.mean_micros(),
            measurement.percentile_micros(0.5),
            measurement.percentile_micros(0.99)
        );
    }
}

fn scratch_directory(args: &BenchArgs) -> CliResult<(PathBuf, bool)> {
    if let Some(dir) = &args.dir {
        if dir.exists() {
            return Err(CliError::usage(
                "--dir",
                format!("{} exists; bench needs a new directory", dir.display()),
            ));
        }
        return Ok((dir.clone(), false));
    }
    let nanos = common::now_micros();
    let dir = std::env::temp_dir().join(format!("tenure-bench-{}-{nanos}", std::process::id()));
    Ok((dir, true))
}

fn remove_scratch(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

pub fn run(args: &BenchArgs, output: &Output) -> CliResult {
    if args.duration_ms == 0 || args.duration_ms > 600_000 {
        return Err(CliError::usage("--duration-ms", "must be 1..=600000"));
    }
    if args.keys == 0 || args.keys > 1_000_000 {
        return Err(CliError::usage("--keys", "must be 1..=1000000"));
    }
    if args.value_size > 1 << 20 {
        return Err(CliError::usage("--value-size", "must be 0..=1048576"));
    }
    let (dir, remove) = scratch_directory(args)?;
    let options = StoreOptions {
        durability: match args.durability {
            DurabilityArg::Sync => Durability::Sync,
            DurabilityArg::Buffered => Durability::Buffered,
        },
        ..common::store_options()
    };
    let result = (|| {
        let store = Store::open(&dir, options)?;
        let mut bed = prepare(&store, "bench", args.keys, args.value_size)?;
        let duration = Duration::from_millis(args.duration_ms);
        let total_ms = duration.as_millis() as u64 * args.workloads.len() as u64;
        let bar = common::progress_bar(output, total_ms, "bench", false);
        let mut measurements = Vec::new();
        for (done, workload) in args.workloads.iter().enumerate() {
            bar.set_message(workload.name());
            let base = done as u64 * args.duration_ms;
            let measurement = measure(&store, &mut bed, *workload, duration, &mut |elapsed| {
                bar.set_position(base + elapsed.as_millis() as u64);
            })?;
            measurements.push(measurement);
        }
        bar.finish_and_clear();
        common::close(store)?;
        Ok::<_, CliError>(measurements)
    })();
    if remove {
        remove_scratch(&dir);
    }
    let measurements = result?;
    if output.json {
        let rows: Vec<_> = measurements
            .iter()
            .map(|measurement| {
                json!({
                    "workload": measurement.workload.name(),
                    "operations": measurement.operations,
                    "seconds": measurement.elapsed.as_secs_f64(),
                    "ops_per_second": measurement.per_second(),
                    "mean_us": measurement.mean_micros(),
                    "p50_us": measurement.percentile_micros(0.5),
                    "p99_us": measurement.percentile_micros(0.99),
                })
            })
            .collect();
        output.print_json(&json!({
            "durability": format!("{:?}", args.durability).to_lowercase(),
            "keys": args.keys,
            "value_size": args.value_size,
            "results": rows,
        }));
    } else {
        println!(
            "{} durability, {} keys of {} bytes, one thread, {} ms per workload",
            format!("{:?}", args.durability).to_lowercase(),
            args.keys,
            args.value_size,
            args.duration_ms
        );
        print_table(&measurements);
    }
    common::ok()
}
