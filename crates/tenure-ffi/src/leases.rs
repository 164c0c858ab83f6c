//! Leases (docs/spec.md §4, §5): the same six actions on an item's lease and on a container's. Each
//! action is written once, over a [`Target`]; the item and container exports differ only in how
//! they name the target.

use tenure::{Lease, LeaseInfo};

use crate::prelude::*;

/// A granted lease.
#[repr(C)]
pub struct tenure_lease {
    /// NUL-terminated UUID text.
    pub id: [c_char; TENURE_LEASE_ID_SIZE],
    /// The fencing token: strictly increasing per item (or container) across grants.
    pub fence: u64,
}

pub const TENURE_LEASE_AVAILABLE: u32 = 0;
pub const TENURE_LEASE_LEASED: u32 = 1;
pub const TENURE_LEASE_EXPIRED: u32 = 2;
pub const TENURE_LEASE_BREAKING: u32 = 3;
pub const TENURE_LEASE_BROKEN: u32 = 4;

/// What tenure_lease_get_info and tenure_container_lease_get_info report.
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

/// The lease a call acts on.
pub(crate) enum Target<'a> {
    Item {
        store: handles::StoreHold,
        container: &'a str,
        key: &'a [u8],
    },
    Container {
        store: handles::StoreHold,
        name: &'a str,
    },
}

/// # Safety
/// The usual argument contracts.
pub(crate) unsafe fn item<'a>(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
) -> Result<Target<'a>, Fail> {
    // SAFETY: the caller's contract.
    let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
    Ok(Target::Item {
        store,
        container,
        key,
    })
}

/// # Safety
/// `name` is NULL or NUL-terminated.
pub(crate) unsafe fn container<'a>(
    store: *const tenure_store,
    name: *const c_char,
) -> Result<Target<'a>, Fail> {
    let store = store_of("store", store)?;
    // SAFETY: the caller's contract.
    let name = unsafe { text("name", name) }?;
    Ok(Target::Container { store, name })
}

impl Target<'_> {
    pub(crate) fn acquire(&self, request: &LeaseRequest) -> tenure::Result<Lease> {
        match self {
            Target::Item {
                store,
                container,
                key,
            } => store.acquire_lease(container, key, request),
            Target::Container { store, name } => store.acquire_container_lease(name, request),
        }
    }

    fn renew(&self, id: LeaseId) -> tenure::Result<Lease> {
        match self {
            Target::Item {
                store,
                container,
                key,
            } => store.renew_lease(container, key, id),
            Target::Container { store, name } => store.renew_container_lease(name, id),
        }
    }

    fn change(&self, id: LeaseId, proposed: LeaseId) -> tenure::Result<Lease> {
        match self {
            Target::Item {
                store,
                container,
                key,
            } => store.change_lease(container, key, id, proposed),
            Target::Container { store, name } => store.change_container_lease(name, id, proposed),
        }
    }

    fn release(&self, id: LeaseId) -> tenure::Result<()> {
        match self {
            Target::Item {
                store,
                container,
                key,
            } => store.release_lease(container, key, id),
            Target::Container { store, name } => store.release_container_lease(name, id),
        }
    }

    pub(crate) fn break_lease(&self, period: Option<u32>) -> tenure::Result<Duration> {
        match self {
            Target::Item {
                store,
                container,
                key,
            } => store.break_lease(container, key, period),
            Target::Container { store, name } => store.break_container_lease(name, period),
        }
    }

    pub(crate) fn info(&self) -> tenure::Result<LeaseInfo> {
        match self {
            Target::Item {
                store,
                container,
                key,
            } => store.lease_info(container, key),
            Target::Container { store, name } => store.container_lease_info(name),
        }
    }
}

pub(crate) fn write_lease(lease: Lease, target: *mut tenure_lease) {
    let mut value = tenure_lease {
        id: [0; TENURE_LEASE_ID_SIZE],
        fence: lease.fence,
    };
    fill(&mut value.id, &lease.id.to_string());
    // SAFETY: callers check `target` non-NULL first.
    unsafe { *target = value };
}

