//! Items through the Rust API, one named test per docs/spec.md rule (§1–3, §7–9, §12, §13).

mod common;

use std::sync::Arc;

use common::{options, read, store, START_MICROS};
use tenure::{
    Conditions, ContainerOptions, ETag, ETagArg, Error, ErrorCode, ReadOptions, Store, Ttl,
    WriteOptions, MICROS_PER_SECOND,
};
use tenure_testkit::{CrashPolicy, SimStorage};

fn write(conditions: Conditions) -> WriteOptions {
    WriteOptions::with_conditions(conditions)
}

fn code<T: std::fmt::Debug>(result: Result<T, Error>) -> ErrorCode {
    result.expect_err("expected an error").code()
}

fn etag_arg(text: &str) -> ETagArg {
    ETagArg::parse("if_match", text).unwrap()
}

#[test]
fn put_then_get_returns_value_etag_version_and_properties() {
    let (store, _, _) = store();
    let options = WriteOptions {
        content_type: Some("text/plain".into()),
        metadata: vec![("owner".into(), "ana".into())],
        ..WriteOptions::default()
    };
    let etag = store.put("c", b"k", b"hello", &options).unwrap();
    let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
    assert_eq!(item.value.as_deref(), Some(&b"hello"[..]));
    assert_eq!(item.etag, etag);
    assert_eq!(item.version, etag.version());
    assert_eq!(item.last_modified, START_MICROS);
    assert_eq!(item.content_type.as_deref(), Some("text/plain"));
    assert_eq!(item.metadata, vec![("owner".to_owned(), "ana".to_owned())]);
    assert!(
        etag.to_string().starts_with("\"0x") && etag.to_string().len() == 20,
        "{etag}"
    );
    let properties = store
        .get_properties("c", b"k", &ReadOptions::default())
        .unwrap();
    assert_eq!(properties.value, None);
    assert_eq!(properties.etag, etag);
}

#[test]
fn last_writer_wins_without_conditions_and_versions_strictly_increase() {
    let (store, _, _) = store();
    let first = store
        .put("c", b"k", b"one", &WriteOptions::default())
        .unwrap();
    let second = store
        .put("c", b"k", b"two", &WriteOptions::default())
        .unwrap();
    assert!(second.version() > first.version());
    assert_eq!(
        store
            .get("c", b"k", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"two"
    );
}

#[test]
fn write_if_match_current_etag_succeeds_and_stale_etag_is_condition_not_met_with_current_etag() {
    let (store, _, _) = store();
    let first = store
        .put("c", b"k", b"one", &WriteOptions::default())
        .unwrap();
    let second = store
        .put("c", b"k", b"two", &write(Conditions::if_match(first)))
        .unwrap();
    let error = store
        .put("c", b"k", b"three", &write(Conditions::if_match(first)))
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ConditionNotMet);
    assert_eq!(error.status(), 412);
    assert_eq!(error.current_etag(), Some(second));
    assert_eq!(
        store
            .get("c", b"k", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"two"
    );
}

#[test]
fn if_match_star_requires_existence_and_foreign_etags_never_match() {
    let (store, _, _) = store();
    assert_eq!(
        code(store.put("c", b"k", b"v", &write(Conditions::if_match(ETagArg::Any)))),
        ErrorCode::ConditionNotMet
    );
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    store
        .put("c", b"k", b"w", &write(Conditions::if_match(ETagArg::Any)))
        .unwrap();
    assert_eq!(
        code(store.put(
            "c",
            b"k",
            b"x",
            &write(Conditions::if_match(etag_arg("\"abc\"")))
        )),
        ErrorCode::ConditionNotMet
    );
}

#[test]
fn create_is_put_if_none_match_star_and_fails_with_already_exists() {
    let (store, _, _) = store();
    store
        .create("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let error = store
        .create("c", b"k", b"w", &WriteOptions::default())
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::AlreadyExists);
    assert_eq!(error.status(), 409);
    assert_eq!(
        code(store.put(
            "c",
            b"k",
            b"w",
            &write(Conditions::if_none_match(ETagArg::Any))
        )),
        ErrorCode::AlreadyExists
    );
}

#[test]
fn replace_and_delete_of_a_missing_item_are_not_found() {
    let (store, _, _) = store();
    assert_eq!(
        code(store.replace("c", b"missing", b"v", &WriteOptions::default())),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(store.delete("c", b"missing", &WriteOptions::default())),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(store.delete("c", b"missing", &write(Conditions::if_match(ETagArg::Any)))),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(store.put("c", b"missing", b"v", &write(Conditions::if_version(7)))),
        ErrorCode::NotFound
    );
}

#[test]
fn put_if_match_on_a_missing_item_is_condition_not_met_unlike_cosmos() {
    let (store, _, _) = store();
    let error = store
        .put("c", b"k", b"v", &write(Conditions::if_match(ETag(5))))
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ConditionNotMet);
    assert_eq!(
        code(store.get("c", b"k", &ReadOptions::default())),
        ErrorCode::NotFound
    );
}

