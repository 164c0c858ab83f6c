//! docs/spec.md §6: cache locks (AppFabric `DataCache`), every cell of the table end to end through the
//! store, plus the lock timeout, force-locking an absent key, "a locked item never expires",
//! at most one of {live lease, lock} per key, bad arguments, batches with lock handles, and
//! locks across reopen and crash.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tenure::{
    Durability, Error, ErrorCode, Item, LeaseDuration, LeaseId, LeaseRequest, LeaseState,
    LockHandle, ManualClock, ReadOptions, Store, StoreOptions, Ttl, WriteOptions,
    MICROS_PER_SECOND,
};
use tenure_testkit::{CrashPolicy, SimStorage};

const KEY: &[u8] = b"RadioInventory";
const LOCK: Duration = Duration::from_secs(30);

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
    (store, clock, disk)
}

fn get(store: &Store, key: &[u8]) -> tenure::Result<Item> {
    store.get("c", key, &ReadOptions::default())
}

fn code<T: std::fmt::Debug>(result: tenure::Result<T>) -> ErrorCode {
    result.unwrap_err().code()
}

fn is_locked(store: &Store, key: &[u8]) -> bool {
    match store.get_and_lock("c", key, LOCK, true) {
        Ok((_, handle)) => {
            store.unlock("c", key, handle, None).unwrap();
            false
        }
        Err(error) => {
            assert_eq!(error.code(), ErrorCode::ObjectLocked);
            true
        }
    }
}

/// The columns of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    KeyMissing,
    PresentUnlocked,
    LockedRightHandle,
    LockedByAnother,
}

/// The key in the column's state, and the handle the call passes: the lock's own handle
/// (LockedRightHandle), a real handle of another key's lock (LockedByAnother), or one that
/// names no lock (KeyMissing, PresentUnlocked).
struct Setup {
    store: Store,
    clock: ManualClock,
    handle: LockHandle,
    /// The lock's real handle, when the key is locked.
    owner: Option<LockHandle>,
    before: Option<Item>,
}

fn setup(column: Column) -> Setup {
    let (store, clock, _) = open();
    store
        .put("c", b"elsewhere", b"x", &WriteOptions::default())
        .unwrap();
    let (_, elsewhere) = store
        .get_and_lock("c", b"elsewhere", Duration::from_secs(300), false)
        .unwrap();
    let mut owner = None;
    let handle = match column {
        Column::KeyMissing => elsewhere,
        Column::PresentUnlocked => {
            store
                .put("c", KEY, b"10", &WriteOptions::default())
                .unwrap();
            elsewhere
        }
        Column::LockedRightHandle | Column::LockedByAnother => {
            store
                .put("c", KEY, b"10", &WriteOptions::default())
                .unwrap();
            let (_, handle) = store.get_and_lock("c", KEY, LOCK, false).unwrap();
            owner = Some(handle);
            if column == Column::LockedRightHandle {
                handle
            } else {
                elsewhere
            }
        }
    };
    clock.advance_seconds(1);
    let before = get(&store, KEY).ok();
    Setup {
        store,
        clock,
        handle,
        owner,
        before,
    }
}

fn refused<T: std::fmt::Debug>(
    cell: &str,
    result: tenure::Result<T>,
    code: ErrorCode,
    status: u16,
) {
    let error = match result {
        Ok(value) => panic!("{cell}: expected {code:?}, got {value:?}"),
        Err(error) => error,
    };
    assert_eq!(error.code(), code, "{cell}: code");
    assert_eq!(error.status(), status, "{cell}: status");
}

/// Nothing changed: same item, and the key still locked by its owner (who can still unlock).
fn unchanged(cell: &str, s: &Setup) {
    assert_eq!(
        get(&s.store, KEY).ok(),
        s.before,
        "{cell}: the item is unchanged"
    );
    if let Some(owner) = s.owner {
        assert!(is_locked(&s.store, KEY), "{cell}: still locked");
        s.store
            .unlock("c", KEY, owner, None)
            .unwrap_or_else(|error| panic!("{cell}: the owner lost the lock: {error:?}"));
    } else {
        assert!(!is_locked(&s.store, KEY), "{cell}: not locked");
    }
}

/// The key is not locked any more: a lock can be taken and the old handle names nothing.
fn unlocked(cell: &str, s: &Setup) {
    if let Some(owner) = s.owner {
        let error = s.store.unlock("c", KEY, owner, None).unwrap_err();
        assert!(
            matches!(
                error.code(),
                ErrorCode::ObjectNotLocked | ErrorCode::NotFound
            ),
            "{cell}: the old handle still names a lock: {error:?}"
        );
    }
    assert!(!is_locked(&s.store, KEY), "{cell}: the key is unlocked");
}

