//! `Store::get_with`: a read of the newest version that lends the value from the log's
//! mapping to a closure. It answers as `get` does in every case, and what it lends stays
//! valid for the whole call, also while other threads overwrite the item and compaction
//! takes its segment out of the log.

mod common;

use std::sync::{Arc, Barrier};

use common::{options, read, store, START_MICROS};
use tenure::{
    Conditions, ContainerOptions, ErrorCode, Item, ManualClock, ReadOptions, Store, StoreOptions,
    Ttl, WriteOptions, MICROS_PER_SECOND,
};
use tenure_testkit::SimStorage;

/// What `get_with` lends, copied (`ItemRef::to_item`): the owned item `get` returns.
fn lent_as_item(store: &Store, key: &[u8], options: &ReadOptions) -> tenure::Result<Item> {
    store.get_with("c", key, options, |item| item.to_item())
}

#[test]
fn get_with_lends_what_get_returns_value_etag_version_and_properties() {
    let (store, _, _) = store();
    let options = WriteOptions {
        content_type: Some("text/plain".into()),
        metadata: vec![("owner".into(), "ana".into())],
        ttl: Ttl::Seconds(60),
        ..WriteOptions::default()
    };
    let etag = store.put("c", b"k", b"hello", &options).unwrap();
    let (key, value, etag_lent, version, last_modified, content_type, metadata, expires_at) = store
        .get_with("c", b"k", &ReadOptions::default(), |item| {
            (
                item.key.to_vec(),
                item.value.to_vec(),
                item.etag,
                item.version,
                item.last_modified,
                item.content_type.map(str::to_owned),
                item.metadata.to_vec(),
                item.expires_at,
            )
        })
        .unwrap();
    assert_eq!(key, b"k");
    assert_eq!(value, b"hello");
    assert_eq!(etag_lent, etag);
    assert_eq!(version, etag.version());
    assert_eq!(last_modified, START_MICROS);
    assert_eq!(content_type.as_deref(), Some("text/plain"));
    assert_eq!(metadata, vec![("owner".to_owned(), "ana".to_owned())]);
    assert_eq!(expires_at, Some(START_MICROS + 60 * MICROS_PER_SECOND));
    let got = store.get("c", b"k", &ReadOptions::default()).unwrap();
    assert_eq!(
        lent_as_item(&store, b"k", &ReadOptions::default()).unwrap(),
        got
    );
}

#[test]
fn get_with_sees_the_newest_write_and_an_empty_value() {
    let (store, _, _) = store();
    store
        .put("c", b"k", b"first", &WriteOptions::default())
        .unwrap();
    let etag = store.put("c", b"k", b"", &WriteOptions::default()).unwrap();
    let (value, lent_etag) = store
        .get_with("c", b"k", &ReadOptions::default(), |item| {
            (item.value.to_vec(), item.etag)
        })
        .unwrap();
    assert_eq!(value, b"");
    assert_eq!(lent_etag, etag);
}

#[test]
fn get_with_fails_as_get_does_and_then_never_calls_the_closure() {
    let (store, clock, _) = store();
    let etag = store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    store
        .put(
            "c",
            b"short-lived",
            b"v",
            &WriteOptions {
                ttl: Ttl::Seconds(1),
                ..WriteOptions::default()
            },
        )
        .unwrap();
    clock.advance_micros(2 * MICROS_PER_SECOND);
    let cases: Vec<(&str, &[u8], ReadOptions, ErrorCode)> = vec![
        ("c", b"missing", ReadOptions::default(), ErrorCode::NotFound),
        (
            "c",
            b"short-lived",
            ReadOptions::default(),
            ErrorCode::NotFound,
        ),
        (
            "nowhere",
            b"k",
            ReadOptions::default(),
            ErrorCode::ContainerNotFound,
        ),
        (
            "c",
            b"k",
            read(Conditions::if_none_match(etag)),
            ErrorCode::NotModified,
        ),
        (
            "c",
            b"k",
            read(Conditions::if_match(tenure::ETag(etag.version() + 1))),
            ErrorCode::ConditionNotMet,
        ),
        ("c", b"", ReadOptions::default(), ErrorCode::InvalidArgument),
        ("", b"k", ReadOptions::default(), ErrorCode::InvalidArgument),
    ];
    for (container, key, options, expected) in cases {
        let mut called = false;
        let lent = store.get_with(container, key, &options, |_| called = true);
        let got = store.get(container, key, &options);
        assert_eq!(
            lent.expect_err("get_with fails").code(),
            expected,
            "{container} {key:?}"
        );
        assert_eq!(got.expect_err("get fails").code(), expected);
        assert!(!called, "{container} {key:?}: the closure ran");
    }
}

#[test]
fn a_bad_argument_to_get_with_is_named() {
    let (store, _, _) = store();
    let error = store
        .get_with("c", b"", &ReadOptions::default(), |_| ())
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("key"), "{error}");
}

/// The lent value lives in a segment that another thread's overwrites make dead and whose
/// compaction takes it out of the log while the closure runs: the bytes stay mapped and
/// unchanged until the closure returns (under ASan, a use after an unmap would be caught).
#[test]
fn a_lent_value_stays_valid_while_another_thread_overwrites_it_and_compacts_its_segment_away() {
    let clock = ManualClock::new(START_MICROS);
    let store = Store::open_with_storage(
        Arc::new(SimStorage::new()),
        StoreOptions {
            segment_size_bytes: 64 << 10,
            ..options(&clock)
        },
    )
    .unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let value = |key: u32, round: u32| format!("{key} in round {round} ").repeat(8).into_bytes();
    for key in 0..300u32 {
        store
            .put(
                "c",
                &key.to_be_bytes(),
                &value(key, 0),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let started = Barrier::new(2);
    let removed = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            started.wait();
            for round in 1..6u32 {
                for key in 0..300u32 {
                    store
                        .put(
                            "c",
                            &key.to_be_bytes(),
                            &value(key, round),
                            &WriteOptions::default(),
                        )
                        .unwrap();
                }
            }
            store.compact().unwrap().segments_removed
        });
        store
            .get_with("c", &7u32.to_be_bytes(), &ReadOptions::default(), |item| {
                started.wait();
                let removed = writer.join().unwrap();
                assert_eq!(item.value, &value(7, 0)[..], "lent bytes unchanged");
                removed
            })
            .unwrap()
    });
    assert!(removed > 0, "compaction removed the lent value's segment");
    assert_eq!(
        store
            .get("c", &7u32.to_be_bytes(), &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        value(7, 5)
    );
}
