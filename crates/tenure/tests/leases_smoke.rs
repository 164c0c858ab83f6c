//! The seed scenarios of leases and cache locks, end to end through the store.

mod common;

use std::time::Duration;

use common::store;
use tenure::{ErrorCode, LeaseRequest, LeaseState, ReadOptions, Ttl, WriteOptions};

#[test]
fn a_writer_without_the_lease_id_is_refused_then_the_holder_writes_and_releases() {
    let (store, _, _) = store();
    let etag = store
        .put("c", b"blob", b"v1", &WriteOptions::default())
        .unwrap();
    let lease = store
        .acquire_lease("c", b"blob", &LeaseRequest::seconds(15).unwrap())
        .unwrap();
    let error = store
        .put("c", b"blob", b"intruder", &WriteOptions::default())
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::LeaseIdMissing);
    assert_eq!(error.status(), 412);
    assert_eq!(error.current_etag(), Some(etag));
    let with_lease = WriteOptions {
        lease_id: Some(lease.id),
        ..WriteOptions::default()
    };
    store.put("c", b"blob", b"v2", &with_lease).unwrap();
    // A lease survives an overwrite made with its id, and lease operations keep the ETag.
    let info = store.lease_info("c", b"blob").unwrap();
    assert_eq!(
        (info.state, info.id, info.fence),
        (LeaseState::Leased, Some(lease.id), Some(lease.fence))
    );
    store.release_lease("c", b"blob", lease.id).unwrap();
    store
        .put("c", b"blob", b"v3", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store
            .get("c", b"blob", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"v3"
    );
}

#[test]
fn leases_expire_by_the_store_clock_and_fences_strictly_increase_across_reopen() {
    let (store, clock, disk) = store();
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let etag = store.get("c", b"k", &ReadOptions::default()).unwrap().etag;
    let first = store
        .acquire_lease("c", b"k", &LeaseRequest::seconds(15).unwrap())
        .unwrap();
    assert_eq!(
        store.get("c", b"k", &ReadOptions::default()).unwrap().etag,
        etag,
        "lease ops keep the ETag"
    );
    assert_eq!(
        store
            .acquire_lease("c", b"k", &LeaseRequest::seconds(15).unwrap())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseAlreadyPresent
    );
    clock.advance_seconds(15);
    assert_eq!(
        store.lease_info("c", b"k").unwrap().state,
        LeaseState::Expired
    );
    let second = store
        .acquire_lease("c", b"k", &LeaseRequest::seconds(60).unwrap())
        .unwrap();
    assert!(second.fence > first.fence);
    store.close().unwrap();
    let store =
        tenure::Store::open_with_storage(std::sync::Arc::new(disk), common::options(&clock))
            .unwrap();
    let info = store.lease_info("c", b"k").unwrap();
    assert_eq!(
        (info.state, info.id),
        (LeaseState::Leased, Some(second.id)),
        "a lease still runs after reopen"
    );
    clock.advance_seconds(60);
    let third = store
        .acquire_lease("c", b"k", &LeaseRequest::infinite())
        .unwrap();
    assert!(third.fence > second.fence);
}

