//! How far tenure's point operations are from the least a log-structured store must do.
//!
//! A *lean* design, the core of FASTER's (issue "Engine: items" names it as the anchor): a
//! hash table of 8-byte entries (a 16-bit hash tag and a 48-bit log address) over a mapped,
//! checksummed log whose records carry key, version, link to the key's previous record and
//! value together. A get reads a bucket and then one record; a compare-and-set reads the same
//! two, appends a record and swaps the bucket. It has no snapshots, leases, locks, TTL,
//! properties, change feed, containers or durability: it is a floor to measure against, not
//! a store. Both run the issue's shape (24 B keys, 150 B values, `buffered`), each in a child
//! process of its own, in interleaved rounds:
//!
//! ```sh
//! cargo run --release -p tenure-benches --features peers --bin lean_index_probe -- [keys] [operations] [rounds]
//! ```
//!
//! Per round and engine it prints the mean latency of random gets, of get + put-if-version
//! (tenure: `put` with `if_match`), and the anonymous memory the load left per key. Both keep
//! values in the mapped log; tenure also keeps each key (and its 8-byte container id) in
//! memory, the lean design only in the log, so its figure is its table alone.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tenure_benches::compare::{key, resident_bytes, value, Rng, KEY_BYTES, VALUE_BYTES};

/// crc32 u32 | key length u16 | pad u16 | value length u32 | pad u32 | version u64 |
/// previous record's address u64 | last modified u64, then key and value, 8-byte aligned.
const RECORD_HEADER_BYTES: usize = 40;
const ADDRESS_BITS: u32 = 48;
const ADDRESS_MASK: u64 = (1 << ADDRESS_BITS) - 1;

/// The random key order of the timed operations: the same for both engines.
fn operation_order(keys: u64, operations: usize) -> Vec<u64> {
    let mut random = Rng::new(11);
    (0..operations).map(|_| random.below(keys)).collect()
}

fn anonymous_bytes() -> u64 {
    resident_bytes().1
}

fn unix_nanoseconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64)
}

struct LeanLog {
    map: memmap2::MmapMut,
    tail: AtomicU64,
}

impl LeanLog {
    fn append(&self, key: &[u8], value: &[u8], version: u64, previous: u64) -> u64 {
        let length = RECORD_HEADER_BYTES + key.len() + value.len();
        let size = (length + 7) & !7;
        let address = self.tail.fetch_add(size as u64, Ordering::AcqRel);
        assert!(
            address as usize + size <= self.map.len(),
            "the probe's log is full"
        );
        // SAFETY: the range was reserved by the fetch_add above and lies inside the map.
        let record = unsafe {
            std::slice::from_raw_parts_mut(self.map.as_ptr().cast_mut().add(address as usize), size)
        };
        record[4..6].copy_from_slice(&(key.len() as u16).to_le_bytes());
        record[8..12].copy_from_slice(&(value.len() as u32).to_le_bytes());
        record[16..24].copy_from_slice(&version.to_le_bytes());
        record[24..32].copy_from_slice(&previous.to_le_bytes());
        record[32..40].copy_from_slice(&unix_nanoseconds().to_le_bytes());
        record[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + key.len()].copy_from_slice(key);
        record[RECORD_HEADER_BYTES + key.len()..length].copy_from_slice(value);
        let checksum = crc32fast::hash(&record[4..length]);
        record[0..4].copy_from_slice(&checksum.to_le_bytes());
        address
    }

    /// (key, version, value) of the record at `address`.
    fn read(&self, address: u64) -> (&[u8], u64, &[u8]) {
        let bytes = &self.map[address as usize..];
        let key_length = u16::from_le_bytes([bytes[4], bytes[5]]) as usize;
        let value_length = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
        let version = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
        let key = &bytes[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + key_length];
        let value_start = RECORD_HEADER_BYTES + key_length;
        (
            key,
            version,
            &bytes[value_start..value_start + value_length],
        )
    }
}

struct LeanStore {
    log: LeanLog,
    /// Open addressing, linear probing, at most half full: 0, or tag << 48 | address.
    entries: Box<[AtomicU64]>,
    mask: usize,
    next_version: AtomicU64,
}

