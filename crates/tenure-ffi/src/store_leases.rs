//! Leases (docs/spec.md §4, §5) named as the Rust `Store` names them: `tenure_store_<action>_lease`
//! for an item's lease and `tenure_store_<action>_container_lease` for a container's, with a
//! `tenure_lease_options` struct for acquire and break, and `tenure_lease_details` (the holder
//! label included, in a fixed buffer) for lease info.

use tenure::LeaseInfo;

use crate::leases::{
    container, info_value, item, tenure_lease, write_lease, Target, TENURE_LEASE_HOLDER_MAX,
};
use crate::options::{options_in, tenure_lease_options, unused};
use crate::prelude::*;

/// Size of the holder buffer of `tenure_lease_details`: the longest label and its NUL.
pub const TENURE_LEASE_HOLDER_SIZE: usize = TENURE_LEASE_HOLDER_MAX + 1;

/// A lease as of now, with its holder label: tenure_store_lease_info,
/// tenure_store_container_lease_info.
#[repr(C)]
pub struct tenure_lease_details {
    /// One of TENURE_LEASE_*.
    pub state: u32,
    pub has_id: bool,
    /// NUL-terminated UUID text (when `has_id`).
    pub id: [c_char; TENURE_LEASE_ID_SIZE],
    pub has_fence: bool,
    pub fence: u64,
    /// Time until the lease or its break ends by itself (absent: nothing runs out).
    pub has_remaining: bool,
    pub remaining_ms: u64,
    /// The label of the last acquire while the lease exists (leased, breaking, expired or
    /// broken); false when it is available or was acquired without one.
    pub has_holder: bool,
    /// The label's length in bytes (without the NUL).
    pub holder_length: usize,
    /// The label, NUL-terminated UTF-8 (empty without one).
    pub holder: [c_char; TENURE_LEASE_HOLDER_SIZE],
}

fn details_of(info: &LeaseInfo) -> tenure_lease_details {
    let plain = info_value(info);
    let mut details = tenure_lease_details {
        state: plain.state,
        has_id: plain.has_id,
        id: plain.id,
        has_fence: plain.has_fence,
        fence: plain.fence,
        has_remaining: plain.has_remaining,
        remaining_ms: plain.remaining_ms,
        has_holder: info.holder.is_some(),
        holder_length: 0,
        holder: [0; TENURE_LEASE_HOLDER_SIZE],
    };
    if let Some(holder) = &info.holder {
        // The engine bounds a label to TENURE_LEASE_HOLDER_MAX bytes.
        let bytes = &holder.as_bytes()[..holder.len().min(TENURE_LEASE_HOLDER_MAX)];
        details.holder_length = bytes.len();
        for (slot, byte) in details.holder.iter_mut().zip(bytes) {
            *slot = *byte as c_char;
        }
    }
    details
}

/// A lease call's options (NULL = none).
///
/// # Safety
/// `options` is NULL or a valid `tenure_lease_options` of its `struct_size`.
unsafe fn lease_options(
    options: *const tenure_lease_options,
) -> Result<Option<tenure_lease_options>, Fail> {
    // SAFETY: the caller's contract.
    unsafe { options_in("options", "TENURE_LEASE_OPTIONS_INIT", options) }
}

