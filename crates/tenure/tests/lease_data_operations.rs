//! docs/spec.md §4, the data-operation table: writes and reads of a leased item with the lease's id
//! (A), another id (B) or no id, in every lease state, end to end through the store; every
//! failure is 412. Also: a write without an id clears an Expired or Broken lease, a lease
//! survives an overwrite made with its id, deleting the item drops its lease, a put with a
//! lease id on a missing item, lease operations keep ETag and last_modified, and batches
//! honour a lease id per operation.

mod common;

use std::sync::Arc;

use tenure::{
    Conditions, Durability, Error, ErrorCode, Item, LeaseDuration, LeaseId, LeaseInfo,
    LeaseRequest, LeaseState, ManualClock, ReadOptions, Store, StoreOptions, Ttl, WriteOptions,
    MICROS_PER_SECOND,
};
use tenure_testkit::SimStorage;

const A: LeaseId = LeaseId(0xaaaa_aaaa_aaaa_4aaa_8aaa_aaaa_aaaa_aaaa);
const B: LeaseId = LeaseId(0xbbbb_bbbb_bbbb_4bbb_8bbb_bbbb_bbbb_bbbb);
const SECOND: u64 = MICROS_PER_SECOND;
const KEY: &[u8] = b"k";

fn request(seconds: Option<u32>, proposed_id: Option<LeaseId>) -> LeaseRequest {
    LeaseRequest {
        duration: seconds.map_or(LeaseDuration::Infinite, |seconds| {
            LeaseDuration::fixed(seconds).unwrap()
        }),
        proposed_id,
        holder: None,
    }
}

fn with_id(id: Option<LeaseId>) -> WriteOptions {
    WriteOptions {
        lease_id: id,
        ..WriteOptions::default()
    }
}

fn read_with(id: Option<LeaseId>) -> ReadOptions {
    ReadOptions {
        lease_id: id,
        ..ReadOptions::default()
    }
}

fn open() -> (Store, ManualClock, SimStorage) {
    let clock = ManualClock::new(common::START_MICROS);
    let disk = SimStorage::new();
    let options = StoreOptions {
        durability: Durability::Sync,
        ..common::options(&clock)
    };
    let store = Store::open_with_storage(Arc::new(disk.clone()), options).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    (store, clock, disk)
}

fn get(store: &Store, key: &[u8]) -> tenure::Result<Item> {
    store.get("c", key, &ReadOptions::default())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Available,
    Leased,
    Breaking,
    Broken,
    Expired,
}

/// Item "k" = "v1", with lease A (granted at T0) driven into `start`:
/// Available (A acquired and released), Leased (60 s, 55 left), Breaking (60 s lease broken
/// with a 10 s period, 8 s left), Broken (period 0), Expired (15 s lease, 20 s later).
fn enter(start: Start) -> (Store, ManualClock, u64) {
    let (store, clock, _) = open();
    store
        .put("c", KEY, b"v1", &WriteOptions::default())
        .unwrap();
    let seconds = if start == Start::Expired { 15 } else { 60 };
    let lease = store
        .acquire_lease("c", KEY, &request(Some(seconds), Some(A)))
        .unwrap();
    clock.advance_seconds(5);
    let state = match start {
        Start::Available => {
            store.release_lease("c", KEY, A).unwrap();
            LeaseState::Available
        }
        Start::Leased => LeaseState::Leased,
        Start::Breaking => {
            store.break_lease("c", KEY, Some(10)).unwrap();
            clock.advance_seconds(2);
            LeaseState::Breaking
        }
        Start::Broken => {
            store.break_lease("c", KEY, Some(0)).unwrap();
            LeaseState::Broken
        }
        Start::Expired => {
            clock.advance_seconds(15);
            LeaseState::Expired
        }
    };
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        state,
        "setup of {start:?}"
    );
    (store, clock, lease.fence)
}

/// The kinds of write the table covers ("Writes = put, delete, set properties/metadata, and
/// every write inside a batch").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    Put,
    Replace,
    SetProperties,
    Delete,
    /// A put of "k" as the second operation of a batch whose first puts "other".
    BatchPut,
}

