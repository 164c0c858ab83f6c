//! Optimistic concurrency (docs/spec.md §3, §6 `if_version` and `get_if_newer`, §7): the conditions a
//! read or write may carry, decided against the item's visible, unexpired state.
//!
//! A write runs the checks of docs/spec.md §3 in order, stopping at the first failure:
//! 1. arguments — nothing here needs checking for writes (any combination is allowed);
//! 2. container exists — the engine;
//! 3. item exists where the operation needs it — [`check_write_existence`];
//! 4. lease or lock — `lease.rs`, `lock.rs`;
//! 5. conditions — [`check_write_conditions`];
//! 6. the change, under the engine's compare-and-swap on the version.
//!
//! A read validates its arguments with [`validate_read`] and decides with [`check_read`].

use crate::clock::Timestamp;
use crate::error::{Error, ErrorCode, Result};
use crate::rules::etag::{ETagArg, ETagList};
use crate::types::{ETag, Version};

/// The conditions of one read or write. Empty lists and `None` mean "not given".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditions {
    /// Holds when the item exists and its ETag matches any of the list (`*`: it exists).
    pub if_match: ETagList,
    /// Holds when the item's ETag matches none of the list (`*`: the item does not exist).
    pub if_none_match: ETagList,
    /// Holds when last_modified > T.
    pub if_modified_since: Option<Timestamp>,
    /// Holds when last_modified ≤ T.
    pub if_unmodified_since: Option<Timestamp>,
    /// Holds when the item exists at exactly this version (writes only).
    pub if_version: Option<Version>,
}

impl Conditions {
    pub fn is_empty(&self) -> bool {
        self.if_match.is_empty()
            && self.if_none_match.is_empty()
            && self.if_modified_since.is_none()
            && self.if_unmodified_since.is_none()
            && self.if_version.is_none()
    }

    pub fn if_match(etag: impl Into<ETagArg>) -> Conditions {
        Conditions {
            if_match: ETagList::from(etag.into()),
            ..Conditions::default()
        }
    }

    pub fn if_none_match(etag: impl Into<ETagArg>) -> Conditions {
        Conditions {
            if_none_match: ETagList::from(etag.into()),
            ..Conditions::default()
        }
    }

    pub fn if_modified_since(time: Timestamp) -> Conditions {
        Conditions {
            if_modified_since: Some(time),
            ..Conditions::default()
        }
    }

    pub fn if_unmodified_since(time: Timestamp) -> Conditions {
        Conditions {
            if_unmodified_since: Some(time),
            ..Conditions::default()
        }
    }

    pub fn if_version(version: Version) -> Conditions {
        Conditions {
            if_version: Some(version),
            ..Conditions::default()
        }
    }

    /// Both sets: ETag lists are joined; a date or version given in `other` replaces this one's.
    pub fn and(mut self, other: Conditions) -> Conditions {
        self.if_match.extend(other.if_match);
        self.if_none_match.extend(other.if_none_match);
        self.if_modified_since = other.if_modified_since.or(self.if_modified_since);
        self.if_unmodified_since = other.if_unmodified_since.or(self.if_unmodified_since);
        self.if_version = other.if_version.or(self.if_version);
        self
    }
}

/// What the conditions are decided against: the visible, unexpired item (`None` = missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemFacts {
    pub etag: ETag,
    pub version: Version,
    pub last_modified: Timestamp,
}

/// The kinds of write, as far as conditions and existence are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteKind {
    /// Upsert: creates or replaces.
    Put,
    /// Put with an implied `if_none_match = *`.
    Create,
    /// The item must exist.
    Replace,
    Delete,
    /// Set properties or metadata; the item must exist.
    SetMetadata,
    /// A batch check: decides its conditions exactly as a put would, writing nothing; with no
    /// condition at all it asserts that the item exists.
    Check,
}

impl WriteKind {
    fn needs_existing_item(self) -> bool {
        matches!(
            self,
            WriteKind::Replace | WriteKind::Delete | WriteKind::SetMetadata
        )
    }
}

/// Step 1 for reads. `if_none_match = *` asks for a missing item, which a read cannot return;
/// `if_version` is a write condition (a versioned read is [`get_if_newer`]).
pub fn validate_read(conditions: &Conditions) -> Result<()> {
    if conditions.if_none_match.contains(&ETagArg::Any) {
        return Err(Error::invalid(
            "if_none_match",
            "`*` (the item does not exist) is a write condition; a read cannot use it",
        ));
    }
    if conditions.if_version.is_some() {
        return Err(Error::invalid(
            "if_version",
            "if_version is a write condition; read by version with get_if_newer",
        ));
    }
    Ok(())
}

