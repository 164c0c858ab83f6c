//! The log layer: round trips, simulated power loss, corruption, poisoning and locking
//! (issue "Engine foundation").

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use tenure::internals::{FileStorage, Log, LogOptions, SpaceUse, Storage};
use tenure::{Durability, Error, ErrorCode};
use tenure_testkit::{payload, CrashPolicy, Faults, SimStorage, TempDir};

const SMALL_SEGMENT_BYTES: u64 = 64 << 10;

fn options(durability: Durability) -> LogOptions {
    LogOptions {
        segment_size_bytes: SMALL_SEGMENT_BYTES,
        durability,
        ..LogOptions::default()
    }
}

/// Opens the log and returns it with every recovered `(version, payload)`.
fn open(
    storage: Arc<dyn Storage>,
    options: &LogOptions,
) -> Result<(Log, Vec<(u64, Vec<u8>)>), Error> {
    let mut recovered = Vec::new();
    let log = Log::open(storage, options, &mut |record| {
        recovered.push((record.version, record.payload.to_vec()));
        Ok(())
    })?;
    Ok((log, recovered))
}

#[test]
fn records_of_every_size_survive_a_reopen_byte_exact() {
    // `buffered`: payloads of 64 KiB and more are written apart from the mapping.
    for durability in [Durability::Sync, Durability::Buffered] {
        records_of_every_size_survive_a_reopen_byte_exact_in(durability);
    }
}

fn records_of_every_size_survive_a_reopen_byte_exact_in(durability: Durability) {
    let directory = TempDir::new("round-trip");
    let storage: Arc<dyn Storage> = Arc::new(FileStorage::new(directory.path()));
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // 0 B, small, around the segment size, and far past it (records with segments of their own).
    let mut sizes = vec![
        0usize,
        1,
        16,
        100,
        4096,
        65_000,
        65_512,
        65_536,
        200_000,
        1 << 20,
    ];
    sizes.extend((0..300).map(|_| rng.gen_range(0..3000)));
    let mut written = Vec::new();
    {
        let (log, recovered) = open(Arc::clone(&storage), &options(durability)).unwrap();
        assert!(recovered.is_empty());
        for (index, size) in sizes.iter().enumerate() {
            let bytes = if *size == 0 {
                Vec::new()
            } else {
                payload::make(1, index as u64, *size)
            };
            let (version, location) = log.append(&bytes).unwrap();
            let guard = crossbeam_epoch::pin();
            assert_eq!(log.payload(location, &guard).unwrap(), &bytes[..]);
            written.push((version, bytes));
        }
    }
    let (log, recovered) = open(Arc::clone(&storage), &options(durability)).unwrap();
    assert_eq!(recovered.len(), written.len());
    assert_eq!(recovered, written);
    // Appends continue with the next version after a reopen.
    let (version, _) = log.append(b"after reopen").unwrap();
    assert_eq!(version, written.last().unwrap().0 + 1);
}

#[test]
fn payload_size_limit_is_enforced_with_a_named_argument() {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new());
    let (log, _) = open(storage, &options(Durability::Buffered)).unwrap();
    let error = log
        .reserve((65 << 20) + (1 << 20) + 1, SpaceUse::Ordinary)
        .err()
        .unwrap();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("payload"));
}

/// Writes random records, crashes the simulated disk at a random point, reopens and checks:
/// every acknowledged record is there and intact; what comes back is a prefix of what was
/// written (no record without every earlier one); no torn record is returned. The case lives
/// in `tenure_testkit::campaign::crash::log_case` (the torture crash campaign runs it too).
fn crash_once(seed: u64) {
    tenure_testkit::campaign::crash::log_case(&mut rand::rngs::StdRng::seed_from_u64(seed), seed);
}

