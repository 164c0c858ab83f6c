//! `verify`, `repair` and `stats` (the `tenure` tool's verify, repair and stat) on real
//! directories: many segments, a record larger than a segment, a compacted log, damage in
//! the middle, a missing segment, and records that no longer apply once others are lost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tenure::{
    ContainerOptions, Durability, ETag, ReadOptions, Store, StoreOptions, VerifyReport,
    WriteOptions,
};

const SEGMENT_BYTES: u64 = 16 << 10;

fn directory(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("inspect-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options() -> StoreOptions {
    StoreOptions {
        durability: Durability::Buffered,
        segment_size_bytes: SEGMENT_BYTES,
        background_compaction_interval: None,
        ..StoreOptions::default()
    }
}

fn verify(dir: &Path) -> VerifyReport {
    tenure::verify(dir, &mut |_, _| {}).expect("verify runs")
}

/// Unique, findable bytes for write `round` of `key`.
fn value(key: u32, round: u32, length: usize) -> Vec<u8> {
    let mut value = format!("<key {key:04} round {round}>").into_bytes();
    value.resize(length.max(value.len()), b'.');
    value
}

/// A store over several segments, with one value larger than a segment; returns the expected
/// value and ETag of every live key.
fn build(dir: &Path, compact: bool) -> BTreeMap<u32, (Vec<u8>, ETag)> {
    let store = Store::open(dir, options()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let mut expected = BTreeMap::new();
    for round in 0..3u32 {
        for key in 0..60u32 {
            let length = 100 + (key as usize * 37) % 900;
            let bytes = value(key, round, length);
            let etag = store
                .put("c", &key.to_be_bytes(), &bytes, &WriteOptions::default())
                .unwrap();
            expected.insert(key, (bytes, etag));
        }
    }
    let big = value(1000, 0, 3 * SEGMENT_BYTES as usize);
    let etag = store
        .put("c", &1000u32.to_be_bytes(), &big, &WriteOptions::default())
        .unwrap();
    expected.insert(1000, (big, etag));
    for key in 0..5u32 {
        store
            .delete("c", &key.to_be_bytes(), &WriteOptions::default())
            .unwrap();
        expected.remove(&key);
    }
    if compact {
        let report = store.compact().unwrap();
        assert!(report.segments_removed > 0, "{report:?}");
    }
    store.close().unwrap();
    expected
}

fn check_items(dir: &Path, expected: &BTreeMap<u32, (Vec<u8>, ETag)>) {
    let store = Store::open(dir, options()).unwrap();
    for (key, (bytes, etag)) in expected {
        let item = store
            .get("c", &key.to_be_bytes(), &ReadOptions::default())
            .unwrap_or_else(|error| panic!("key {key}: {error}"));
        assert_eq!(item.value.as_deref(), Some(&bytes[..]), "key {key}");
        assert_eq!(item.etag, *etag, "key {key}");
    }
    let page = store.list("c", b"", 10_000, None, false).unwrap();
    assert_eq!(page.items.len(), expected.len());
    store.close().unwrap();
}

/// (file, offset) of the first occurrence of `needle` in the store's segment files.
fn find(dir: &Path, needle: &[u8]) -> (PathBuf, usize) {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "log"))
        .collect();
    names.sort();
    for path in names {
        let bytes = std::fs::read(&path).unwrap();
        if let Some(at) = bytes
            .windows(needle.len())
            .position(|window| window == needle)
        {
            return (path, at);
        }
    }
    panic!("{:?} not found", String::from_utf8_lossy(needle));
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x21;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_clean_store_over_many_segments_verifies_and_repair_leaves_it_alone() {
    let dir = directory("clean");
    let expected = build(&dir, false);
    let mut calls = 0;
    let report = tenure::verify(&dir, &mut |done, total| {
        assert!(done <= total);
        calls += 1;
    })
    .unwrap();
    assert!(report.is_clean(), "{report:#?}");
    assert!(report.segment_files > 3, "{report:#?}");
    assert!(calls >= 2);
    // container create + 180 puts + the big put + 5 deletes.
    assert_eq!(report.records, 187);
    assert_eq!(report.versions_lost, 0);
    let repaired = tenure::repair(&dir, &mut |_, _| {}).unwrap();
    assert!(!repaired.rewritten);
    assert!(repaired.backup_directory.is_none());
    check_items(&dir, &expected);
}

#[test]
fn damage_in_a_middle_segment_loses_only_that_record() {
    let dir = directory("middle");
    let mut expected = build(&dir, false);
    // The last write of key 30 lies in a middle segment.
    let (path, at) = find(&dir, b"<key 0030 round 2>");
    assert_ne!(path.file_name().unwrap(), "segment-0000000000000000.log");
    flip(&path, at + 5);
    // The open starts from the index the close saved, and the log below it is checked right
    // after it returns, and by compaction before it copies anything: the damage then fails
    // every call, and the next open reads the whole log and refuses.
    let store = Store::open(&dir, options()).unwrap();
    let error = store
        .compact()
        .expect_err("compaction checks the log first");
    assert_eq!(error.code(), tenure::ErrorCode::Corruption);
    let read = store.get("c", &30u32.to_be_bytes(), &ReadOptions::default());
    assert_eq!(read.unwrap_err().code(), tenure::ErrorCode::Corruption);
    drop(store);
    let error = Store::open(&dir, options())
        .err()
        .expect("the open refuses");
    assert_eq!(error.code(), tenure::ErrorCode::Corruption);

    let report = verify(&dir);
    assert_eq!(report.problems.len(), 1, "{report:#?}");
    let problem = &report.problems[0];
    assert_eq!(problem.file, path);
    // The record holding the flipped byte starts before it, at most one record's size away.
    assert!(
        problem.offset as usize <= at && at - (problem.offset as usize) < 1100,
        "{problem}"
    );
    assert_eq!(report.versions_lost, 1);

    let repaired = tenure::repair(&dir, &mut |_, _| {}).unwrap();
    assert!(repaired.rewritten);
    assert_eq!(repaired.records_kept, 186);
    let backup = repaired.backup_directory.expect("a backup");
    assert!(backup.join("superblock").is_file());
    assert!(verify(&dir).is_clean());
    // Key 30 falls back to its newest surviving write (its write of the first pass).
    let store = Store::open(&dir, options()).unwrap();
    let thirty = store
        .get("c", &30u32.to_be_bytes(), &ReadOptions::default())
        .unwrap();
    assert_eq!(
        thirty.value.as_deref(),
        Some(&value(30, 1, 100 + 30 * 37 % 900)[..])
    );
    let version = store.version();
    let etag = store
        .put("c", b"after", b"repair", &WriteOptions::default())
        .unwrap();
    assert!(etag.version() > version);
    store.close().unwrap();
    expected.remove(&30);
    let store = Store::open(&dir, options()).unwrap();
    for (key, (bytes, etag)) in &expected {
        let item = store
            .get("c", &key.to_be_bytes(), &ReadOptions::default())
            .unwrap();
        assert_eq!(item.value.as_deref(), Some(&bytes[..]), "key {key}");
        assert_eq!(item.etag, *etag, "key {key}");
    }
    store.close().unwrap();
}

#[test]
fn a_compacted_log_verifies_and_repairs_from_its_first_slot() {
    let dir = directory("compacted");
    let mut expected = build(&dir, true);
    let report = verify(&dir);
    assert!(report.is_clean(), "{report:#?}");
    assert!(report.first_slot > 0, "{report:#?}");
    // Writes after the compaction; one of them is damaged.
    let store = Store::open(&dir, options()).unwrap();
    for key in 70..80u32 {
        let bytes = value(key, 9, 200);
        let etag = store
            .put("c", &key.to_be_bytes(), &bytes, &WriteOptions::default())
            .unwrap();
        expected.insert(key, (bytes, etag));
    }
    store.close().unwrap();
    let (path, at) = find(&dir, b"<key 0075 round 9>");
    flip(&path, at + 3);
    assert_eq!(verify(&dir).problems.len(), 1);
    let repaired = tenure::repair(&dir, &mut |_, _| {}).unwrap();
    assert!(repaired.rewritten);
    let after = verify(&dir);
    assert!(after.is_clean(), "{after:#?}");
    assert_eq!(after.first_slot, report.first_slot);
    expected.remove(&75);
    let store = Store::open(&dir, options()).unwrap();
    for (key, (bytes, etag)) in &expected {
        let item = store
            .get("c", &key.to_be_bytes(), &ReadOptions::default())
            .unwrap_or_else(|error| panic!("key {key}: {error}"));
        assert_eq!(
            (item.value.as_deref(), item.etag),
            (Some(&bytes[..]), *etag),
            "key {key}"
        );
    }
    let gone = store.get("c", &75u32.to_be_bytes(), &ReadOptions::default());
    assert_eq!(gone.unwrap_err().code(), tenure::ErrorCode::NotFound);
    store.close().unwrap();
}

#[test]
fn a_missing_segment_is_named_and_the_rest_salvaged() {
    let dir = directory("missing-segment");
    build(&dir, false);
    let (path, _) = find(&dir, b"<key 0020 round 1>");
    assert_ne!(path.file_name().unwrap(), "segment-0000000000000000.log");
    std::fs::remove_file(&path).unwrap();
    let report = verify(&dir);
    assert!(
        report
            .problems
            .iter()
            .any(|problem| problem.file == path && problem.reason.contains("missing")),
        "{report:#?}"
    );
    assert!(report.versions_lost > 0);
    tenure::repair(&dir, &mut |_, _| {}).unwrap();
    assert!(verify(&dir).is_clean());
    let store = Store::open(&dir, options()).unwrap();
    // Items written after the hole are there.
    let item = store
        .get("c", &1000u32.to_be_bytes(), &ReadOptions::default())
        .unwrap();
    assert_eq!(item.value.unwrap().len(), 3 * SEGMENT_BYTES as usize);
    store.close().unwrap();
}

#[test]
fn a_record_that_no_longer_applies_is_dropped_so_the_store_opens() {
    let dir = directory("no-longer-applies");
    let store = Store::open(&dir, options()).unwrap();
    store
        .create_container("a", &ContainerOptions::default())
        .unwrap();
    store
        .put(
            "a",
            b"first",
            b"<first incarnation>",
            &WriteOptions::default(),
        )
        .unwrap();
    store.delete_container("a", &Default::default()).unwrap();
    store
        .create_container("a", &ContainerOptions::default())
        .unwrap();
    store
        .put(
            "a",
            b"second",
            b"<second incarnation>",
            &WriteOptions::default(),
        )
        .unwrap();
    store.close().unwrap();
    // Damage the delete: the second create then finds "a" still live at replay.
    let segment = dir.join("segment-0000000000000000.log");
    let bytes = std::fs::read(&segment).unwrap();
    let (_, first_value) = find(&dir, b"<first incarnation>");
    // The delete record follows the first put's record: the first non-zero record header
    // after the value. Flip a byte 8 bytes past the value's end, inside the next record.
    let end = first_value + b"<first incarnation>".len();
    let next = end.div_ceil(8) * 8;
    assert!(bytes[next..next + 24].iter().any(|byte| *byte != 0));
    flip(&segment, next + 9);
    let report = verify(&dir);
    assert!(
        report
            .problems
            .iter()
            .any(|problem| problem.reason.contains("created twice")),
        "{report:#?}"
    );
    let repaired = tenure::repair(&dir, &mut |_, _| {}).unwrap();
    assert_eq!(repaired.records_dropped, 1);
    let store = Store::open(&dir, options()).unwrap();
    let item = store.get("a", b"first", &ReadOptions::default()).unwrap();
    assert_eq!(item.value.as_deref(), Some(&b"<first incarnation>"[..]));
    store.close().unwrap();
}

#[test]
fn the_versions_of_a_lost_last_record_are_never_handed_out_again() {
    let dir = directory("lost-tail");
    let store = Store::open(&dir, options()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let mut last = ETag(0);
    for key in 0..10u32 {
        last = store
            .put(
                "c",
                &key.to_be_bytes(),
                &value(key, 0, 50),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    store.close().unwrap();
    let (path, at) = find(&dir, b"<key 0009 round 0>");
    flip(&path, at + 1);
    let report = verify(&dir);
    assert_eq!(report.problems.len(), 1, "{report:#?}");
    assert_eq!(report.last_version, Some(last.version() - 1));
    tenure::repair(&dir, &mut |_, _| {}).unwrap();
    assert!(verify(&dir).is_clean());
    let store = Store::open(&dir, options()).unwrap();
    assert!(store
        .get("c", &9u32.to_be_bytes(), &ReadOptions::default())
        .is_err());
    // A reader may have seen the lost write's ETag (or processed its change): its version
    // must not come back for another write.
    let etag = store
        .put("c", b"new", b"after repair", &WriteOptions::default())
        .unwrap();
    assert!(etag.version() > last.version(), "{etag} vs {last}");
    store.close().unwrap();
}

#[test]
fn a_hole_of_thousands_of_versions_is_filled_with_abort_records() {
    let dir = directory("big-hole");
    let options = StoreOptions {
        segment_size_bytes: 512 << 10,
        ..options()
    };
    let store = Store::open(&dir, options.clone()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let mut last = ETag(0);
    for key in 0..16_000u32 {
        last = store
            .put("c", &key.to_be_bytes(), b"v", &WriteOptions::default())
            .unwrap();
    }
    store.close().unwrap();
    let segment = dir.join("segment-0000000000000001.log");
    assert!(dir.join("segment-0000000000000002.log").is_file());
    std::fs::remove_file(&segment).unwrap();
    let report = verify(&dir);
    assert!(report.versions_lost > 4096, "{report:#?}");
    let repaired = tenure::repair(&dir, &mut |_, _| {}).unwrap();
    assert!(repaired.rewritten);
    let after = verify(&dir);
    assert!(after.is_clean(), "{after:#?}");
    assert_eq!(after.last_version, report.last_version);
    let store = Store::open(&dir, options).unwrap();
    let first = store
        .get("c", &0u32.to_be_bytes(), &ReadOptions::default())
        .unwrap();
    assert_eq!(first.version, 2);
    let newest = store
        .get("c", &15_999u32.to_be_bytes(), &ReadOptions::default())
        .unwrap();
    assert_eq!(newest.etag, last);
    let page = store.list("c", b"", 10_000, None, false).unwrap();
    assert!(page.items.len() < 16_000 - 4096);
    let etag = store
        .put("c", b"next", b"v", &WriteOptions::default())
        .unwrap();
    assert_eq!(etag.version(), last.version() + 1);
    store.close().unwrap();
}

#[test]
fn stats_count_items_leases_locks_and_bytes() {
    let dir = directory("stats");
    let store = Store::open(&dir, options()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for key in 0..20u32 {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &[7u8; 300],
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let before = store.stats().unwrap();
    assert_eq!(before.items, 20);
    assert_eq!(before.live_bytes + before.dead_bytes, before.log_bytes);
    for key in 0..10u32 {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &[8u8; 300],
                &WriteOptions::default(),
            )
            .unwrap();
    }
    store
        .acquire_lease(
            "c",
            &11u32.to_be_bytes(),
            &tenure::LeaseRequest::seconds(30).unwrap(),
        )
        .unwrap();
    store
        .get_and_lock(
            "c",
            &12u32.to_be_bytes(),
            std::time::Duration::from_secs(30),
            false,
        )
        .unwrap();
    let after = store.stats().unwrap();
    assert_eq!(after.items, 20);
    assert_eq!(after.containers.len(), 1);
    assert_eq!(after.containers[0].value_bytes, 20 * 300);
    assert_eq!((after.active_leases, after.active_locks), (1, 1));
    assert!(
        after.dead_bytes >= before.dead_bytes + 10 * 300,
        "{after:#?}"
    );
    assert!(after.item_versions >= 20);
    assert!(after.segments >= 1);
    store.close().unwrap();
}

/// A key's superseded versions leave the index as the key is written again (a put prunes its
/// chain once it holds 4 versions), stay while a snapshot can still read one of them, and go
/// once that snapshot is dropped. Each put decides whether to prune from a chain length it
/// records instead of walking the chain: if that count ever fell short, versions would pile up.
#[test]
fn rewrites_prune_superseded_versions_except_those_a_snapshot_can_read() {
    let dir = directory("prune");
    let store = Store::open(&dir, options()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let put = |round: u32| {
        store
            .put("c", b"key", &round.to_be_bytes(), &WriteOptions::default())
            .unwrap();
    };
    for round in 0..100 {
        put(round);
        let versions = store.stats().unwrap().item_versions;
        assert!(versions <= 3, "after put {round}: {versions} versions kept");
    }

    let snapshot = store.snapshot().unwrap();
    for round in 100..150 {
        put(round);
    }
    let while_pinned = store.stats().unwrap().item_versions;
    assert!(
        while_pinned >= 51,
        "the snapshot's version and the 50 after it are kept: {while_pinned}"
    );
    let seen = snapshot
        .get("c", b"key", &ReadOptions::default())
        .unwrap()
        .value
        .unwrap();
    assert_eq!(seen, 99u32.to_be_bytes());

    drop(snapshot);
    put(150);
    let versions = store.stats().unwrap().item_versions;
    assert!(
        versions <= 3,
        "after the snapshot went: {versions} versions kept"
    );
    store.close().unwrap();
}
