//! docs/spec.md §6 as a table: every cell of the cache-lock table (7 calls × 4 key states), plus the
//! force-locked-absent key, lock timeouts, the lease/lock exclusion and the TTL rules.

use crate::clock::{Timestamp, MICROS_PER_SECOND};
use crate::error::{Error, ErrorCode, Result};
use crate::rules::lease::LeaseState;
use crate::rules::lock::*;

const SECOND: u64 = MICROS_PER_SECOND;
const NOW: Timestamp = 10_000 * SECOND;
const MINE: LockHandle = LockHandle(0x1111);
const THEIRS: LockHandle = LockHandle(0x2222);
const NEW_HANDLE: LockHandle = LockHandle(0x3333);
const TIMEOUT_MICROS: u64 = 30 * SECOND;

const LOCKED_BY_MINE: LockRecord = LockRecord {
    handle: MINE,
    deadline: NOW + 10 * SECOND,
    item_absent: false,
};
const LOCKED_BY_THEIRS: LockRecord = LockRecord {
    handle: THEIRS,
    ..LOCKED_BY_MINE
};
const FORCE_LOCKED_BY_MINE: LockRecord = LockRecord {
    item_absent: true,
    ..LOCKED_BY_MINE
};
const FORCE_LOCKED_BY_THEIRS: LockRecord = LockRecord {
    handle: THEIRS,
    ..FORCE_LOCKED_BY_MINE
};
/// Timed out exactly now: gone.
const TIMED_OUT: LockRecord = LockRecord {
    deadline: NOW,
    ..LOCKED_BY_MINE
};

/// The table's columns, plus the key force-locked while absent (both handles) and a present
/// key whose lock timed out.
const COLUMNS: [(&str, bool, Option<&LockRecord>); 7] = [
    ("key missing", false, None),
    ("present, unlocked", true, None),
    ("locked, right handle", true, Some(&LOCKED_BY_MINE)),
    ("locked by another", true, Some(&LOCKED_BY_THEIRS)),
    (
        "force-locked while absent, right handle",
        false,
        Some(&FORCE_LOCKED_BY_MINE),
    ),
    (
        "force-locked while absent by another",
        false,
        Some(&FORCE_LOCKED_BY_THEIRS),
    ),
    ("present, lock timed out", true, Some(&TIMED_OUT)),
];

fn key(item_present: bool, lock: Option<&LockRecord>) -> KeyFacts<'_> {
    KeyFacts {
        item_present,
        lock,
        now: NOW,
    }
}

/// A call's outcome reduced to what the table says: the lock effect, a new lock, or a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    Refused(ErrorCode),
    Effect(LockEffect),
    Granted { item_absent: bool },
    Allowed,
}

fn cell_of<T>(result: Result<T>, to_cell: impl FnOnce(T) -> Cell) -> Cell {
    match result {
        Ok(value) => to_cell(value),
        Err(error) => Cell::Refused(error.code()),
    }
}

fn lock_grant_cell(grant: LockGrant) -> Cell {
    assert_eq!(grant.lock.handle, NEW_HANDLE);
    assert_eq!(grant.lock.deadline, NOW + TIMEOUT_MICROS);
    assert!(!grant.clear_lease, "no lease in the lock table's fixtures");
    Cell::Granted {
        item_absent: grant.lock.item_absent,
    }
}

