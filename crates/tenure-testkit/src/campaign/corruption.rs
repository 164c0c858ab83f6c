//! Media corruption of a store at rest (docs/spec.md §11 "Checksums", "Watermark"; §13).
//!
//! A case builds a store (the crash campaign's workload), stops it — a clean close, or a power
//! cut that keeps every unsynced sector so records lie past the durable watermark — and
//! damages one place: a few flipped bits, a zeroed sector, or a misdirected sector (the bytes
//! of another sector written over it). Then it opens the undamaged and the damaged copy and
//! checks the damaged open against the contract:
//! - `Corruption { file, offset }` only for damage before the durable watermark (or in the
//!   superblock), naming the damaged file at or before the damaged range;
//! - a successful open recovers exactly what the undamaged open recovers when the damage lies
//!   before the watermark (it was harmless: padding, unused space), and otherwise a state the
//!   model allows no newer than that (the torn tail was cut);
//! - never another error, never a panic, never wrong data.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::{Error, Store};

use super::image::{self, Session, SUPERBLOCK_FILE};
use super::workload;
use crate::simdisk::SECTOR_BYTES;
use crate::{CrashPolicy, SimStorage};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Bits flipped in one byte.
    BitFlip { mask: u8 },
    /// A sector's bytes all zero.
    ZeroedSector,
    /// A sector holds the bytes of another sector (of any file).
    Misdirected,
}

pub fn case_from_seed(seed: u64) -> u64 {
    case(&mut StdRng::seed_from_u64(seed))
}

/// A damaged place: file, byte range, and which kind of damage.
#[derive(Debug)]
struct Target {
    file: String,
    start: usize,
    end: usize,
    damage: Damage,
}

/// The persisted index a clean close leaves (docs/design.md §3): damage to it must never
/// fail an open or change what the store holds, since the open then replays the log.
const PERSISTED_INDEX_FILE: &str = "index.checkpoint";

fn pick_target(rng: &mut impl Rng, files: &BTreeMap<String, Vec<u8>>, watermark: u64) -> Target {
    // The superblock one time in seven, else a segment.
    let segments: Vec<&String> = files
        .keys()
        .filter(|name| image::segment_first_slot(name).is_some() && !files[*name].is_empty())
        .collect();
    let file = if segments.is_empty() || rng.gen_ratio(1, 7) {
        SUPERBLOCK_FILE.to_owned()
    } else if files
        .get(PERSISTED_INDEX_FILE)
        .is_some_and(|bytes| !bytes.is_empty())
        && rng.gen_ratio(1, 7)
    {
        PERSISTED_INDEX_FILE.to_owned()
    } else {
        segments[rng.gen_range(0..segments.len())].clone()
    };
    let length = files[&file].len();
    // Mostly inside the written log (or the superblock's copies), where damage matters.
    let limit = match image::segment_first_slot(&file) {
        Some(_) if rng.gen_ratio(3, 4) => {
            let (segment_size, _) = image::superblock_facts(files).expect("a valid superblock");
            let slot = image::segment_first_slot(&file).expect("a segment");
            (watermark.saturating_sub(slot * segment_size) as usize).clamp(1, length)
        }
        None if rng.gen_ratio(3, 4) => 576.min(length),
        _ => length,
    };
    let damage = match rng.gen_range(0..3) {
        0 => Damage::BitFlip {
            mask: rng.gen_range(1..=255),
        },
        1 => Damage::ZeroedSector,
        _ => Damage::Misdirected,
    };
    let at = rng.gen_range(0..limit);
    let (start, end) = match damage {
        Damage::BitFlip { .. } => (at, at + 1),
        _ => {
            let start = at / SECTOR_BYTES * SECTOR_BYTES;
            (start, (start + SECTOR_BYTES).min(length))
        }
    };
    Target {
        file,
        start,
        end,
        damage,
    }
}

fn apply(rng: &mut impl Rng, files: &mut BTreeMap<String, Vec<u8>>, target: &Target) {
    let source = match target.damage {
        Damage::Misdirected => {
            let names: Vec<String> = files.keys().cloned().collect();
            let name = &names[rng.gen_range(0..names.len())];
            let bytes = &files[name];
            let sectors = bytes.len().div_ceil(SECTOR_BYTES).max(1);
            let start = rng.gen_range(0..sectors) * SECTOR_BYTES;
            let mut sector = bytes[start.min(bytes.len())..].to_vec();
            sector.resize(target.end - target.start, 0);
            Some(sector)
        }
        _ => None,
    };
    let bytes = files.get_mut(&target.file).expect("the target exists");
    match target.damage {
        Damage::BitFlip { mask } => bytes[target.start] ^= mask,
        Damage::ZeroedSector => bytes[target.start..target.end].fill(0),
        Damage::Misdirected => {
            bytes[target.start..target.end].copy_from_slice(&source.expect("a source sector"))
        }
    }
}

fn open(files: BTreeMap<String, Vec<u8>>, session: &Session) -> Result<Store, Error> {
    Store::open_with_storage(Arc::new(SimStorage::with_files(files)), session.options())
}

