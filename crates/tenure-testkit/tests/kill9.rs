//! Real kill -9: a child appends in `sync` mode and reports each acknowledgement over a pipe;
//! the parent kills it at a random moment, reopens the log and checks every acknowledged
//! record is there, byte for byte.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use tenure::{Durability, FileStorage, Log, LogOptions};
use tenure_testkit::{payload, TempDir};

const SEGMENT_SIZE_BYTES: u64 = 64 << 10;

fn acknowledged_then_killed(
    directory: &std::path::Path,
    stream: u64,
    run_for: Duration,
) -> Vec<(u64, u64, usize)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_log_writer"))
        .arg(directory)
        .arg(stream.to_string())
        .arg(SEGMENT_SIZE_BYTES.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start log_writer");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut acknowledged = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() == 3 {
                acknowledged.push((
                    fields[0].parse().unwrap(),
                    fields[1].parse().unwrap(),
                    fields[2].parse().unwrap(),
                ));
            }
        }
        acknowledged
    });
    std::thread::sleep(run_for);
    child.kill().expect("kill -9");
    child.wait().unwrap();
    reader.join().unwrap()
}

#[test]
fn kill_9_never_loses_an_acknowledged_record() {
    let cycles: u64 = std::env::var("TENURE_KILL_CYCLES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(100);
    let seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(11);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let directory = TempDir::new("kill9");
    let started = Instant::now();
    let mut total_acknowledged = 0usize;
    for cycle in 0..cycles {
        let run_for = Duration::from_micros(rng.gen_range(2_000..25_000));
        let acknowledged = acknowledged_then_killed(directory.path(), seed, run_for);
        total_acknowledged += acknowledged.len();
        let mut recovered = std::collections::BTreeMap::new();
        let options = LogOptions {
            segment_size_bytes: SEGMENT_SIZE_BYTES,
            durability: Durability::Sync,
            ..LogOptions::default()
        };
        let log = Log::open(
            Arc::new(FileStorage::new(directory.path())),
            &options,
            &mut |record| {
                let (_, index) =
                    payload::check(record.payload).expect("recovered record is intact");
                recovered.insert(record.version, (index, record.payload.len()));
                Ok(())
            },
        )
        .unwrap_or_else(|error| {
            panic!("cycle {cycle} (TENURE_SEED={seed}): reopen failed: {error}")
        });
        drop(log);
        for (version, index, length) in &acknowledged {
            assert_eq!(
                recovered.get(version),
                Some(&(*index, *length)),
                "cycle {cycle} (TENURE_SEED={seed}): acknowledged version {version} missing or different"
            );
        }
    }
    assert!(total_acknowledged > 0, "the writer never got going");
    eprintln!(
        "{cycles} kill -9 cycles, {total_acknowledged} acknowledged records checked in {:?}",
        started.elapsed()
    );
}
