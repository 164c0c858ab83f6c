//! Real kill -9 of a process that writes and takes checkpoints (docs/design.md §3 "The
//! persisted index"): a child re-runs this test binary as a writer that overwrites keys,
//! prints each acknowledged write and takes a checkpoint every few thousand writes; the parent
//! kills it at a random moment (before, during or after a checkpoint) and checks that the open
//! after the kill loads the last checkpoint, replays only the log after it, loses no
//! acknowledged write, and reads exactly as a replay of the whole log.
//!
//! TENURE_KILL_CYCLES (default 12) and TENURE_SEED (default 5) choose the run.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tenure::{Durability, Page, Store, StoreOptions, WriteOptions};
use tenure_testkit::TempDir;

const CHILD_DIRECTORY: &str = "TENURE_CHECKPOINT_CHILD_DIRECTORY";
const CHILD_CYCLE: &str = "TENURE_CHECKPOINT_CHILD_CYCLE";
const KEYS: u64 = 20_000;
const WRITES_PER_CHECKPOINT: u64 = 4_000;

fn options(read_only: bool) -> StoreOptions {
    StoreOptions {
        durability: Durability::Buffered,
        segment_size_bytes: 4 << 20,
        background_compaction_interval: None,
        read_only,
        ..StoreOptions::default()
    }
}

fn key_of(write: u64) -> String {
    format!("key-{:05}", (write * 7_919) % KEYS)
}

fn value_of(cycle: u64, write: u64) -> String {
    format!("cycle {cycle} write {write}")
}

/// The child's part: a no-op unless the parent started this binary as its writer.
#[test]
fn writer_child() {
    let (Ok(directory), Ok(cycle)) = (std::env::var(CHILD_DIRECTORY), std::env::var(CHILD_CYCLE))
    else {
        return;
    };
    let cycle: u64 = cycle.parse().expect("a cycle number");
    let store = Store::open(&directory, options(false)).expect("the child's open");
    if store.list_containers().unwrap().is_empty() {
        store.create_container("c", &Default::default()).unwrap();
    }
    for write in 0.. {
        store
            .put(
                "c",
                key_of(write).as_bytes(),
                value_of(cycle, write).as_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
        // Printed only once the put returned: an acknowledgement.
        println!("ack {write}");
        if write % WRITES_PER_CHECKPOINT == WRITES_PER_CHECKPOINT - 1 {
            assert!(store.checkpoint().unwrap());
            println!("checkpoint {write}");
        }
    }
}

/// Starts the writer for `cycle`, kills it after `run_for`; returns the last acknowledged
/// write and whether it finished a checkpoint.
fn run_and_kill(directory: &Path, cycle: u64, run_for: Duration) -> (Option<u64>, bool) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIRECTORY, directory)
        .env(CHILD_CYCLE, cycle.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the writer");
    let stdout = child.stdout.take().expect("piped");
    let (first, first_seen) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let (mut last, mut checkpointed) = (None, false);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(write) = line.strip_prefix("ack ") {
                last = write.parse().ok();
                let _ = first.send(());
            } else if line.starts_with("checkpoint ") {
                checkpointed = true;
            }
        }
        (last, checkpointed)
    });
    // A slow start (a busy machine) must not turn into a cycle that checks nothing.
    let _ = first_seen.recv_timeout(Duration::from_secs(20));
    std::thread::sleep(run_for);
    child.kill().expect("kill -9");
    child.wait().expect("wait for the killed writer");
    reader.join().expect("the reader thread")
}

fn everything(store: &Store) -> BTreeMap<Vec<u8>, (Vec<u8>, u64)> {
    let mut items = BTreeMap::new();
    let mut continuation = None;
    loop {
        let page: Page = store
            .list("c", b"", 1_000, continuation.as_deref(), true)
            .unwrap();
        for item in page.items {
            items.insert(item.key, (item.value.unwrap(), item.version));
        }
        match page.continuation {
            Some(next) => continuation = Some(next),
            None => return items,
        }
    }
}

fn copy_without_checkpoint(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name != "index.checkpoint" && name != "index.checkpoint.new" && name != "LOCK" {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

#[test]
fn kill_9_at_any_moment_of_a_checkpoint_loses_nothing_and_bounds_the_replay() {
    let cycles: u64 = std::env::var("TENURE_KILL_CYCLES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(12);
    let seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(5);
    let mut rng = StdRng::seed_from_u64(seed);
    let scratch = TempDir::new("checkpoint-kill9");
    let directory = scratch.path().join("store");
    let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let (mut checkpointed, mut loaded) = (false, 0);
    for cycle in 0..cycles {
        let run_for = Duration::from_millis(rng.gen_range(5..400));
        let (last, checkpoint_finished) = run_and_kill(&directory, cycle, run_for);
        checkpointed |= checkpoint_finished;
        let store = Store::open(&directory, options(true))
            .unwrap_or_else(|error| panic!("cycle {cycle}: open after kill -9: {error}"));
        let found = everything(&store);
        let acknowledged = last.map_or(0, |last| last + 1);
        for write in 0..acknowledged {
            expected.insert(
                key_of(write).into_bytes(),
                value_of(cycle, write).into_bytes(),
            );
        }
        // The write in flight at the kill may have been kept.
        let in_flight = key_of(acknowledged).into_bytes();
        let in_flight_value = value_of(cycle, acknowledged).into_bytes();
        if found.get(&in_flight).map(|(value, _)| value) == Some(&in_flight_value) {
            expected.insert(in_flight, in_flight_value);
        }
        let values: BTreeMap<_, _> = found
            .iter()
            .map(|(key, (value, _))| (key.clone(), value.clone()))
            .collect();
        assert_eq!(values.len(), expected.len(), "cycle {cycle}: item count");
        assert!(
            values == expected,
            "cycle {cycle}: an acknowledged write is missing"
        );
        let stats = store.stats().unwrap();
        if checkpointed {
            // Every checkpoint stays valid without compaction: the open loads the last.
            assert!(
                stats.opened_from_persisted_index,
                "cycle {cycle}: a checkpoint was taken, and the open replayed the whole log"
            );
            assert!(stats.log_bytes_replayed_at_open < stats.log_bytes);
            loaded += 1;
        }
        drop(store);
        let replayed_directory = scratch.path().join(format!("replayed-{cycle}"));
        copy_without_checkpoint(&directory, &replayed_directory);
        let replayed = Store::open(&replayed_directory, options(true)).unwrap();
        assert!(!replayed.stats().unwrap().opened_from_persisted_index);
        assert!(
            everything(&replayed) == found,
            "cycle {cycle}: the open from the checkpoint differs from a replay of the log"
        );
        drop(replayed);
        std::fs::remove_dir_all(&replayed_directory).unwrap();
    }
    assert!(loaded > 0, "no cycle ran long enough to take a checkpoint");
}