#[derive(Debug, Clone, Copy)]
enum Row {
    GetAndLock,
    GetAndLockForce,
    PutAndUnlock,
    Unlock,
    DeleteWithHandle,
    Get,
    PlainPut,
}

fn check(row: Row, column: Column) {
    use Column::*;
    let cell = format!("cell {row:?} on {column:?}");
    let cell = cell.as_str();
    let s = setup(column);
    let store = &s.store;
    match row {
        Row::GetAndLock | Row::GetAndLockForce => {
            let force = matches!(row, Row::GetAndLockForce);
            let result = store.get_and_lock("c", KEY, LOCK, force);
            match (column, force) {
                (KeyMissing, false) => {
                    refused(cell, result, ErrorCode::NotFound, 404);
                    unchanged(cell, &s);
                }
                (KeyMissing, true) => {
                    let (item, handle) = result.unwrap();
                    assert_eq!(item, None, "{cell}: no item");
                    assert!(is_locked(store, KEY), "{cell}: the absent key is locked");
                    assert_eq!(code(get(store, KEY)), ErrorCode::NotFound, "{cell}");
                    store.unlock("c", KEY, handle, None).unwrap();
                }
                (PresentUnlocked, _) => {
                    let (item, handle) = result.unwrap();
                    assert_eq!(item, s.before, "{cell}: the item comes back");
                    assert_ne!(handle, s.handle, "{cell}: a new handle");
                    assert!(is_locked(store, KEY), "{cell}");
                    // Locked until now + lock_timeout.
                    s.clock.advance_micros(LOCK.as_micros() as u64 - 1);
                    assert!(is_locked(store, KEY), "{cell}: before the timeout");
                    s.clock.advance_micros(1);
                    assert!(!is_locked(store, KEY), "{cell}: at the timeout");
                    assert_eq!(
                        get(store, KEY).ok(),
                        s.before,
                        "{cell}: a lock keeps the ETag"
                    );
                }
                (LockedRightHandle | LockedByAnother, _) => {
                    refused(cell, result, ErrorCode::ObjectLocked, 409);
                    unchanged(cell, &s);
                }
            }
        }
        Row::PutAndUnlock => {
            let result = store.put_and_unlock("c", KEY, b"9", s.handle, Ttl::default());
            match column {
                KeyMissing => {
                    refused(cell, result, ErrorCode::NotFound, 404);
                    unchanged(cell, &s);
                }
                PresentUnlocked => {
                    refused(cell, result, ErrorCode::ObjectNotLocked, 412);
                    unchanged(cell, &s);
                }
                LockedRightHandle => {
                    let etag = result.unwrap();
                    let item = get(store, KEY).unwrap();
                    assert_eq!(
                        (item.value.unwrap(), item.etag),
                        (b"9".to_vec(), etag),
                        "{cell}"
                    );
                    assert_ne!(etag, s.before.as_ref().unwrap().etag, "{cell}: a new ETag");
                    unlocked(cell, &s);
                }
                LockedByAnother => {
                    refused(cell, result, ErrorCode::InvalidLockHandle, 412);
                    unchanged(cell, &s);
                }
            }
        }
        Row::Unlock => {
            let result = store.unlock("c", KEY, s.handle, None);
            match column {
                KeyMissing => {
                    refused(cell, result, ErrorCode::NotFound, 404);
                    unchanged(cell, &s);
                }
                PresentUnlocked => {
                    refused(cell, result, ErrorCode::ObjectNotLocked, 412);
                    unchanged(cell, &s);
                }
                LockedRightHandle => {
                    result.unwrap();
                    assert_eq!(
                        get(store, KEY).ok(),
                        s.before,
                        "{cell}: unlock keeps the item and ETag"
                    );
                    unlocked(cell, &s);
                }
                LockedByAnother => {
                    refused(cell, result, ErrorCode::InvalidLockHandle, 412);
                    unchanged(cell, &s);
                }
            }
        }
        Row::DeleteWithHandle => {
            let options = WriteOptions {
                lock_handle: Some(s.handle),
                ..WriteOptions::default()
            };
            let result = store.delete("c", KEY, &options);
            match column {
                KeyMissing => {
                    refused(cell, result, ErrorCode::NotFound, 404);
                    unchanged(cell, &s);
                }
                PresentUnlocked => {
                    refused(cell, result, ErrorCode::ObjectNotLocked, 412);
                    unchanged(cell, &s);
                }
                LockedRightHandle => {
                    result.unwrap();
                    assert_eq!(
                        code(get(store, KEY)),
                        ErrorCode::NotFound,
                        "{cell}: deleted"
                    );
                    unlocked(cell, &s);
                }
                LockedByAnother => {
                    refused(cell, result, ErrorCode::InvalidLockHandle, 412);
                    unchanged(cell, &s);
                }
            }
        }
        Row::Get => {
            let result = get(store, KEY);
            match column {
                KeyMissing => refused(cell, result, ErrorCode::NotFound, 404),
                _ => assert_eq!(result.ok(), s.before, "{cell}: never blocked"),
            }
            unchanged(cell, &s);
        }
        Row::PlainPut => {
            let etag = store
                .put("c", KEY, b"11", &WriteOptions::default())
                .unwrap_or_else(|error| panic!("{cell}: a plain put always succeeds: {error:?}"));
            let item = get(store, KEY).unwrap();
            assert_eq!(
                (item.value.unwrap(), item.etag),
                (b"11".to_vec(), etag),
                "{cell}"
            );
            unlocked(cell, &s);
        }
    }
    // The other key's lock, whose handle some cells borrowed, is untouched.
    assert!(is_locked(store, b"elsewhere"), "{cell}: another key's lock");
}