/// A required lease id argument.
///
/// # Safety
/// `pointer` is NULL or NUL-terminated.
pub(crate) unsafe fn lease_id(
    argument: &'static str,
    pointer: *const c_char,
) -> Result<LeaseId, Fail> {
    // SAFETY: the caller's contract.
    Ok(LeaseId::parse(argument, unsafe {
        text(argument, pointer)
    }?)?)
}

/// # Safety
/// `proposed_id` is NULL or NUL-terminated.
unsafe fn lease_request(
    duration_seconds: i64,
    proposed_id: *const c_char,
    holder: Holder,
) -> Result<LeaseRequest, Fail> {
    // SAFETY: the caller's contract.
    let proposed = unsafe { optional_text("proposed_id", proposed_id) }?;
    let holder = match holder {
        Holder::None => None,
        // SAFETY: the caller's contract.
        Holder::Given(pointer) => Some(unsafe { holder_text(pointer) }?.to_owned()),
    };
    Ok(LeaseRequest {
        duration: LeaseDuration::from_seconds(duration_seconds)?,
        proposed_id: proposed
            .map(|text| LeaseId::parse("proposed_id", text))
            .transpose()?,
        holder,
    })
}

/// The holder label of an acquire: none (tenure_lease_acquire, ..._acquire_wait,
/// tenure_container_lease_acquire) or a required one (the `_with_holder` exports).
#[derive(Clone, Copy)]
enum Holder {
    None,
    Given(*const c_char),
}

/// The longest holder label, in bytes (the engine's limit).
pub const TENURE_LEASE_HOLDER_MAX: usize = 256;

/// A required holder label: NUL-terminated UTF-8 of at most TENURE_LEASE_HOLDER_MAX bytes.
///
/// # Safety
/// `pointer` is NULL or NUL-terminated.
pub(crate) unsafe fn holder_text<'a>(pointer: *const c_char) -> Result<&'a str, Fail> {
    // SAFETY: the caller's contract.
    let holder = unsafe { text("holder", pointer) }?;
    if holder.len() > TENURE_LEASE_HOLDER_MAX {
        return Err(invalid(
            "holder",
            format!(
                "must be at most {TENURE_LEASE_HOLDER_MAX} bytes, not {}",
                holder.len()
            ),
        ));
    }
    Ok(holder)
}

/// # Safety
/// As documented on tenure_lease_acquire.
unsafe fn acquire(
    target: Target<'_>,
    duration_seconds: i64,
    proposed_id: *const c_char,
    holder: Holder,
    lease_out: *mut tenure_lease,
) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    let request = unsafe { lease_request(duration_seconds, proposed_id, holder) }?;
    out("lease_out", lease_out)?;
    write_lease(target.acquire(&request)?, lease_out);
    Ok(())
}

/// # Safety
/// As documented on tenure_lease_renew.
pub(crate) unsafe fn renew(
    target: Target<'_>,
    id: *const c_char,
    lease_out: *mut tenure_lease,
) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    let id = unsafe { lease_id("lease_id", id) }?;
    out("lease_out", lease_out)?;
    write_lease(target.renew(id)?, lease_out);
    Ok(())
}

/// # Safety
/// As documented on tenure_lease_change.
pub(crate) unsafe fn change(
    target: Target<'_>,
    id: *const c_char,
    proposed_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    let (id, proposed) = unsafe {
        (
            lease_id("lease_id", id)?,
            lease_id("proposed_id", proposed_id)?,
        )
    };
    out("lease_out", lease_out)?;
    write_lease(target.change(id, proposed)?, lease_out);
    Ok(())
}

/// # Safety
/// As documented on tenure_lease_release.
pub(crate) unsafe fn release(target: Target<'_>, id: *const c_char) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    let id = unsafe { lease_id("lease_id", id) }?;
    target.release(id)?;
    Ok(())
}

fn break_lease(
    target: Target<'_>,
    break_period_seconds: i64,
    time_left_ms_out: *mut u64,
) -> Result<(), Fail> {
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
    let left = target.break_lease(period)?;
    // SAFETY: checked non-NULL.
    unsafe { *time_left_ms_out = u64::try_from(left.as_millis()).unwrap_or(u64::MAX) };
    Ok(())
}

fn info(target: Target<'_>, info_out: *mut tenure_lease_info) -> Result<(), Fail> {
    out("info_out", info_out)?;
    let value = info_value(&target.info()?);
    // SAFETY: checked non-NULL.
    unsafe { *info_out = value };
    Ok(())
}

