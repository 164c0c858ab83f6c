//! docs/spec.md §5: container leases. Only delete container is guarded; other container operations
//! (set_container_metadata) accept an optional lease id that must match; an id given while
//! the lease is Expired or Broken is `LeaseLost`; container writes do not clear an Expired
//! lease; item leases never block container operations. Every cell is a named test through
//! the store. (The lease-action table for containers is in lease_actions.rs, `container::…`.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use tenure::{
    Conditions, ContainerWriteOptions, Durability, ErrorCode, LeaseDuration, LeaseId, LeaseInfo,
    LeaseRequest, LeaseState, ManualClock, ReadOptions, Store, StoreOptions, WriteOptions,
};
use tenure_testkit::SimStorage;

const A: LeaseId = LeaseId(0xaaaa_aaaa_aaaa_4aaa_8aaa_aaaa_aaaa_aaaa);
const B: LeaseId = LeaseId(0xbbbb_bbbb_bbbb_4bbb_8bbb_bbbb_bbbb_bbbb);

fn request(seconds: Option<u32>, proposed_id: Option<LeaseId>) -> LeaseRequest {
    LeaseRequest {
        duration: seconds.map_or(LeaseDuration::Infinite, |seconds| {
            LeaseDuration::fixed(seconds).unwrap()
        }),
        proposed_id,
        holder: None,
    }
}

fn with_id(id: Option<LeaseId>) -> ContainerWriteOptions {
    ContainerWriteOptions {
        lease_id: id,
        ..ContainerWriteOptions::default()
    }
}

fn options(clock: &ManualClock) -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        ..common::options(clock)
    }
}

fn open() -> (Store, ManualClock, SimStorage) {
    let clock = ManualClock::new(common::START_MICROS);
    let disk = SimStorage::new();
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock)).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    store
        .put("c", b"item", b"v", &WriteOptions::default())
        .unwrap();
    (store, clock, disk)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Available,
    Leased,
    Breaking,
    Broken,
    Expired,
}

/// Container "c" (holding "item") with lease A driven into `start`, as in lease_actions.rs.
fn enter(start: Start) -> (Store, ManualClock) {
    let (store, clock, _) = open();
    let seconds = if start == Start::Expired { 15 } else { 60 };
    store
        .acquire_container_lease("c", &request(Some(seconds), Some(A)))
        .unwrap();
    clock.advance_seconds(5);
    let state = match start {
        Start::Available => {
            store.release_container_lease("c", A).unwrap();
            LeaseState::Available
        }
        Start::Leased => LeaseState::Leased,
        Start::Breaking => {
            store.break_container_lease("c", Some(10)).unwrap();
            clock.advance_seconds(2);
            LeaseState::Breaking
        }
        Start::Broken => {
            store.break_container_lease("c", Some(0)).unwrap();
            LeaseState::Broken
        }
        Start::Expired => {
            clock.advance_seconds(15);
            LeaseState::Expired
        }
    };
    assert_eq!(
        store.container_lease_info("c").unwrap().state,
        state,
        "setup of {start:?}"
    );
    (store, clock)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Delete,
    SetMetadata,
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Refused(ErrorCode),
    Succeeds,
}

use Outcome::{Refused, Succeeds};

