//! Snapshots: repeatable reads.

use crate::prelude::*;

/// Opens a repeatable read view of the store (free it with tenure_snapshot_free).
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_open(
    store: *const tenure_store,
    snapshot_out: *mut *mut tenure_snapshot,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("snapshot_out", snapshot_out)?;
        let snapshot = store.snapshot()?;
        // SAFETY: the snapshot borrows the store behind the Arc, whose heap address is stable;
        // the object keeps that Arc and drops the snapshot first (field order).
        let snapshot = unsafe {
            std::mem::transmute::<tenure::Snapshot<'_>, tenure::Snapshot<'static>>(snapshot)
        };
        let handle = handles::register(Object::Snapshot(SnapshotObject {
            snapshot,
            _store: store.shared(),
        }))?;
        // SAFETY: checked non-NULL.
        unsafe { *snapshot_out = handle as *mut tenure_snapshot };
        Ok(())
    })
}

/// The version the snapshot sees.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_version(
    snapshot: *const tenure_snapshot,
    version_out: *mut u64,
) -> tenure_status {
    guard(|| {
        with_snapshot(snapshot, |snapshot| {
            out("version_out", version_out)?;
            // SAFETY: checked non-NULL.
            unsafe { *version_out = snapshot.version() };
            Ok(())
        })
    })
}

/// The snapshot object behind a handle.
pub(crate) fn with_snapshot<T>(
    snapshot: *const tenure_snapshot,
    body: impl FnOnce(&tenure::Snapshot<'static>) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let object = handles::hold("snapshot", snapshot as usize, Kind::Snapshot)?;
    let Object::Snapshot(snapshot) = &*object else {
        unreachable!("kind checked by the hold")
    };
    body(&snapshot.snapshot)
}

/// tenure_get as of the snapshot.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_snapshot_get_value")
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_get(
    snapshot: *const tenure_snapshot,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
    value_buffer: *mut u8,
    value_capacity: usize,
    value_length_out: *mut usize,
    info_out: *mut tenure_item_info,
) -> tenure_status {
    guard(|| {
        with_snapshot(snapshot, |snapshot| {
            // SAFETY: the documented argument contracts.
            unsafe {
                get_into(
                    container,
                    key,
                    key_length,
                    conditions,
                    ValueOut::unchecked(value_buffer, value_capacity, value_length_out, info_out),
                    |container, key, options| snapshot.get(container, key, options),
                )
            }
        })
    })
}

/// Frees a snapshot. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_free(snapshot: *mut tenure_snapshot) -> tenure_status {
    guard(|| {
        handles::release("snapshot", snapshot as usize, Kind::Snapshot)?;
        Ok(())
    })
}
