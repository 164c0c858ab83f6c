//! The machine's own limits, measured in the same run as the engines: a random DRAM read and
//! a durable 200 B write.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{Latencies, Metrics, Rng};
use crate::{Prepared, RawAppender, WritePath, SMALL_RECORD_BYTES, SMALL_RECORD_STRIDE};

/// A random read from DRAM: a pointer chase through one random cycle over `mebibytes` of
/// `u64` slots (Sattolo's algorithm), so every load depends on the one before and the
/// hardware cannot run ahead. Returns nanoseconds per load.
pub fn dram_read_ns(mebibytes: usize, seed: u64) -> f64 {
    let slots = (mebibytes << 20) / std::mem::size_of::<u64>();
    let mut next: Vec<u64> = (0..slots as u64).collect();
    let mut rng = Rng::new(seed);
    for i in (1..slots).rev() {
        let j = rng.below(i as u64) as usize;
        next.swap(i, j);
    }
    // Warm up the page tables, then time a fixed number of dependent loads.
    let mut at = 0u64;
    for _ in 0..slots.min(1 << 20) {
        at = next[at as usize];
    }
    let loads = 10_000_000u64;
    let start = Instant::now();
    for _ in 0..loads {
        at = next[at as usize];
    }
    let elapsed = start.elapsed();
    std::hint::black_box(at);
    elapsed.as_nanos() as f64 / loads as f64
}

/// `pwrite` of 200 B at the next 224 B slot of a preallocated, already-written file, then
/// `fdatasync` — the raw form of one durable record append. Runs about `duration` (at least
/// 20 writes). Returns the latencies.
pub fn durable_write(directory: &Path, duration: Duration) -> std::io::Result<Latencies> {
    std::fs::create_dir_all(directory)?;
    let mut appender = RawAppender::create(
        &directory.join("raw-fdatasync"),
        16 << 20,
        SMALL_RECORD_STRIDE,
        Prepared::Prewritten,
        WritePath::Pwrite,
    )?;
    let record = [0x5Au8; SMALL_RECORD_BYTES];
    let mut failed = None;
    let latencies = Latencies::measure(duration, |_| {
        if let Err(error) = appender.append(&record) {
            failed = Some(error);
        }
    });
    match failed {
        Some(error) => Err(error),
        None => Ok(latencies),
    }
}

/// Both limits as metrics.
pub fn measure(directory: &Path, dram_mebibytes: usize, fsync_duration: Duration) -> Metrics {
    let mut metrics = Metrics::new();
    metrics.insert("dram_read_ns".into(), dram_read_ns(dram_mebibytes, 0xD12A));
    match durable_write(directory, fsync_duration) {
        Ok(latencies) => {
            metrics.insert("fdatasync_200b_ns".into(), latencies.quantile(0.5));
            metrics.insert("fdatasync_200b_p99_ns".into(), latencies.quantile(0.99));
            metrics.insert("fdatasync_200b_count".into(), latencies.count() as f64);
        }
        Err(error) => eprintln!("compare: raw fdatasync failed: {error}"),
    }
    metrics
}