#[test]
fn simulated_power_loss_never_loses_acknowledged_records() {
    let first_seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    let count: u64 = std::env::var("TENURE_CRASH_STATES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(10_000);
    for seed in first_seed..first_seed + count {
        let outcome = std::panic::catch_unwind(|| crash_once(seed));
        if outcome.is_err() {
            panic!("crash state failed; replay with TENURE_SEED={seed} TENURE_CRASH_STATES=1");
        }
    }
}

#[test]
fn power_loss_while_threads_append_keeps_every_acknowledged_record() {
    for seed in 0..40u64 {
        let disk = SimStorage::new();
        let log_options = options(Durability::Sync);
        let (log, _) = open(Arc::new(disk.clone()), &log_options).unwrap();
        let log = Arc::new(log);
        let acknowledged = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..4u64)
            .map(|thread| {
                let log = Arc::clone(&log);
                let acknowledged = Arc::clone(&acknowledged);
                std::thread::spawn(move || {
                    for index in 0..200u64 {
                        let bytes = payload::make(thread, index, 40 + (index as usize % 200));
                        match log.append(&bytes) {
                            Ok((version, _)) => acknowledged.lock().push((version, bytes)),
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(1 + seed % 5));
        let acknowledged_before_crash: BTreeMap<u64, Vec<u8>> =
            acknowledged.lock().iter().cloned().collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let crashed = disk.crash(&mut rng, CrashPolicy::Random);
        for thread in threads {
            thread.join().unwrap();
        }
        let (_, recovered) = open(Arc::new(crashed), &log_options).unwrap();
        let recovered: BTreeMap<u64, Vec<u8>> = recovered.into_iter().collect();
        for (version, bytes) in &acknowledged_before_crash {
            assert_eq!(
                recovered.get(version),
                Some(bytes),
                "seed {seed}: acknowledged version {version} lost"
            );
        }
        // Versions come back as an unbroken prefix.
        let versions: Vec<u64> = recovered.keys().copied().collect();
        assert!(
            versions.windows(2).all(|pair| pair[1] == pair[0] + 1),
            "seed {seed}: gap in versions"
        );
        for bytes in recovered.values() {
            assert!(
                payload::check(bytes).is_some(),
                "seed {seed}: torn record returned"
            );
        }
    }
}

/// A store with `count` records, closed cleanly (everything below the watermark).
fn closed_store(count: u64) -> (SimStorage, Vec<(u64, Vec<u8>)>) {
    let disk = SimStorage::new();
    let (log, _) = open(Arc::new(disk.clone()), &options(Durability::Sync)).unwrap();
    let written = (0..count)
        .map(|index| {
            let bytes = payload::make(9, index, 100);
            (log.append(&bytes).unwrap().0, bytes)
        })
        .collect();
    log.close().unwrap();
    (
        disk.crash(
            &mut rand::rngs::StdRng::seed_from_u64(0),
            CrashPolicy::DropAll,
        ),
        written,
    )
}

#[test]
fn a_bit_flip_before_the_watermark_is_corruption_naming_file_and_offset() {
    for target in [0usize, 5, 30, 150, 1000] {
        let (disk, _) = closed_store(20);
        let segment = disk
            .file_names()
            .into_iter()
            .find(|name| name.starts_with("segment-"))
            .unwrap();
        let original = disk.durable_files()[&segment][target];
        disk.corrupt(&segment, target, &[original ^ 0x10]);
        let error = open(Arc::new(disk), &options(Durability::Sync))
            .err()
            .expect("corruption must fail the open");
        match &error {
            Error::Corruption { file, offset, .. } => {
                assert!(file.ends_with(&segment), "{error}");
                assert!(*offset <= target as u64, "{error}");
            }
            other => panic!("expected Corruption, got {other}"),
        }
        assert_eq!(error.code(), ErrorCode::Corruption);
        assert_eq!(error.status(), 500);
    }
}

#[test]
fn a_zeroed_range_before_the_watermark_is_corruption() {
    let (disk, _) = closed_store(20);
    let segment = disk
        .file_names()
        .into_iter()
        .find(|name| name.starts_with("segment-"))
        .unwrap();
    disk.corrupt(&segment, 256, &[0u8; 512]);
    let error = open(Arc::new(disk), &options(Durability::Sync))
        .err()
        .unwrap();
    assert_eq!(error.code(), ErrorCode::Corruption, "{error}");
}

#[test]
fn damage_past_the_watermark_is_a_torn_tail_and_is_cut() {
    let disk = SimStorage::new();
    let log_options = options(Durability::Buffered);
    let (log, _) = open(Arc::new(disk.clone()), &log_options).unwrap();
    let mut written = Vec::new();
    for index in 0..10u64 {
        let bytes = payload::make(3, index, 100);
        written.push((log.append(&bytes).unwrap().0, bytes));
    }
    log.flush().unwrap();
    let durable_count = written.len();
    let mut locations = Vec::new();
    for index in 10..20u64 {
        let bytes = payload::make(3, index, 100);
        let (version, location) = log.append(&bytes).unwrap();
        written.push((version, bytes));
        locations.push(location);
    }
    // The OS wrote every page back, but the watermark only covers the first ten records.
    let crashed = disk.crash(
        &mut rand::rngs::StdRng::seed_from_u64(1),
        CrashPolicy::KeepAll,
    );
    drop(log);
    let segment = crashed
        .file_names()
        .into_iter()
        .find(|name| name.starts_with("segment-"))
        .unwrap();
    let damaged_at = locations[4] as usize + 30;
    crashed.corrupt(&segment, damaged_at, &[0xFF, 0x00, 0xAA]);
    let (_, recovered) = open(Arc::new(crashed), &log_options).unwrap();
    assert_eq!(
        recovered.len(),
        durable_count + 4,
        "the log is cut at the damaged record"
    );
    assert_eq!(recovered[..], written[..durable_count + 4]);
}

#[test]
fn a_failed_flush_poisons_the_log_until_reopen() {
    let disk = SimStorage::new();
    let log_options = options(Durability::Sync);
    let (log, _) = open(Arc::new(disk.clone()), &log_options).unwrap();
    let first = payload::make(4, 0, 64);
    log.append(&first).unwrap();
    disk.set_faults(Faults {
        failing_syncs: vec![1],
        ..Faults::default()
    });
    let error = log
        .append(&payload::make(4, 1, 64))
        .expect_err("the flush fails");
    assert_eq!(error.code(), ErrorCode::Io, "{error}");
    assert!(error.to_string().contains("fdatasync"), "{error}");
    assert!(log.is_poisoned());
    // Later syncs would succeed, but the store must not pretend: every write fails.
    let later = log.append(&payload::make(4, 2, 64)).expect_err("poisoned");
    assert_eq!(later.code(), ErrorCode::Io);
    let crashed = disk.crash(
        &mut rand::rngs::StdRng::seed_from_u64(2),
        CrashPolicy::DropAll,
    );
    drop(log);
    let (log, recovered) = open(Arc::new(crashed), &log_options).unwrap();
    assert_eq!(recovered[0].1, first);
    assert!(recovered.len() <= 2);
    log.append(b"writable again after reopen").unwrap();
}

#[test]
fn a_second_open_fails_with_store_locked_naming_the_path() {
    let directory = TempDir::new("locked");
    let storage: Arc<dyn Storage> = Arc::new(FileStorage::new(directory.path()));
    let (log, _) = open(Arc::clone(&storage), &options(Durability::Sync)).unwrap();
    let error = open(
        Arc::new(FileStorage::new(directory.path())),
        &options(Durability::Sync),
    )
    .err()
    .unwrap();
    assert_eq!(error.code(), ErrorCode::StoreLocked);
    assert_eq!(error.status(), 423);
    assert!(error
        .to_string()
        .contains(&directory.path().display().to_string()));
    drop(log);
    open(storage, &options(Durability::Sync)).expect("open again once the first is closed");
}

#[test]
fn new_directories_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let directory = TempDir::new("modes");
    let store_path = directory.path().join("store");
    let (log, _) = open(
        Arc::new(FileStorage::new(&store_path)),
        &options(Durability::Sync),
    )
    .unwrap();
    log.append(b"x").unwrap();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store_path), 0o700);
    for entry in std::fs::read_dir(&store_path).unwrap() {
        assert_eq!(mode(&entry.unwrap().path()), 0o600);
    }
}

#[test]
fn an_unknown_format_version_is_refused_clearly() {
    let (disk, _) = closed_store(3);
    let mut superblock = disk.durable_files()["superblock"].clone();
    for copy in [0usize, 512] {
        superblock[copy + 8..copy + 12].copy_from_slice(&7u32.to_le_bytes());
        let crc = crc32fast::hash(&superblock[copy..copy + 56]);
        superblock[copy + 56..copy + 60].copy_from_slice(&crc.to_le_bytes());
    }
    disk.corrupt("superblock", 0, &superblock);
    let error = open(Arc::new(disk), &options(Durability::Sync))
        .err()
        .unwrap();
    assert_eq!(error.code(), ErrorCode::Corruption);
    assert!(error.to_string().contains("format version 7"), "{error}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Hostile bytes in any store file never panic or crash: the open fails cleanly or recovers.
    #[test]
    fn arbitrary_bytes_in_store_files_never_panic(
        which in 0usize..3,
        offset in 0usize..9000,
        noise in proptest::collection::vec(any::<u8>(), 1..600),
        truncate_to in proptest::option::of(0usize..20_000),
    ) {
        let (disk, _) = closed_store(40);
        let mut files = disk.durable_files();
        let names: Vec<String> = files.keys().cloned().collect();
        let name = &names[which % names.len()];
        let bytes = files.get_mut(name).unwrap();
        if offset < bytes.len() {
            let end = (offset + noise.len()).min(bytes.len());
            bytes[offset..end].copy_from_slice(&noise[..end - offset]);
        }
        if let Some(length) = truncate_to {
            bytes.truncate(length);
        }
        let hostile = SimStorage::with_files(files);
        match open(Arc::new(hostile), &options(Durability::Sync)) {
            Ok((_, recovered)) => {
                for (_, bytes) in recovered {
                    prop_assert!(payload::check(&bytes).is_some());
                }
            }
            Err(error) => prop_assert!(matches!(error.code(), ErrorCode::Corruption | ErrorCode::Io), "{}", error),
        }
    }
}

/// A failed allocation is met before the append takes a version (`LogShared::make_room`):
/// the appends that need the space fail with `Io`, nothing is poisoned, and once the disk
/// works again appends go on, every acknowledged one readable after a reopen.
#[test]
fn a_failed_segment_allocation_fails_the_appends_that_need_it_and_nothing_else() {
    for durability in [Durability::Buffered, Durability::Sync] {
        let disk = SimStorage::new();
        let log_options = LogOptions {
            segment_size_bytes: 4096,
            durability,
            ..LogOptions::default()
        };
        let (log, _) = open(Arc::new(disk.clone()), &log_options).unwrap();
        log.append(&payload::make(5, 0, 100)).unwrap();
        // Every allocation from now on fails: the next segment can never be created.
        disk.set_faults(Faults {
            failing_allocations: (1..=1000).collect(),
            ..Faults::default()
        });
        let log = Arc::new(log);
        let threads: Vec<_> = (0..4u64)
            .map(|thread| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    let mut failures = 0;
                    for index in 0..100u64 {
                        if log.append(&payload::make(thread, index, 200)).is_err() {
                            failures += 1;
                        }
                    }
                    failures
                })
            })
            .collect();
        let failures: u64 = threads
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .sum();
        assert!(
            failures > 0,
            "{durability:?}: appends past the segment must fail"
        );
        assert!(!log.is_poisoned(), "{durability:?}");
        let error = log.append(&payload::make(9, 0, 200)).expect_err("no space");
        assert_eq!(error.code(), ErrorCode::Io, "{durability:?}: {error}");
        disk.set_faults(Faults::default());
        let after = log.append(&payload::make(9, 1, 200)).unwrap();
        log.close().unwrap();
        drop(log);
        let (_log, records) = open(Arc::new(disk.clone()), &log_options).unwrap();
        assert_eq!(
            records.len() as u64,
            1 + 400 - failures + 1,
            "{durability:?}"
        );
        assert_eq!(records.last().unwrap().0, after.0, "{durability:?}");
    }
}