/// An acquire: its request from the options (required: the duration), and how long to wait.
///
/// # Safety
/// As for [`lease_options`]; the options' strings are NULL or NUL-terminated.
unsafe fn acquire_request(
    options: *const tenure_lease_options,
    call: &str,
) -> Result<(LeaseRequest, u64), Fail> {
    // SAFETY: the caller's contract.
    let options = unsafe { lease_options(options) }?.ok_or_else(|| {
        invalid(
            "options",
            "is NULL: declare it with TENURE_LEASE_OPTIONS_INIT and set duration_seconds",
        )
    })?;
    unused("options.has_break_period", options.has_break_period, call)?;
    unused(
        "options.break_period_seconds",
        options.break_period_seconds != 0,
        call,
    )?;
    let duration = LeaseDuration::from_seconds(options.duration_seconds).map_err(|_| {
        invalid(
            "options.duration_seconds",
            format!(
                "must be 15..=60 or TENURE_INFINITE (-1), not {}",
                options.duration_seconds
            ),
        )
    })?;
    // SAFETY: the caller's contract for the strings.
    let (proposed, holder) = unsafe {
        (
            optional_text("options.proposed_id", options.proposed_id)?,
            optional_text("options.holder", options.holder)?,
        )
    };
    if let Some(holder) = holder {
        if holder.len() > TENURE_LEASE_HOLDER_MAX {
            return Err(invalid(
                "options.holder",
                format!(
                    "must be at most {TENURE_LEASE_HOLDER_MAX} bytes, not {}",
                    holder.len()
                ),
            ));
        }
    }
    let request = LeaseRequest {
        duration,
        proposed_id: proposed
            .map(|text| LeaseId::parse("options.proposed_id", text))
            .transpose()?,
        holder: holder.map(str::to_owned),
    };
    Ok((request, options.timeout_ms))
}

/// The longest wait an acquire accepts: 24 hours.
const MAX_WAIT_MS: u64 = 24 * 3600 * 1000;

/// Acquires the item's lease: `options->duration_seconds` (required) 15..=60 or
/// TENURE_INFINITE; `options->proposed_id` (NULL = generated) a UUID; `options->holder` (NULL =
/// none) a label lease info reports; `options->timeout_ms` 0 = never wait, else wait up to that
/// long (at most 24 h) for the lease to be free, first come first served. `*lease_out`
/// receives the id and fencing token.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_acquire_lease(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_lease_options,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: as documented.
        let (request, timeout_ms) =
            unsafe { acquire_request(options, "tenure_store_acquire_lease") }?;
        if timeout_ms > MAX_WAIT_MS {
            return Err(invalid(
                "options.timeout_ms",
                format!("must be at most {MAX_WAIT_MS} (24 hours), not {timeout_ms}"),
            ));
        }
        out("lease_out", lease_out)?;
        let lease = if timeout_ms == 0 {
            store.acquire_lease(container, key, &request)?
        } else {
            store.acquire_lease_wait(container, key, &request, Duration::from_millis(timeout_ms))?
        };
        write_lease(lease, lease_out);
        Ok(())
    })
}

/// Acquires the container's lease, as tenure_store_acquire_lease (no waiting: `timeout_ms` must
/// be 0). While it is held, deleting the container needs its id (`tenure_conditions.lease_id`).
#[no_mangle]
pub unsafe extern "C" fn tenure_store_acquire_container_lease(
    store: *mut tenure_store,
    name: *const c_char,
    options: *const tenure_lease_options,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let target = unsafe { container(store, name) }?;
        let call = "tenure_store_acquire_container_lease";
        // SAFETY: as documented.
        let (request, timeout_ms) = unsafe { acquire_request(options, call) }?;
        unused("options.timeout_ms", timeout_ms != 0, call)?;
        out("lease_out", lease_out)?;
        write_lease(target.acquire(&request)?, lease_out);
        Ok(())
    })
}

/// The break period of a break's options: absent (NULL options or `has_break_period` false) is
/// the default.
///
/// # Safety
/// As for [`lease_options`].
unsafe fn break_period(
    options: *const tenure_lease_options,
    call: &str,
) -> Result<Option<u32>, Fail> {
    // SAFETY: the caller's contract.
    let Some(options) = (unsafe { lease_options(options) })? else {
        return Ok(None);
    };
    unused(
        "options.duration_seconds",
        options.duration_seconds != 0,
        call,
    )?;
    unused("options.proposed_id", !options.proposed_id.is_null(), call)?;
    unused("options.holder", !options.holder.is_null(), call)?;
    unused("options.timeout_ms", options.timeout_ms != 0, call)?;
    if !options.has_break_period {
        unused(
            "options.break_period_seconds",
            options.break_period_seconds != 0,
            call,
        )?;
        return Ok(None);
    }
    u32::try_from(options.break_period_seconds)
        .ok()
        .filter(|seconds| *seconds <= 60)
        .map(Some)
        .ok_or_else(|| {
            invalid(
                "options.break_period_seconds",
                format!("must be 0..=60, not {}", options.break_period_seconds),
            )
        })
}

