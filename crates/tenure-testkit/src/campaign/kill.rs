//! Real kill -9 cycles (docs/spec.md §11 "Crash"): a child process appends self-checking records in
//! `sync` mode and prints each acknowledged version; the parent kills it with SIGKILL at a
//! random moment, reopens the log and checks every acknowledged record is there byte for
//! byte, and every recovered record is intact. A case runs [`CYCLES_PER_CASE`] cycles on one
//! fresh directory, so later cycles recover a log that earlier kills and reopens left.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::internals::{FileStorage, Log, LogOptions};
use tenure::{Durability, ErrorCode};

use super::Context;
use crate::payload;

pub const CYCLES_PER_CASE: u64 = 2;
const SEGMENT_SIZE_BYTES: u64 = 64 << 10;

/// The child: `DIRECTORY STREAM SEGMENT_SIZE_BYTES`. Appends until killed; prints
/// `version index length` after each acknowledged append.
pub fn writer_main(arguments: &[String]) -> Result<(), String> {
    let [directory, stream, segment_size] = arguments else {
        return Err("usage: DIRECTORY STREAM SEGMENT_SIZE_BYTES".to_owned());
    };
    let stream: u64 = stream.parse().map_err(|_| "STREAM is a number")?;
    let options = LogOptions {
        segment_size_bytes: segment_size
            .parse()
            .map_err(|_| "SEGMENT_SIZE_BYTES is a number")?,
        durability: Durability::Sync,
        // Writers of odd streams (seeds) commit through io_uring: both durable paths meet the
        // kill.
        io_uring: stream % 2 == 1,
        ..LogOptions::default()
    };
    let mut next_index = 0u64;
    let log = open_retrying(Path::new(directory), &options, &mut |record| {
        if let Some((_, index)) = payload::check(record.payload) {
            next_index = next_index.max(index + 1);
        }
        Ok(())
    })
    .map_err(|error| format!("open failed: {error}"))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for index in next_index.. {
        let length = 16 + (index as usize * 37) % 700;
        let bytes = payload::make(stream, index, length);
        let (version, _) = log
            .append(&bytes)
            .map_err(|error| format!("append: {error}"))?;
        // The line is written only after the append returned: an acknowledgement.
        writeln!(out, "{version} {index} {length}").map_err(|error| error.to_string())?;
        out.flush().map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// Opens the log, retrying while it is locked: when cases run on several threads, a child
/// another thread is starting holds a copy of every descriptor of this process (the store's
/// flock too) between its fork and its exec.
fn open_retrying(
    directory: &Path,
    options: &LogOptions,
    replay: &mut dyn FnMut(tenure::internals::RecoveredRecord<'_>) -> tenure::Result<()>,
) -> tenure::Result<Log> {
    let mut attempts = 0;
    loop {
        match Log::open(Arc::new(FileStorage::new(directory)), options, replay) {
            Err(error) if error.code() == ErrorCode::StoreLocked && attempts < 5_000 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            result => return result,
        }
    }
}

/// Starts the writer and kills it `run_for` after its start, or (when `after_first`) after
/// its first acknowledgement; returns its acknowledgements.
fn acknowledged_then_killed(
    program: &Path,
    leading: &[String],
    directory: &Path,
    stream: u64,
    run_for: Duration,
    after_first: bool,
) -> Vec<(u64, u64, usize)> {
    let mut child = Command::new(program)
        .args(leading)
        .arg(directory)
        .arg(stream.to_string())
        .arg(SEGMENT_SIZE_BYTES.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|error| panic!("start the writer {}: {error}", program.display()));
    let stdout = child.stdout.take().expect("piped");
    let (first, first_seen) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut acknowledged = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let fields: Vec<&str> = line.split(' ').collect();
            if let [version, index, length] = fields[..] {
                if let (Ok(version), Ok(index), Ok(length)) =
                    (version.parse(), index.parse(), length.parse())
                {
                    acknowledged.push((version, index, length));
                    let _ = first.send(());
                }
            }
        }
        acknowledged
    });
    if after_first {
        // A slow start (a busy machine) must not turn into a cycle that checks nothing.
        let _ = first_seen.recv_timeout(Duration::from_secs(20));
    }
    std::thread::sleep(run_for);
    child.kill().expect("kill -9");
    child.wait().expect("wait for the killed writer");
    reader.join().expect("the reader thread")
}

/// Kill -9 cycles on a fresh directory; returns the number of cycles.
pub fn case(seed: u64, context: &Context) -> u64 {
    let (program, leading) = context
        .writer
        .as_ref()
        .expect("kill -9 cycles need a writer program (Context::writer)");
    let mut rng = StdRng::seed_from_u64(seed);
    let directory = context.scratch.join(format!("kill-{seed}"));
    let _ = std::fs::remove_dir_all(&directory);
    let mut total_acknowledged = 0;
    for cycle in 0..CYCLES_PER_CASE {
        // The first cycle kills while records are appended; later ones at any moment from the
        // start, which may be while the writer is still recovering the log.
        let after_first = cycle == 0 || rng.gen_bool(0.5);
        let run_for = Duration::from_micros(rng.gen_range(0..20_000));
        let acknowledged =
            acknowledged_then_killed(program, leading, &directory, seed, run_for, after_first);
        total_acknowledged += acknowledged.len();
        let mut recovered = std::collections::BTreeMap::new();
        let options = LogOptions {
            segment_size_bytes: SEGMENT_SIZE_BYTES,
            durability: Durability::Sync,
            ..LogOptions::default()
        };
        let log = open_retrying(&directory, &options, &mut |record| {
            let (_, index) = payload::check(record.payload)
                .unwrap_or_else(|| panic!("cycle {cycle}: a recovered record is torn"));
            recovered.insert(record.version, (index, record.payload.len()));
            Ok(())
        })
        .unwrap_or_else(|error| panic!("cycle {cycle}: reopen after kill -9 failed: {error}"));
        drop(log);
        for (version, index, length) in &acknowledged {
            assert_eq!(
                recovered.get(version),
                Some(&(*index, *length)),
                "cycle {cycle}: acknowledged version {version} missing or different"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&directory);
    // A writer that never got going (a wrong program, a failing open) would make the checks
    // vacuous.
    assert!(
        total_acknowledged > 0,
        "the writer acknowledged nothing in {CYCLES_PER_CASE} cycles"
    );
    CYCLES_PER_CASE
}
