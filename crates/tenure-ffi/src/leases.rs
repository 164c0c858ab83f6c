//! Item leases.

use crate::prelude::*;

/// A granted lease.
#[repr(C)]
pub struct tenure_lease {
    /// NUL-terminated UUID text.
    pub id: [c_char; TENURE_LEASE_ID_SIZE],
    /// The fencing token: strictly increasing per item across grants.
    pub fence: u64,
}

fn lease_out(lease: tenure::Lease, target: *mut tenure_lease) {
    let mut value = tenure_lease {
        id: [0; TENURE_LEASE_ID_SIZE],
        fence: lease.fence,
    };
    fill(&mut value.id, &lease.id.to_string());
    // SAFETY: callers check `target` non-NULL first.
    unsafe { *target = value };
}

fn lease_request(duration_seconds: i64, proposed_id: Option<&str>) -> Result<LeaseRequest, Fail> {
    Ok(LeaseRequest {
        duration: LeaseDuration::from_seconds(duration_seconds)?,
        proposed_id: proposed_id
            .map(|text| LeaseId::parse("proposed_id", text))
            .transpose()?,
        holder: None,
    })
}

/// Acquires the item's lease: `duration_seconds` 15..=60 or -1 (infinite); `proposed_id`
/// (NULL = generated) a UUID. Never waits.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_acquire(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    duration_seconds: i64,
    proposed_id: *const c_char,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NULL or NUL-terminated.
        let proposed = unsafe { optional_text("proposed_id", proposed_id) }?;
        out("lease_out", lease_out_)?;
        let request = lease_request(duration_seconds, proposed)?;
        let lease = store.acquire_lease(container, key, &request)?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// As tenure_lease_acquire, waiting up to `timeout_ms` (at most 24 h) for the lease to be free.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_acquire_wait(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    duration_seconds: i64,
    proposed_id: *const c_char,
    timeout_ms: u64,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NULL or NUL-terminated.
        let proposed = unsafe { optional_text("proposed_id", proposed_id) }?;
        out("lease_out", lease_out_)?;
        let request = lease_request(duration_seconds, proposed)?;
        let lease = store.acquire_lease_wait(
            container,
            key,
            &request,
            Duration::from_millis(timeout_ms),
        )?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// Renews the lease `lease_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_renew(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NUL-terminated.
        let id = LeaseId::parse("lease_id", unsafe { text("lease_id", lease_id) }?)?;
        out("lease_out", lease_out_)?;
        let lease = store.renew_lease(container, key, id)?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// Changes the lease's id from `lease_id` to `proposed_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_change(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
    proposed_id: *const c_char,
    lease_out_: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NUL-terminated.
        let id = LeaseId::parse("lease_id", unsafe { text("lease_id", lease_id) }?)?;
        // SAFETY: NUL-terminated.
        let proposed = LeaseId::parse("proposed_id", unsafe { text("proposed_id", proposed_id) }?)?;
        out("lease_out", lease_out_)?;
        let lease = store.change_lease(container, key, id, proposed)?;
        lease_out(lease, lease_out_);
        Ok(())
    })
}

/// Releases the lease `lease_id`.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_release(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NUL-terminated.
        let id = LeaseId::parse("lease_id", unsafe { text("lease_id", lease_id) }?)?;
        store.release_lease(container, key, id)?;
        Ok(())
    })
}

/// Breaks the lease. `break_period_seconds` 0..=60, or -1 for the default (SPEC §4).
/// `*time_left_ms_out` gets the time until a new lease can be acquired.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_break(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    break_period_seconds: i64,
    time_left_ms_out: *mut u64,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        out("time_left_ms_out", time_left_ms_out)?;
        let period = if break_period_seconds == -1 {
            None
        } else {
            Some(
                u32::try_from(break_period_seconds)
                    .ok()
                    .filter(|seconds| *seconds <= 60)
                    .ok_or_else(|| {
                        invalid(
                            "break_period_seconds",
                            "must be 0..=60, or -1 for the default",
                        )
                    })?,
            )
        };
        let left = store.break_lease(container, key, period)?;
        // SAFETY: checked non-NULL.
        unsafe { *time_left_ms_out = u64::try_from(left.as_millis()).unwrap_or(u64::MAX) };
        Ok(())
    })
}

pub const TENURE_LEASE_AVAILABLE: u32 = 0;
pub const TENURE_LEASE_LEASED: u32 = 1;
pub const TENURE_LEASE_EXPIRED: u32 = 2;
pub const TENURE_LEASE_BREAKING: u32 = 3;
pub const TENURE_LEASE_BROKEN: u32 = 4;

/// What tenure_lease_info reports.
#[repr(C)]
pub struct tenure_lease_info {
    /// One of TENURE_LEASE_*.
    pub state: u32,
    pub has_id: bool,
    pub id: [c_char; TENURE_LEASE_ID_SIZE],
    pub has_fence: bool,
    pub fence: u64,
    /// Time until the lease or break ends by itself (absent: nothing runs out).
    pub has_remaining: bool,
    pub remaining_ms: u64,
}

/// The item's lease as of now.
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_get_info(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    info_out: *mut tenure_lease_info,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        out("info_out", info_out)?;
        let info = store.lease_info(container, key)?;
        let mut value = tenure_lease_info {
            state: match info.state {
                LeaseState::Available => TENURE_LEASE_AVAILABLE,
                LeaseState::Leased => TENURE_LEASE_LEASED,
                LeaseState::Expired => TENURE_LEASE_EXPIRED,
                LeaseState::Breaking => TENURE_LEASE_BREAKING,
                LeaseState::Broken => TENURE_LEASE_BROKEN,
            },
            has_id: info.id.is_some(),
            id: [0; TENURE_LEASE_ID_SIZE],
            has_fence: info.fence.is_some(),
            fence: info.fence.unwrap_or(0),
            has_remaining: info.remaining_micros.is_some(),
            remaining_ms: info.remaining_micros.unwrap_or(0) / 1000,
        };
        if let Some(id) = info.id {
            fill(&mut value.id, &id.to_string());
        }
        // SAFETY: checked non-NULL.
        unsafe { *info_out = value };
        Ok(())
    })
}