/// Found by the I/O-fault campaign (`torture --campaign io-faults --seed 1`): when the very
/// first superblock write or sync of a new store failed (or power was lost before it was
/// synced), the superblock file stayed with no valid copy and every later open failed with
/// `Corruption` — the store could never be created. With no segment files nothing was ever
/// written, so the open creates it afresh.
#[test]
fn a_store_whose_creation_failed_opens_afterwards() {
    let plans = [
        Faults {
            failing_writes: vec![1],
            ..Faults::default()
        },
        Faults {
            failing_syncs: vec![1],
            ..Faults::default()
        },
    ];
    for (index, plan) in plans.into_iter().enumerate() {
        for power_cut in [false, true] {
            let disk = SimStorage::new();
            disk.set_faults(plan_clone(&plan));
            let error = open(Arc::new(disk.clone()), &options(Durability::Sync))
                .err()
                .expect("the creation fails");
            assert_eq!(error.code(), ErrorCode::Io, "plan {index}: {error}");
            let disk = if power_cut {
                disk.crash(
                    &mut rand::rngs::StdRng::seed_from_u64(3),
                    CrashPolicy::KeepAll,
                )
            } else {
                disk.set_faults(Faults::default());
                disk
            };
            let (log, recovered) = open(Arc::new(disk), &options(Durability::Sync))
                .unwrap_or_else(|error| panic!("plan {index}, power cut {power_cut}: {error}"));
            assert!(recovered.is_empty());
            log.append(b"created at last").unwrap();
        }
    }
}