macro_rules! lock_table {
    ($($name:ident: $row:ident on $column:ident;)*) => {
        $(
            #[test]
            fn $name() {
                check(Row::$row, Column::$column);
            }
        )*
    };
}

mod table {
    use super::*;

    lock_table! {
        get_and_lock_on_missing_key: GetAndLock on KeyMissing;
        get_and_lock_on_present_unlocked: GetAndLock on PresentUnlocked;
        get_and_lock_on_locked_right_handle: GetAndLock on LockedRightHandle;
        get_and_lock_on_locked_by_another: GetAndLock on LockedByAnother;
        get_and_lock_force_on_missing_key: GetAndLockForce on KeyMissing;
        get_and_lock_force_on_present_unlocked: GetAndLockForce on PresentUnlocked;
        get_and_lock_force_on_locked_right_handle: GetAndLockForce on LockedRightHandle;
        get_and_lock_force_on_locked_by_another: GetAndLockForce on LockedByAnother;
        put_and_unlock_on_missing_key: PutAndUnlock on KeyMissing;
        put_and_unlock_on_present_unlocked: PutAndUnlock on PresentUnlocked;
        put_and_unlock_on_locked_right_handle: PutAndUnlock on LockedRightHandle;
        put_and_unlock_on_locked_by_another: PutAndUnlock on LockedByAnother;
        unlock_on_missing_key: Unlock on KeyMissing;
        unlock_on_present_unlocked: Unlock on PresentUnlocked;
        unlock_on_locked_right_handle: Unlock on LockedRightHandle;
        unlock_on_locked_by_another: Unlock on LockedByAnother;
        delete_with_handle_on_missing_key: DeleteWithHandle on KeyMissing;
        delete_with_handle_on_present_unlocked: DeleteWithHandle on PresentUnlocked;
        delete_with_handle_on_locked_right_handle: DeleteWithHandle on LockedRightHandle;
        delete_with_handle_on_locked_by_another: DeleteWithHandle on LockedByAnother;
        get_on_missing_key: Get on KeyMissing;
        get_on_present_unlocked: Get on PresentUnlocked;
        get_on_locked_right_handle: Get on LockedRightHandle;
        get_on_locked_by_another: Get on LockedByAnother;
        plain_put_on_missing_key: PlainPut on KeyMissing;
        plain_put_on_present_unlocked: PlainPut on PresentUnlocked;
        plain_put_on_locked_right_handle: PlainPut on LockedRightHandle;
        plain_put_on_locked_by_another: PlainPut on LockedByAnother;
    }
}

// ----- lock timeout -----