type Call = fn(KeyFacts<'_>) -> Cell;

/// Every row of the docs/spec.md §6 table with one expected cell per column of [`COLUMNS`].
#[rustfmt::skip]
fn lock_table() -> Vec<(&'static str, Call, [Cell; 7])> {
    use Cell::{Allowed, Effect, Granted, Refused};
    use ErrorCode::*;
    use LockEffect::{Keep, Release};
    let locked = Refused(ObjectLocked);
    vec![
        ("get_and_lock", |key| {
            cell_of(get_and_lock(key, LeaseState::Available, TIMEOUT_MICROS, false, NEW_HANDLE), lock_grant_cell)
        }, [Refused(NotFound), Granted { item_absent: false }, locked, locked,
            Refused(NotFound), Refused(NotFound), Granted { item_absent: false }]),
        ("get_and_lock, force", |key| {
            cell_of(get_and_lock(key, LeaseState::Available, TIMEOUT_MICROS, true, NEW_HANDLE), lock_grant_cell)
        }, [Granted { item_absent: true }, Granted { item_absent: false }, locked, locked,
            locked, locked, Granted { item_absent: false }]),
        ("put_and_unlock", |key| cell_of(put_and_unlock(key, MINE), Effect),
            [Refused(NotFound), Refused(ObjectNotLocked), Effect(Release), Refused(InvalidLockHandle),
             Effect(Release), Refused(InvalidLockHandle), Refused(ObjectNotLocked)]),
        ("unlock", |key| cell_of(unlock(key, MINE), Effect),
            [Refused(NotFound), Refused(ObjectNotLocked), Effect(Release), Refused(InvalidLockHandle),
             Effect(Release), Refused(InvalidLockHandle), Refused(ObjectNotLocked)]),
        ("delete with lock_handle", |key| cell_of(delete_with_handle(key, MINE), Effect),
            [Refused(NotFound), Refused(ObjectNotLocked), Effect(Release), Refused(InvalidLockHandle),
             Refused(NotFound), Refused(NotFound), Refused(ObjectNotLocked)]),
        ("get", |key| cell_of(check_lock_for_read(key), |()| Allowed),
            [Refused(NotFound), Allowed, Allowed, Allowed, Refused(NotFound), Refused(NotFound), Allowed]),
        ("plain put", |key| Effect(plain_write(key)),
            [Effect(Keep), Effect(Keep), Effect(Release), Effect(Release),
             Effect(Release), Effect(Release), Effect(Release)]),
    ]
}

#[test]
#[rustfmt::skip]
fn lock_table_every_cell() {
    let table = lock_table();
    assert_eq!(table.len(), 7, "the docs/spec.md table has 7 calls");
    let mut failures = Vec::new();
    for (row, call, expected_per_column) in table {
        for ((column, item_present, lock), expected) in COLUMNS.into_iter().zip(expected_per_column) {
            let actual = call(key(item_present, lock));
            if actual != expected {
                failures.push(format!("{row} on {column}: expected {expected:?}, got {actual:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "lock cells:\n{}", failures.join("\n"));
}

#[test]
fn lock_refusal_statuses() {
    assert_eq!(ErrorCode::ObjectLocked.status(), 409);
    assert_eq!(ErrorCode::ObjectNotLocked.status(), 412);
    assert_eq!(ErrorCode::InvalidLockHandle.status(), 412);
    let error = unlock(key(true, Some(&LOCKED_BY_THEIRS)), MINE).unwrap_err();
    assert_eq!(error.status(), 412);
}

#[test]
fn get_and_lock_locks_until_now_plus_timeout_and_the_lock_ends_by_itself() {
    let grant = get_and_lock(
        key(true, None),
        LeaseState::Available,
        TIMEOUT_MICROS,
        false,
        NEW_HANDLE,
    )
    .unwrap();
    let deadline = NOW + TIMEOUT_MICROS;
    assert_eq!(grant.lock.deadline, deadline);
    assert!(grant.lock.is_live(deadline - 1));
    assert!(!grant.lock.is_live(deadline));
    let after_timeout = KeyFacts {
        now: deadline,
        ..key(true, Some(&grant.lock))
    };
    assert_eq!(
        unlock(after_timeout, NEW_HANDLE).unwrap_err().code(),
        ErrorCode::ObjectNotLocked
    );
    assert!(get_and_lock(after_timeout, LeaseState::Available, 1, false, MINE).is_ok());
}

#[test]
fn lock_deadline_saturates() {
    let far = KeyFacts {
        now: u64::MAX - 1,
        ..key(true, None)
    };
    let grant = get_and_lock(far, LeaseState::Available, u64::MAX, false, NEW_HANDLE).unwrap();
    assert_eq!(grant.lock.deadline, u64::MAX);
}

#[test]
fn zero_lock_timeout_is_invalid_before_anything_is_looked_up() {
    for (item_present, force) in [(true, false), (false, false), (false, true)] {
        match get_and_lock(
            key(item_present, None),
            LeaseState::Available,
            0,
            force,
            NEW_HANDLE,
        ) {
            Err(Error::InvalidArgument { argument, .. }) => assert_eq!(argument, "lock_timeout"),
            other => panic!("expected InvalidArgument naming lock_timeout, got {other:?}"),
        }
    }
}

#[test]
fn get_and_lock_on_a_leased_key_and_a_lease_on_a_locked_key() {
    let present = key(true, None);
    for (lease_state, expected) in [
        (LeaseState::Leased, Err(ErrorCode::ObjectLocked)),
        (LeaseState::Breaking, Err(ErrorCode::ObjectLocked)),
        (LeaseState::Expired, Ok(true)),
        (LeaseState::Broken, Ok(true)),
        (LeaseState::Available, Ok(false)),
    ] {
        let result = get_and_lock(present, lease_state, TIMEOUT_MICROS, false, NEW_HANDLE);
        let actual = result
            .map(|grant| grant.clear_lease)
            .map_err(|error| error.code());
        assert_eq!(
            actual, expected,
            "get_and_lock with the lease {lease_state:?} (Ok = lease cleared)"
        );
    }
    let acquire_on_locked = check_lock_for_lease_acquire(Some(&LOCKED_BY_THEIRS), NOW).unwrap_err();
    assert_eq!(acquire_on_locked.code(), ErrorCode::LeaseAlreadyPresent);
    assert_eq!(acquire_on_locked.status(), 409);
    assert!(check_lock_for_lease_acquire(Some(&TIMED_OUT), NOW).is_ok());
    assert!(check_lock_for_lease_acquire(None, NOW).is_ok());
}

#[test]
fn a_live_lock_suspends_expiry() {
    let expired_at = Some(NOW - SECOND);
    assert!(!is_expired_under_lock(
        expired_at,
        Some(&LOCKED_BY_MINE),
        NOW
    ));
    assert!(
        is_expired_under_lock(expired_at, Some(&TIMED_OUT), NOW),
        "lock timed out: gone at once"
    );
    assert!(is_expired_under_lock(expired_at, None, NOW));
    assert!(!is_expired_under_lock(Some(NOW + 1), None, NOW));
    assert!(!is_expired_under_lock(None, None, NOW));
}

#[test]
fn lock_handles_are_32_hex_digits() {
    let handle = LockHandle(0x0123_4567_89ab_cdef_0011_2233_4455_6677);
    assert_eq!(handle.to_string(), "0123456789abcdef0011223344556677");
    assert_eq!(LockHandle::parse(&handle.to_string()).unwrap(), handle);
    assert_eq!(
        LockHandle::parse("0123456789ABCDEF0011223344556677").unwrap(),
        handle
    );
    assert_eq!(
        LockHandle(1).to_string(),
        "00000000000000000000000000000001"
    );
    for bad in [
        "",
        "0123456789abcdef001122334455667",
        "0123456789abcdef00112233445566778",
        "0123456789abcdef001122334455667g",
        "+123456789abcdef0011223344556677",
        "01234567-89ab-cdef-0011-223344556677",
    ] {
        match LockHandle::parse(bad) {
            Err(Error::InvalidArgument { argument, .. }) => {
                assert_eq!(argument, "lock_handle", "{bad:?}")
            }
            other => panic!("{bad:?}: expected InvalidArgument, got {other:?}"),
        }
    }
}
