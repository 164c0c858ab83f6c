//! The side-by-side comparison behind `src/bin/compare.rs`: the same workloads against tenure,
//! its embedded peers (LMDB through heed, redb, sled, fjall, SQLite through rusqlite, and RocksDB
//! when the cargo feature `rocksdb` is built) and, for
//! the lease rows, redis-server over loopback.
//!
//! The parent process ([`run`]) starts one child process per engine, workload and round (the
//! same binary, re-executed with `--child`); the child ([`workloads`]) opens its engine in a
//! fresh directory, runs the workload, prints one JSON line and removes the directory. The
//! parent interleaves the engines (a different order every round), collects the lines and
//! writes the tables ([`report`]).
//!
//! Data: keys of [`KEY_BYTES`] and values of [`VALUE_BYTES`] (redb's published benchmark
//! shape), both derived from the item's index by a fixed hash, so every engine gets exactly
//! the same pairs in the same order, and none of them has to be held in memory.

pub mod chart;
pub mod engines;
pub mod extended;
pub mod memcached;
pub mod physical;
pub mod redis;
pub mod report;
#[cfg(feature = "rocksdb")]
pub mod rocks;
pub mod run;
pub mod workloads;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Bytes of every key.
pub const KEY_BYTES: usize = 24;
/// Bytes of every value.
pub const VALUE_BYTES: usize = 150;
/// Pairs per write transaction (or batch) when loading, overwriting and deleting. tenure's
/// batches take at most 1,000 operations by default, so every engine gets that size.
pub const BATCH_PAIRS: usize = 1000;

pub type Key = [u8; KEY_BYTES];
pub type Value = [u8; VALUE_BYTES];

/// What a child measured: metric name → number.
pub type Metrics = BTreeMap<String, f64>;

/// splitmix64: a fast, well-mixed hash of a counter.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The key of item `index`: 16 hashed bytes (so keys arrive in random order) and the index
/// itself (so they are unique).
pub fn key(index: u64) -> Key {
    let mut key = [0u8; KEY_BYTES];
    key[..8].copy_from_slice(&mix(index).to_be_bytes());
    key[8..16].copy_from_slice(&mix(index ^ 0xA5A5_A5A5_A5A5_A5A5).to_be_bytes());
    key[16..].copy_from_slice(&index.to_be_bytes());
    key
}

/// The value of item `index` as written the `generation`-th time: incompressible bytes whose
/// first 8 are the generation (the version the peers' compare-and-set reads).
pub fn value(index: u64, generation: u64) -> Value {
    let mut value = [0u8; VALUE_BYTES];
    value[..8].copy_from_slice(&generation.to_le_bytes());
    let mut state = mix(index.wrapping_mul(0x1000_0000_01B3) ^ generation);
    for chunk in value[8..].chunks_mut(8) {
        state = mix(state);
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    value
}

/// The key of item `index` in a shape with `length` bytes (16..=[`KEY_BYTES`]): for 24 B
/// it is [`key`]; otherwise hashed bytes, then the index's 8 bytes. Use `&k[..length]`.
pub fn shaped_key(index: u64, length: usize) -> Key {
    assert!((16..=KEY_BYTES).contains(&length), "key length {length}");
    if length == KEY_BYTES {
        return key(index);
    }
    let mut key = [0u8; KEY_BYTES];
    let hashed = length - 8;
    let mut state = index;
    for chunk in key[..hashed].chunks_mut(8) {
        state = mix(state ^ 0x5EED);
        chunk.copy_from_slice(&state.to_be_bytes()[..chunk.len()]);
    }
    key[hashed..length].copy_from_slice(&index.to_be_bytes());
    key
}

/// The value of item `index` at `version`, `length` bytes (≥ 8) into `out`: the version in
/// the first 8 bytes (as in [`value`]), then incompressible bytes.
pub fn shaped_value(index: u64, version: u64, length: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&version.to_le_bytes());
    let mut state = mix(index.wrapping_mul(0x1000_0000_01B3) ^ version);
    while out.len() < length {
        state = mix(state);
        let take = (length - out.len()).min(8);
        out.extend_from_slice(&state.to_le_bytes()[..take]);
    }
}