/// Decides a read (get, get properties): `if_match ∧ if_unmodified_since ∧ G`, where the group
/// G = `if_none_match ∨ if_modified_since` holds when any given member holds, or when neither is
/// given. A failing `if_match`/`if_unmodified_since` is `ConditionNotMet` and wins over a
/// failing group (`NotModified`). A missing item is `NotFound`, with or without conditions.
///
/// Runs [`validate_read`] first, so it is never wrong on its own.
pub fn check_read(conditions: &Conditions, item: Option<&ItemFacts>) -> Result<()> {
    let Some(facts) = item else {
        validate_read(conditions)?;
        return Err(rejected(ErrorCode::NotFound, None));
    };
    // Most reads carry no condition: nothing to validate or decide.
    if conditions.is_empty() {
        return Ok(());
    }
    validate_read(conditions)?;
    let strict_part_holds = if_match_holds(&conditions.if_match, facts)
        && conditions
            .if_unmodified_since
            .is_none_or(|time| unmodified_since(facts, time));
    if !strict_part_holds {
        return Err(rejected(ErrorCode::ConditionNotMet, item));
    }

    let none_match_given = !conditions.if_none_match.is_empty();
    let group_given = none_match_given || conditions.if_modified_since.is_some();
    let group_holds = !group_given
        || (none_match_given && if_none_match_holds(&conditions.if_none_match, facts))
        || conditions
            .if_modified_since
            .is_some_and(|time| modified_since(facts, time));
    if !group_holds {
        return Err(rejected(ErrorCode::NotModified, item));
    }
    Ok(())
}

/// Step 3 of a write: `NotFound` when the operation needs the item and it is missing.
///
/// - replace, delete and set_metadata always need it (so their `if_match` on a missing item is
///   `NotFound`);
/// - a check with no condition asserts it exists;
/// - `if_version` needs it for every kind (the cache's KeyDoesNotExist);
/// - a put's or create's `if_match` on a missing item is not decided here: it is a step-5
///   `ConditionNotMet`, after the lease check.
pub fn check_write_existence(
    kind: WriteKind,
    conditions: &Conditions,
    item: Option<&ItemFacts>,
) -> Result<()> {
    if item.is_some() {
        return Ok(());
    }
    let needed = kind.needs_existing_item()
        || (kind == WriteKind::Check && conditions.is_empty())
        || conditions.if_version.is_some();
    if needed {
        return Err(rejected(ErrorCode::NotFound, None));
    }
    Ok(())
}

/// Step 5 of a write: every condition given must hold. The first failing one is reported, in
/// the order `if_match`, `if_none_match`, `if_modified_since`, `if_unmodified_since`,
/// `if_version`:
/// - `if_match` failing (also on a missing item, for put, create and check) → `ConditionNotMet`;
/// - `if_none_match = *` on an existing item → `AlreadyExists` (also for `Create`, which
///   implies it), an `if_none_match` ETag matching → `ConditionNotMet`;
/// - a date condition failing → `ConditionNotMet`;
/// - `if_version` failing → `VersionMismatch`.
///
/// On a missing item `if_none_match` and the date conditions hold, so a put proceeds and
/// creates. Refusals of an existing item carry its ETag. Repeats step 3 first, so it is never
/// wrong on its own.
pub fn check_write_conditions(
    kind: WriteKind,
    conditions: &Conditions,
    item: Option<&ItemFacts>,
) -> Result<()> {
    check_write_existence(kind, conditions, item)?;
    let Some(facts) = item else {
        if !conditions.if_match.is_empty() {
            return Err(rejected(ErrorCode::ConditionNotMet, None));
        }
        return Ok(());
    };
    let fail = |code| Err(rejected(code, item));

    if !if_match_holds(&conditions.if_match, facts) {
        return fail(ErrorCode::ConditionNotMet);
    }
    if kind == WriteKind::Create || conditions.if_none_match.contains(&ETagArg::Any) {
        return fail(ErrorCode::AlreadyExists);
    }
    if !if_none_match_holds(&conditions.if_none_match, facts) {
        return fail(ErrorCode::ConditionNotMet);
    }
    if conditions
        .if_modified_since
        .is_some_and(|time| !modified_since(facts, time))
    {
        return fail(ErrorCode::ConditionNotMet);
    }
    if conditions
        .if_unmodified_since
        .is_some_and(|time| !unmodified_since(facts, time))
    {
        return fail(ErrorCode::ConditionNotMet);
    }
    if conditions
        .if_version
        .is_some_and(|version| version != facts.version)
    {
        return fail(ErrorCode::VersionMismatch);
    }
    Ok(())
}

/// `get_if_newer(key, version)` (docs/spec.md §6): `Ok(true)` = return the item (its version differs
/// from the caller's), `Ok(false)` = return nothing. A missing item is `NotFound`, as for `get`.
pub fn get_if_newer(version: Version, item: Option<&ItemFacts>) -> Result<bool> {
    match item {
        None => Err(rejected(ErrorCode::NotFound, None)),
        Some(facts) => Ok(facts.version != version),
    }
}

/// An empty list holds (not given).
fn if_match_holds(list: &ETagList, facts: &ItemFacts) -> bool {
    list.is_empty() || list.iter().any(|arg| arg.matches(facts.etag))
}

/// An empty list holds (not given).
fn if_none_match_holds(list: &ETagList, facts: &ItemFacts) -> bool {
    list.is_empty() || !list.iter().any(|arg| arg.matches(facts.etag))
}

fn modified_since(facts: &ItemFacts, time: Timestamp) -> bool {
    facts.last_modified > time
}

fn unmodified_since(facts: &ItemFacts, time: Timestamp) -> bool {
    facts.last_modified <= time
}

fn rejected(code: ErrorCode, item: Option<&ItemFacts>) -> Error {
    Error::Rejected {
        code,
        current_etag: item.map(|facts| facts.etag),
    }
}