fn check(operation: Operation, id: Option<LeaseId>, start: Start, outcome: Outcome) {
    let name = match id {
        Some(A) => "A",
        Some(B) => "B",
        _ => "no id",
    };
    let cell = format!("cell container {operation:?} with {name} on {start:?}");
    let (store, _clock) = enter(start);
    let before = store.container_properties("c").unwrap();
    let lease_before = store.container_lease_info("c").unwrap();
    let metadata = vec![("owner".to_string(), "me".to_string())];
    let result = match operation {
        Operation::Delete => store.delete_container("c", &with_id(id)).map(drop),
        Operation::SetMetadata => store
            .set_container_metadata("c", &metadata, &with_id(id))
            .map(drop),
    };
    match outcome {
        Refused(code) => {
            let error = match result {
                Ok(()) => panic!("{cell}: expected {code:?}, it succeeded"),
                Err(error) => error,
            };
            assert_eq!(error.code(), code, "{cell}: code");
            assert_eq!(error.status(), 412, "{cell}: status");
            assert_eq!(
                store.container_properties("c").unwrap(),
                before,
                "{cell}: the container is unchanged"
            );
            assert_eq!(
                store.container_lease_info("c").unwrap(),
                lease_before,
                "{cell}: the lease is unchanged"
            );
            assert!(
                store.get("c", b"item", &ReadOptions::default()).is_ok(),
                "{cell}: its items are still there"
            );
        }
        Succeeds => {
            result.unwrap_or_else(|error| panic!("{cell}: expected success: {error:?}"));
            match operation {
                Operation::Delete => {
                    assert_eq!(
                        store.container_properties("c").unwrap_err().code(),
                        ErrorCode::ContainerNotFound,
                        "{cell}"
                    );
                    // A container created again under the name starts Available and empty.
                    store.create_container("c", &Default::default()).unwrap();
                    assert_eq!(
                        store.container_lease_info("c").unwrap().state,
                        LeaseState::Available,
                        "{cell}: a re-created container starts Available"
                    );
                    assert_eq!(
                        store
                            .get("c", b"item", &ReadOptions::default())
                            .unwrap_err()
                            .code(),
                        ErrorCode::NotFound,
                        "{cell}"
                    );
                }
                Operation::SetMetadata => {
                    let after = store.container_properties("c").unwrap();
                    assert_eq!(after.metadata, metadata, "{cell}");
                    assert_ne!(after.etag, before.etag, "{cell}: a write takes a new ETag");
                    assert_eq!(
                        store.container_lease_info("c").unwrap(),
                        lease_before,
                        "{cell}: a container write neither clears nor changes the lease"
                    );
                }
            }
        }
    }
}

macro_rules! container_rows {
    ($($module:ident: $operation:ident, without id on leased => $leased_without_id:expr;)*) => {
        $(
            mod $module {
                use super::*;
                const OPERATION: Operation = Operation::$operation;

                #[test] fn with_a_on_available() { check(OPERATION, Some(A), Start::Available, Refused(ErrorCode::LeaseNotPresentWithContainerOperation)); }
                #[test] fn with_a_on_leased() { check(OPERATION, Some(A), Start::Leased, Succeeds); }
                #[test] fn with_a_on_breaking() { check(OPERATION, Some(A), Start::Breaking, Succeeds); }
                #[test] fn with_a_on_broken() { check(OPERATION, Some(A), Start::Broken, Refused(ErrorCode::LeaseLost)); }
                #[test] fn with_a_on_expired() { check(OPERATION, Some(A), Start::Expired, Refused(ErrorCode::LeaseLost)); }

                #[test] fn with_b_on_available() { check(OPERATION, Some(B), Start::Available, Refused(ErrorCode::LeaseNotPresentWithContainerOperation)); }
                #[test] fn with_b_on_leased() { check(OPERATION, Some(B), Start::Leased, Refused(ErrorCode::LeaseIdMismatchWithContainerOperation)); }
                #[test] fn with_b_on_breaking() { check(OPERATION, Some(B), Start::Breaking, Refused(ErrorCode::LeaseIdMismatchWithContainerOperation)); }
                #[test] fn with_b_on_broken() { check(OPERATION, Some(B), Start::Broken, Refused(ErrorCode::LeaseLost)); }
                #[test] fn with_b_on_expired() { check(OPERATION, Some(B), Start::Expired, Refused(ErrorCode::LeaseLost)); }

                #[test] fn without_id_on_available() { check(OPERATION, None, Start::Available, Succeeds); }
                #[test] fn without_id_on_leased() { check(OPERATION, None, Start::Leased, $leased_without_id); }
                #[test] fn without_id_on_breaking() { check(OPERATION, None, Start::Breaking, $leased_without_id); }
                #[test] fn without_id_on_broken() { check(OPERATION, None, Start::Broken, Succeeds); }
                #[test] fn without_id_on_expired() { check(OPERATION, None, Start::Expired, Succeeds); }
            }
        )*
    };
}

