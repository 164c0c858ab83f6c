//! Cache locks (docs/spec.md §6, AppFabric `DataCache`): one pure decision per lock call, each
//! returning what to do with the lock or the error. Nothing waits: a call that cannot proceed
//! fails at once.
//!
//! A lock whose deadline has passed is gone: every decision treats it as no lock, so a crashed
//! client cannot hold a key forever. A key holds at most one of {live lease, lock}.
//!
//! The checks follow docs/spec.md §3's order: arguments, then whether the item exists where the call
//! needs it (`NotFound`), then the lock. So a plain `get_and_lock` of a key force-locked while
//! absent is `NotFound`, while the forced one is `ObjectLocked`.

use std::fmt;

use crate::clock::Timestamp;
use crate::error::{Error, ErrorCode, Result};
use crate::rules::lease::LeaseState;
use crate::rules::ttl::is_expired;

/// A lock handle: 128 random bits, shown as 32 lower-case hexadecimal digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockHandle(pub u128);

impl LockHandle {
    /// Parses 32 hexadecimal digits (either case). A malformed handle is `InvalidArgument`
    /// naming `lock_handle`; a well-formed one that is not the lock's is `InvalidLockHandle`.
    pub fn parse(text: &str) -> Result<LockHandle> {
        let well_formed = text.len() == 32 && text.bytes().all(|byte| byte.is_ascii_hexdigit());
        let parsed = well_formed
            .then(|| u128::from_str_radix(text, 16).ok())
            .flatten();
        parsed.map(LockHandle).ok_or_else(|| {
            Error::invalid(
                "lock_handle",
                format!("a lock handle is 32 hexadecimal digits, not {text:?}"),
            )
        })
    }
}

impl fmt::Display for LockHandle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{:032x}", self.0)
    }
}

/// What the engine persists while a key is locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockRecord {
    pub handle: LockHandle,
    /// The lock ends by itself here (absolute wall-clock time).
    pub deadline: Timestamp,
    /// Locked by `get_and_lock(force=True)` while no item existed: `put_and_unlock` creates it.
    pub item_absent: bool,
}

impl LockRecord {
    pub fn is_live(&self, now: Timestamp) -> bool {
        now < self.deadline
    }
}

/// The lock at `now`, if one is still live.
pub fn live_lock(record: Option<&LockRecord>, now: Timestamp) -> Option<&LockRecord> {
    record.filter(|lock| lock.is_live(now))
}

/// What the engine knows about the key when a lock call arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFacts<'a> {
    /// A visible, unexpired item exists, a live lock suspending expiry
    /// ([`is_expired_under_lock`]).
    pub item_present: bool,
    /// The stored lock record, live or not.
    pub lock: Option<&'a LockRecord>,
    pub now: Timestamp,
}

impl KeyFacts<'_> {
    fn live_lock(&self) -> Option<&LockRecord> {
        live_lock(self.lock, self.now)
    }
}

/// What to do with the stored lock record after a call that succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockEffect {
    Keep,
    /// Delete the lock record.
    Release,
}

/// A granted `get_and_lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockGrant {
    /// The lock to store; its handle goes back to the caller.
    pub lock: LockRecord,
    /// An Expired or Broken lease is cleared by the lock (a key holds a lease or a lock).
    pub clear_lease: bool,
}