#[test]
fn a_lock_ends_by_itself_at_its_timeout() {
    let (store, clock, _) = open();
    store
        .put("c", KEY, b"10", &WriteOptions::default())
        .unwrap();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(5), false)
        .unwrap();
    clock.advance_micros(5 * MICROS_PER_SECOND - 1);
    assert_eq!(
        code(store.get_and_lock("c", KEY, LOCK, false)),
        ErrorCode::ObjectLocked
    );
    clock.advance_micros(1);
    // The handle names no lock any more; nothing changes.
    assert_eq!(
        code(store.put_and_unlock("c", KEY, b"late", handle, Ttl::default())),
        ErrorCode::ObjectNotLocked
    );
    assert_eq!(
        code(store.unlock("c", KEY, handle, None)),
        ErrorCode::ObjectNotLocked
    );
    assert_eq!(get(&store, KEY).unwrap().value.unwrap(), b"10");
    let (_, next) = store.get_and_lock("c", KEY, LOCK, false).unwrap();
    assert_ne!(next, handle);
}

#[test]
fn a_lock_of_an_absent_key_that_times_out_leaves_the_key_missing() {
    let (store, clock, _) = open();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(5), true)
        .unwrap();
    clock.advance_seconds(5);
    assert_eq!(
        code(store.put_and_unlock("c", KEY, b"v", handle, Ttl::default())),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(store.unlock("c", KEY, handle, None)),
        ErrorCode::NotFound
    );
    assert_eq!(code(get(&store, KEY)), ErrorCode::NotFound);
}

// ----- force-locking an absent key -----

#[test]
fn force_lock_of_an_absent_key_then_put_and_unlock_creates_the_item() {
    let (store, _clock, _) = open();
    let (item, handle) = store.get_and_lock("c", KEY, LOCK, true).unwrap();
    assert!(item.is_none());
    // The key is still missing for reads and for a plain get_and_lock; a forced one is locked.
    assert_eq!(code(get(&store, KEY)), ErrorCode::NotFound);
    assert_eq!(
        code(store.get_and_lock("c", KEY, LOCK, false)),
        ErrorCode::NotFound
    );
    assert_eq!(
        code(store.get_and_lock("c", KEY, LOCK, true)),
        ErrorCode::ObjectLocked
    );
    assert_eq!(
        store.list("c", b"", 10, None, false).unwrap().items.len(),
        0
    );
    // Another handle cannot create it.
    assert_eq!(
        code(store.put_and_unlock("c", KEY, b"x", LockHandle(handle.0 ^ 1), Ttl::default())),
        ErrorCode::InvalidLockHandle
    );
    let etag = store
        .put_and_unlock("c", KEY, b"created", handle, Ttl::default())
        .unwrap();
    let item = get(&store, KEY).unwrap();
    assert_eq!(
        (item.value.unwrap(), item.etag),
        (b"created".to_vec(), etag)
    );
    assert!(!is_locked(&store, KEY));
}

#[test]
fn unlock_of_a_key_force_locked_while_absent_simply_releases_the_lock() {
    let (store, _clock, _) = open();
    let (_, handle) = store.get_and_lock("c", KEY, LOCK, true).unwrap();
    store.unlock("c", KEY, handle, None).unwrap();
    assert_eq!(code(get(&store, KEY)), ErrorCode::NotFound);
    assert_eq!(
        code(store.unlock("c", KEY, handle, None)),
        ErrorCode::NotFound
    );
    store
        .get_and_lock("c", KEY, LOCK, true)
        .expect("the key can be locked again");
}

#[test]
fn a_plain_put_on_a_key_force_locked_while_absent_creates_it_and_releases_the_lock() {
    let (store, _clock, _) = open();
    let (_, handle) = store.get_and_lock("c", KEY, LOCK, true).unwrap();
    store
        .put("c", KEY, b"plain", &WriteOptions::default())
        .unwrap();
    assert_eq!(get(&store, KEY).unwrap().value.unwrap(), b"plain");
    assert_eq!(
        code(store.unlock("c", KEY, handle, None)),
        ErrorCode::ObjectNotLocked
    );
    assert!(!is_locked(&store, KEY));
}

// ----- a locked item never expires -----

fn with_ttl(seconds: u32) -> WriteOptions {
    WriteOptions {
        ttl: Ttl::Seconds(seconds),
        ..WriteOptions::default()
    }
}

#[test]
fn a_locked_item_never_expires_and_is_removed_at_unlock_when_past_its_expiry() {
    let (store, clock, _) = open();
    store.put("c", KEY, b"v", &with_ttl(5)).unwrap();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(60), false)
        .unwrap();
    clock.advance_seconds(30);
    assert!(get(&store, KEY).is_ok(), "locked: not expired");
    assert_eq!(
        store.list("c", b"", 10, None, false).unwrap().items.len(),
        1,
        "listed too"
    );
    store.unlock("c", KEY, handle, None).unwrap();
    assert_eq!(
        code(get(&store, KEY)),
        ErrorCode::NotFound,
        "removed at once"
    );
    assert_eq!(
        store.list("c", b"", 10, None, false).unwrap().items.len(),
        0
    );
    assert_eq!(
        code(store.get_and_lock("c", KEY, LOCK, false)),
        ErrorCode::NotFound
    );
}