container_rows! {
    // Only delete container is guarded.
    delete_container: Delete, without id on leased => Refused(ErrorCode::LeaseIdMissing);
    set_container_metadata: SetMetadata, without id on leased => Succeeds;
}

// ----- side rules -----

#[test]
fn container_writes_do_not_clear_an_expired_or_broken_lease() {
    for start in [Start::Expired, Start::Broken] {
        let (store, _clock) = enter(start);
        let lease = store.container_lease_info("c").unwrap();
        store
            .set_container_metadata("c", &[("a".into(), "1".into())], &Default::default())
            .unwrap();
        store
            .set_container_metadata("c", &[("a".into(), "2".into())], &Default::default())
            .unwrap();
        assert_eq!(store.container_lease_info("c").unwrap(), lease, "{start:?}");
        // Still not cleared: an id is still LeaseLost, not LeaseNotPresent…
        assert_eq!(
            store
                .set_container_metadata("c", &[], &with_id(Some(A)))
                .unwrap_err()
                .code(),
            ErrorCode::LeaseLost,
            "{start:?}"
        );
        // …and the holder can release it.
        store.release_container_lease("c", A).unwrap();
        assert_eq!(
            store.container_lease_info("c").unwrap().state,
            LeaseState::Available
        );
    }
}

#[test]
fn item_leases_inside_a_container_never_block_container_operations() {
    let (store, _clock, _) = open();
    store
        .put("c", b"breaking", b"v", &WriteOptions::default())
        .unwrap();
    store
        .acquire_lease("c", b"item", &request(None, Some(A)))
        .unwrap();
    store
        .acquire_lease("c", b"breaking", &request(Some(60), Some(B)))
        .unwrap();
    store.break_lease("c", b"breaking", Some(30)).unwrap();
    store
        .set_container_metadata("c", &[("a".into(), "1".into())], &Default::default())
        .unwrap();
    // An item lease id means nothing to the container.
    assert_eq!(
        store
            .set_container_metadata("c", &[], &with_id(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseNotPresentWithContainerOperation
    );
    store.delete_container("c", &Default::default()).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    assert_eq!(
        store.lease_info("c", b"item").unwrap_err().code(),
        ErrorCode::NotFound,
        "the item and its lease went with the container"
    );
    store
        .put("c", b"item", b"v", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store.lease_info("c", b"item").unwrap().state,
        LeaseState::Available
    );
}

#[test]
fn cache_locks_inside_a_container_never_block_container_operations() {
    let (store, _clock, _) = open();
    store
        .get_and_lock("c", b"item", Duration::from_secs(30), false)
        .unwrap();
    store
        .get_and_lock("c", b"absent", Duration::from_secs(30), true)
        .unwrap();
    store
        .set_container_metadata("c", &[("a".into(), "1".into())], &Default::default())
        .unwrap();
    store.delete_container("c", &Default::default()).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    store
        .get_and_lock("c", b"absent", Duration::from_secs(30), true)
        .expect("the lock went with the container");
}

#[test]
fn a_container_lease_never_blocks_item_operations() {
    let (store, _clock, _) = open();
    store
        .acquire_container_lease("c", &request(None, Some(A)))
        .unwrap();
    store
        .put("c", b"item", b"v2", &WriteOptions::default())
        .unwrap();
    store
        .put("c", b"new", b"v", &WriteOptions::default())
        .unwrap();
    store.delete("c", b"new", &WriteOptions::default()).unwrap();
    store
        .acquire_lease("c", b"item", &request(Some(15), Some(B)))
        .unwrap();
    // The container's lease id is not the item's.
    assert_eq!(
        store
            .put(
                "c",
                b"item",
                b"v3",
                &WriteOptions {
                    lease_id: Some(A),
                    ..WriteOptions::default()
                }
            )
            .unwrap_err()
            .code(),
        ErrorCode::LeaseIdMismatchWithBlobOperation
    );
}

#[test]
fn the_lease_check_of_a_container_write_comes_before_its_conditions() {
    let (store, _clock) = enter(Start::Leased);
    let etag = store.container_properties("c").unwrap().etag;
    let stale = Conditions::if_match(tenure::ETag(etag.version() - 1));
    let error = store
        .delete_container(
            "c",
            &ContainerWriteOptions {
                conditions: stale.clone(),
                lease_id: None,
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::LeaseIdMissing);
    let error = store
        .delete_container(
            "c",
            &ContainerWriteOptions {
                conditions: stale,
                lease_id: Some(A),
            },
        )
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ConditionNotMet);
    store
        .delete_container(
            "c",
            &ContainerWriteOptions {
                conditions: Conditions::if_match(etag),
                lease_id: Some(A),
            },
        )
        .unwrap();
}

#[test]
fn a_breaking_container_lease_guards_delete_until_it_is_broken_by_time() {
    let (store, clock) = enter(Start::Breaking);
    assert_eq!(
        store
            .delete_container("c", &Default::default())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseIdMissing
    );
    clock.advance_seconds(8);
    assert_eq!(
        store.container_lease_info("c").unwrap().state,
        LeaseState::Broken
    );
    store.delete_container("c", &Default::default()).unwrap();
}

#[test]
fn container_lease_actions_on_a_missing_container_are_container_not_found() {
    let (store, _clock, _) = open();
    let missing = |code: tenure::Result<()>| code.unwrap_err().code();
    assert_eq!(
        missing(
            store
                .acquire_container_lease("nope", &request(Some(15), None))
                .map(drop)
        ),
        ErrorCode::ContainerNotFound
    );
    assert_eq!(
        missing(store.renew_container_lease("nope", A).map(drop)),
        ErrorCode::ContainerNotFound
    );
    assert_eq!(
        missing(store.change_container_lease("nope", A, B).map(drop)),
        ErrorCode::ContainerNotFound
    );
    assert_eq!(
        missing(store.release_container_lease("nope", A)),
        ErrorCode::ContainerNotFound
    );
    assert_eq!(
        missing(store.break_container_lease("nope", None).map(drop)),
        ErrorCode::ContainerNotFound
    );
    assert_eq!(
        missing(store.container_lease_info("nope").map(drop)),
        ErrorCode::ContainerNotFound
    );
    // A deleted container's lease is gone with it.
    store
        .acquire_container_lease("c", &request(None, Some(A)))
        .unwrap();
    store.delete_container("c", &with_id(Some(A))).unwrap();
    assert_eq!(
        missing(store.release_container_lease("c", A)),
        ErrorCode::ContainerNotFound
    );
}

#[test]
fn a_re_created_container_starts_available_and_its_next_grant_takes_a_higher_fence() {
    let (store, _clock, _) = open();
    let old = store
        .acquire_container_lease("c", &request(None, Some(A)))
        .unwrap();
    store.delete_container("c", &with_id(Some(A))).unwrap();
    store.create_container("c", &Default::default()).unwrap();
    assert_eq!(
        store.container_lease_info("c").unwrap(),
        LeaseInfo {
            state: LeaseState::Available,
            id: None,
            fence: None,
            remaining_micros: None,
            holder: None,
        }
    );
    assert_eq!(
        store
            .delete_container("c", &with_id(Some(A)))
            .unwrap_err()
            .code(),
        ErrorCode::LeaseNotPresentWithContainerOperation
    );
    let new = store
        .acquire_container_lease("c", &request(None, Some(A)))
        .unwrap();
    assert!(new.fence > old.fence);
}

#[test]
fn a_container_lease_still_guards_delete_after_reopen() {
    let (store, clock, disk) = open();
    let lease = store
        .acquire_container_lease("c", &request(Some(60), None))
        .unwrap();
    store.close().unwrap();
    let store = Store::open_with_storage(Arc::new(disk.clone()), options(&clock)).unwrap();
    assert_eq!(
        store
            .delete_container("c", &Default::default())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseIdMissing
    );
    assert_eq!(
        store.container_lease_info("c").unwrap().fence,
        Some(lease.fence)
    );
    store
        .delete_container("c", &with_id(Some(lease.id)))
        .unwrap();
    store.close().unwrap();
    let store = Store::open_with_storage(Arc::new(disk), options(&clock)).unwrap();
    assert_eq!(
        store.container_lease_info("c").unwrap_err().code(),
        ErrorCode::ContainerNotFound
    );
}
