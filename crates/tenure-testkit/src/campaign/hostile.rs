//! Hostile store directories (docs/spec.md §13: "A store directory holding hostile bytes opens with
//! `Corruption` or recovers; it never crashes the process"), for the fuzz targets.
//!
//! - [`open_patched_directory`]: a real store's files with arbitrary patches (overwrites,
//!   truncations, extensions, removed and added files).
//! - [`open_framed_records`]: a valid superblock and segment whose records carry arbitrary
//!   payloads with *valid* checksums, so the engine's record and payload decoders (not just
//!   the CRC check) meet hostile bytes.
//!
//! Either way the open must succeed (and the store then read and write without panicking) or
//! fail with `Corruption` or `Io`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::internals::{Log, LogOptions};
use tenure::{ErrorCode, Store, WriteOptions};

use super::image::{self, Session, SUPERBLOCK_FILE};
use super::{workload, ByteRng};
use crate::SimStorage;

const SEGMENT_BYTES: u64 = 4096;
const GENERATION: u64 = 5;

/// The segment size and files of a small real store (deterministic; built once).
fn base_image() -> &'static (u64, BTreeMap<String, Vec<u8>>) {
    static BASE: OnceLock<(u64, BTreeMap<String, Vec<u8>>)> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut rng = StdRng::seed_from_u64(8);
        let mut session = Session::new(&mut rng);
        for step in 0..30 {
            session.step(&mut rng, step);
        }
        session.close(30);
        (session.segment_size_bytes, session.disk.durable_files())
    })
}

/// Opens the files; `Ok` stores are read, written and closed. Panics on a panic inside (the
/// fuzzer's crash) or an error other than `Corruption`/`Io`.
fn open_and_use(files: BTreeMap<String, Vec<u8>>, segment_size_bytes: u64) {
    let clock = tenure::ManualClock::new(image::START_MICROS);
    let options = image::store_options(&clock, tenure::Durability::Buffered, segment_size_bytes);
    match Store::open_with_storage(Arc::new(SimStorage::with_files(files)), options) {
        Ok(store) => {
            if let Err(error) = workload::read_state(&store) {
                panic!("a store that opened cannot be read: {error:?}");
            }
            let containers = store.list_containers().unwrap_or_default();
            if let Some(container) = containers.first() {
                let written = store.put(container, b"fuzz", b"value", &WriteOptions::default());
                if let Err(error) = written {
                    assert!(
                        matches!(error.code(), ErrorCode::Io | ErrorCode::Corruption),
                        "a write to a store that opened failed with {error:?}"
                    );
                }
            }
            for (what, result) in [
                ("compact", store.compact().map(|_| ())),
                ("close", store.close()),
            ] {
                if let Err(error) = result {
                    assert!(
                        matches!(error.code(), ErrorCode::Io | ErrorCode::Corruption),
                        "{what} on a store that opened failed with {error:?}"
                    );
                }
            }
        }
        Err(error) => assert!(
            matches!(error.code(), ErrorCode::Corruption | ErrorCode::Io),
            "hostile files: the open failed with {error:?}, not Corruption or Io"
        ),
    }
}

/// A real store with patches driven by `data`.
pub fn open_patched_directory(data: &[u8]) {
    let (segment_size_bytes, base) = base_image();
    let mut files = base.clone();
    let mut rng = ByteRng::new(data);
    let patches = rng.gen_range(0..8);
    for _ in 0..patches {
        let names: Vec<String> = files.keys().cloned().collect();
        let name = if names.is_empty() {
            SUPERBLOCK_FILE.to_owned()
        } else {
            names[rng.gen_range(0..names.len())].clone()
        };
        match rng.gen_range(0..10) {
            0..=5 => {
                let bytes = files.entry(name).or_default();
                if bytes.is_empty() {
                    continue;
                }
                let at = rng.gen_range(0..bytes.len());
                let length = rng.gen_range(1..=16).min(bytes.len() - at);
                for byte in &mut bytes[at..at + length] {
                    *byte = rng.gen();
                }
            }
            6 => {
                let bytes = files.entry(name).or_default();
                let length = rng.gen_range(0..=bytes.len());
                bytes.truncate(length);
            }
            7 => {
                let extra = rng.gen_range(0..2 * SEGMENT_BYTES as usize);
                files.entry(name).or_default().resize_with(extra, || 0);
            }
            8 => {
                files.remove(&name);
            }
            _ => {
                let slot: u64 = rng.gen_range(0..6);
                let length = [0, 100, *segment_size_bytes as usize][rng.gen_range(0..3)];
                files.insert(format!("segment-{slot:016x}.log"), vec![rng.gen(); length]);
            }
        }
    }
    open_and_use(files, *segment_size_bytes);
}