/// Builds, damages, opens and checks one store; returns 1.
pub fn case(rng: &mut impl Rng) -> u64 {
    let mut session = Session::new(rng);
    let steps = rng.gen_range(1..25);
    for step in 0..steps {
        session.step(rng, step);
    }
    let disk = if rng.gen_bool(0.5) {
        session.close(steps);
        session.disk.crash(rng, CrashPolicy::DropAll)
    } else {
        session.crash_image(rng, CrashPolicy::KeepAll)
    };
    let pristine = disk.durable_files();
    let (_, watermark) = image::superblock_facts(&pristine).expect("a valid superblock");
    let reference = open(pristine.clone(), &session)
        .unwrap_or_else(|error| panic!("the undamaged store does not open: {error:?}"));
    let reference_state = workload::read_state(&reference).expect("read the undamaged store");
    drop(reference);
    let allowed = session.allowed();
    workload::match_state(allowed, &reference_state)
        .unwrap_or_else(|message| panic!("the undamaged store: {message}"));
    // The newest state it can be: a workload may return to an earlier state (create, then
    // delete a container), and a cut of the damaged copy may stop anywhere before.
    let reference_index = allowed
        .iter()
        .rposition(|candidate| workload::state_matches(candidate, &reference_state))
        .expect("matched above");

    let mut damaged = pristine.clone();
    let target = pick_target(rng, &damaged, watermark);
    apply(rng, &mut damaged, &target);
    // The bytes that really changed (a misdirected sector may repeat some of the old ones).
    let (old, new) = (&pristine[&target.file], &damaged[&target.file]);
    let Some(first_changed) = (target.start..target.end).find(|&at| old[at] != new[at]) else {
        return 1;
    };
    let last_changed = (target.start..target.end)
        .rev()
        .find(|&at| old[at] != new[at])
        .expect("some byte changed");
    let segment_size = session.segment_size_bytes;
    // Damage wholly before the watermark must be reported or harmless; damage wholly past it
    // must be cut, never reported; damage across it may be either.
    let offset_of = |at: usize| image::log_offset(&target.file, at as u64, segment_size);
    let (before_watermark, wholly_before) =
        match (offset_of(first_changed), offset_of(last_changed)) {
            (Some(first), Some(last)) => (first < watermark, last < watermark),
            _ => (true, target.file == SUPERBLOCK_FILE),
        };
    // A misdirected first sector of the log can hold whole records of another segment whose
    // checksums hold, and the log's first record may have any version (compaction moves the
    // start), so the scan first meets the damage where that forged run ends: later in the
    // same file.
    let first_segment = pristine
        .keys()
        .filter_map(|name| image::segment_first_slot(name))
        .min();
    let forged_log_start = matches!(target.damage, Damage::Misdirected)
        && target.start == 0
        && image::segment_first_slot(&target.file).is_some()
        && image::segment_first_slot(&target.file) == first_segment;
    if target.file == PERSISTED_INDEX_FILE {
        let store = open(damaged, &session)
            .unwrap_or_else(|error| panic!("{target:?}: the open failed with {error:?}"));
        let state = workload::read_state(&store)
            .unwrap_or_else(|error| panic!("{target:?}: reading the store: {error:?}"));
        assert!(
            workload::state_matches(&reference_state, &state),
            "{target:?}: damage to the persisted index changed what the store holds.\n\
             recovered: {}\nundamaged: {}",
            workload::describe(&state),
            workload::describe(&reference_state)
        );
        return 1;
    }
    let reported = |file: &std::path::Path, offset: u64, reason: &str| {
        assert!(
            before_watermark,
            "{target:?} lies past the durable watermark {watermark}, yet the open reports \
             Corruption at {} offset {offset}: {reason} (a torn tail must be cut)",
            file.display()
        );
        assert!(
            file.ends_with(&target.file) && (offset <= last_changed as u64 || forged_log_start)
                || target.file == SUPERBLOCK_FILE,
            "{target:?}: Corruption names {} offset {offset} ({reason})",
            file.display()
        );
    };
    // An open from the persisted index checks the log below it after it returns: what that
    // check reports counts as the open's report.
    match open(damaged, &session).and_then(checked_after_open) {
        Err(Error::Corruption {
            file,
            offset,
            reason,
        }) => reported(&file, offset, &reason),
        Err(error) => panic!("{target:?}: the open failed with {error:?}, not Corruption"),
        Ok(store) => {
            let state = workload::read_state(&store)
                .unwrap_or_else(|error| panic!("{target:?}: reading the damaged store: {error:?}"));
            if wholly_before && target.file != SUPERBLOCK_FILE {
                assert!(
                    workload::state_matches(&reference_state, &state),
                    "{target:?} before the watermark {watermark} was not reported, and the \
                     store recovered other data.\nrecovered: {}\nundamaged: {}",
                    workload::describe(&state),
                    workload::describe(&reference_state)
                );
            } else {
                workload::match_state(&allowed[..=reference_index], &state)
                    .unwrap_or_else(|message| panic!("{target:?}: {message}"));
            }
        }
    }
    1
}

/// `store` once the checks that follow an open from a persisted index have read the log
/// below it, or the `Corruption` they found (which fails every call from then on).
fn checked_after_open(store: Store) -> Result<Store, Error> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if store.stats()?.log_verified {
            return Ok(store);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the check after the open never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}