/// Zipf-distributed ranks over `0..n` with exponent `theta` < 1 (YCSB's generator, after
/// Gray et al., "Quickly generating billion-record synthetic databases"): rank 0 is the
/// most frequent. [`Zipf::index`] spreads the ranks over the key space by a fixed
/// permutation, so the hot keys are not neighbours.
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zeta_n: f64,
    eta: f64,
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Zipf {
        let zeta = |count: u64| {
            (1..=count)
                .map(|i| 1.0 / (i as f64).powf(theta))
                .sum::<f64>()
        };
        let zeta_n = zeta(n);
        let zeta_2 = zeta(2);
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta_n,
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n),
        }
    }

    pub fn rank(&self, rng: &mut Rng) -> u64 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }

    /// The item index of a rank: a multiplication by a prime modulo `n`, a permutation.
    pub fn index(&self, rng: &mut Rng) -> u64 {
        ((u128::from(self.rank(rng)) * 2_147_483_647u128) % u128::from(self.n)) as u64
    }
}

/// The version stored in a value's first 8 bytes.
pub fn value_version(value: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&value[..8]);
    u64::from_le_bytes(bytes)
}

/// A small, fast random source (xorshift64*), one per thread.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..bound` (bound ≤ 2^32 keeps the bias negligible).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() >> 32) * bound) >> 32
    }
}

/// Runs `op` repeatedly for about `duration` (at least 64 times) and returns how many times
/// and how long it took.
pub fn run_for(duration: Duration, mut op: impl FnMut(u64)) -> (u64, Duration) {
    let start = Instant::now();
    let mut done = 0u64;
    loop {
        for _ in 0..64 {
            op(done);
            done += 1;
        }
        let elapsed = start.elapsed();
        if elapsed >= duration {
            return (done, elapsed);
        }
    }
}

/// Latencies of single operations, in nanoseconds.
pub struct Latencies(Vec<u64>);

impl Latencies {
    /// Runs `op` for about `duration`, timing every call on its own.
    pub fn measure(duration: Duration, op: impl FnMut(u64)) -> Latencies {
        Latencies::measure_prepared(duration, |done| done, op)
    }

    /// Like [`Latencies::measure`], with each call's arguments made by `prepare` before its
    /// timing starts: the benchmark's own work (generating a 150 B value costs about 125 ns,
    /// an eighth of tenure's compare-and-set) is no part of any engine's figure.
    pub fn measure_prepared<A>(
        duration: Duration,
        mut prepare: impl FnMut(u64) -> A,
        mut op: impl FnMut(A),
    ) -> Latencies {
        let mut samples = Vec::with_capacity(1 << 16);
        let start = Instant::now();
        let mut done = 0u64;
        while done < 16 || start.elapsed() < duration {
            let arguments = std::hint::black_box(prepare(done));
            let began = Instant::now();
            op(arguments);
            samples.push(began.elapsed().as_nanos() as u64);
            done += 1;
        }
        Latencies(samples)
    }

    pub fn count(&self) -> usize {
        self.0.len()
    }

    pub fn mean(&self) -> f64 {
        self.0.iter().sum::<u64>() as f64 / self.0.len().max(1) as f64
    }

    /// The `q`-quantile (0..=1).
    pub fn quantile(&self, q: f64) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return f64::NAN;
        }
        let at = ((sorted.len() - 1) as f64 * q).round() as usize;
        sorted[at] as f64
    }
}

/// Bytes the files under `path` take: (allocated on disk, apparent length).
pub fn disk_usage(path: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut allocated = 0;
    let mut apparent = 0;
    let Ok(entries) = std::fs::read_dir(path) else {
        return (0, 0);
    };
    for entry in entries.flatten() {
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if metadata.is_dir() {
            let (a, b) = disk_usage(&entry.path());
            allocated += a;
            apparent += b;
        } else {
            allocated += metadata.blocks() * 512;
            apparent += metadata.len();
        }
    }
    (allocated, apparent)
}

/// This process's resident memory from /proc/self/status: (VmRSS, RssAnon, RssFile) in bytes.
pub fn resident_bytes() -> (u64, u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    (field("VmRSS:"), field("RssAnon:"), field("RssFile:"))
}