/// The 64-byte superblock copy of docs/design.md §1.
fn superblock_copy(segment_size_bytes: u64, sequence: u64, watermark: u64) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    bytes[0..8].copy_from_slice(b"TENURESB");
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    bytes[16..24].copy_from_slice(&segment_size_bytes.to_le_bytes());
    bytes[24..32].copy_from_slice(&GENERATION.to_le_bytes());
    bytes[32..40].copy_from_slice(&sequence.to_le_bytes());
    bytes[40..48].copy_from_slice(&watermark.to_le_bytes());
    bytes[48..56].copy_from_slice(&0u64.to_le_bytes());
    let crc = crc32fast::hash(&bytes[0..56]);
    bytes[56..60].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// Appends one record (docs/design.md §1: 24-byte header, CRC over bytes 4..24 and the
/// payload, padded to 8 bytes).
fn push_record(segment: &mut Vec<u8>, version: u64, generation: u32, kind: u8, payload: &[u8]) {
    let mut header = [0u8; 24];
    header[4..8].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    header[8..16].copy_from_slice(&version.to_le_bytes());
    header[16..20].copy_from_slice(&generation.to_le_bytes());
    header[20] = kind;
    header[21] = 1;
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&header[4..24]);
    hasher.update(payload);
    header[0..4].copy_from_slice(&hasher.finalize().to_le_bytes());
    segment.extend_from_slice(&header);
    segment.extend_from_slice(payload);
    segment.resize(segment.len().div_ceil(8) * 8, 0);
}

/// `data`: a watermark selector byte, then records, each a 2-byte little-endian payload
/// length, a flags byte (kind, generation and version quirks) and the payload. The records
/// are framed with valid checksums into one segment behind a valid superblock.
pub fn open_framed_records(data: &[u8]) {
    let Some((&watermark_selector, mut rest)) = data.split_first() else {
        return;
    };
    let mut segment = Vec::new();
    let mut version = 1u64;
    while rest.len() >= 3 {
        let length = u16::from_le_bytes([rest[0], rest[1]]) as usize;
        let flags = rest[2];
        rest = &rest[3..];
        let length = length.min(rest.len());
        let (payload, tail) = rest.split_at(length);
        rest = tail;
        if segment.len() + 24 + payload.len() + 8 > SEGMENT_BYTES as usize {
            break;
        }
        let kind = match flags & 0b11 {
            0 | 1 => 1,
            2 => 2,
            _ => 3,
        };
        let generation = if flags & 0b100 != 0 {
            GENERATION as u32 - 1
        } else {
            GENERATION as u32
        };
        if flags & 0b1000 != 0 {
            version += u64::from(flags >> 4);
        }
        push_record(&mut segment, version, generation, kind, payload);
        version += 1;
    }
    let tail = segment.len() as u64;
    segment.resize(SEGMENT_BYTES as usize, 0);
    let watermark = match watermark_selector % 3 {
        0 => 0,
        1 => tail,
        _ => tail / 2,
    };
    let mut superblock = vec![0u8; 1024];
    superblock[0..64].copy_from_slice(&superblock_copy(SEGMENT_BYTES, 1, watermark));
    let files = BTreeMap::from([
        (SUPERBLOCK_FILE.to_owned(), superblock),
        ("segment-0000000000000000.log".to_owned(), segment),
    ]);
    open_and_use(files, SEGMENT_BYTES);
}

/// A store directory (4 KiB segments) whose log holds `payloads` as data records with valid
/// checksums, versions 1, 2, …, all below the durable watermark.
pub fn files_with_records(payloads: &[Vec<u8>]) -> BTreeMap<String, Vec<u8>> {
    let mut segment = Vec::new();
    for (index, payload) in payloads.iter().enumerate() {
        push_record(
            &mut segment,
            index as u64 + 1,
            GENERATION as u32,
            1,
            payload,
        );
    }
    assert!(
        segment.len() <= SEGMENT_BYTES as usize,
        "the records fit one segment"
    );
    let watermark = segment.len() as u64;
    segment.resize(SEGMENT_BYTES as usize, 0);
    let mut superblock = vec![0u8; 1024];
    superblock[0..64].copy_from_slice(&superblock_copy(SEGMENT_BYTES, 1, watermark));
    BTreeMap::from([
        (SUPERBLOCK_FILE.to_owned(), superblock),
        ("segment-0000000000000000.log".to_owned(), segment),
    ])
}

/// Seed inputs for [`open_framed_records`]: the records of small real stores, in its format.
pub fn framed_record_seeds() -> Vec<Vec<u8>> {
    (0..4u64)
        .map(|seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut session = Session::new(&mut rng);
            for step in 0..60 {
                session.step(&mut rng, step);
            }
            session.close(60);
            let mut payloads = Vec::new();
            let options = LogOptions {
                segment_size_bytes: session.segment_size_bytes,
                ..LogOptions::default()
            };
            let disk = SimStorage::with_files(session.disk.durable_files());
            let log = Log::open(Arc::new(disk), &options, &mut |record| {
                payloads.push(record.payload.to_vec());
                Ok(())
            })
            .expect("open the seed store's log");
            drop(log);
            let mut input = vec![1u8];
            for payload in payloads.iter().filter(|payload| payload.len() < 600) {
                input.extend_from_slice(&(payload.len() as u16).to_le_bytes());
                input.push(0);
                input.extend_from_slice(payload);
            }
            input
        })
        .collect()
}
