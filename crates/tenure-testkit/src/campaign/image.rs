//! A store's life on the simulated disk, with the states a power cut may leave ([`Session`]),
//! and what the campaigns need to read from a store's files: the superblock's watermark and
//! the log offset of a byte of a segment file (docs/design.md §1).

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::Rng;
use tenure::{Durability, ManualClock, Store, StoreOptions};

use super::workload::{self, Applied};
use crate::model::Model;
use crate::{CrashPolicy, SimStorage};

pub const START_MICROS: u64 = 1_700_000_000_000_000;
pub const SUPERBLOCK_FILE: &str = "superblock";

pub fn store_options(
    clock: &ManualClock,
    durability: Durability,
    segment_size_bytes: u64,
) -> StoreOptions {
    StoreOptions {
        durability,
        segment_size_bytes,
        clock: Arc::new(clock.clone()),
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

/// A store on a simulated disk running the item workload, and the model states a power cut
/// may leave.
pub struct Session {
    pub clock: ManualClock,
    pub durability: Durability,
    pub segment_size_bytes: u64,
    pub disk: SimStorage,
    pub store: Option<Store>,
    /// The model after each acknowledged write since the last reopen after a power cut;
    /// `[0]` is the state then.
    pub history: Vec<Model>,
    /// `history[durable..]` are the states a power cut now may leave.
    pub durable: usize,
}

impl Session {
    /// A new store: random durability, small segments (4 or 8 KiB).
    pub fn new(rng: &mut impl Rng) -> Session {
        let durability = if rng.gen_bool(0.5) {
            Durability::Sync
        } else {
            Durability::Buffered
        };
        let mut session = Session {
            clock: ManualClock::new(START_MICROS),
            durability,
            segment_size_bytes: [4096u64, 8192][rng.gen_range(0..2)],
            disk: SimStorage::new(),
            store: None,
            history: vec![Model::default()],
            durable: 0,
        };
        session.store = Some(session.open());
        session
    }

    pub fn options(&self) -> StoreOptions {
        store_options(&self.clock, self.durability, self.segment_size_bytes)
    }

    pub fn open(&self) -> Store {
        Store::open_with_storage(Arc::new(self.disk.clone()), self.options())
            .unwrap_or_else(|error| panic!("open failed: {error:?}"))
    }

    pub fn store(&self) -> &Store {
        self.store.as_ref().expect("the store is open")
    }

    pub fn model(&self) -> &Model {
        self.history.last().expect("never empty")
    }

    /// The states a power cut now may leave, oldest first.
    pub fn allowed(&self) -> &[Model] {
        &self.history[self.durable..]
    }

    fn acknowledged(&mut self, next: Model) {
        self.history.push(next);
        if self.durability == Durability::Sync {
            self.durable = self.history.len() - 1;
        }
    }

    fn all_durable(&mut self) {
        self.durable = self.history.len() - 1;
    }

    /// One step: mostly a write, sometimes a flush, a compaction or a clean reopen.
    pub fn step(&mut self, rng: &mut impl Rng, step: usize) {
        match rng.gen_range(0..100) {
            0..=84 => {
                let op = workload::random_write(rng, self.segment_size_bytes);
                match workload::apply(self.store(), self.model(), &op) {
                    Applied::Written(next) => self.acknowledged(next),
                    Applied::Refused => {}
                    Applied::Failed { error, .. } => {
                        panic!("step {step}: {op:?} failed without a fault: {error:?}")
                    }
                }
            }
            85..=90 => {
                self.store()
                    .flush()
                    .unwrap_or_else(|error| panic!("step {step}: flush: {error:?}"));
                self.all_durable();
            }
            91..=95 => {
                self.store()
                    .compact()
                    .unwrap_or_else(|error| panic!("step {step}: compact: {error:?}"));
            }
            _ => self.reopen(step),
        }
    }

    /// Closes cleanly (everything durable, the watermark at the tail) and opens again.
    pub fn reopen(&mut self, step: usize) {
        self.close(step);
        self.store = Some(self.open());
    }

    pub fn close(&mut self, step: usize) {
        if let Some(store) = self.store.take() {
            store
                .close()
                .unwrap_or_else(|error| panic!("step {step}: close: {error:?}"));
        }
        self.all_durable();
    }

    /// The disk a power cut now leaves; the store is gone.
    pub fn crash_image(&mut self, rng: &mut impl Rng, policy: CrashPolicy) -> SimStorage {
        let crashed = self.disk.crash(rng, policy);
        drop(self.store.take());
        crashed
    }

    /// After a power cut: the store reopened on `disk` recovered `allowed()[index]`.
    pub fn recovered(&mut self, disk: SimStorage, store: Store, index: usize) {
        let state = self.history[self.durable + index].clone();
        self.history = vec![state];
        self.durable = 0;
        self.disk = disk;
        self.store = Some(store);
    }
}

/// The newest valid superblock copy's `(segment size, durable watermark)`, read as
/// docs/design.md §1 lays it out.
pub fn superblock_facts(files: &BTreeMap<String, Vec<u8>>) -> Option<(u64, u64)> {
    let bytes = files.get(SUPERBLOCK_FILE)?;
    let mut best: Option<(u64, u64, u64)> = None;
    for offset in [0usize, 512] {
        let Some(copy) = bytes.get(offset..offset + 64) else {
            continue;
        };
        let read = |at: usize| u64::from_le_bytes(copy[at..at + 8].try_into().unwrap());
        let crc = u32::from_le_bytes(copy[56..60].try_into().unwrap());
        if &copy[0..8] != b"TENURESB" || crc32fast::hash(&copy[0..56]) != crc {
            continue;
        }
        let (sequence, segment_size, watermark) = (read(32), read(16), read(40));
        if best.is_none_or(|(best_sequence, _, _)| sequence > best_sequence) {
            best = Some((sequence, segment_size, watermark));
        }
    }
    best.map(|(_, segment_size, watermark)| (segment_size, watermark))
}

/// The first slot of a segment file, from its name (`segment-<16 hex digits>.log`).
pub fn segment_first_slot(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("segment-")?.strip_suffix(".log")?;
    (hex.len() == 16)
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

/// The global log offset of byte `offset` of file `name`, if it is a segment.
pub fn log_offset(name: &str, offset: u64, segment_size_bytes: u64) -> Option<u64> {
    segment_first_slot(name).map(|slot| slot * segment_size_bytes + offset)
}