fn break_target(
    target: Target<'_>,
    period: Option<u32>,
    time_left_ms_out: *mut u64,
) -> Result<(), Fail> {
    out("time_left_ms_out", time_left_ms_out)?;
    let left = target.break_lease(period)?;
    // SAFETY: checked non-NULL.
    unsafe { *time_left_ms_out = u64::try_from(left.as_millis()).unwrap_or(u64::MAX) };
    Ok(())
}

/// Breaks the item's lease: with `options->has_break_period`, after
/// `options->break_period_seconds` (0..=60); without (or NULL options), the default period
/// (docs/spec.md §4). `*time_left_ms_out` gets the time until a new lease can be acquired.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_break_lease(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_lease_options,
    time_left_ms_out: *mut u64,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let target = unsafe { item(store, container, key, key_length) }?;
        // SAFETY: as documented.
        let period = unsafe { break_period(options, "tenure_store_break_lease") }?;
        break_target(target, period, time_left_ms_out)
    })
}

/// Breaks the container's lease, as tenure_store_break_lease.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_break_container_lease(
    store: *mut tenure_store,
    name: *const c_char,
    options: *const tenure_lease_options,
    time_left_ms_out: *mut u64,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let target = unsafe { container(store, name) }?;
        // SAFETY: as documented.
        let period = unsafe { break_period(options, "tenure_store_break_container_lease") }?;
        break_target(target, period, time_left_ms_out)
    })
}

fn details(target: Target<'_>, details_out: *mut tenure_lease_details) -> Result<(), Fail> {
    out("details_out", details_out)?;
    let details = details_of(&target.info()?);
    // SAFETY: checked non-NULL.
    unsafe { details_out.write(details) };
    Ok(())
}

/// The item's lease as of now, its holder label included, in one read.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_lease_info(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    details_out: *mut tenure_lease_details,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| {
        details(
            unsafe { item(store, container, key, key_length) }?,
            details_out,
        )
    })
}

/// The container's lease as of now, its holder label included.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_container_lease_info(
    store: *const tenure_store,
    name: *const c_char,
    details_out: *mut tenure_lease_details,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| details(unsafe { container(store, name) }?, details_out))
}

/// Renews the item's lease `lease_id` (its duration starts again); `*lease_out` receives it.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_renew_lease(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        crate::leases::renew(
            item(store, container, key, key_length)?,
            lease_id,
            lease_out,
        )
    })
}

/// Changes the item's lease id from `lease_id` to `proposed_id`; `*lease_out` receives the
/// lease under its new id.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_change_lease(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
    proposed_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        crate::leases::change(
            item(store, container, key, key_length)?,
            lease_id,
            proposed_id,
            lease_out,
        )
    })
}

/// Releases the item's lease `lease_id`: the item is free to lease or write at once.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_release_lease(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { crate::leases::release(item(store, container, key, key_length)?, lease_id) })
}

/// Renews the container's lease `lease_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_renew_container_lease(
    store: *mut tenure_store,
    name: *const c_char,
    lease_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { crate::leases::renew(container(store, name)?, lease_id, lease_out) })
}

/// Changes the container's lease id from `lease_id` to `proposed_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_change_container_lease(
    store: *mut tenure_store,
    name: *const c_char,
    lease_id: *const c_char,
    proposed_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        crate::leases::change(container(store, name)?, lease_id, proposed_id, lease_out)
    })
}

/// Releases the container's lease `lease_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_release_container_lease(
    store: *mut tenure_store,
    name: *const c_char,
    lease_id: *const c_char,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { crate::leases::release(container(store, name)?, lease_id) })
}
