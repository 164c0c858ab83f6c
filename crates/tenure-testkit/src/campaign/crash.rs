//! Simulated power loss (docs/spec.md §11 "Durability modes", "Crash", "Watermark").
//!
//! A store case runs a random workload (mixed durability, small segments, compactions,
//! reopens) on the simulated disk, loses power at random points — every unsynced sector
//! dropped, kept, or each one kept, dropped or torn — reopens, and checks that the recovered
//! state is exactly the model's state after some prefix of the acknowledged writes that
//! includes every write known durable: nothing acknowledged-and-durable lost, no batch half
//! applied, no torn value, versions as acknowledged. A log case does the same one level down
//! with raw records (every size, records larger than a segment).

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::internals::{Log, LogOptions};
use tenure::{Durability, Store};

use super::image::Session;
use super::workload;
use crate::{payload, CrashPolicy, SimStorage};

pub const POLICIES: [CrashPolicy; 3] = [
    CrashPolicy::DropAll,
    CrashPolicy::KeepAll,
    CrashPolicy::Random,
];

pub fn case_from_seed(seed: u64) -> u64 {
    let mut rng = StdRng::seed_from_u64(seed);
    if rng.gen_ratio(1, 4) {
        log_case(&mut rng, seed)
    } else {
        store_case(&mut rng)
    }
}

/// A store workload with power cuts; the last step is always one. Returns the number of power
/// cuts it made.
pub fn store_case(rng: &mut impl Rng) -> u64 {
    let mut session = Session::new(rng);
    let steps = rng.gen_range(1..30);
    let mut crashes = 0;
    for step in 0..steps {
        if rng.gen_ratio(1, 12) {
            crash_and_check(&mut session, rng);
            crashes += 1;
        } else {
            session.step(rng, step);
        }
    }
    crash_and_check(&mut session, rng);
    crashes + 1
}

/// Loses power, reopens, and checks the recovered state is one the model allows.
pub fn crash_and_check(session: &mut Session, rng: &mut impl Rng) {
    let policy = POLICIES[rng.gen_range(0..POLICIES.len())];
    // The sectors in flight depend on the background flusher's timing; their fates come from
    // a stream of their own, so the rest of the case replays the same from its seed.
    let disk = session.crash_image(&mut StdRng::seed_from_u64(rng.gen()), policy);
    let store = Store::open_with_storage(Arc::new(disk.clone()), session.options())
        .unwrap_or_else(|error| panic!("reopen after a power cut ({policy:?}) failed: {error:?}"));
    let state = workload::read_state(&store)
        .unwrap_or_else(|error| panic!("reading the recovered store: {error:?}"));
    let index = workload::match_state(session.allowed(), &state).unwrap_or_else(|message| {
        panic!(
            "after a power cut ({policy:?}, {:?}, {} acknowledged writes, {} durable): {message}",
            session.durability,
            session.history.len() - 1,
            session.durable
        )
    });
    session.recovered(disk, store, index);
}

/// Opens the log and returns it with every recovered `(version, payload)`.
fn open_log(
    disk: &SimStorage,
    options: &LogOptions,
) -> Result<(Log, Vec<(u64, Vec<u8>)>), tenure::Error> {
    let mut recovered = Vec::new();
    let log = Log::open(Arc::new(disk.clone()), options, &mut |record| {
        recovered.push((record.version, record.payload.to_vec()));
        Ok(())
    })?;
    Ok((log, recovered))
}

/// Raw records of every size (some larger than a segment), `sync` or `buffered` with random
/// flushes, one power cut: what comes back is a prefix of what was written, at least every
/// record known durable, none torn. `stream` tags the payloads.
pub fn log_case(rng: &mut impl Rng, stream: u64) -> u64 {
    let durability = if rng.gen_bool(0.5) {
        Durability::Sync
    } else {
        Durability::Buffered
    };
    let policy = POLICIES[rng.gen_range(0..POLICIES.len())];
    let disk = SimStorage::new();
    let segment_size_bytes = [4096u64, 8192, 64 << 10][rng.gen_range(0..3)];
    let options = LogOptions {
        segment_size_bytes,
        durability,
        ..LogOptions::default()
    };
    let (log, _) = open_log(&disk, &options).expect("open a new log");
    let mut written: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut durable = 0usize;
    let records = rng.gen_range(0..40);
    for index in 0..records {
        let size = match rng.gen_range(0..10) {
            0 => rng.gen_range(0..(segment_size_bytes as usize * 2)),
            _ => rng.gen_range(16..300),
        };
        let bytes = payload::make(stream, index, size);
        let (version, _) = log.append(&bytes).expect("append");
        written.push((version, bytes));
        if durability == Durability::Sync {
            durable = written.len();
        } else if rng.gen_range(0..8) == 0 {
            log.flush().expect("flush");
            durable = written.len();
        }
    }
    let crashed = disk.crash(rng, policy);
    drop(log);
    let (_, recovered) = open_log(&crashed, &options)
        .unwrap_or_else(|error| panic!("reopen after a power cut ({policy:?}): {error:?}"));
    assert!(
        recovered.len() >= durable,
        "{durable} durable records written, {} recovered ({policy:?}, {durability:?})",
        recovered.len()
    );
    assert!(
        recovered.len() <= written.len(),
        "more records recovered than written"
    );
    assert!(
        recovered[..] == written[..recovered.len()],
        "the recovered records are not a prefix of the written ones ({policy:?}, {durability:?})"
    );
    1
}