#[test]
fn an_unlock_with_a_new_ttl_resets_the_expiry_and_keeps_the_etag() {
    let (store, clock, _) = open();
    let etag = store.put("c", KEY, b"v", &with_ttl(5)).unwrap();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(60), false)
        .unwrap();
    clock.advance_seconds(30);
    store
        .unlock("c", KEY, handle, Some(Ttl::Seconds(100)))
        .unwrap();
    let item = get(&store, KEY).unwrap();
    assert_eq!(item.etag, etag, "an unlock with a new TTL keeps the ETag");
    assert_eq!(
        item.expires_at,
        Some(tenure::Clock::now(&clock) + 100 * MICROS_PER_SECOND)
    );
    clock.advance_micros(100 * MICROS_PER_SECOND - 1);
    assert!(get(&store, KEY).is_ok());
    clock.advance_micros(1);
    assert_eq!(code(get(&store, KEY)), ErrorCode::NotFound);
}

#[test]
fn an_unlock_before_the_expiry_keeps_the_original_expiry() {
    let (store, clock, _) = open();
    store.put("c", KEY, b"v", &with_ttl(20)).unwrap();
    let expires_at = get(&store, KEY).unwrap().expires_at;
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(60), false)
        .unwrap();
    clock.advance_seconds(5);
    store.unlock("c", KEY, handle, None).unwrap();
    assert_eq!(get(&store, KEY).unwrap().expires_at, expires_at);
    clock.advance_seconds(15);
    assert_eq!(code(get(&store, KEY)), ErrorCode::NotFound);
}

#[test]
fn a_lock_that_times_out_past_the_expiry_takes_the_item_at_once() {
    let (store, clock, _) = open();
    store.put("c", KEY, b"v", &with_ttl(5)).unwrap();
    store
        .get_and_lock("c", KEY, Duration::from_secs(20), false)
        .unwrap();
    clock.advance_micros(20 * MICROS_PER_SECOND - 1);
    assert!(get(&store, KEY).is_ok(), "still locked");
    clock.advance_micros(1);
    assert_eq!(
        code(get(&store, KEY)),
        ErrorCode::NotFound,
        "gone when the lock ends"
    );
}

#[test]
fn put_and_unlock_sets_the_expiry_from_its_ttl() {
    let (store, clock, _) = open();
    store.put("c", KEY, b"v", &with_ttl(5)).unwrap();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(60), false)
        .unwrap();
    clock.advance_seconds(30);
    store
        .put_and_unlock("c", KEY, b"w", handle, Ttl::Seconds(10))
        .unwrap();
    clock.advance_seconds(9);
    assert_eq!(get(&store, KEY).unwrap().value.unwrap(), b"w");
    clock.advance_seconds(1);
    assert_eq!(code(get(&store, KEY)), ErrorCode::NotFound);
}

#[test]
fn an_expired_item_cannot_be_locked_without_force() {
    let (store, clock, _) = open();
    store.put("c", KEY, b"v", &with_ttl(5)).unwrap();
    clock.advance_seconds(5);
    assert_eq!(
        code(store.get_and_lock("c", KEY, LOCK, false)),
        ErrorCode::NotFound
    );
    let (item, _) = store.get_and_lock("c", KEY, LOCK, true).unwrap();
    assert_eq!(item, None, "an expired item is absent");
}

// ----- at most one of {live lease, lock} -----

fn lease(seconds: Option<u32>, id: Option<LeaseId>) -> LeaseRequest {
    LeaseRequest {
        duration: seconds.map_or(LeaseDuration::Infinite, |seconds| {
            LeaseDuration::fixed(seconds).unwrap()
        }),
        proposed_id: id,
        holder: None,
    }
}