fn lean_hash(key: &[u8]) -> u64 {
    let mut hash = 0x243F_6A88_85A3_08D3u64;
    for chunk in key.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        hash = (hash ^ u64::from_le_bytes(word)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        hash ^= hash >> 29;
    }
    hash
}

impl LeanStore {
    fn open(path: &Path, keys: usize, operations: usize) -> LeanStore {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .expect("the probe's log file");
        let record_bytes = (RECORD_HEADER_BYTES + KEY_BYTES + VALUE_BYTES + 7) & !7;
        let log_bytes = (keys + operations + 1) * record_bytes + 4096;
        file.set_len(log_bytes as u64).expect("set_len");
        // SAFETY: the file is this process's own and is not truncated while mapped.
        let mut map = unsafe { memmap2::MmapMut::map_mut(&file) }.expect("mmap");
        // Pre-faulted for writing, as tenure's preparer does to a segment.
        for page in map.chunks_mut(4096) {
            page[0] = 0;
        }
        let buckets = (keys * 2).next_power_of_two();
        LeanStore {
            // Address 0 means an empty bucket: the log starts one line in.
            log: LeanLog {
                map,
                tail: AtomicU64::new(64),
            },
            entries: (0..buckets).map(|_| AtomicU64::new(0)).collect(),
            mask: buckets - 1,
            next_version: AtomicU64::new(1),
        }
    }

    /// The bucket of `key` and its entry, or the first empty bucket and 0.
    fn find(&self, key: &[u8]) -> (usize, u64) {
        let hash = lean_hash(key);
        let tag = hash >> ADDRESS_BITS;
        let mut bucket = hash as usize & self.mask;
        loop {
            let entry = self.entries[bucket].load(Ordering::Acquire);
            if entry == 0
                || (entry >> ADDRESS_BITS == tag && self.log.read(entry & ADDRESS_MASK).0 == key)
            {
                return (bucket, entry);
            }
            bucket = (bucket + 1) & self.mask;
        }
    }

    fn load(&self, key: &[u8], value: &[u8]) {
        let (bucket, entry) = self.find(key);
        let version = self.next_version.fetch_add(1, Ordering::AcqRel);
        let address = self.log.append(key, value, version, entry & ADDRESS_MASK);
        let tag = lean_hash(key) >> ADDRESS_BITS;
        self.entries[bucket].store(tag << ADDRESS_BITS | address, Ordering::Release);
    }

    fn get(&self, key: &[u8]) -> Option<(u64, Vec<u8>)> {
        let _guard = crossbeam_epoch::pin();
        let (_, entry) = self.find(key);
        (entry != 0).then(|| {
            let (_, version, value) = self.log.read(entry & ADDRESS_MASK);
            (version, value.to_vec())
        })
    }