#[test]
fn if_version_failing_is_version_mismatch() {
    let (store, _, _) = store();
    let etag = store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        code(store.put(
            "c",
            b"k",
            b"w",
            &write(Conditions::if_version(etag.version() + 1))
        )),
        ErrorCode::VersionMismatch
    );
    store
        .put(
            "c",
            b"k",
            b"w",
            &write(Conditions::if_version(etag.version())),
        )
        .unwrap();
}

#[test]
fn first_failing_condition_in_spec_order_is_reported() {
    let (store, _, _) = store();
    let etag = store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    // if_none_match (AlreadyExists via *) fails, and so does if_version: if_none_match wins.
    let conditions =
        Conditions::if_none_match(ETagArg::Any).and(Conditions::if_version(etag.version() + 9));
    assert_eq!(
        code(store.put("c", b"k", b"w", &write(conditions))),
        ErrorCode::AlreadyExists
    );
}

#[test]
fn date_conditions_compare_at_microsecond_resolution() {
    let (store, clock, _) = store();
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    clock.advance_micros(1);
    assert_eq!(
        code(store.put(
            "c",
            b"k",
            b"w",
            &write(Conditions::if_modified_since(START_MICROS))
        )),
        ErrorCode::ConditionNotMet
    );
    store
        .put(
            "c",
            b"k",
            b"w",
            &write(Conditions::if_unmodified_since(START_MICROS)),
        )
        .unwrap();
    store
        .put(
            "c",
            b"k",
            b"x",
            &write(Conditions::if_modified_since(START_MICROS)),
        )
        .unwrap();
}

#[test]
fn read_if_none_match_current_is_not_modified_and_if_match_failure_wins_over_304() {
    let (store, _, _) = store();
    let etag = store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let error = store
        .get("c", b"k", &read(Conditions::if_none_match(etag)))
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::NotModified);
    assert_eq!(error.status(), 304);
    let both = Conditions::if_none_match(etag).and(Conditions::if_match(ETag(1)));
    assert_eq!(
        code(store.get("c", b"k", &read(both))),
        ErrorCode::ConditionNotMet
    );
    assert_eq!(
        code(store.get("c", b"k", &read(Conditions::if_none_match(ETagArg::Any)))),
        ErrorCode::InvalidArgument
    );
    assert!(store
        .get("c", b"k", &read(Conditions::if_none_match(ETag(1))))
        .is_ok());
}

#[test]
fn get_if_newer_returns_the_item_only_when_its_version_differs() {
    let (store, _, _) = store();
    let etag = store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    assert_eq!(store.get_if_newer("c", b"k", etag.version()).unwrap(), None);
    assert!(store
        .get_if_newer("c", b"k", etag.version() - 1)
        .unwrap()
        .is_some());
}

#[test]
fn set_properties_changes_etag_and_keeps_the_value() {
    let (store, _, _) = store();
    let first = store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let options = WriteOptions {
        conditions: Conditions::if_match(first),
        metadata: vec![("a".into(), "b".into())],
        ..WriteOptions::default()
    };
    let second = store.set_properties("c", b"k", &options).unwrap();
    assert_ne!(first, second);
    let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
    assert_eq!(item.value.unwrap(), b"v");
    assert_eq!(item.metadata, vec![("a".to_owned(), "b".to_owned())]);
}