fn plan_clone(plan: &Faults) -> Faults {
    Faults {
        failing_syncs: plan.failing_syncs.clone(),
        fail_syncs_from: plan.fail_syncs_from,
        failing_allocations: plan.failing_allocations.clone(),
        failing_writes: plan.failing_writes.clone(),
    }
}

/// Found by the record_decoder fuzz target (fuzz/regressions/record_decoder/crash-934d6b…):
/// a container-create record with a valid checksum whose name held a NUL was replayed, and
/// the store opened with a container no call could name (listing it, then reading it, failed
/// with InvalidArgument). A name the API would refuse is now a decode failure: `Corruption`.
#[test]
fn a_recovered_container_name_the_api_would_refuse_is_corruption() {
    use tenure::{ManualClock, Store, StoreOptions};
    // The payloads of a real store that created container "ab".
    let disk = SimStorage::new();
    let store_options = || StoreOptions {
        segment_size_bytes: 4096,
        clock: Arc::new(ManualClock::new(1_700_000_000_000_000)),
        background_compaction_interval: None,
        ..StoreOptions::default()
    };
    let store = tenure::Store::open_with_storage(Arc::new(disk.clone()), store_options()).unwrap();
    store.create_container("ab", &Default::default()).unwrap();
    store.close().unwrap();
    let (_, payloads) = open(Arc::new(disk), &options(Durability::Sync)).unwrap();
    let payloads: Vec<Vec<u8>> = payloads.into_iter().map(|(_, payload)| payload).collect();
    // As written, the framed records open.
    let files = tenure_testkit::campaign::hostile::files_with_records(&payloads);
    let reopened =
        Store::open_with_storage(Arc::new(SimStorage::with_files(files)), store_options()).unwrap();
    assert_eq!(reopened.list_containers().unwrap(), vec!["ab".to_owned()]);
    drop(reopened);
    for bad in [&b"a\0"[..], b"/b"] {
        let mut damaged = payloads.clone();
        let record = damaged
            .iter_mut()
            .find(|payload| payload.windows(2).any(|pair| pair == b"ab"))
            .expect("the container-create record");
        let at = record.windows(2).position(|pair| pair == b"ab").unwrap();
        record[at..at + 2].copy_from_slice(bad);
        let files = tenure_testkit::campaign::hostile::files_with_records(&damaged);
        let error =
            Store::open_with_storage(Arc::new(SimStorage::with_files(files)), store_options())
                .err()
                .unwrap_or_else(|| panic!("a container named {bad:?} was recovered"));
        assert_eq!(error.code(), ErrorCode::Corruption, "{error}");
    }
}