#[test]
fn break_reports_time_left_and_a_broken_lease_is_cleared_by_a_write_without_id() {
    let (store, clock, _) = store();
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let lease = store
        .acquire_lease("c", b"k", &LeaseRequest::seconds(60).unwrap())
        .unwrap();
    assert_eq!(
        store.break_lease("c", b"k", Some(10)).unwrap(),
        Duration::from_secs(10)
    );
    assert_eq!(
        store.lease_info("c", b"k").unwrap().state,
        LeaseState::Breaking
    );
    assert_eq!(
        store
            .put("c", b"k", b"w", &WriteOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseIdMissing
    );
    clock.advance_seconds(10);
    let with_old_id = WriteOptions {
        lease_id: Some(lease.id),
        ..WriteOptions::default()
    };
    assert_eq!(
        store.put("c", b"k", b"w", &with_old_id).unwrap_err().code(),
        ErrorCode::LeaseLost
    );
    store
        .put("c", b"k", b"w", &WriteOptions::default())
        .unwrap();
    assert_eq!(
        store.lease_info("c", b"k").unwrap().state,
        LeaseState::Available
    );
}

#[test]
fn two_cache_clients_get_and_lock_then_put_and_unlock() {
    let (store, _, _) = store();
    store
        .put("c", b"RadioInventory", b"10", &WriteOptions::default())
        .unwrap();
    let (item, handle) = store
        .get_and_lock("c", b"RadioInventory", Duration::from_secs(30), false)
        .unwrap();
    assert_eq!(item.unwrap().value.unwrap(), b"10");
    let error = store
        .get_and_lock("c", b"RadioInventory", Duration::from_secs(30), false)
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ObjectLocked);
    assert_eq!(error.status(), 409);
    // Reads are never blocked by a lock.
    assert!(store
        .get("c", b"RadioInventory", &ReadOptions::default())
        .is_ok());
    let wrong = tenure::LockHandle(handle.0 ^ 1);
    assert_eq!(
        store
            .put_and_unlock("c", b"RadioInventory", b"8", wrong, Ttl::default())
            .unwrap_err()
            .code(),
        ErrorCode::InvalidLockHandle
    );
    store
        .put_and_unlock("c", b"RadioInventory", b"9", handle, Ttl::default())
        .unwrap();
    assert_eq!(
        store
            .unlock("c", b"RadioInventory", handle, None)
            .unwrap_err()
            .code(),
        ErrorCode::ObjectNotLocked
    );
    assert_eq!(
        store
            .get("c", b"RadioInventory", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
        b"9"
    );
}

#[test]
fn a_locked_item_never_expires_and_goes_at_unlock_unless_a_new_ttl_is_given() {
    let (store, clock, _) = store();
    let short = WriteOptions {
        ttl: Ttl::Seconds(5),
        ..WriteOptions::default()
    };
    store.put("c", b"a", b"v", &short).unwrap();
    store.put("c", b"b", b"v", &short).unwrap();
    let (_, handle_a) = store
        .get_and_lock("c", b"a", Duration::from_secs(60), false)
        .unwrap();
    let (_, handle_b) = store
        .get_and_lock("c", b"b", Duration::from_secs(60), false)
        .unwrap();
    clock.advance_seconds(30);
    assert!(
        store.get("c", b"a", &ReadOptions::default()).is_ok(),
        "locked: never expires"
    );
    let etag_b = store.get("c", b"b", &ReadOptions::default()).unwrap().etag;
    store.unlock("c", b"a", handle_a, None).unwrap();
    assert_eq!(
        store
            .get("c", b"a", &ReadOptions::default())
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    store
        .unlock("c", b"b", handle_b, Some(Ttl::Seconds(100)))
        .unwrap();
    let b = store.get("c", b"b", &ReadOptions::default()).unwrap();
    assert_eq!(b.etag, etag_b, "an unlock with a new TTL keeps the ETag");
    clock.advance_seconds(99);
    assert!(store.get("c", b"b", &ReadOptions::default()).is_ok());
}

#[test]
fn a_lease_and_a_lock_exclude_each_other() {
    let (store, _, _) = store();
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let lease = store
        .acquire_lease("c", b"k", &LeaseRequest::seconds(15).unwrap())
        .unwrap();
    assert_eq!(
        store
            .get_and_lock("c", b"k", Duration::from_secs(5), false)
            .unwrap_err()
            .code(),
        ErrorCode::ObjectLocked
    );
    store.release_lease("c", b"k", lease.id).unwrap();
    let (_, _handle) = store
        .get_and_lock("c", b"k", Duration::from_secs(5), false)
        .unwrap();
    assert_eq!(
        store
            .acquire_lease("c", b"k", &LeaseRequest::seconds(15).unwrap())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseAlreadyPresent
    );
}

#[test]
fn waiting_acquire_gets_the_lease_when_the_holder_releases() {
    let (store, _, _) = store();
    store
        .put("c", b"k", b"v", &WriteOptions::default())
        .unwrap();
    let store = std::sync::Arc::new(store);
    let held = store
        .acquire_lease("c", b"k", &LeaseRequest::seconds(60).unwrap())
        .unwrap();
    let waiter = {
        let store = std::sync::Arc::clone(&store);
        std::thread::spawn(move || {
            store.acquire_lease_wait(
                "c",
                b"k",
                &LeaseRequest::seconds(15).unwrap(),
                Duration::from_secs(30),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(20));
    store.release_lease("c", b"k", held.id).unwrap();
    let granted = waiter.join().unwrap().unwrap();
    assert!(granted.fence > held.fence);
    let timed_out = store.acquire_lease_wait(
        "c",
        b"k",
        &LeaseRequest::seconds(15).unwrap(),
        Duration::from_millis(30),
    );
    assert_eq!(
        timed_out.unwrap_err().code(),
        ErrorCode::LeaseAlreadyPresent
    );
}

#[test]
fn a_leased_container_can_only_be_deleted_with_its_lease_id() {
    let (store, _, _) = store();
    let lease = store
        .acquire_container_lease("c", &LeaseRequest::infinite())
        .unwrap();
    assert_eq!(
        store
            .delete_container("c", &Default::default())
            .unwrap_err()
            .code(),
        ErrorCode::LeaseIdMissing
    );
    let wrong = tenure::ContainerWriteOptions {
        lease_id: Some(tenure::LeaseId(lease.id.0 ^ 1)),
        ..Default::default()
    };
    assert_eq!(
        store.delete_container("c", &wrong).unwrap_err().code(),
        ErrorCode::LeaseIdMismatchWithContainerOperation
    );
    // Other container operations do not need the id.
    store
        .set_container_metadata("c", &[("a".into(), "b".into())], &Default::default())
        .unwrap();
    let right = tenure::ContainerWriteOptions {
        lease_id: Some(lease.id),
        ..Default::default()
    };
    store.delete_container("c", &right).unwrap();
}

#[test]
fn a_batch_check_can_name_the_lease_id_and_the_lock_handle() {
    let (store, _, _) = store();
    store
        .put("c", b"leased", b"v", &WriteOptions::default())
        .unwrap();
    store
        .put("c", b"locked", b"v", &WriteOptions::default())
        .unwrap();
    let lease = store
        .acquire_lease("c", b"leased", &LeaseRequest::seconds(15).unwrap())
        .unwrap();
    let (_, handle) = store
        .get_and_lock("c", b"locked", Duration::from_secs(30), false)
        .unwrap();
    let right = |lease_id, lock_handle| WriteOptions {
        lease_id,
        lock_handle,
        ..WriteOptions::default()
    };
    let mut batch = store.batch();
    batch
        .check_with("c", b"leased", right(Some(lease.id), None))
        .check_with("c", b"locked", right(None, Some(handle)))
        .put("c", b"other", b"x", WriteOptions::default());
    batch.commit().unwrap();
    let wrong_lease = tenure::LeaseId(lease.id.0 ^ 1);
    let mut refused = store.batch();
    refused.check_with("c", b"leased", right(Some(wrong_lease), None));
    let error = refused.commit().unwrap_err();
    assert_eq!(error.code(), ErrorCode::LeaseIdMismatchWithBlobOperation);
    let mut refused = store.batch();
    refused.check_with(
        "c",
        b"locked",
        right(None, Some(tenure::LockHandle(handle.0 ^ 1))),
    );
    assert_eq!(
        refused.commit().unwrap_err().code(),
        ErrorCode::InvalidLockHandle
    );
    // A check keeps the lock: the handle still unlocks afterwards.
    store.unlock("c", b"locked", handle, None).unwrap();
}
