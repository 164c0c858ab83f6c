//! Read-only opens follow the writer (docs/spec.md §1, docs/design.md "Read-only opens follow
//! the writer"): every read sees what was committed before it started, across segments, the
//! writer's compaction and its reopening, while snapshots keep their version; a follower that
//! lags holds back compaction, and one that dies stops holding it back.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tenure::{
    ContainerOptions, ContainerWriteOptions, Durability, ErrorCode, LeaseRequest, Page,
    ReadOptions, Snapshot, Store, StoreOptions, WriteOptions,
};

fn directory(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!(
        "tenure-follow-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

fn writer_options(durability: Durability) -> StoreOptions {
    StoreOptions {
        durability,
        segment_size_bytes: 64 << 10,
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

/// A follower that reads on only when called (no background thread), so a test can make
/// it lag.
fn read_only() -> StoreOptions {
    StoreOptions {
        read_only: true,
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

/// Every container's items: key → (value, ETag, version, metadata).
type Content = BTreeMap<String, BTreeMap<Vec<u8>, (Vec<u8>, u64, u64, Vec<(String, String)>)>>;

fn content_of(pages: &dyn Fn(&str, Option<&str>) -> Page, containers: Vec<String>) -> Content {
    let mut content = Content::new();
    for container in containers {
        let items = content.entry(container.clone()).or_default();
        let mut continuation: Option<String> = None;
        loop {
            let page = pages(&container, continuation.as_deref());
            for item in page.items {
                let entry = (
                    item.value.unwrap(),
                    item.etag.0,
                    item.version,
                    item.metadata,
                );
                items.insert(item.key, entry);
            }
            match page.continuation {
                Some(next) => continuation = Some(next),
                None => break,
            }
        }
    }
    content
}

fn content(store: &Store) -> Content {
    content_of(
        &|container, continuation| store.list(container, b"", 500, continuation, true).unwrap(),
        store.list_containers().unwrap(),
    )
}

fn snapshot_content(snapshot: &Snapshot<'_>) -> Content {
    content_of(
        &|container, continuation| {
            snapshot
                .list(container, b"", 500, continuation, true)
                .unwrap()
        },
        snapshot.list_containers().unwrap(),
    )
}

/// A small deterministic generator (xorshift), so a failing seed can be run again.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// Random writes of every kind on a writer, with compactions and reopens of the writer among
/// them; after each step the follower (opened once, at the start) reads exactly what the
/// writer reads, and a snapshot the follower took earlier still reads what it read then.
#[test]
fn a_follower_reads_what_the_writer_reads_after_every_step() {
    // More seeds: TENURE_FOLLOW_SEEDS=N runs N per durability.
    let seeds: u64 = std::env::var("TENURE_FOLLOW_SEEDS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(1);
    let cases = (0..seeds).flat_map(|seed| {
        [
            (2 * seed + 1, Durability::Buffered),
            (2 * seed + 2, Durability::Sync),
        ]
    });
    for (seed, durability) in cases {
        let directory = directory("model");
        let mut writer = Some(Store::open(&directory, writer_options(durability)).unwrap());
        let container = ContainerOptions::default();
        writer
            .as_ref()
            .unwrap()
            .create_container("c", &container)
            .unwrap();
        let follower = Store::open(&directory, read_only()).unwrap();
        // A second follower, opened again now and then: its open's replay leaves plain heads
        // (the first's catch-up installs nodes), which the writer's compaction must not strand.
        let mut rejoined = Store::open(&directory, read_only()).unwrap();
        let mut random = Random(0x9e37_79b9_7f4a_7c15 ^ seed);
        let mut held: Option<(Snapshot<'_>, Content)> = None;
        let (mut segments_removed, mut reopened) = (0, 0);
        for step in 0..600 {
            let store = writer.as_ref().unwrap();
            let key = format!("key-{}", random.below(60)).into_bytes();
            let write = WriteOptions::default();
            let context = format!("seed {seed}, step {step}");
            match random.below(20) {
                0..=7 => {
                    let length = if random.below(10) == 0 { 9_000 } else { 150 };
                    let value = vec![step as u8; length];
                    store.put("c", &key, &value, &write).unwrap();
                }
                8..=9 => match store.delete("c", &key, &write) {
                    Ok(()) => {}
                    Err(error) => assert_eq!(error.code(), ErrorCode::NotFound, "{context}"),
                },
                10 => {
                    let mut batch = store.batch();
                    for index in 0..3 {
                        let key = format!("batch-{}", random.below(20) + index);
                        batch.put("c", key.as_bytes(), b"batched", WriteOptions::default());
                    }
                    batch.commit().unwrap();
                }
                11 => {
                    if store.list_containers().unwrap().contains(&"d".to_owned()) {
                        store
                            .delete_container("d", &ContainerWriteOptions::default())
                            .unwrap();
                    } else {
                        store.create_container("d", &container).unwrap();
                        store.put("d", &key, b"in d", &write).unwrap();
                    }
                }
                12 => {
                    let metadata = vec![("step".to_owned(), step.to_string())];
                    let options = WriteOptions {
                        metadata,
                        ..WriteOptions::default()
                    };
                    store.put("c", &key, b"with metadata", &options).unwrap();
                }
                13 => {
                    if let Ok(lease) = store.acquire_lease("c", &key, &LeaseRequest::infinite()) {
                        let info = follower.lease_info("c", &key).unwrap();
                        assert_eq!(info.id, Some(lease.id), "{context}");
                        store.release_lease("c", &key, lease.id).unwrap();
                    }
                }
                14 => {
                    segments_removed += store.compact().unwrap().segments_removed;
                }
                15 => {
                    // The writer closes and another opens: a new generation of records.
                    writer.take().unwrap().close().unwrap();
                    writer = Some(Store::open(&directory, writer_options(durability)).unwrap());
                    reopened += 1;
                }
                18 => {
                    rejoined.close().unwrap();
                    rejoined = Store::open(&directory, read_only()).unwrap();
                }
                16 => {
                    held = Some({
                        let snapshot = follower.snapshot().unwrap();
                        let seen = snapshot_content(&snapshot);
                        (snapshot, seen)
                    });
                }
                _ => {
                    if let Some((snapshot, seen)) = held.take() {
                        assert_eq!(snapshot_content(&snapshot), seen, "{context}");
                    }
                }
            }
            let store = writer.as_ref().unwrap();
            assert_eq!(follower.version(), store.version(), "{context}");
            let expected = content(store);
            assert_eq!(content(&follower), expected, "{context}");
            assert_eq!(content(&rejoined), expected, "{context}");
        }
        // The steps met what they are here for.
        assert!(
            segments_removed > 0 && reopened > 0,
            "{segments_removed} {reopened}"
        );
        drop(held);
        rejoined.close().unwrap();
        follower.close().unwrap();
        writer.take().unwrap().close().unwrap();
        std::fs::remove_dir_all(&directory).unwrap();
    }
}

/// Writers on four threads, one follower reading on another: each read of a thread's last
/// acknowledged key finds it. A write acknowledged before a read starts is seen by it.
#[test]
fn a_follower_sees_every_write_acknowledged_before_its_read_starts() {
    let directory = directory("live");
    let writer = Arc::new(Store::open(&directory, writer_options(Durability::Buffered)).unwrap());
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let follower = Store::open(&directory, read_only()).unwrap();
    let acknowledged: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|thread| {
            let (writer, acknowledged, stop) = (
                Arc::clone(&writer),
                Arc::clone(&acknowledged),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let mut count = 0u64;
                while !stop.load(Ordering::Relaxed) && count < 20_000 {
                    let key = format!("{thread}-{count}");
                    let value = count.to_le_bytes();
                    writer
                        .put("c", key.as_bytes(), &value, &WriteOptions::default())
                        .unwrap();
                    count += 1;
                    acknowledged[thread].store(count, Ordering::Release);
                }
            })
        })
        .collect();
    let mut checked = 0;
    while checked < 5_000 {
        for (thread, count) in acknowledged.iter().enumerate() {
            let count = count.load(Ordering::Acquire);
            if count == 0 {
                continue;
            }
            let key = format!("{thread}-{}", count - 1);
            let item = follower
                .get("c", key.as_bytes(), &ReadOptions::default())
                .unwrap_or_else(|error| panic!("{key}: {error}"));
            assert_eq!(item.value.unwrap(), (count - 1).to_le_bytes());
            checked += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(content(&follower), content(&writer));
    follower.close().unwrap();
    Arc::try_unwrap(writer).ok().unwrap().close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

/// Fills several 64 KiB segments, then deletes every item.
fn fill_and_delete(writer: &Store, round: u8) {
    for index in 0..300 {
        let key = format!("key-{index}");
        writer
            .put(
                "c",
                key.as_bytes(),
                &[round; 1_000],
                &WriteOptions::default(),
            )
            .unwrap();
    }
    for index in 0..300 {
        let key = format!("key-{index}");
        writer
            .delete("c", key.as_bytes(), &WriteOptions::default())
            .unwrap();
    }
}

/// A follower that has not read a segment yet keeps the writer's compaction from removing
/// it: removed, the segment's deletes would never reach the follower, which would go on
/// reading the deleted items.
#[test]
fn a_lagging_follower_holds_back_compaction_until_it_has_read_on() {
    let directory = directory("lagging");
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let follower = Store::open(&directory, read_only()).unwrap();
    fill_and_delete(&writer, 1);
    // The follower has read nothing since its open, and the writer's whole log is newer.
    writer
        .put("c", b"kept", b"v", &WriteOptions::default())
        .unwrap();
    let held_back = writer.compact().unwrap();
    assert!(held_back.deferred_by_snapshot, "{held_back:?}");
    assert_eq!(held_back.segments_removed, 0, "{held_back:?}");
    // Once it has read on, the segments go, and nothing deleted comes back to it.
    assert_eq!(content(&follower), content(&writer));
    let report = writer.compact().unwrap();
    assert!(report.segments_removed > 0, "{report:?}");
    fill_and_delete(&writer, 2);
    assert_eq!(content(&follower), content(&writer));
    assert_eq!(content(&follower)["c"].len(), 1);
    follower.close().unwrap();
    // With no follower, compaction removes what it cleaned.
    let report = writer.compact().unwrap();
    assert!(report.segments_removed > 0, "{report:?}");
    assert!(!report.deferred_by_snapshot, "{report:?}");
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

const CHILD_DIRECTORY: &str = "TENURE_FOLLOW_CHILD_DIRECTORY";

/// The child's part: a no-op unless the parent started this binary as its follower. Opens
/// the store read-only, says so, and waits to be killed.
#[test]
fn follower_child() {
    let Ok(directory) = std::env::var(CHILD_DIRECTORY) else {
        return;
    };
    let store = Store::open(&directory, read_only()).expect("the child's open");
    println!(
        "items {}",
        store.list("c", b"", 10, None, false).unwrap().items.len()
    );
    std::thread::sleep(Duration::from_secs(600));
}

/// A follower in another process holds back compaction while it lags, and a kill -9 of that
/// process lets compaction go on: the kernel drops its claim on the reader table.
#[test]
fn a_killed_follower_process_no_longer_holds_back_compaction() {
    let directory = directory("killed");
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    writer
        .put("c", b"first", b"v", &WriteOptions::default())
        .unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "follower_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIRECTORY, &directory)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the follower");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The harness may print the test's name on the same line, before the child's words.
    let opened = lines.find_map(|line| {
        let line = line.ok()?;
        line.find("items ").map(|at| line[at..].to_owned())
    });
    assert_eq!(opened.as_deref(), Some("items 1"));
    fill_and_delete(&writer, 1);
    let held_back = writer.compact().unwrap();
    assert!(held_back.deferred_by_snapshot, "{held_back:?}");
    child.kill().expect("kill -9");
    child.wait().unwrap();
    let report = writer.compact().unwrap();
    assert!(report.segments_removed > 0, "{report:?}");
    assert!(!report.deferred_by_snapshot, "{report:?}");
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

/// A store whose directory has no reader table (made by an older version and not opened for
/// writing since) opens read-only as a fixed view, as it always did.
#[test]
fn without_a_reader_table_a_read_only_open_is_a_fixed_view() {
    let directory = directory("fixed");
    let writer = Store::open(&directory, writer_options(Durability::Sync)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    std::fs::remove_file(directory.join("readers")).unwrap();
    let view = Store::open(&directory, read_only()).unwrap();
    writer
        .put("c", b"later", b"v", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        view.get("c", b"later", &ReadOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    view.close().unwrap();
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

/// Mappings of this store's segment files that were removed from the directory.
fn removed_segments_mapped(directory: &std::path::Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let directory = directory.to_string_lossy().into_owned();
    maps.lines()
        .filter(|line| line.contains(&directory) && line.ends_with("(deleted)"))
        .count()
}

/// The segments the writer's compaction removes leave the follower's mappings too, once it
/// has read on past them: a follower does not keep removed segments' disk for as long as
/// it lives.
#[test]
fn a_follower_lets_go_of_the_segments_the_writer_removed() {
    let directory = directory("release");
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let follower = Store::open(&directory, read_only()).unwrap();
    let mut removed = 0;
    for round in 1..=4 {
        fill_and_delete(&writer, round);
        assert_eq!(content(&follower), content(&writer));
        removed += writer.compact().unwrap().segments_removed;
    }
    assert!(removed > 4, "{removed} segments removed");
    // On into new segments, where the follower reads what the writer removed meanwhile.
    fill_and_delete(&writer, 5);
    assert_eq!(content(&follower), content(&writer));
    writer.close().unwrap();
    let mut mapped = removed_segments_mapped(&directory);
    for _ in 0..2_000 {
        if mapped == 0 {
            break;
        }
        crossbeam_epoch::pin().flush();
        std::thread::sleep(Duration::from_millis(1));
        mapped = removed_segments_mapped(&directory);
    }
    assert_eq!(mapped, 0, "removed segments still mapped");
    assert_eq!(follower.list_containers().unwrap(), ["c"]);
    follower.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

/// With its background thread (the default), a follower that makes no calls reads on by
/// itself, and so stops holding back the writer's compaction.
#[test]
fn an_idle_follower_reads_on_by_itself() {
    let directory = directory("idle");
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let options = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    let follower = Store::open(&directory, options).unwrap();
    fill_and_delete(&writer, 1);
    // The thread wakes every 100 ms; a busy machine may delay it, so the writer tries again.
    let mut removed = 0;
    for _ in 0..100 {
        removed += writer.compact().unwrap().segments_removed;
        if removed > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        removed > 0,
        "the idle follower kept holding back compaction"
    );
    assert_eq!(content(&follower), content(&writer));
    follower.close().unwrap();
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

const WRITER_DIRECTORY: &str = "TENURE_FOLLOW_WRITER_DIRECTORY";
const WRITER_CYCLE: &str = "TENURE_FOLLOW_WRITER_CYCLE";

/// The writer child's part: a no-op unless the parent started this binary as its writer.
/// Puts keys of its cycle and prints each acknowledgement, until it is killed.
#[test]
fn writer_child() {
    let (Ok(directory), Ok(cycle)) = (std::env::var(WRITER_DIRECTORY), std::env::var(WRITER_CYCLE))
    else {
        return;
    };
    let store = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    for index in 0u64.. {
        let key = format!("{cycle}-{index}");
        store
            .put(
                "c",
                key.as_bytes(),
                key.as_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
        println!("\nack {index}");
    }
}

/// Writer processes killed with SIGKILL one after another, a follower in this process all
/// along: after each kill it reads every write the killed writer acknowledged, and it reads
/// on through the next writer's records (a new generation, past the cut of the torn tail).
#[test]
fn a_follower_reads_on_across_writers_killed_mid_write() {
    let directory = directory("killed-writers");
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    writer.close().unwrap();
    let follower = Store::open(&directory, read_only()).unwrap();
    for cycle in 0..4 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "writer_child", "--nocapture", "--test-threads=1"])
            .env(WRITER_DIRECTORY, &directory)
            .env(WRITER_CYCLE, cycle.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the writer");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut acknowledged = None;
        while acknowledged.is_none_or(|count| count < 300 + 100 * cycle) {
            let line = lines.next().expect("the writer's output").unwrap();
            if let Some(index) = line.strip_prefix("ack ") {
                acknowledged = Some(index.parse::<u64>().unwrap());
            }
        }
        child.kill().expect("kill -9");
        child.wait().unwrap();
        // Every acknowledgement the child printed before the kill, and maybe more.
        for line in lines.map_while(|line| line.ok()) {
            if let Some(index) = line.strip_prefix("ack ") {
                acknowledged = Some(index.parse().unwrap());
            }
        }
        for index in 0..=acknowledged.unwrap() {
            let key = format!("{cycle}-{index}");
            let item = follower
                .get("c", key.as_bytes(), &ReadOptions::default())
                .unwrap_or_else(|error| panic!("cycle {cycle}, {key}: {error}"));
            assert_eq!(item.value.unwrap(), key.as_bytes());
        }
    }
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .put("c", b"last", b"v", &WriteOptions::default())
        .unwrap();
    assert_eq!(content(&follower), content(&writer));
    follower.close().unwrap();
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

/// Keys deleted before the follower opened: its open leaves them as heads that name their
/// delete's entry in the log. The writer's compaction removes that segment without a copy
/// (nothing of a deleted key is live), and the follower, which lets go of the segment, still
/// answers `NotFound` for them, never `Corruption`.
#[test]
fn keys_deleted_before_the_follower_opened_stay_deleted_after_their_segment_goes() {
    let directory = directory("deleted-before");
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let write = WriteOptions::default();
    for index in 0..20 {
        let key = format!("gone-{index}");
        writer.put("c", key.as_bytes(), b"v", &write).unwrap();
        writer.delete("c", key.as_bytes(), &write).unwrap();
    }
    writer.put("c", b"kept", b"v", &write).unwrap();
    let follower = Store::open(&directory, read_only()).unwrap();
    for round in 1..=3 {
        fill_and_delete(&writer, round);
        assert_eq!(content(&follower), content(&writer));
        assert!(writer.compact().unwrap().segments_removed > 0);
    }
    fill_and_delete(&writer, 4);
    assert_eq!(content(&follower), content(&writer));
    for index in 0..20 {
        let key = format!("gone-{index}");
        let error = follower
            .get("c", key.as_bytes(), &ReadOptions::default())
            .unwrap_err();
        assert_eq!(error.code(), ErrorCode::NotFound, "{key}: {error}");
    }
    follower.close().unwrap();
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

/// Readers on three threads of one follower, taking snapshots and reading hot keys, while the
/// writer overwrites those keys and compacts: catch-ups, prunes and the release of removed
/// segments on several threads at once. Every read finds a value, and no thread waits for
/// ever (the lock order of a catch-up, a prune and a release).
#[test]
fn readers_on_several_threads_follow_a_compacting_writer() {
    let directory = directory("threads");
    let writer = Arc::new(Store::open(&directory, writer_options(Durability::Buffered)).unwrap());
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for index in 0..10 {
        let key = format!("hot-{index}");
        writer
            .put("c", key.as_bytes(), &[0; 1_000], &WriteOptions::default())
            .unwrap();
    }
    let follower = Arc::new(Store::open(&directory, read_only()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    // Segments the writer's compaction removed so far: the readers go on until a few were.
    let removed_so_far = Arc::new(AtomicU64::new(0));
    let writing = {
        let (writer, stop, removed_so_far) = (
            Arc::clone(&writer),
            Arc::clone(&stop),
            Arc::clone(&removed_so_far),
        );
        std::thread::spawn(move || {
            let mut removed = 0;
            for round in 0u32.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let key = format!("hot-{}", round % 10);
                let value = [(round % 251) as u8; 1_000];
                writer
                    .put("c", key.as_bytes(), &value, &WriteOptions::default())
                    .unwrap();
                if round % 200 == 199 {
                    removed += writer.compact().unwrap().segments_removed;
                    removed_so_far.store(removed as u64, Ordering::Relaxed);
                }
            }
            removed
        })
    };
    let (done, finished) = std::sync::mpsc::channel();
    let readers: Vec<_> = (0..3)
        .map(|thread| {
            let (follower, done, removed_so_far) = (
                Arc::clone(&follower),
                done.clone(),
                Arc::clone(&removed_so_far),
            );
            std::thread::spawn(move || {
                const READS: usize = 20_000;
                const MOST_READS: usize = 20_000_000;
                let enough = |iteration: usize| {
                    iteration >= MOST_READS
                        || iteration >= READS && removed_so_far.load(Ordering::Relaxed) >= 3
                };
                for iteration in (0..).take_while(|&iteration| !enough(iteration)) {
                    let key = format!("hot-{}", (iteration + thread) % 10);
                    if iteration % 100 == 0 {
                        let snapshot = follower.snapshot().unwrap();
                        let first = snapshot.get("c", key.as_bytes(), &ReadOptions::default());
                        let again = snapshot.get("c", key.as_bytes(), &ReadOptions::default());
                        assert_eq!(first.unwrap().value, again.unwrap().value);
                    } else {
                        let item = follower
                            .get("c", key.as_bytes(), &ReadOptions::default())
                            .unwrap();
                        assert_eq!(item.value.unwrap().len(), 1_000);
                    }
                }
                done.send(()).unwrap();
            })
        })
        .collect();
    for _ in 0..3 {
        finished
            .recv_timeout(Duration::from_secs(120))
            .expect("a reader thread finished (none waits for ever)");
    }
    for reader in readers {
        reader.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let removed = writing.join().unwrap();
    assert!(removed >= 3, "the writer's compaction removed segments");
    assert_eq!(content(&follower), content(&writer));
    Arc::try_unwrap(follower).ok().unwrap().close().unwrap();
    Arc::try_unwrap(writer).ok().unwrap().close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}