/// A `sync` store's appenders stage their records, and the group-commit leader writes each run
/// of adjacent staged records with one write before it syncs (log/staging.rs).
#[test]
fn staged_records_reach_the_file_with_their_groups_sync_one_write_per_run() {
    let disk = SimStorage::new();
    let log_options = options(Durability::Sync);
    let (log, _) = open(Arc::new(disk.clone()), &log_options).unwrap();
    let writes = || disk.call_counts().2;
    let mut expected = vec![b"first".to_vec()];
    log.append(&expected[0]).unwrap();
    let before = writes();
    let single = payload::make(1, 0, 200);
    log.append(&single).unwrap();
    expected.push(single);
    let writes_for_one_record = writes() - before;

    // Three records sealed without waiting: none is in the file before a sync asks for it,
    // then one write carries all three.
    let staged: Vec<Vec<u8>> = (0..3).map(|index| payload::make(2, index, 200)).collect();
    let before = writes();
    let mut last_version = 0;
    for bytes in &staged {
        let mut reservation = log.reserve(bytes.len(), SpaceUse::Ordinary).unwrap();
        reservation.write_payload(bytes).unwrap();
        last_version = reservation.commit_nowait();
    }
    assert_eq!(
        writes(),
        before,
        "sealed records wait for their group's sync"
    );
    let segment_bytes = |files: &BTreeMap<String, Vec<u8>>| -> Vec<u8> {
        files
            .iter()
            .find(|(name, _)| name.starts_with("segment-"))
            .map(|(_, bytes)| bytes.clone())
            .expect("the log has a segment")
    };
    let unsynced = segment_bytes(&disk.current_files());
    assert!(
        !unsynced
            .windows(staged[0].len())
            .any(|window| window == &staged[0][..]),
        "a staged record is not in the file before its sync"
    );
    log.wait(last_version).unwrap();
    assert_eq!(
        writes() - before,
        writes_for_one_record,
        "three adjacent records: one write, as for one record"
    );
    expected.extend(staged.iter().cloned());

    // An aborted reservation between two staged records has its `Abort` header written through
    // the mapping: the run splits around it, and the abort is not overwritten.
    let around: Vec<Vec<u8>> = (0..3).map(|index| payload::make(3, index, 200)).collect();
    let before = writes();
    let mut reservations: Vec<_> = around
        .iter()
        .map(|bytes| {
            let mut reservation = log.reserve(bytes.len(), SpaceUse::Ordinary).unwrap();
            reservation.write_payload(bytes).unwrap();
            reservation
        })
        .collect();
    let last = reservations.pop().unwrap();
    let aborted = reservations.pop().unwrap();
    let first = reservations.pop().unwrap();
    first.commit_nowait();
    aborted.abort();
    let last_version = last.commit_nowait();
    drop(reservations);
    log.wait(last_version).unwrap();
    assert_eq!(writes() - before, writes_for_one_record + 1, "two runs");
    expected.push(around[0].clone());
    expected.push(around[2].clone());

    drop(log);
    let (_, recovered) = open(Arc::new(disk.clone()), &log_options).unwrap();
    let recovered: Vec<Vec<u8>> = recovered.into_iter().map(|(_, bytes)| bytes).collect();
    assert_eq!(recovered, expected);
}