#[test]
fn set_metadata_replaces_metadata_and_keeps_value_and_content_type() {
    let (store, _, _) = store();
    let put = WriteOptions {
        content_type: Some("text/plain".into()),
        metadata: vec![("old".into(), "1".into())],
        ..WriteOptions::default()
    };
    let first = store.put("c", b"k", b"v", &put).unwrap();
    let options = WriteOptions {
        conditions: Conditions::if_match(first),
        metadata: vec![("new".into(), "2".into())],
        ..WriteOptions::default()
    };
    let second = store.set_metadata("c", b"k", &options).unwrap();
    assert_ne!(first, second);
    let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
    assert_eq!(item.value.unwrap(), b"v");
    assert_eq!(item.content_type.as_deref(), Some("text/plain"));
    assert_eq!(item.metadata, vec![("new".to_owned(), "2".to_owned())]);
    assert_eq!(item.etag, second);

    // The stale ETag now fails and reports the current one; nothing changes.
    let error = store.set_metadata("c", b"k", &options).unwrap_err();
    assert_eq!(error.code(), ErrorCode::ConditionNotMet);
    assert_eq!(error.current_etag(), Some(second));
    assert_eq!(
        code(store.set_metadata("c", b"missing", &WriteOptions::default())),
        ErrorCode::NotFound
    );
}

#[test]
fn set_metadata_with_a_content_type_is_invalid_and_changes_nothing() {
    let (store, _, _) = store();
    let etag = store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let options = WriteOptions {
        content_type: Some("text/plain".into()),
        metadata: vec![("a".into(), "b".into())],
        ..WriteOptions::default()
    };
    let error = store.set_metadata("c", b"k", &options).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("content_type"), "{error}");
    let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
    assert_eq!((item.etag, item.metadata.len()), (etag, 0));
}

#[test]
fn containers_create_twice_missing_and_delete_takes_every_item() {
    let (store, _, _) = store();
    assert_eq!(
        code(store.create_container("c", &ContainerOptions::default())),
        ErrorCode::ContainerAlreadyExists
    );
    assert_eq!(
        code(store.put("nope", b"k", b"v", &WriteOptions::default())),
        ErrorCode::ContainerNotFound
    );
    assert_eq!(
        code(store.get("nope", b"k", &ReadOptions::default())),
        ErrorCode::ContainerNotFound
    );
    for index in 0..10u32 {
        store
            .put("c", &index.to_be_bytes(), b"v", &WriteOptions::default())
            .unwrap();
    }
    store.delete_container("c", &Default::default()).unwrap();
    assert_eq!(
        code(store.get("c", &0u32.to_be_bytes(), &ReadOptions::default())),
        ErrorCode::ContainerNotFound
    );
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    assert_eq!(
        code(store.get("c", &0u32.to_be_bytes(), &ReadOptions::default())),
        ErrorCode::NotFound
    );
    assert!(store
        .list("c", b"", 100, None, false)
        .unwrap()
        .items
        .is_empty());
    assert_eq!(store.list_containers().unwrap(), vec!["c".to_owned()]);
}

#[test]
fn ttl_expired_items_are_gone_on_every_read_path_at_once() {
    let (store, clock, _) = store();
    let options = WriteOptions {
        ttl: Ttl::Seconds(10),
        ..WriteOptions::default()
    };
    store.put("c", b"short", b"v", &options).unwrap();
    store
        .put("c", b"long", b"v", &WriteOptions::default())
        .unwrap();
    clock.advance_seconds(9);
    assert!(store.get("c", b"short", &ReadOptions::default()).is_ok());
    clock.advance_seconds(1);
    assert_eq!(
        code(store.get("c", b"short", &ReadOptions::default())),
        ErrorCode::NotFound
    );
    let listed: Vec<Vec<u8>> = store
        .list("c", b"", 10, None, false)
        .unwrap()
        .items
        .into_iter()
        .map(|item| item.key)
        .collect();
    assert_eq!(listed, vec![b"long".to_vec()]);
    assert_eq!(
        code(store.put(
            "c",
            b"short",
            b"w",
            &write(Conditions::if_match(ETagArg::Any))
        )),
        ErrorCode::ConditionNotMet
    );
    store
        .create("c", b"short", b"again", &WriteOptions::default())
        .unwrap();
}

#[test]
fn container_default_ttl_applies_and_an_item_ttl_overrides_it() {
    let (store, clock, _) = store();
    let container = ContainerOptions {
        default_ttl_seconds: Some(5),
        ..ContainerOptions::default()
    };
    store.create_container("t", &container).unwrap();
    store
        .put("t", b"default", b"v", &WriteOptions::default())
        .unwrap();
    let never = WriteOptions {
        ttl: Ttl::Never,
        ..WriteOptions::default()
    };
    store.put("t", b"never", b"v", &never).unwrap();
    clock.advance_seconds(4);
    // Any write resets the TTL.
    store
        .put("t", b"default", b"w", &WriteOptions::default())
        .unwrap();
    clock.advance_seconds(4);
    assert!(store.get("t", b"default", &ReadOptions::default()).is_ok());
    clock.advance_seconds(1);
    assert_eq!(
        code(store.get("t", b"default", &ReadOptions::default())),
        ErrorCode::NotFound
    );
    clock.advance_seconds(1000);
    assert!(store.get("t", b"never", &ReadOptions::default()).is_ok());
}

