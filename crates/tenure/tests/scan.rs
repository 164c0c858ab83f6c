//! `Snapshot::scan`: the ordered, zero-copy range read.

mod common;

use common::store;
use tenure::{ErrorCode, Store, Ttl, WriteOptions};

fn scanned(store: &Store, prefix: &[u8], from: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let snapshot = store.snapshot().unwrap();
    let mut entries = Vec::new();
    let visited = snapshot
        .scan("c", prefix, from, |entry| {
            entries.push((entry.key.to_vec(), entry.value.to_vec()));
            true
        })
        .unwrap();
    assert_eq!(visited, entries.len());
    entries
}

fn put(store: &Store, key: &str, value: &str) {
    store
        .put(
            "c",
            key.as_bytes(),
            value.as_bytes(),
            &WriteOptions::default(),
        )
        .unwrap();
}

fn pairs(entries: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    entries
        .iter()
        .map(|(key, value)| (key.as_bytes().to_vec(), value.as_bytes().to_vec()))
        .collect()
}

#[test]
fn scan_visits_the_prefix_in_key_order_from_the_first_key_at_or_after_from() {
    let (store, _, _) = store();
    for key in ["b2", "a1", "b1", "b3", "c1"] {
        put(&store, key, &format!("value of {key}"));
    }
    assert_eq!(
        scanned(&store, b"b", b""),
        pairs(&[
            ("b1", "value of b1"),
            ("b2", "value of b2"),
            ("b3", "value of b3")
        ])
    );
    // `from` inside the prefix starts there, inclusive; between keys, at the next one.
    assert_eq!(
        scanned(&store, b"b", b"b2"),
        pairs(&[("b2", "value of b2"), ("b3", "value of b3")])
    );
    assert_eq!(
        scanned(&store, b"", b"b25"),
        pairs(&[("b3", "value of b3"), ("c1", "value of c1")])
    );
    // `from` before the prefix starts at the prefix; past it, nothing.
    assert_eq!(scanned(&store, b"b", b"a").len(), 3);
    assert!(scanned(&store, b"b", b"c").is_empty());
}

#[test]
fn scan_stops_when_the_visitor_says_so() {
    let (store, _, _) = store();
    for index in 0..100 {
        put(&store, &format!("key-{index:03}"), "v");
    }
    let snapshot = store.snapshot().unwrap();
    let mut keys = Vec::new();
    let visited = snapshot
        .scan("c", b"", b"key-050", |entry| {
            keys.push(entry.key.to_vec());
            keys.len() < 10
        })
        .unwrap();
    assert_eq!(visited, 10);
    assert_eq!(keys.first().unwrap(), b"key-050");
    assert_eq!(keys.last().unwrap(), b"key-059");
}

#[test]
fn scan_skips_deleted_and_expired_items_and_reports_etag_and_version() {
    let (store, clock, _) = store();
    put(&store, "a", "1");
    put(&store, "b", "2");
    let expiring = WriteOptions {
        ttl: Ttl::Seconds(5),
        ..WriteOptions::default()
    };
    store.put("c", b"c", b"3", &expiring).unwrap();
    store.delete("c", b"b", &WriteOptions::default()).unwrap();
    assert_eq!(scanned(&store, b"", b""), pairs(&[("a", "1"), ("c", "3")]));
    clock.advance_seconds(6);
    assert_eq!(scanned(&store, b"", b""), pairs(&[("a", "1")]));

    let item = store.get("c", b"a", &Default::default()).unwrap();
    let snapshot = store.snapshot().unwrap();
    snapshot
        .scan("c", b"", b"", |entry| {
            assert_eq!((entry.etag, entry.version), (item.etag, item.version));
            true
        })
        .unwrap();
}

#[test]
fn a_snapshot_scan_is_repeatable_whatever_is_written_meanwhile() {
    let (store, _, _) = store();
    put(&store, "a", "old");
    put(&store, "b", "old");
    let snapshot = store.snapshot().unwrap();
    put(&store, "a", "new");
    store.delete("c", b"b", &WriteOptions::default()).unwrap();
    put(&store, "c", "new");
    store.delete_container("c", &Default::default()).unwrap();
    let mut entries = Vec::new();
    snapshot
        .scan("c", b"", b"", |entry| {
            entries.push((entry.key.to_vec(), entry.value.to_vec()));
            true
        })
        .unwrap();
    assert_eq!(entries, pairs(&[("a", "old"), ("b", "old")]));
}

#[test]
fn scan_bad_input_names_the_argument() {
    let (store, _, _) = store();
    let snapshot = store.snapshot().unwrap();
    let too_long = vec![b'k'; 1025];
    let error = snapshot.scan("c", &too_long, b"", |_| true).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("prefix"), "{error}");
    let error = snapshot.scan("c", b"", &too_long, |_| true).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("from"), "{error}");
    let error = snapshot.scan("", b"", b"", |_| true).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert_eq!(
        snapshot
            .scan("missing", b"", b"", |_| true)
            .unwrap_err()
            .code(),
        ErrorCode::ContainerNotFound
    );
}

/// A walk remembers the last segment it read a value from (`log/reader.rs`); here every value
/// lies in a different segment from the one before it, in both directions, and some segments
/// hold a single large record.
#[test]
fn a_scan_reads_each_value_from_its_own_segment_when_values_jump_between_segments() {
    use std::sync::Arc;
    let clock = tenure::ManualClock::new(common::START_MICROS);
    let disk = tenure_testkit::SimStorage::new();
    let options = tenure::StoreOptions {
        segment_size_bytes: 4096,
        ..common::options(&clock)
    };
    let store = Store::open_with_storage(Arc::new(disk), options).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    // Written in a scrambled key order, so neighbours in key order sit segments apart.
    let count = 64u32;
    let mut expected = Vec::new();
    for step in 0..count {
        let index = step * 37 % count;
        let length = if index % 9 == 0 {
            6000
        } else {
            700 + index as usize
        };
        let value = vec![index as u8 ^ 0x5a; length];
        store
            .put("c", &index.to_be_bytes(), &value, &WriteOptions::default())
            .unwrap();
        expected.push((index.to_be_bytes().to_vec(), value));
    }
    expected.sort();
    assert!(
        store.log_bytes() > 20 * 4096,
        "the values span many segments: {} bytes of log",
        store.log_bytes()
    );
    assert_eq!(scanned(&store, b"", b""), expected);
    // Starting inside the range too (a walk's first value is not the log's first).
    assert_eq!(scanned(&store, b"", &20u32.to_be_bytes()), expected[20..]);
}