#[test]
fn get_and_lock_on_a_leased_or_breaking_item_is_object_locked() {
    for breaking in [false, true] {
        for force in [false, true] {
            let (store, _clock, _) = open();
            store.put("c", KEY, b"v", &WriteOptions::default()).unwrap();
            let granted = store
                .acquire_lease("c", KEY, &lease(Some(60), None))
                .unwrap();
            if breaking {
                store.break_lease("c", KEY, Some(10)).unwrap();
            }
            let what = format!("breaking={breaking} force={force}");
            let error = store.get_and_lock("c", KEY, LOCK, force).unwrap_err();
            assert_eq!(
                (error.code(), error.status()),
                (ErrorCode::ObjectLocked, 409),
                "{what}"
            );
            let info = store.lease_info("c", KEY).unwrap();
            assert_eq!(
                (info.id, info.fence),
                (Some(granted.id), Some(granted.fence)),
                "{what}"
            );
        }
    }
}

#[test]
fn an_expired_or_broken_lease_is_cleared_by_the_lock() {
    for broken in [false, true] {
        let (store, clock, _) = open();
        store.put("c", KEY, b"v", &WriteOptions::default()).unwrap();
        let granted = store
            .acquire_lease("c", KEY, &lease(Some(15), None))
            .unwrap();
        if broken {
            store.break_lease("c", KEY, Some(0)).unwrap();
        } else {
            clock.advance_seconds(15);
        }
        let (item, handle) = store.get_and_lock("c", KEY, LOCK, false).unwrap();
        assert!(item.is_some());
        assert_eq!(
            store.lease_info("c", KEY).unwrap().state,
            LeaseState::Available,
            "broken={broken}: the lease is cleared"
        );
        assert_eq!(
            code(store.renew_lease("c", KEY, granted.id)),
            ErrorCode::LeaseIdMismatchWithLeaseOperation
        );
        store.unlock("c", KEY, handle, None).unwrap();
        let next = store
            .acquire_lease("c", KEY, &lease(Some(15), None))
            .unwrap();
        assert!(next.fence > granted.fence);
    }
}

#[test]
fn acquiring_a_lease_on_a_locked_item_is_lease_already_present() {
    let (store, clock, _) = open();
    store.put("c", KEY, b"v", &WriteOptions::default()).unwrap();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(20), false)
        .unwrap();
    for request in [lease(Some(15), None), lease(None, Some(LeaseId(7)))] {
        let error = store.acquire_lease("c", KEY, &request).unwrap_err();
        assert_eq!(
            (error.code(), error.status()),
            (ErrorCode::LeaseAlreadyPresent, 409)
        );
    }
    assert_eq!(
        store.lease_info("c", KEY).unwrap().state,
        LeaseState::Available
    );
    // A waiting acquire gives up too, while the lock lasts.
    assert_eq!(
        code(store.acquire_lease_wait("c", KEY, &lease(Some(15), None), Duration::from_millis(30))),
        ErrorCode::LeaseAlreadyPresent
    );
    // Once unlocked (or timed out) the lease can be taken.
    store.unlock("c", KEY, handle, None).unwrap();
    let granted = store
        .acquire_lease("c", KEY, &lease(Some(15), None))
        .unwrap();
    store.release_lease("c", KEY, granted.id).unwrap();
    store
        .get_and_lock("c", KEY, Duration::from_secs(20), false)
        .unwrap();
    clock.advance_seconds(20);
    store
        .acquire_lease("c", KEY, &lease(Some(15), None))
        .unwrap();
}

#[test]
fn a_lease_on_a_key_force_locked_while_absent_is_not_found() {
    let (store, _clock, _) = open();
    store.get_and_lock("c", KEY, LOCK, true).unwrap();
    assert_eq!(
        code(store.acquire_lease("c", KEY, &lease(Some(15), None))),
        ErrorCode::NotFound
    );
}

#[test]
fn a_write_with_a_lease_id_on_a_locked_item_finds_no_lease() {
    let (store, _clock, _) = open();
    store.put("c", KEY, b"v", &WriteOptions::default()).unwrap();
    let (_, handle) = store.get_and_lock("c", KEY, LOCK, false).unwrap();
    let options = WriteOptions {
        lease_id: Some(LeaseId(7)),
        lock_handle: Some(handle),
        ..WriteOptions::default()
    };
    assert_eq!(
        code(store.put("c", KEY, b"w", &options)),
        ErrorCode::LeaseNotPresentWithBlobOperation
    );
    assert!(is_locked(&store, KEY));
}

// ----- arguments and handles -----

fn assert_invalid<T: std::fmt::Debug>(result: tenure::Result<T>, argument: &str, what: &str) {
    match result {
        Err(Error::InvalidArgument {
            argument: named, ..
        }) => {
            assert_eq!(named, argument, "{what}: names the argument")
        }
        other => panic!("{what}: expected InvalidArgument naming {argument}, got {other:?}"),
    }
}