fn write(store: &Store, kind: Write, id: Option<LeaseId>) -> tenure::Result<()> {
    let options = with_id(id);
    match kind {
        Write::Put => store.put("c", KEY, b"v2", &options).map(drop),
        Write::Replace => store.replace("c", KEY, b"v2", &options).map(drop),
        Write::SetProperties => store
            .set_properties(
                "c",
                KEY,
                &WriteOptions {
                    metadata: vec![("m".into(), "2".into())],
                    ..options
                },
            )
            .map(drop),
        Write::Delete => store.delete("c", KEY, &options),
        Write::BatchPut => {
            let mut batch = store.batch();
            batch
                .put("c", b"other", b"o", WriteOptions::default())
                .put("c", KEY, b"v2", options);
            batch.commit().map(drop)
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Refused(ErrorCode),
    /// Succeeds; the lease is kept (same state, id, fence, time left).
    Kept,
    /// Succeeds; the lease is cleared to Available.
    Cleared,
}

use Outcome::{Cleared, Kept, Refused};

fn check_write(kind: Write, id: Option<LeaseId>, start: Start, outcome: Outcome) {
    let cell = format!("cell write {kind:?} with {} on {start:?}", id_name(id));
    let (store, _clock, a_fence) = enter(start);
    let before_item = get(&store, KEY).unwrap();
    let before_lease = store.lease_info("c", KEY).unwrap();
    let result = write(&store, kind, id);
    match outcome {
        Refused(code) => {
            let error = match result {
                Ok(()) => panic!("{cell}: expected {code:?}, the write succeeded"),
                Err(error) => error,
            };
            assert_eq!(error.code(), code, "{cell}: code");
            assert_eq!(error.status(), 412, "{cell}: status");
            assert_eq!(
                error.current_etag(),
                Some(before_item.etag),
                "{cell}: a precondition error reports the current ETag"
            );
            if kind == Write::BatchPut {
                assert!(
                    matches!(error, Error::BatchFailed { index: 1, .. }),
                    "{cell}: the batch names operation 1: {error:?}"
                );
                assert_eq!(
                    get(&store, b"other").unwrap_err().code(),
                    ErrorCode::NotFound,
                    "{cell}: a failed batch writes nothing"
                );
            }
            assert_eq!(
                get(&store, KEY).unwrap(),
                before_item,
                "{cell}: item unchanged"
            );
            assert_eq!(
                store.lease_info("c", KEY).unwrap(),
                before_lease,
                "{cell}: lease unchanged"
            );
        }
        Kept | Cleared => {
            result.unwrap_or_else(|error| panic!("{cell}: expected success: {error:?}"));
            if kind == Write::Delete {
                assert_eq!(
                    get(&store, KEY).unwrap_err().code(),
                    ErrorCode::NotFound,
                    "{cell}"
                );
                assert_eq!(
                    store.lease_info("c", KEY).unwrap_err().code(),
                    ErrorCode::NotFound,
                    "{cell}: the lease went with the item"
                );
                store
                    .put("c", KEY, b"again", &WriteOptions::default())
                    .unwrap();
                assert_eq!(
                    store.lease_info("c", KEY).unwrap().state,
                    LeaseState::Available,
                    "{cell}: a re-created item starts Available"
                );
                return;
            }
            let after = get(&store, KEY).unwrap();
            assert_ne!(
                after.etag, before_item.etag,
                "{cell}: a write takes a new ETag"
            );
            match kind {
                Write::SetProperties => {
                    assert_eq!(after.value, before_item.value, "{cell}");
                    assert_eq!(after.metadata, vec![("m".into(), "2".into())], "{cell}");
                }
                _ => assert_eq!(after.value.as_deref(), Some(&b"v2"[..]), "{cell}"),
            }
            let lease = store.lease_info("c", KEY).unwrap();
            match outcome {
                Kept => {
                    assert_eq!(lease, before_lease, "{cell}: the lease is kept");
                    if start != Start::Available {
                        assert_eq!(lease.fence, Some(a_fence), "{cell}");
                    }
                }
                _ => assert_eq!(
                    lease,
                    LeaseInfo {
                        state: LeaseState::Available,
                        id: None,
                        fence: None,
                        remaining_micros: None,
                        holder: None,
                    },
                    "{cell}: the lease is cleared"
                ),
            }
        }
    }
}

fn check_read(with_value: bool, id: Option<LeaseId>, start: Start, outcome: Outcome) {
    let operation = if with_value { "get" } else { "get_properties" };
    let cell = format!("cell read ({operation}) with {} on {start:?}", id_name(id));
    let (store, _clock, _) = enter(start);
    let before_item = get(&store, KEY).unwrap();
    let before_lease = store.lease_info("c", KEY).unwrap();
    let result = if with_value {
        store.get("c", KEY, &read_with(id))
    } else {
        store.get_properties("c", KEY, &read_with(id))
    };
    match outcome {
        Refused(code) => {
            let error = result.expect_err(&cell);
            assert_eq!(error.code(), code, "{cell}: code");
            assert_eq!(error.status(), 412, "{cell}: status");
            assert_eq!(
                error.current_etag(),
                Some(before_item.etag),
                "{cell}: ETag reported"
            );
        }
        Kept => {
            let item = result.unwrap_or_else(|error| panic!("{cell}: expected success: {error:?}"));
            assert_eq!(item.etag, before_item.etag, "{cell}");
            assert_eq!(item.value.is_some(), with_value, "{cell}");
        }
        Cleared => unreachable!("reads never clear"),
    }
    assert_eq!(
        store.lease_info("c", KEY).unwrap(),
        before_lease,
        "{cell}: a read leaves the lease state unchanged"
    );
    assert_eq!(get(&store, KEY).unwrap(), before_item, "{cell}");
}

fn id_name(id: Option<LeaseId>) -> &'static str {
    match id {
        Some(A) => "A",
        Some(B) => "B",
        Some(_) => "another id",
        None => "no id",
    }
}

/// The 15 cells of one kind of write (3 ids × 5 states), as named tests in a module per kind.
macro_rules! write_rows {
    ($($module:ident: $kind:ident;)*) => {
        $(
            mod $module {
                use super::*;
                const KIND: Write = Write::$kind;
                const CLEAR: Outcome = Cleared;

                #[test] fn with_a_on_available() { check_write(KIND, Some(A), Start::Available, Refused(ErrorCode::LeaseNotPresentWithBlobOperation)); }
                #[test] fn with_a_on_leased() { check_write(KIND, Some(A), Start::Leased, Kept); }
                #[test] fn with_a_on_breaking() { check_write(KIND, Some(A), Start::Breaking, Kept); }
                #[test] fn with_a_on_broken() { check_write(KIND, Some(A), Start::Broken, Refused(ErrorCode::LeaseLost)); }
                #[test] fn with_a_on_expired() { check_write(KIND, Some(A), Start::Expired, Refused(ErrorCode::LeaseLost)); }

                #[test] fn with_b_on_available() { check_write(KIND, Some(B), Start::Available, Refused(ErrorCode::LeaseNotPresentWithBlobOperation)); }
                #[test] fn with_b_on_leased() { check_write(KIND, Some(B), Start::Leased, Refused(ErrorCode::LeaseIdMismatchWithBlobOperation)); }
                #[test] fn with_b_on_breaking() { check_write(KIND, Some(B), Start::Breaking, Refused(ErrorCode::LeaseIdMismatchWithBlobOperation)); }
                #[test] fn with_b_on_broken() { check_write(KIND, Some(B), Start::Broken, Refused(ErrorCode::LeaseLost)); }
                #[test] fn with_b_on_expired() { check_write(KIND, Some(B), Start::Expired, Refused(ErrorCode::LeaseLost)); }

                #[test] fn without_id_on_available() { check_write(KIND, None, Start::Available, Kept); }
                #[test] fn without_id_on_leased() { check_write(KIND, None, Start::Leased, Refused(ErrorCode::LeaseIdMissing)); }
                #[test] fn without_id_on_breaking() { check_write(KIND, None, Start::Breaking, Refused(ErrorCode::LeaseIdMissing)); }
                #[test] fn without_id_on_broken_clears_the_lease() { check_write(KIND, None, Start::Broken, CLEAR); }
                #[test] fn without_id_on_expired_clears_the_lease() { check_write(KIND, None, Start::Expired, CLEAR); }
            }
        )*
    };
}

write_rows! {
    write_put: Put;
    write_replace: Replace;
    write_set_properties: SetProperties;
    write_delete: Delete;
    write_in_a_batch: BatchPut;
}

/// The 15 read cells, for get and get_properties.
macro_rules! read_rows {
    ($($module:ident: $with_value:expr;)*) => {
        $(
            mod $module {
                use super::*;
                const VALUE: bool = $with_value;

                #[test] fn with_a_on_available() { check_read(VALUE, Some(A), Start::Available, Refused(ErrorCode::LeaseNotPresentWithBlobOperation)); }
                #[test] fn with_a_on_leased() { check_read(VALUE, Some(A), Start::Leased, Kept); }
                #[test] fn with_a_on_breaking() { check_read(VALUE, Some(A), Start::Breaking, Kept); }
                #[test] fn with_a_on_broken() { check_read(VALUE, Some(A), Start::Broken, Refused(ErrorCode::LeaseLost)); }
                #[test] fn with_a_on_expired() { check_read(VALUE, Some(A), Start::Expired, Refused(ErrorCode::LeaseLost)); }

                #[test] fn with_b_on_available() { check_read(VALUE, Some(B), Start::Available, Refused(ErrorCode::LeaseNotPresentWithBlobOperation)); }
                #[test] fn with_b_on_leased() { check_read(VALUE, Some(B), Start::Leased, Refused(ErrorCode::LeaseIdMismatchWithBlobOperation)); }
                #[test] fn with_b_on_breaking() { check_read(VALUE, Some(B), Start::Breaking, Refused(ErrorCode::LeaseIdMismatchWithBlobOperation)); }
                #[test] fn with_b_on_broken() { check_read(VALUE, Some(B), Start::Broken, Refused(ErrorCode::LeaseLost)); }
                #[test] fn with_b_on_expired() { check_read(VALUE, Some(B), Start::Expired, Refused(ErrorCode::LeaseLost)); }

                #[test] fn without_id_on_available() { check_read(VALUE, None, Start::Available, Kept); }
                #[test] fn without_id_on_leased() { check_read(VALUE, None, Start::Leased, Kept); }
                #[test] fn without_id_on_breaking() { check_read(VALUE, None, Start::Breaking, Kept); }
                #[test] fn without_id_on_broken_leaves_the_state() { check_read(VALUE, None, Start::Broken, Kept); }
                #[test] fn without_id_on_expired_leaves_the_state() { check_read(VALUE, None, Start::Expired, Kept); }
            }
        )*
    };
}

read_rows! {
    read_get: true;
    read_get_properties: false;
}

// ----- the table's side rules -----

#[test]
fn a_write_without_an_id_clears_an_expired_lease_and_the_next_grant_takes_a_new_fence() {
    let (store, _clock, a_fence) = enter(Start::Expired);
    store
        .put("c", KEY, b"v2", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Available
    );
    // The old holder's id no longer names a lease at all.
    assert_eq!(
        store
            .put("c", KEY, b"v3", &with_id(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseNotPresentWithBlobOperation
    );
    assert_eq!(
        store.renew_lease("c", KEY, A).unwrap_err().code(),
        ErrorCode::LeaseIdMismatchWithLeaseOperation
    );
    let next = store
        .acquire_lease("c", KEY, &request(Some(15), Some(A)))
        .unwrap();
    assert!(next.fence > a_fence);
}

#[test]
fn a_write_without_an_id_clears_a_lease_broken_by_time() {
    let (store, clock, _) = enter(Start::Breaking);
    clock.advance_seconds(8);
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Broken
    );
    store
        .put("c", KEY, b"v2", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Available
    );
}

#[test]
fn a_lease_survives_overwrites_made_with_its_id_and_they_do_not_renew_it() {
    let (store, clock, _) = open();
    store
        .put("c", KEY, b"v0", &WriteOptions::default())
        .unwrap();
    let lease = store
        .acquire_lease("c", KEY, &request(Some(30), None))
        .unwrap();
    for round in 1..=5u64 {
        clock.advance_seconds(3);
        let etag = store
            .put(
                "c",
                KEY,
                format!("v{round}").as_bytes(),
                &with_id(Some(lease.id)),
            )
            .unwrap();
        assert_eq!(get(&store, KEY).unwrap().etag, etag);
        let info = store.lease_info("c", KEY).unwrap();
        assert_eq!(
            (info.state, info.id, info.fence, info.remaining_micros),
            (
                LeaseState::Leased,
                Some(lease.id),
                Some(lease.fence),
                Some((30 - 3 * round) * SECOND)
            ),
            "round {round}"
        );
    }
    store
        .set_properties(
            "c",
            KEY,
            &WriteOptions {
                content_type: Some("text/plain".into()),
                ..with_id(Some(lease.id))
            },
        )
        .unwrap();
    assert_eq!(store.lease_info("c", KEY).unwrap().id, Some(lease.id));
    clock.advance_seconds(15);
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Expired
    );
}

#[test]
fn a_write_with_the_id_keeps_a_breaking_lease_breaking_until_the_same_deadline() {
    let (store, clock, a_fence) = enter(Start::Breaking);
    store.put("c", KEY, b"v2", &with_id(Some(A))).unwrap();
    let info = store.lease_info("c", KEY).unwrap();
    assert_eq!(
        (info.state, info.fence, info.remaining_micros),
        (LeaseState::Breaking, Some(a_fence), Some(8 * SECOND))
    );
    clock.advance_seconds(8);
    assert_eq!(
        store
            .put("c", KEY, b"v3", &with_id(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseLost
    );
}

#[test]
fn deleting_the_item_drops_its_lease_and_a_re_created_item_starts_available() {
    let (store, _clock, _) = open();
    store
        .put("c", KEY, b"v1", &WriteOptions::default())
        .unwrap();
    let lease = store.acquire_lease("c", KEY, &request(None, None)).unwrap();
    store.delete("c", KEY, &with_id(Some(lease.id))).unwrap();
    assert_eq!(
        store.lease_info("c", KEY).unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        store.release_lease("c", KEY, lease.id).unwrap_err().code(),
        ErrorCode::NotFound
    );
    // A put with the old id: the item is missing, so no lease is present.
    assert_eq!(
        store
            .put("c", KEY, b"v2", &with_id(Some(lease.id)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseNotPresentWithBlobOperation
    );
    store
        .create("c", KEY, b"v2", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Available
    );
    assert_eq!(
        store
            .put("c", KEY, b"v3", &with_id(Some(lease.id)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseNotPresentWithBlobOperation
    );
    let next = store
        .acquire_lease("c", KEY, &request(Some(15), Some(lease.id)))
        .unwrap();
    assert!(next.fence > lease.fence, "a new grant after re-creation");
}

#[test]
fn an_item_that_expires_by_its_ttl_takes_its_lease_along() {
    let (store, clock, _) = open();
    store
        .put(
            "c",
            KEY,
            b"v1",
            &WriteOptions {
                ttl: Ttl::Seconds(10),
                ..WriteOptions::default()
            },
        )
        .unwrap();
    let lease = store
        .acquire_lease("c", KEY, &request(Some(60), None))
        .unwrap();
    clock.advance_seconds(10);
    assert_eq!(
        store.lease_info("c", KEY).unwrap_err().code(),
        ErrorCode::NotFound
    );
    store
        .put("c", KEY, b"v2", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Available
    );
    assert_eq!(
        store
            .put("c", KEY, b"v3", &with_id(Some(lease.id)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseNotPresentWithBlobOperation
    );
}

#[test]
fn a_put_with_a_lease_id_on_a_missing_item_is_lease_not_present() {
    let (store, _clock, _) = open();
    for id in [A, B] {
        let error = store
            .put("c", b"never", b"v", &with_id(Some(id)))
            .unwrap_err();
        assert_eq!(error.code(), ErrorCode::LeaseNotPresentWithBlobOperation);
        assert_eq!(error.status(), 412);
        assert_eq!(error.current_etag(), None, "no item, no ETag");
        let error = store
            .create("c", b"never", b"v", &with_id(Some(id)))
            .unwrap_err();
        assert_eq!(
            error.code(),
            ErrorCode::LeaseNotPresentWithBlobOperation,
            "create"
        );
    }
    assert_eq!(
        get(&store, b"never").unwrap_err().code(),
        ErrorCode::NotFound
    );
    // Operations that need the item say NotFound first (docs/spec.md §3: existence before lease).
    assert_eq!(
        store
            .replace("c", b"never", b"v", &with_id(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        store
            .delete("c", b"never", &with_id(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        store
            .get("c", b"never", &read_with(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
}

#[test]
fn lease_operations_change_neither_etag_nor_last_modified() {
    let (store, clock, _) = open();
    store.put("c", KEY, b"v", &WriteOptions::default()).unwrap();
    let before = get(&store, KEY).unwrap();
    let unchanged = |step: &str| {
        let now = get(&store, KEY).unwrap();
        assert_eq!(
            (now.etag, now.version, now.last_modified),
            (before.etag, before.version, before.last_modified),
            "after {step}"
        );
        let properties = store
            .get_properties("c", KEY, &ReadOptions::default())
            .unwrap();
        assert_eq!(properties.etag, before.etag, "get_properties after {step}");
        let listed = store.list("c", b"", 10, None, false).unwrap();
        assert_eq!(listed.items[0].etag, before.etag, "list after {step}");
    };
    clock.advance_seconds(1);
    let lease = store
        .acquire_lease("c", KEY, &request(Some(15), None))
        .unwrap();
    unchanged("acquire");
    clock.advance_seconds(1);
    store
        .acquire_lease("c", KEY, &request(Some(60), Some(lease.id)))
        .unwrap();
    unchanged("re-acquire");
    store.renew_lease("c", KEY, lease.id).unwrap();
    unchanged("renew");
    store.change_lease("c", KEY, lease.id, B).unwrap();
    unchanged("change");
    store.break_lease("c", KEY, Some(10)).unwrap();
    unchanged("break");
    clock.advance_seconds(10);
    store.break_lease("c", KEY, None).unwrap();
    unchanged("break of a broken lease");
    store.release_lease("c", KEY, B).unwrap();
    unchanged("release");
    store
        .acquire_lease("c", KEY, &request(Some(15), None))
        .unwrap();
    clock.advance_seconds(20);
    store
        .renew_lease("c", KEY, store.lease_info("c", KEY).unwrap().id.unwrap())
        .unwrap();
    unchanged("renew of an expired lease");
    // Lease operations and reads never write the change feed's item versions either:
    // the item's version is still the put's.
    assert_eq!(get(&store, KEY).unwrap().version, before.version);
}

#[test]
fn the_lease_check_comes_after_existence_and_before_conditions() {
    let (store, _clock, a_fence) = enter(Start::Leased);
    let etag = get(&store, KEY).unwrap().etag;
    let stale = Conditions::if_match(tenure::ETag(etag.version() - 1));
    // Without the id: the lease refuses first (LeaseIdMissing, not ConditionNotMet).
    let error = store
        .put(
            "c",
            KEY,
            b"v2",
            &WriteOptions::with_conditions(stale.clone()),
        )
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::LeaseIdMissing);
    // With the id: the condition decides, and the lease is kept.
    let error = store
        .put(
            "c",
            KEY,
            b"v2",
            &WriteOptions {
                lease_id: Some(A),
                ..WriteOptions::with_conditions(stale)
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ConditionNotMet);
    store
        .put(
            "c",
            KEY,
            b"v2",
            &WriteOptions {
                lease_id: Some(A),
                ..WriteOptions::with_conditions(Conditions::if_match(etag))
            },
        )
        .unwrap();
    assert_eq!(store.lease_info("c", KEY).unwrap().fence, Some(a_fence));
    // create on an existing leased item with the right id: AlreadyExists (conditions), with
    // no id: the lease first.
    assert_eq!(
        store
            .create("c", KEY, b"v", &with_id(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::AlreadyExists
    );
    assert_eq!(
        store
            .create("c", KEY, b"v", &WriteOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseIdMissing
    );
}

#[test]
fn a_lease_still_guards_the_item_after_reopen() {
    let (store, clock, disk) = open();
    store
        .put("c", KEY, b"v1", &WriteOptions::default())
        .unwrap();
    let lease = store
        .acquire_lease("c", KEY, &request(Some(60), None))
        .unwrap();
    store.close().unwrap();
    let options = StoreOptions {
        durability: Durability::Sync,
        ..common::options(&clock)
    };
    let store = Store::open_with_storage(Arc::new(disk), options).unwrap();
    assert_eq!(
        store
            .put("c", KEY, b"v2", &WriteOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseIdMissing
    );
    assert_eq!(
        store.get("c", KEY, &read_with(Some(B))).unwrap_err().code(),
        ErrorCode::LeaseIdMismatchWithBlobOperation
    );
    store
        .put("c", KEY, b"v2", &with_id(Some(lease.id)))
        .unwrap();
    clock.advance_seconds(60);
    assert_eq!(
        store
            .put("c", KEY, b"v3", &with_id(Some(lease.id)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseLost
    );
}

// ----- batches: a lease id per operation -----

fn batch_error(result: tenure::Result<u64>) -> (usize, ErrorCode) {
    match result {
        Err(Error::BatchFailed {
            index,
            error,
            operation_count,
        }) => {
            assert!(index < operation_count);
            (index, error.code())
        }
        other => panic!("expected a failed batch, got {other:?}"),
    }
}

#[test]
fn a_batch_honours_a_lease_id_per_operation() {
    let (store, _clock, _) = open();
    for key in [b"k1", b"k2", b"k3"] {
        store
            .put("c", key, b"v1", &WriteOptions::default())
            .unwrap();
    }
    let one = store
        .acquire_lease("c", b"k1", &request(Some(60), Some(A)))
        .unwrap();
    let two = store
        .acquire_lease("c", b"k2", &request(Some(60), Some(B)))
        .unwrap();
    let mut batch = store.batch();
    batch
        .put("c", b"k1", b"v2", with_id(Some(A)))
        .put("c", b"k2", b"v2", with_id(Some(B)))
        .put("c", b"k3", b"v2", WriteOptions::default());
    let version = batch.commit().unwrap();
    for key in [b"k1", b"k2", b"k3"] {
        let item = get(&store, key).unwrap();
        assert_eq!(
            (item.value.unwrap(), item.version),
            (b"v2".to_vec(), version)
        );
    }
    assert_eq!(
        store.lease_info("c", b"k1").unwrap().fence,
        Some(one.fence),
        "kept"
    );
    assert_eq!(
        store.lease_info("c", b"k2").unwrap().fence,
        Some(two.fence),
        "kept"
    );
}

#[test]
fn a_batch_fails_at_the_operation_whose_lease_id_is_wrong_and_writes_nothing() {
    let (store, _clock, _) = open();
    for key in [b"k1", b"k2"] {
        store
            .put("c", key, b"v1", &WriteOptions::default())
            .unwrap();
    }
    store
        .acquire_lease("c", b"k1", &request(Some(60), Some(A)))
        .unwrap();
    store
        .acquire_lease("c", b"k2", &request(Some(60), Some(B)))
        .unwrap();
    let cases: [(Option<LeaseId>, ErrorCode); 2] = [
        (Some(A), ErrorCode::LeaseIdMismatchWithBlobOperation),
        (None, ErrorCode::LeaseIdMissing),
    ];
    for (id, code) in cases {
        let mut batch = store.batch();
        batch
            .put("c", b"k1", b"v2", with_id(Some(A)))
            .put("c", b"new", b"v2", WriteOptions::default())
            .delete("c", b"k2", with_id(id));
        assert_eq!(batch_error(batch.commit()), (2, code), "{id:?}");
        assert_eq!(get(&store, b"k1").unwrap().value.unwrap(), b"v1");
        assert_eq!(get(&store, b"k2").unwrap().value.unwrap(), b"v1");
        assert_eq!(get(&store, b"new").unwrap_err().code(), ErrorCode::NotFound);
    }
    // A lease id on a missing item inside a batch.
    let mut batch = store.batch();
    batch.put("c", b"missing", b"v", with_id(Some(A)));
    assert_eq!(
        batch_error(batch.commit()),
        (0, ErrorCode::LeaseNotPresentWithBlobOperation)
    );
}

#[test]
fn a_batch_write_without_an_id_clears_an_expired_lease_and_a_batch_delete_drops_one() {
    let (store, clock, _) = open();
    for key in [b"k1", b"k2"] {
        store
            .put("c", key, b"v1", &WriteOptions::default())
            .unwrap();
    }
    store
        .acquire_lease("c", b"k1", &request(Some(15), Some(A)))
        .unwrap();
    store
        .acquire_lease("c", b"k2", &request(Some(60), Some(B)))
        .unwrap();
    clock.advance_seconds(15);
    let mut batch = store.batch();
    batch
        .put("c", b"k1", b"v2", WriteOptions::default())
        .delete("c", b"k2", with_id(Some(B)));
    batch.commit().unwrap();
    assert_eq!(
        store.lease_info("c", b"k1").unwrap().state,
        LeaseState::Available
    );
    assert_eq!(
        store.lease_info("c", b"k2").unwrap_err().code(),
        ErrorCode::NotFound
    );
}

#[test]
fn later_operations_of_a_batch_see_the_lease_as_earlier_ones_left_it() {
    let (store, _clock, _) = open();
    store
        .put("c", KEY, b"v1", &WriteOptions::default())
        .unwrap();
    store
        .acquire_lease("c", KEY, &request(Some(60), Some(A)))
        .unwrap();
    // The delete (with the id) drops the lease, so the re-create needs no id…
    let mut batch = store.batch();
    batch
        .delete("c", KEY, with_id(Some(A)))
        .put("c", KEY, b"v2", WriteOptions::default());
    batch.commit().unwrap();
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Available
    );
    // …and after a put with the id the lease is still there for the next operation.
    store
        .acquire_lease("c", KEY, &request(Some(60), Some(A)))
        .unwrap();
    let mut batch = store.batch();
    batch
        .put("c", KEY, b"v3", with_id(Some(A)))
        .put("c", KEY, b"v4", WriteOptions::default());
    assert_eq!(batch_error(batch.commit()), (1, ErrorCode::LeaseIdMissing));
    assert_eq!(get(&store, KEY).unwrap().value.unwrap(), b"v2");
}

#[test]
fn a_write_racing_a_lease_grant_never_lands_without_the_id() {
    // Writers without an id and a lease taker race; once the taker holds the lease, no
    // id-less write may land until it releases. The holder checks its own value survives.
    let (store, _clock, _) = open();
    store
        .put("c", KEY, b"start", &WriteOptions::default())
        .unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    match store.put("c", KEY, b"plain", &WriteOptions::default()) {
                        Ok(_) => {}
                        Err(error) => assert_eq!(error.code(), ErrorCode::LeaseIdMissing),
                    }
                }
            });
        }
        for round in 0..300 {
            let lease = store
                .acquire_lease("c", KEY, &request(Some(60), None))
                .unwrap();
            let mine = format!("holder {round}");
            store
                .put("c", KEY, mine.as_bytes(), &with_id(Some(lease.id)))
                .unwrap();
            std::thread::yield_now();
            assert_eq!(
                get(&store, KEY).unwrap().value.unwrap(),
                mine.as_bytes(),
                "round {round}"
            );
            store.release_lease("c", KEY, lease.id).unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
