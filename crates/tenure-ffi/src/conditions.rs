//! `tenure_conditions` and its conversion into the engine's read and write options.

use crate::prelude::*;

/// Conditions and options of a read or write. Zero-initialise, then set what you need; NULL
/// strings are absent. Dates are microseconds since the Unix epoch (>= 0).
#[repr(C)]
pub struct tenure_conditions {
    /// An ETag, or "*" (any existing item).
    pub if_match: *const c_char,
    pub if_none_match: *const c_char,
    pub has_if_version: bool,
    pub if_version: u64,
    pub has_if_modified_since: bool,
    pub if_modified_since_us: i64,
    pub has_if_unmodified_since: bool,
    pub if_unmodified_since_us: i64,
    /// The item's lease id (a UUID), required to write a leased item.
    pub lease_id: *const c_char,
    /// A cache-lock handle (32 hex digits): the write replaces the locked item and unlocks.
    pub lock_handle: *const c_char,
    /// Writes only: `ttl_seconds` -1 = never expires, 1..=4294967295 seconds. Without it the
    /// container's default applies.
    pub has_ttl: bool,
    pub ttl_seconds: i64,
}

pub(crate) struct Parsed {
    pub(crate) conditions: Conditions,
    pub(crate) lease_id: Option<LeaseId>,
    pub(crate) lock_handle: Option<LockHandle>,
    pub(crate) has_ttl: bool,
    pub(crate) ttl: Ttl,
}

pub(crate) fn date(argument: &str, micros: i64) -> Result<u64, Fail> {
    u64::try_from(micros).map_err(|_| invalid(argument, "must be >= 0 microseconds"))
}

/// # Safety
/// `conditions` is NULL or a valid struct whose strings are NULL or NUL-terminated.
pub(crate) unsafe fn parse_conditions(
    conditions: *const tenure_conditions,
) -> Result<Parsed, Fail> {
    let mut parsed = Parsed {
        conditions: Conditions::default(),
        lease_id: None,
        lock_handle: None,
        has_ttl: false,
        ttl: Ttl::ContainerDefault,
    };
    // SAFETY: the caller's contract.
    let Some(given) = (unsafe { conditions.as_ref() }) else {
        return Ok(parsed);
    };
    // SAFETY: the caller's contract for each string.
    if let Some(text) = unsafe { optional_text("if_match", given.if_match) }? {
        parsed.conditions.if_match = ETagArg::parse("if_match", text)?.into();
    }
    // SAFETY: as above.
    if let Some(text) = unsafe { optional_text("if_none_match", given.if_none_match) }? {
        parsed.conditions.if_none_match = ETagArg::parse("if_none_match", text)?.into();
    }
    if given.has_if_version {
        parsed.conditions.if_version = Some(given.if_version);
    }
    if given.has_if_modified_since {
        parsed.conditions.if_modified_since =
            Some(date("if_modified_since_us", given.if_modified_since_us)?);
    }
    if given.has_if_unmodified_since {
        parsed.conditions.if_unmodified_since = Some(date(
            "if_unmodified_since_us",
            given.if_unmodified_since_us,
        )?);
    }
    // SAFETY: as above.
    if let Some(text) = unsafe { optional_text("lease_id", given.lease_id) }? {
        parsed.lease_id = Some(LeaseId::parse("lease_id", text)?);
    }
    // SAFETY: as above.
    if let Some(text) = unsafe { optional_text("lock_handle", given.lock_handle) }? {
        parsed.lock_handle = Some(LockHandle::parse(text)?);
    }
    if given.has_ttl {
        parsed.has_ttl = true;
        parsed.ttl = Ttl::from_signed_seconds(given.ttl_seconds)?;
    }
    Ok(parsed)
}

/// # Safety
/// As for [`parse_conditions`].
pub(crate) unsafe fn write_options(
    conditions: *const tenure_conditions,
) -> Result<WriteOptions, Fail> {
    if conditions.is_null() {
        return Ok(WriteOptions::default());
    }
    // SAFETY: the caller's contract.
    let parsed = unsafe { parse_conditions(conditions) }?;
    Ok(WriteOptions {
        conditions: parsed.conditions,
        ttl: parsed.ttl,
        lease_id: parsed.lease_id,
        lock_handle: parsed.lock_handle,
        ..WriteOptions::default()
    })
}

/// # Safety
/// As for [`parse_conditions`].
pub(crate) unsafe fn read_options(
    conditions: *const tenure_conditions,
) -> Result<ReadOptions, Fail> {
    if conditions.is_null() {
        return Ok(ReadOptions::default());
    }
    // SAFETY: the caller's contract.
    let parsed = unsafe { parse_conditions(conditions) }?;
    if parsed.lock_handle.is_some() || parsed.has_ttl {
        return Err(invalid(
            "conditions",
            "lock_handle and ttl do not apply to reads",
        ));
    }
    Ok(ReadOptions {
        conditions: parsed.conditions,
        lease_id: parsed.lease_id,
    })
}

/// The options of a container write (delete, set metadata): ETag and date conditions and the
/// container's lease id; lock handles and TTLs do not apply.
///
/// # Safety
/// As for [`parse_conditions`].
pub(crate) unsafe fn container_options(
    conditions: *const tenure_conditions,
) -> Result<ContainerWriteOptions, Fail> {
    // SAFETY: the caller's contract.
    let parsed = unsafe { parse_conditions(conditions) }?;
    if parsed.lock_handle.is_some() || parsed.has_ttl {
        return Err(invalid(
            "conditions",
            "lock_handle and ttl do not apply to containers",
        ));
    }
    Ok(ContainerWriteOptions {
        conditions: parsed.conditions,
        lease_id: parsed.lease_id,
    })
}