#[test]
fn a_zero_lock_timeout_is_an_invalid_argument_naming_lock_timeout() {
    let (store, _clock, _) = open();
    store.put("c", KEY, b"v", &WriteOptions::default()).unwrap();
    for force in [false, true] {
        assert_invalid(
            store.get_and_lock("c", KEY, Duration::ZERO, force),
            "lock_timeout",
            "present",
        );
    }
    assert!(!is_locked(&store, KEY), "nothing changed");
    assert_invalid(
        store.unlock("c", KEY, LockHandle(1), Some(Ttl::Seconds(0))),
        "ttl",
        "unlock with a zero TTL",
    );
    assert_invalid(LockHandle::parse("xyz"), "lock_handle", "malformed handle");
}

/// docs/spec.md §3 step 1 and §13: arguments come before any lookup.
#[test]
fn a_zero_lock_timeout_is_an_invalid_argument_even_for_a_missing_key_or_container() {
    let (store, _clock, _) = open();
    assert_invalid(
        store.get_and_lock("c", b"missing", Duration::ZERO, false),
        "lock_timeout",
        "missing key",
    );
    assert_invalid(
        store.get_and_lock("c", b"missing", Duration::ZERO, true),
        "lock_timeout",
        "missing key, force",
    );
    assert_invalid(
        store.get_and_lock("nope", KEY, Duration::ZERO, true),
        "lock_timeout",
        "missing container",
    );
}

#[test]
fn lock_handles_are_unguessable_128_bit_values() {
    let (store, _clock, _) = open();
    let mut seen = HashSet::new();
    for round in 0..200u32 {
        let key = format!("k{round}");
        let (_, handle) = store.get_and_lock("c", key.as_bytes(), LOCK, true).unwrap();
        assert!(seen.insert(handle), "a handle repeated");
        let text = handle.to_string();
        assert_eq!(text.len(), 32);
        assert_eq!(LockHandle::parse(&text).unwrap(), handle);
    }
    // Not a counter: the handles spread over the 128 bits.
    let ored = seen.iter().fold(0u128, |all, handle| all | handle.0);
    assert!(ored.count_ones() > 120, "handles use few bits: {ored:x}");
}

#[test]
fn get_and_lock_returns_the_item_as_get_does_and_the_lock_keeps_etag_and_last_modified() {
    let (store, clock, _) = open();
    store
        .put(
            "c",
            KEY,
            b"10",
            &WriteOptions {
                content_type: Some("text/plain".into()),
                metadata: vec![("a".into(), "b".into())],
                ..WriteOptions::default()
            },
        )
        .unwrap();
    let before = get(&store, KEY).unwrap();
    clock.advance_seconds(1);
    let (item, handle) = store.get_and_lock("c", KEY, LOCK, false).unwrap();
    assert_eq!(item.as_ref(), Some(&before));
    assert_eq!(get(&store, KEY).unwrap(), before);
    store.unlock("c", KEY, handle, None).unwrap();
    assert_eq!(get(&store, KEY).unwrap(), before);
}

// ----- batches: a lock handle per operation -----