pub(crate) fn info_value(info: &LeaseInfo) -> tenure_lease_info {
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
    value
}

/// The lease info and its holder label, read at once.
///
/// # Safety
/// `holder_buffer` has `holder_capacity` writable bytes (NULL only with 0); the out-pointers
/// are NULL or valid.
unsafe fn info_with_holder(
    target: Target<'_>,
    info_out: *mut tenure_lease_info,
    holder_buffer: *mut u8,
    holder_capacity: usize,
    holder_length_out: *mut usize,
    has_holder_out: *mut bool,
) -> Result<(), Fail> {
    out("info_out", info_out)?;
    buffer("holder", holder_buffer, holder_capacity)?;
    out("holder_length_out", holder_length_out)?;
    out("has_holder_out", has_holder_out)?;
    let info = target.info()?;
    let holder = info.holder.as_deref().unwrap_or("");
    // SAFETY: checked above; on BUFFER_TOO_SMALL only `*holder_length_out` is written.
    unsafe {
        copy_out(
            holder.as_bytes(),
            holder_buffer,
            holder_capacity,
            holder_length_out,
        )
    }?;
    // SAFETY: checked non-NULL.
    unsafe {
        *has_holder_out = info.holder.is_some();
        *info_out = info_value(&info);
    }
    Ok(())
}

// ----- item leases -----

/// Acquires the item's lease: `duration_seconds` 15..=60 or -1 (infinite); `proposed_id`
/// (NULL = generated) a UUID. Never waits.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_acquire_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_acquire(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    duration_seconds: i64,
    proposed_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        acquire(
            item(store, container, key, key_length)?,
            duration_seconds,
            proposed_id,
            Holder::None,
            lease_out,
        )
    })
}

/// As tenure_lease_acquire, waiting up to `timeout_ms` (at most 24 h) for the lease to be free.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_acquire_lease with options.timeout_ms")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_acquire_wait(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    duration_seconds: i64,
    proposed_id: *const c_char,
    timeout_ms: u64,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NULL or NUL-terminated.
        let request = unsafe { lease_request(duration_seconds, proposed_id, Holder::None) }?;
        out("lease_out", lease_out)?;
        let lease = store.acquire_lease_wait(
            container,
            key,
            &request,
            Duration::from_millis(timeout_ms),
        )?;
        write_lease(lease, lease_out);
        Ok(())
    })
}

/// As tenure_lease_acquire (`timeout_ms` 0) or tenure_lease_acquire_wait (`timeout_ms` > 0),
/// recording `holder` (required: NUL-terminated UTF-8, at most TENURE_LEASE_HOLDER_MAX bytes)
/// as the label lease info reports (tenure_lease_get_info_with_holder).
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_acquire_lease with options.holder")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_acquire_with_holder(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    duration_seconds: i64,
    proposed_id: *const c_char,
    holder: *const c_char,
    timeout_ms: u64,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
        // SAFETY: NULL or NUL-terminated.
        let request =
            unsafe { lease_request(duration_seconds, proposed_id, Holder::Given(holder)) }?;
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

/// Renews the item's lease `lease_id`.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_renew_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_renew(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        renew(
            item(store, container, key, key_length)?,
            lease_id,
            lease_out,
        )
    })
}

/// Changes the item's lease id from `lease_id` to `proposed_id`.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_change_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_change(
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
        change(
            item(store, container, key, key_length)?,
            lease_id,
            proposed_id,
            lease_out,
        )
    })
}

/// Releases the item's lease `lease_id`.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_release_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_release(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    lease_id: *const c_char,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { release(item(store, container, key, key_length)?, lease_id) })
}

/// Breaks the item's lease. `break_period_seconds` 0..=60, or -1 for the default (docs/spec.md §4).
/// `*time_left_ms_out` gets the time until a new lease can be acquired.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_break_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_break(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    break_period_seconds: i64,
    time_left_ms_out: *mut u64,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        break_lease(
            item(store, container, key, key_length)?,
            break_period_seconds,
            time_left_ms_out,
        )
    })
}

/// The item's lease as of now.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_lease_info")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_get_info(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    info_out: *mut tenure_lease_info,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { info(item(store, container, key, key_length)?, info_out) })
}