/// A large payload goes to the file with one vectored write of the caller's parts, not through
/// the mapping, and its header is written last, at the seal: until then the file holds the
/// payload behind a zeroed header, which no scan takes for a record. An aborted one becomes an
/// `Abort` record. Both durabilities; the records around them are unaffected.
#[test]
fn a_payload_written_apart_is_a_record_only_once_sealed() {
    for durability in [Durability::Buffered, Durability::Sync] {
        let disk = SimStorage::new();
        let log_options = LogOptions {
            segment_size_bytes: 1 << 20,
            durability,
            ..LogOptions::default()
        };
        let (log, _) = open(Arc::new(disk.clone()), &log_options).unwrap();
        let small = payload::make(4, 0, 100);
        log.append(&small).unwrap();
        let large = payload::make(4, 1, 100_000);
        let mut reservation = log.reserve(large.len(), SpaceUse::Ordinary).unwrap();
        assert!(reservation.writes_payload_apart(), "{durability:?}");
        let location = reservation.location();
        reservation
            .write_payload_parts(&[&large[..10], &large[10..]])
            .unwrap();
        let payload_without_header = |bytes: &[u8]| {
            let files = disk.current_files();
            let (_, segment) = files
                .iter()
                .find(|(name, _)| name.starts_with("segment-"))
                .expect("the log has a segment");
            let at = segment
                .windows(64)
                .position(|window| window == &bytes[..64])
                .expect("the payload is in the file before the seal");
            assert_eq!(segment[at..at + bytes.len()], bytes[..]);
            assert!(
                segment[at - 24..at].iter().all(|byte| *byte == 0),
                "no header before the seal ({durability:?})"
            );
        };
        payload_without_header(&large);
        reservation.commit().unwrap();
        let guard = crossbeam_epoch::pin();
        assert_eq!(log.payload(location, &guard).unwrap(), &large[..]);
        drop(guard);

        let given_up = payload::make(4, 2, 100_000);
        let mut aborted = log.reserve(given_up.len(), SpaceUse::Ordinary).unwrap();
        // Through `write_payload`, as every caller but an item write's.
        aborted.write_payload(&given_up).unwrap();
        payload_without_header(&given_up);
        aborted.abort();
        let last = payload::make(4, 3, 100);
        log.append(&last).unwrap();
        log.close().unwrap();
        drop(log);
        let (_, recovered) = open(Arc::new(disk.clone()), &log_options).unwrap();
        let payloads: Vec<Vec<u8>> = recovered.into_iter().map(|(_, bytes)| bytes).collect();
        assert_eq!(payloads, vec![small, large, last], "{durability:?}");
    }
}