/// `get_and_lock(key, lock_timeout, force)`: locks until `now + lock_timeout_micros` with the
/// freshly generated handle. A live lock or a live lease (Leased, Breaking) → `ObjectLocked`;
/// a missing item → `NotFound` unless `force`, which locks the absent key.
pub fn get_and_lock(
    key: KeyFacts<'_>,
    lease_state: LeaseState,
    lock_timeout_micros: u64,
    force: bool,
    generated_handle: LockHandle,
) -> Result<LockGrant> {
    if lock_timeout_micros == 0 {
        return Err(Error::invalid(
            "lock_timeout",
            "a lock timeout must be greater than 0",
        ));
    }
    if !key.item_present && !force {
        return Err(Error::rejected(ErrorCode::NotFound));
    }
    let lease_is_live = matches!(lease_state, LeaseState::Leased | LeaseState::Breaking);
    if key.live_lock().is_some() || lease_is_live {
        return Err(Error::rejected(ErrorCode::ObjectLocked));
    }
    Ok(LockGrant {
        lock: LockRecord {
            handle: generated_handle,
            deadline: key.now.saturating_add(lock_timeout_micros),
            item_absent: !key.item_present,
        },
        clear_lease: matches!(lease_state, LeaseState::Expired | LeaseState::Broken),
    })
}

/// `put_and_unlock(key, value, handle)`: on success the engine writes the value (creating the
/// item if the key was force-locked while absent) and releases the lock. A write resets the
/// TTL, so the item is never past its expiry right after it.
pub fn put_and_unlock(key: KeyFacts<'_>, handle: LockHandle) -> Result<LockEffect> {
    release_with_handle(key, handle)
}

/// `unlock(key, handle)`: releases the lock, also of a key force-locked while absent. Whether
/// the item then goes at once follows from [`is_expired_under_lock`]: the lock no longer
/// suspends its expiry.
pub fn unlock(key: KeyFacts<'_>, handle: LockHandle) -> Result<LockEffect> {
    release_with_handle(key, handle)
}

/// `delete(key, lock_handle=handle)`: deletes the item and its lock. A key force-locked while
/// absent has nothing to delete: `NotFound`, and the lock stays.
pub fn delete_with_handle(key: KeyFacts<'_>, handle: LockHandle) -> Result<LockEffect> {
    if !key.item_present {
        return Err(Error::rejected(ErrorCode::NotFound));
    }
    release_with_handle(key, handle)
}

/// Reads (`get`, conditional reads, listing) are never blocked by a lock; a key force-locked
/// while absent still has no item.
pub fn check_lock_for_read(key: KeyFacts<'_>) -> Result<()> {
    if !key.item_present {
        return Err(Error::rejected(ErrorCode::NotFound));
    }
    Ok(())
}

/// A write without a lock handle (plain put, plain delete, batch writes) is never refused by
/// a lock: it replaces the item and releases any lock.
pub fn plain_write(key: KeyFacts<'_>) -> LockEffect {
    if key.lock.is_some() {
        // Also drops a record whose deadline passed, which is gone anyway.
        LockEffect::Release
    } else {
        LockEffect::Keep
    }
}

/// A lease acquire on a locked key → `LeaseAlreadyPresent` (409).
pub fn check_lock_for_lease_acquire(lock: Option<&LockRecord>, now: Timestamp) -> Result<()> {
    if live_lock(lock, now).is_some() {
        return Err(Error::rejected(ErrorCode::LeaseAlreadyPresent));
    }
    Ok(())
}

/// Whether an item is expired at `now`, given that a live lock suspends expiry. Once the lock
/// times out, an item past its expiry is expired at once.
pub fn is_expired_under_lock(
    expires_at: Option<Timestamp>,
    lock: Option<&LockRecord>,
    now: Timestamp,
) -> bool {
    live_lock(lock, now).is_none() && is_expired(expires_at, now)
}

/// The `put_and_unlock` / `unlock` column logic: `NotFound` for a missing, unlocked key,
/// `ObjectNotLocked` for a present, unlocked one, `InvalidLockHandle` for another's lock.
fn release_with_handle(key: KeyFacts<'_>, handle: LockHandle) -> Result<LockEffect> {
    match key.live_lock() {
        None if !key.item_present => Err(Error::rejected(ErrorCode::NotFound)),
        None => Err(Error::rejected(ErrorCode::ObjectNotLocked)),
        Some(lock) if lock.handle != handle => Err(Error::rejected(ErrorCode::InvalidLockHandle)),
        Some(_) => Ok(LockEffect::Release),
    }
}