/// As tenure_lease_get_info, with the holder label of the lease's acquire, read at once: the
/// label is copied into `holder` (`holder_capacity` bytes, not NUL-terminated; NULL only with
/// 0) and its length written to `*holder_length_out`; `*has_holder_out` says whether there is
/// one: the label of the last acquire while the lease exists (leased, breaking, expired or
/// broken); false, length 0, when it is available (never leased, released) or was acquired
/// without a label. A label longer than
/// `holder_capacity` is TENURE_ERR_BUFFER_TOO_SMALL with only `*holder_length_out` written;
/// TENURE_LEASE_HOLDER_MAX bytes always suffice.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_lease_info")
#[no_mangle]
pub unsafe extern "C" fn tenure_lease_get_info_with_holder(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    info_out: *mut tenure_lease_info,
    holder: *mut u8,
    holder_capacity: usize,
    holder_length_out: *mut usize,
    has_holder_out: *mut bool,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        info_with_holder(
            item(store, container, key, key_length)?,
            info_out,
            holder,
            holder_capacity,
            holder_length_out,
            has_holder_out,
        )
    })
}

// ----- container leases (docs/spec.md §5) -----

/// Acquires the container's lease (as tenure_lease_acquire). While it is held, deleting the
/// container needs its id (`tenure_conditions.lease_id`): without it TENURE_ERR_LEASE_ID_MISSING.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_acquire_container_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_acquire(
    store: *mut tenure_store,
    name: *const c_char,
    duration_seconds: i64,
    proposed_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        acquire(
            container(store, name)?,
            duration_seconds,
            proposed_id,
            Holder::None,
            lease_out,
        )
    })
}

/// As tenure_container_lease_acquire, recording `holder` (as for
/// tenure_lease_acquire_with_holder).
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_acquire_container_lease with options.holder")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_acquire_with_holder(
    store: *mut tenure_store,
    name: *const c_char,
    duration_seconds: i64,
    proposed_id: *const c_char,
    holder: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        acquire(
            container(store, name)?,
            duration_seconds,
            proposed_id,
            Holder::Given(holder),
            lease_out,
        )
    })
}

/// Renews the container's lease `lease_id`.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_renew_container_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_renew(
    store: *mut tenure_store,
    name: *const c_char,
    lease_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { renew(container(store, name)?, lease_id, lease_out) })
}

/// Changes the container's lease id from `lease_id` to `proposed_id`.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_change_container_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_change(
    store: *mut tenure_store,
    name: *const c_char,
    lease_id: *const c_char,
    proposed_id: *const c_char,
    lease_out: *mut tenure_lease,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { change(container(store, name)?, lease_id, proposed_id, lease_out) })
}

/// Releases the container's lease `lease_id`.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_release_container_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_release(
    store: *mut tenure_store,
    name: *const c_char,
    lease_id: *const c_char,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { release(container(store, name)?, lease_id) })
}

/// Breaks the container's lease (as tenure_lease_break).
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_break_container_lease")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_break(
    store: *mut tenure_store,
    name: *const c_char,
    break_period_seconds: i64,
    time_left_ms_out: *mut u64,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        break_lease(
            container(store, name)?,
            break_period_seconds,
            time_left_ms_out,
        )
    })
}

/// The container's lease as of now.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_container_lease_info")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_get_info(
    store: *const tenure_store,
    name: *const c_char,
    info_out: *mut tenure_lease_info,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe { info(container(store, name)?, info_out) })
}

/// The container's lease and its holder label (as tenure_lease_get_info_with_holder).
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_store_container_lease_info")
#[no_mangle]
pub unsafe extern "C" fn tenure_container_lease_get_info_with_holder(
    store: *const tenure_store,
    name: *const c_char,
    info_out: *mut tenure_lease_info,
    holder: *mut u8,
    holder_capacity: usize,
    holder_length_out: *mut usize,
    has_holder_out: *mut bool,
) -> tenure_status {
    // SAFETY: the documented argument contracts.
    guard(|| unsafe {
        info_with_holder(
            container(store, name)?,
            info_out,
            holder,
            holder_capacity,
            holder_length_out,
            has_holder_out,
        )
    })
}