#[test]
fn paging_returns_every_item_once_in_key_order_with_opaque_tokens() {
    let (store, _, _) = store();
    for index in 0..57u32 {
        store
            .put(
                "c",
                format!("item-{index:03}").as_bytes(),
                b"v",
                &WriteOptions::default(),
            )
            .unwrap();
    }
    store
        .put("c", b"other", b"v", &WriteOptions::default())
        .unwrap();
    let mut keys = Vec::new();
    let mut continuation: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = store
            .list("c", b"item-", 10, continuation.as_deref(), true)
            .unwrap();
        pages += 1;
        keys.extend(
            page.items
                .iter()
                .map(|item| String::from_utf8(item.key.clone()).unwrap()),
        );
        assert!(page
            .items
            .iter()
            .all(|item| item.value.as_deref() == Some(&b"v"[..])));
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => break,
        }
    }
    let expected: Vec<String> = (0..57).map(|index| format!("item-{index:03}")).collect();
    assert_eq!(keys, expected);
    assert_eq!(pages, 6);
    assert_eq!(
        code(store.list("c", b"item-", 10, Some("garbage"), false)),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        code(store.list("c", b"", 0, None, false)),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn paging_through_a_snapshot_never_skips_or_repeats_while_writers_change_things() {
    let (store, _, _) = store();
    for index in 0..40u32 {
        store
            .put(
                "c",
                format!("k{index:02}").as_bytes(),
                b"v",
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let snapshot = store.snapshot().unwrap();
    let mut keys = Vec::new();
    let mut continuation: Option<String> = None;
    let mut round = 0u32;
    loop {
        let page = snapshot
            .list("c", b"", 7, continuation.as_deref(), false)
            .unwrap();
        keys.extend(page.items.into_iter().map(|item| item.key));
        // Writers delete what was listed and add keys before and after the cursor.
        store
            .delete(
                "c",
                format!("k{:02}", round).as_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
        store
            .put(
                "c",
                format!("k{:02}x", round).as_bytes(),
                b"new",
                &WriteOptions::default(),
            )
            .unwrap();
        round += 1;
        match page.continuation {
            Some(token) => continuation = Some(token),
            None => break,
        }
    }
    let expected: Vec<Vec<u8>> = (0..40u32)
        .map(|index| format!("k{index:02}").into_bytes())
        .collect();
    assert_eq!(keys, expected);
}

#[test]
fn snapshots_are_repeatable_whatever_is_written_meanwhile() {
    let (store, clock, _) = store();
    store
        .put("c", b"a", b"1", &WriteOptions::default())
        .unwrap();
    let expiring = WriteOptions {
        ttl: Ttl::Seconds(5),
        ..WriteOptions::default()
    };
    store.put("c", b"b", b"1", &expiring).unwrap();
    let snapshot = store.snapshot().unwrap();
    for round in 0..20u32 {
        store
            .put(
                "c",
                b"a",
                round.to_string().as_bytes(),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    store
        .delete("c", b"b", &WriteOptions::default())
        .unwrap_or(());
    clock.advance_seconds(100);
    store.delete_container("c", &Default::default()).unwrap();
    assert_eq!(
        snapshot
            .get("c", b"a", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"1"
    );
    // Expiry is evaluated at the snapshot's clock time.
    assert_eq!(
        snapshot
            .get("c", b"b", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"1"
    );
    assert_eq!(
        snapshot
            .list("c", b"", 10, None, false)
            .unwrap()
            .items
            .len(),
        2
    );
    assert_eq!(
        code(store.get("c", b"a", &ReadOptions::default())),
        ErrorCode::ContainerNotFound
    );
}

#[test]
fn a_batch_commits_all_under_one_version_or_nothing_naming_the_failing_index() {
    let (store, _, _) = store();
    store
        .create_container("d", &ContainerOptions::default())
        .unwrap();
    let existing = store
        .put("c", b"x", b"old", &WriteOptions::default())
        .unwrap();
    let mut batch = store.batch();
    batch
        .put("c", b"a", b"1", WriteOptions::default())
        .put("d", b"b", b"2", WriteOptions::default())
        .replace("c", b"x", b"new", write(Conditions::if_match(existing)))
        .check("c", b"a", Conditions::default());
    let version = batch.commit().unwrap();
    for (container, key) in [("c", &b"a"[..]), ("d", b"b"), ("c", b"x")] {
        assert_eq!(
            store
                .get(container, key, &ReadOptions::default())
                .unwrap()
                .version,
            version
        );
    }
    let mut failing = store.batch();
    failing
        .put("c", b"a", b"changed", WriteOptions::default())
        .delete("c", b"x", WriteOptions::default())
        .create("d", b"b", b"dup", WriteOptions::default());
    match failing.commit().unwrap_err() {
        Error::BatchFailed {
            index,
            error,
            operation_count,
        } => {
            assert_eq!(index, 2);
            assert_eq!(error.code(), ErrorCode::AlreadyExists);
            assert_eq!(operation_count, 3);
        }
        other => panic!("expected BatchFailed, got {other}"),
    }
    assert_eq!(
        store
            .get("c", b"a", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"1"
    );
    assert_eq!(
        store
            .get("c", b"x", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"new"
    );
}

#[test]
fn batch_operations_see_the_ones_before_them() {
    let (store, _, _) = store();
    let mut batch = store.batch();
    batch
        .create("c", b"k", b"1", WriteOptions::default())
        .replace("c", b"k", b"2", WriteOptions::default())
        .check("c", b"k", Conditions::default());
    batch.commit().unwrap();
    assert_eq!(
        store
            .get("c", b"k", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"2"
    );
    let mut deleting = store.batch();
    deleting
        .delete("c", b"k", WriteOptions::default())
        .check("c", b"k", Conditions::default());
    let error = deleting.commit().unwrap_err();
    assert!(
        matches!(error, Error::BatchFailed { index: 1, .. }),
        "{error}"
    );
    assert_eq!(error.code(), ErrorCode::NotFound);
}

#[test]
fn batch_limits_are_invalid_argument() {
    let (store, _, _) = store();
    let mut batch = store.batch();
    for index in 0..1001u32 {
        batch.put("c", &index.to_be_bytes(), b"v", WriteOptions::default());
    }
    assert_eq!(code(batch.commit()), ErrorCode::InvalidArgument);
    assert_eq!(code(store.batch().commit()), ErrorCode::InvalidArgument);
}

#[test]
fn bad_inputs_are_invalid_argument_naming_the_argument_and_change_nothing() {
    let (store, _, _) = store();
    let before = store.version();
    let long_key = vec![b'k'; 1025];
    let big_metadata = vec![("m".to_owned(), "x".repeat(9000))];
    let cases: Vec<(&str, Result<ETag, Error>)> = vec![
        ("key", store.put("c", b"", b"v", &WriteOptions::default())),
        (
            "key",
            store.put("c", &long_key, b"v", &WriteOptions::default()),
        ),
        (
            "container",
            store.put("", b"k", b"v", &WriteOptions::default()),
        ),
        (
            "container",
            store.put("/abs", b"k", b"v", &WriteOptions::default()),
        ),
        (
            "container",
            store.put("a\0b", b"k", b"v", &WriteOptions::default()),
        ),
        (
            "metadata",
            store.put(
                "c",
                b"k",
                b"v",
                &WriteOptions {
                    metadata: big_metadata,
                    ..WriteOptions::default()
                },
            ),
        ),
        (
            "ttl",
            store.put(
                "c",
                b"k",
                b"v",
                &WriteOptions {
                    ttl: Ttl::Seconds(0),
                    ..WriteOptions::default()
                },
            ),
        ),
    ];
    for (argument, result) in cases {
        let error = result.expect_err(argument);
        assert_eq!(error.code(), ErrorCode::InvalidArgument, "{error}");
        assert_eq!(error.status(), 400);
        assert!(
            error.to_string().contains(argument),
            "{error} should name {argument}"
        );
    }
    assert!(ETagArg::parse("if_match", "").is_err());
    assert!(ETagArg::parse("if_match", "a\"b").is_err());
    assert_eq!(store.version(), before, "nothing was written");
}

#[test]
fn oversized_values_are_refused_at_the_configured_limit() {
    let clock = tenure::ManualClock::new(START_MICROS);
    let mut store_options = options(&clock);
    store_options.limits.max_value_bytes = 1000;
    let store = Store::open_with_storage(Arc::new(SimStorage::new()), store_options).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    store
        .put("c", b"k", &[0u8; 1000], &WriteOptions::default())
        .unwrap();
    let error = store
        .put("c", b"k", &[0u8; 1001], &WriteOptions::default())
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("value"));
}

#[test]
fn everything_survives_a_reopen_and_a_crash() {
    let clock = tenure::ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let mut store_options = options(&clock);
    store_options.durability = tenure::Durability::Sync;
    let store = Store::open_with_storage(Arc::new(disk.clone()), store_options.clone()).unwrap();
    let container = ContainerOptions {
        metadata: vec![("team".into(), "core".into())],
        default_ttl_seconds: Some(3600),
    };
    store.create_container("c", &container).unwrap();
    let etag = store
        .put(
            "c",
            b"k",
            b"v",
            &WriteOptions {
                content_type: Some("a/b".into()),
                ..WriteOptions::default()
            },
        )
        .unwrap();
    store
        .put("c", b"gone", b"v", &WriteOptions::default())
        .unwrap();
    store
        .delete("c", b"gone", &WriteOptions::default())
        .unwrap();
    let mut batch = store.batch();
    batch.put("c", b"b1", b"1", WriteOptions::default()).put(
        "c",
        b"b2",
        b"2",
        WriteOptions::default(),
    );
    let batch_version = batch.commit().unwrap();
    let crashed = disk.crash(&mut rand::thread_rng(), CrashPolicy::DropAll);
    drop(store);
    let store = Store::open_with_storage(Arc::new(crashed), store_options).unwrap();
    let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
    assert_eq!((item.value.unwrap(), item.etag), (b"v".to_vec(), etag));
    assert_eq!(item.content_type.as_deref(), Some("a/b"));
    assert_eq!(
        item.expires_at,
        Some(START_MICROS + 3600 * MICROS_PER_SECOND)
    );
    assert_eq!(
        code(store.get("c", b"gone", &ReadOptions::default())),
        ErrorCode::NotFound
    );
    assert_eq!(
        store
            .get("c", b"b2", &ReadOptions::default())
            .unwrap()
            .version,
        batch_version
    );
    assert_eq!(
        store.container_properties("c").unwrap().metadata,
        container.metadata
    );
    let next = store
        .put("c", b"k", b"w", &write(Conditions::if_match(etag)))
        .unwrap();
    assert!(next.version() > batch_version);
}

#[test]
fn a_closed_store_refuses_with_closed() {
    let (store, _, disk) = store();
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    store.close().unwrap();
    let store = Store::open_with_storage(
        Arc::new(disk),
        options(&tenure::ManualClock::new(START_MICROS)),
    )
    .unwrap();
    assert!(store.get("c", b"k", &ReadOptions::default()).is_ok());
}

#[test]
fn update_returns_the_written_item_with_its_new_times() {
    let (store, clock, _) = store();
    let options = WriteOptions {
        ttl: Ttl::Seconds(100),
        ..WriteOptions::default()
    };
    store.put("c", b"n", &1u32.to_le_bytes(), &options).unwrap();
    clock.advance_seconds(7);
    let updated = store
        .update("c", b"n", 10, |bytes| {
            (u32::from_le_bytes(bytes.try_into().unwrap()) + 1)
                .to_le_bytes()
                .to_vec()
        })
        .unwrap();
    let read = store.get("c", b"n", &ReadOptions::default()).unwrap();
    assert_eq!(
        updated, read,
        "update() returns exactly what a read then sees"
    );
    assert_eq!(updated.last_modified, START_MICROS + 7 * MICROS_PER_SECOND);
}

/// Limits are checked when the store opens: a key lives in a slot, which the slot arena
/// bounds to 64 KiB of index key (the 8-byte container id and the key).
#[test]
fn an_unusable_key_limit_fails_the_open_naming_it_and_creates_nothing() {
    const KEY_BYTES_CEILING: usize = (64 << 10) - 8;
    let clock = tenure::ManualClock::new(START_MICROS);
    for max_key_bytes in [0, KEY_BYTES_CEILING + 1, 1 << 31] {
        let disk = SimStorage::new();
        let mut store_options = options(&clock);
        store_options.limits.max_key_bytes = max_key_bytes;
        let error = Store::open_with_storage(Arc::new(disk.clone()), store_options)
            .err()
            .expect("the open fails");
        assert_eq!(error.code(), ErrorCode::InvalidArgument);
        assert!(
            error.to_string().contains("limits.max_key_bytes"),
            "{error}"
        );
        assert!(disk.file_names().is_empty(), "the open wrote nothing");
    }
}

#[test]
fn the_longest_key_a_store_can_take_is_written_and_read_back_across_a_reopen() {
    const KEY_BYTES_CEILING: usize = (64 << 10) - 8;
    let clock = tenure::ManualClock::new(START_MICROS);
    let disk = SimStorage::new();
    let open = || {
        let mut store_options = options(&clock);
        store_options.limits.max_key_bytes = KEY_BYTES_CEILING;
        Store::open_with_storage(Arc::new(disk.clone()), store_options).unwrap()
    };
    let key: Vec<u8> = (0..KEY_BYTES_CEILING)
        .map(|index| (index % 251) as u8)
        .collect();
    let store = open();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let etag = store
        .put("c", &key, b"value", &WriteOptions::default())
        .unwrap();
    let too_long = [key.as_slice(), b"!"].concat();
    assert_eq!(
        code(store.put("c", &too_long, b"value", &WriteOptions::default())),
        ErrorCode::InvalidArgument
    );
    store.close().unwrap();
    let store = open();
    let item = store.get("c", &key, &ReadOptions::default()).unwrap();
    assert_eq!(
        (item.value.as_deref(), item.etag),
        (Some(&b"value"[..]), etag)
    );
}

/// Reads find their container through the thread's last lookup (catalog.rs): a delete, a
/// re-creation under the same name and a second store in the same thread must each be seen at
/// once, and a snapshot keeps the incarnation it pinned.
#[test]
fn a_threads_repeated_reads_follow_container_deletes_recreations_and_other_stores() {
    let (store, _, _) = store();
    store
        .create_container("x", &ContainerOptions::default())
        .unwrap();
    store
        .create_container("y", &ContainerOptions::default())
        .unwrap();
    // A second store, as many container creates in, whose container "c" has another id.
    let (other, _, _) = common::store();
    other
        .create_container("x", &ContainerOptions::default())
        .unwrap();
    other.delete_container("c", &Default::default()).unwrap();
    other
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    // The value of "c"/"k" in `store`, or the error's code.
    let read = |store: &Store| match store.get("c", b"k", &ReadOptions::default()) {
        Ok(item) => Ok(item.value.unwrap()),
        Err(error) => Err(error.code()),
    };
    store
        .put("c", b"k", b"first", &WriteOptions::default())
        .unwrap();
    other
        .put("c", b"k", b"other", &WriteOptions::default())
        .unwrap();
    for _ in 0..3 {
        assert_eq!(read(&store), Ok(b"first".to_vec()));
        assert_eq!(read(&other), Ok(b"other".to_vec()));
    }
    let before_delete = store.snapshot().unwrap();
    store.delete_container("c", &Default::default()).unwrap();
    assert_eq!(read(&store), Err(ErrorCode::ContainerNotFound));
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    assert_eq!(
        read(&store),
        Err(ErrorCode::NotFound),
        "the new container of that name holds nothing"
    );
    store
        .put("c", b"k", b"second", &WriteOptions::default())
        .unwrap();
    assert_eq!(read(&store), Ok(b"second".to_vec()));
    let pinned = before_delete
        .get("c", b"k", &ReadOptions::default())
        .unwrap();
    assert_eq!(
        pinned.value.unwrap(),
        b"first",
        "the snapshot reads the incarnation it pinned"
    );
    assert_eq!(read(&other), Ok(b"other".to_vec()));
    assert_eq!(read(&store), Ok(b"second".to_vec()));
}

/// Writes find their container through the thread's last lookup too (`Catalog::live`): a
/// write right after a delete, on the thread whose last write cached the container, is
/// refused; after a re-creation it lands in the new container; another store's container of
/// the same name is never taken for this one's.
#[test]
fn a_threads_repeated_writes_follow_container_deletes_recreations_and_other_stores() {
    let (store, _, _) = store();
    let (other, _, _) = common::store();
    other.delete_container("c", &Default::default()).unwrap();
    other
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let write = |store: &Store, value: &[u8]| {
        store
            .put("c", b"k", value, &WriteOptions::default())
            .map(|_| ())
            .map_err(|error| error.code())
    };
    let read = |store: &Store| {
        store
            .get("c", b"k", &ReadOptions::default())
            .map(|item| item.value.unwrap())
            .map_err(|error| error.code())
    };
    for round in 0..3u8 {
        assert_eq!(write(&store, &[round]), Ok(()));
        assert_eq!(write(&other, &[round + 10]), Ok(()));
    }
    assert_eq!(read(&store), Ok(vec![2]));
    assert_eq!(read(&other), Ok(vec![12]));
    assert_eq!(write(&store, b"before the delete"), Ok(()));
    store.delete_container("c", &Default::default()).unwrap();
    for _ in 0..2 {
        assert_eq!(write(&store, b"lost"), Err(ErrorCode::ContainerNotFound));
    }
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    assert_eq!(write(&store, b"new"), Ok(()));
    assert_eq!(read(&store), Ok(b"new".to_vec()));
    assert_eq!(write(&other, b"other"), Ok(()));
    assert_eq!(write(&store, b"newer"), Ok(()));
    assert_eq!(read(&store), Ok(b"newer".to_vec()));
    assert_eq!(read(&other), Ok(b"other".to_vec()));
}

/// Values of 64 KiB and more reach the log with a write of their own rather than through the
/// mapping (`Reservation::write_payload_parts`): they read back byte-exact with their
/// properties, before and after a reopen; and when threads race conditional replacements of
/// one key, every write that lost stays lost after the reopen.
#[test]
fn large_values_read_back_exactly_and_lost_races_stay_lost_after_a_reopen() {
    let value = |seed: u64, length: usize| -> Vec<u8> {
        (0..length)
            .map(|index| (index as u64).wrapping_mul(31).wrapping_add(seed) as u8)
            .collect()
    };
    for durability in [tenure::Durability::Buffered, tenure::Durability::Sync] {
        let clock = tenure::ManualClock::new(START_MICROS);
        let disk = SimStorage::new();
        let mut store_options = options(&clock);
        store_options.durability = durability;
        let store =
            Store::open_with_storage(Arc::new(disk.clone()), store_options.clone()).unwrap();
        store.create_container("c", &Default::default()).unwrap();
        let with_properties = WriteOptions {
            content_type: Some("application/octet-stream".into()),
            metadata: vec![("kind".into(), "blob".into())],
            ..WriteOptions::default()
        };
        let plain_etag = store
            .put("c", b"plain", &value(1, 70_000), &WriteOptions::default())
            .unwrap();
        let properties_etag = store
            .put("c", b"properties", &value(2, 300_000), &with_properties)
            .unwrap();
        store
            .put("c", b"raced", &value(3, 65_536), &WriteOptions::default())
            .unwrap();
        let winners = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for thread in 0..2u64 {
                let (store, winners) = (&store, &winners);
                scope.spawn(move || {
                    for round in 0..25u64 {
                        let seed = 100 + thread * 1000 + round;
                        let current = store.get("c", b"raced", &ReadOptions::default()).unwrap();
                        let conditional = write(Conditions::if_match(current.etag));
                        match store.put("c", b"raced", &value(seed, 80_000), &conditional) {
                            Ok(etag) => winners.lock().unwrap().push((etag, seed)),
                            Err(error) => assert_eq!(error.code(), ErrorCode::ConditionNotMet),
                        }
                    }
                });
            }
        });
        let (raced_etag, raced_seed) = *winners.lock().unwrap().iter().max().unwrap();
        let check = |store: &Store| {
            let item = store.get("c", b"plain", &ReadOptions::default()).unwrap();
            assert_eq!(
                (item.value.unwrap(), item.etag),
                (value(1, 70_000), plain_etag)
            );
            let item = store
                .get("c", b"properties", &ReadOptions::default())
                .unwrap();
            assert_eq!(item.value.unwrap(), value(2, 300_000));
            assert_eq!(item.etag, properties_etag);
            assert_eq!(item.content_type, with_properties.content_type);
            assert_eq!(item.metadata, with_properties.metadata);
            let item = store.get("c", b"raced", &ReadOptions::default()).unwrap();
            assert_eq!(item.etag, raced_etag, "{durability:?}");
            assert!(
                item.value.unwrap() == value(raced_seed, 80_000),
                "{durability:?}"
            );
        };
        check(&store);
        store.close().unwrap();
        let reopened = Store::open_with_storage(Arc::new(disk.clone()), store_options).unwrap();
        check(&reopened);
    }
}