#[test]
fn a_batch_honours_a_lock_handle_per_operation() {
    let (store, _clock, _) = open();
    for key in [b"k1", b"k2", b"k3"] {
        store
            .put("c", key, b"v1", &WriteOptions::default())
            .unwrap();
    }
    let (_, one) = store.get_and_lock("c", b"k1", LOCK, false).unwrap();
    let (_, two) = store.get_and_lock("c", b"k2", LOCK, false).unwrap();
    let handle = |handle| WriteOptions {
        lock_handle: Some(handle),
        ..WriteOptions::default()
    };
    // A wrong handle on operation 1: nothing happens, both keys stay locked.
    let mut batch = store.batch();
    batch
        .put("c", b"k1", b"v2", handle(one))
        .put("c", b"k2", b"v2", handle(one))
        .put("c", b"k3", b"v2", WriteOptions::default());
    match batch.commit() {
        Err(Error::BatchFailed { index, error, .. }) => {
            assert_eq!((index, error.code()), (1, ErrorCode::InvalidLockHandle))
        }
        other => panic!("expected a failed batch: {other:?}"),
    }
    assert!(is_locked(&store, b"k1") && is_locked(&store, b"k2"));
    assert_eq!(get(&store, b"k3").unwrap().value.unwrap(), b"v1");
    // Right handles: both written and unlocked; a delete with its handle too.
    let mut batch = store.batch();
    batch
        .put("c", b"k1", b"v2", handle(one))
        .delete("c", b"k2", handle(two))
        .put("c", b"k3", b"v2", handle(one));
    match batch.commit() {
        Err(Error::BatchFailed { index, error, .. }) => {
            assert_eq!((index, error.code()), (2, ErrorCode::ObjectNotLocked))
        }
        other => panic!("expected a failed batch: {other:?}"),
    }
    let mut batch = store.batch();
    batch
        .put("c", b"k1", b"v2", handle(one))
        .delete("c", b"k2", handle(two));
    batch.commit().unwrap();
    assert_eq!(get(&store, b"k1").unwrap().value.unwrap(), b"v2");
    assert_eq!(code(get(&store, b"k2")), ErrorCode::NotFound);
    assert!(!is_locked(&store, b"k1"));
    // A plain batch write releases a lock like a plain put.
    let (_, three) = store.get_and_lock("c", b"k3", LOCK, false).unwrap();
    let mut batch = store.batch();
    batch.put("c", b"k3", b"v3", WriteOptions::default());
    batch.commit().unwrap();
    assert_eq!(
        code(store.unlock("c", b"k3", three, None)),
        ErrorCode::ObjectNotLocked
    );
}

// ----- durability -----

fn reopen(store: Store, disk: &SimStorage, clock: &ManualClock) -> Store {
    store.close().unwrap();
    Store::open_with_storage(Arc::new(disk.clone()), options(clock)).unwrap()
}

fn crash(store: Store, disk: &mut SimStorage, clock: &ManualClock) -> Store {
    let crashed = disk.crash(&mut StdRng::seed_from_u64(3), CrashPolicy::DropAll);
    drop(store);
    *disk = crashed;
    Store::open_with_storage(Arc::new(disk.clone()), options(clock)).unwrap()
}

#[test]
fn locks_survive_reopen_and_crash_and_still_time_out() {
    let (store, clock, mut disk) = open();
    store
        .put("c", KEY, b"10", &WriteOptions::default())
        .unwrap();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(40), false)
        .unwrap();
    let (_, absent) = store
        .get_and_lock("c", b"absent", Duration::from_secs(40), true)
        .unwrap();
    let etag = get(&store, KEY).unwrap().etag;
    let store = reopen(store, &disk, &clock);
    assert!(
        is_locked(&store, KEY) && is_locked(&store, b"absent"),
        "after reopen"
    );
    assert_eq!(get(&store, KEY).unwrap().etag, etag);
    assert_eq!(code(get(&store, b"absent")), ErrorCode::NotFound);
    clock.advance_seconds(10);
    let store = crash(store, &mut disk, &clock);
    assert!(
        is_locked(&store, KEY) && is_locked(&store, b"absent"),
        "after crash"
    );
    assert_eq!(
        code(store.unlock("c", KEY, LockHandle(handle.0 ^ 1), None)),
        ErrorCode::InvalidLockHandle
    );
    store
        .put_and_unlock("c", b"absent", b"made", absent, Ttl::default())
        .unwrap();
    clock.advance_seconds(30);
    assert!(!is_locked(&store, KEY), "the timeout still ends it");
    assert_eq!(
        code(store.unlock("c", KEY, handle, None)),
        ErrorCode::ObjectNotLocked
    );
    assert_eq!(get(&store, b"absent").unwrap().value.unwrap(), b"made");
}

#[test]
fn an_unlock_survives_reopen_and_a_locked_item_past_its_expiry_is_kept_across_reopen() {
    let (store, clock, disk) = open();
    store.put("c", KEY, b"v", &with_ttl(5)).unwrap();
    let (_, handle) = store
        .get_and_lock("c", KEY, Duration::from_secs(60), false)
        .unwrap();
    clock.advance_seconds(10);
    let store = reopen(store, &disk, &clock);
    assert!(get(&store, KEY).is_ok(), "still locked, so not expired");
    store
        .unlock("c", KEY, handle, Some(Ttl::Seconds(100)))
        .unwrap();
    let store = reopen(store, &disk, &clock);
    assert!(!is_locked(&store, KEY));
    clock.advance_seconds(99);
    assert!(get(&store, KEY).is_ok(), "the new TTL survived the reopen");
    clock.advance_seconds(1);
    assert_eq!(code(get(&store, KEY)), ErrorCode::NotFound);
}