    #[inline(never)]
    fn put_if_version(&self, key: &[u8], value: &[u8], expected_version: u64) -> bool {
        let _guard = crossbeam_epoch::pin();
        let (bucket, entry) = self.find(key);
        if entry == 0 || self.log.read(entry & ADDRESS_MASK).1 != expected_version {
            return false;
        }
        let version = self.next_version.fetch_add(1, Ordering::AcqRel);
        let address = self.log.append(key, value, version, entry & ADDRESS_MASK);
        let swapped = (entry >> ADDRESS_BITS) << ADDRESS_BITS | address;
        self.entries[bucket]
            .compare_exchange(entry, swapped, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// One engine's figures in one child: (get µs, get + put-if-version µs, anonymous B per key).
fn run_child(engine: &str, keys: usize, operations: usize) -> (f64, f64, f64) {
    let directory = tenure_testkit::TempDir::new("lean-index-probe");
    // The kv workload's keys (`compare::key`) and one of its incompressible values.
    let value = value(0, 0);
    let order = operation_order(keys as u64, operations);
    let anonymous_before = anonymous_bytes();
    let per_key = |anonymous_after: u64| {
        anonymous_after.saturating_sub(anonymous_before) as f64 / keys as f64
    };
    let mut fold = 0u64;
    let microseconds = |started: Instant| started.elapsed().as_secs_f64() * 1e6 / operations as f64;
    let figures = match engine {
        "lean" => {
            std::fs::create_dir_all(directory.path()).expect("probe directory");
            let store = LeanStore::open(&directory.path().join("log"), keys, operations);
            for index in 0..keys as u64 {
                store.load(&key(index), &value);
            }
            let memory = per_key(anonymous_bytes());
            let started = Instant::now();
            for index in &order {
                let (_, read) = store.get(&key(*index)).expect("a loaded key");
                fold = fold.wrapping_add(u64::from(read[3]));
            }
            let get = microseconds(started);
            let started = Instant::now();
            for index in &order {
                let key = key(*index);
                let (version, read) = store.get(&key).expect("a loaded key");
                assert!(store.put_if_version(&key, &value, version), "uncontended");
                fold = fold.wrapping_add(u64::from(read[3]));
            }
            (get, microseconds(started), memory)
        }
        "tenure" => {
            let options = tenure::StoreOptions {
                durability: tenure::Durability::Buffered,
                ..Default::default()
            };
            let store = tenure::Store::open(directory.path(), options).expect("open");
            store
                .create_container("c", &Default::default())
                .expect("container");
            for chunk in (0..keys as u64).collect::<Vec<_>>().chunks(1000) {
                let mut batch = store.batch();
                for index in chunk {
                    batch.put("c", &key(*index), &value, tenure::WriteOptions::default());
                }
                batch.commit().expect("load");
            }
            store.flush().expect("flush");
            let memory = per_key(anonymous_bytes());
            let read = tenure::ReadOptions::default();
            let started = Instant::now();
            for index in &order {
                let item = store.get("c", &key(*index), &read).expect("a loaded key");
                fold = fold.wrapping_add(u64::from(item.value.expect("a value")[3]));
            }
            let get = microseconds(started);
            let started = Instant::now();
            for index in &order {
                let key = key(*index);
                let item = store.get("c", &key, &read).expect("a loaded key");
                let conditions = tenure::Conditions::if_match(item.etag);
                store
                    .put(
                        "c",
                        &key,
                        &value,
                        &tenure::WriteOptions::with_conditions(conditions),
                    )
                    .expect("uncontended");
                fold = fold.wrapping_add(u64::from(item.value.expect("a value")[3]));
            }
            (get, microseconds(started), memory)
        }
        other => panic!("unknown engine {other}: lean or tenure"),
    };
    std::hint::black_box(fold);
    figures
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let number = |position: usize, default: usize| {
        arguments
            .get(position)
            .map_or(default, |text| text.parse().expect("a whole number"))
    };
    if arguments.first().map(String::as_str) == Some("--child") {
        let engine = &arguments[1];
        let (get, compare_and_set, memory) = run_child(engine, number(2, 0), number(3, 0));
        println!("{get} {compare_and_set} {memory}");
        return;
    }
    let (keys, operations, rounds) = (number(0, 1_000_000), number(1, 500_000), number(2, 4));
    let executable = std::env::current_exe().expect("the probe's own path");
    let mut results: Vec<(&str, Vec<[f64; 3]>)> = vec![("tenure", vec![]), ("lean", vec![])];
    println!("{keys} keys, {operations} operations per figure, {rounds} rounds");
    println!("round engine get_us get_and_put_if_version_us anon_bytes_per_key");
    for round in 0..rounds {
        for (engine, figures) in &mut results {
            let output = Command::new(&executable)
                .args([
                    "--child",
                    engine,
                    &keys.to_string(),
                    &operations.to_string(),
                ])
                .output()
                .expect("the child probe");
            assert!(output.status.success(), "{engine}'s child failed");
            let text = String::from_utf8_lossy(&output.stdout);
            let numbers: Vec<f64> = text
                .split_whitespace()
                .map(|word| word.parse().expect("a figure"))
                .collect();
            println!(
                "{round} {engine} {:.3} {:.3} {:.1}",
                numbers[0], numbers[1], numbers[2]
            );
            figures.push([numbers[0], numbers[1], numbers[2]]);
        }
    }
    for (engine, figures) in &results {
        let column =
            |index: usize| median(&mut figures.iter().map(|f| f[index]).collect::<Vec<_>>());
        println!(
            "median {engine}: get {:.3} us, get + put-if-version {:.3} us, {:.1} B per key",
            column(0),
            column(1),
            column(2)
        );
    }
}
