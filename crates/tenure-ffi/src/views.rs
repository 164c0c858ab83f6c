//! Zero-copy reads: values lent straight from the store's mapped log, as LMDB's `MDB_val` lends
//! them — for as long as a snapshot lives (tenure_snapshot_get_view) or for the length of a
//! callback (tenure_store_get_with).

use std::ffi::c_void;

use crate::options::{tenure_etag, tenure_read_options};
use crate::prelude::*;
use crate::store_reads::read_request;

/// An item's value lent from the store's mapped log, and what a read reports beside it.
/// `value` points to `value_length` bytes that must not be written (the mapping is read-only
/// to callers) and stay valid for as long as the read's lender lives: the snapshot of
/// tenure_snapshot_get_view until it is freed, the callback of tenure_store_get_with until it
/// returns. An empty value's pointer is valid and points to no bytes.
#[repr(C)]
pub struct tenure_view {
    pub value: *const u8,
    pub value_length: usize,
    /// The item's version; tenure_etag_from_version gives its ETag text, and
    /// `tenure_conditions.if_version` takes it as is.
    pub version: u64,
    /// Microseconds since the Unix epoch.
    pub last_modified_us: i64,
    pub has_expires_at: bool,
    pub expires_at_us: i64,
}

/// What an empty value's view points to: a valid address with no bytes to read.
static EMPTY: [u8; 1] = [0];

fn view_of(value: &[u8], version: u64, last_modified: u64, expires_at: Option<u64>) -> tenure_view {
    tenure_view {
        value: if value.is_empty() {
            EMPTY.as_ptr()
        } else {
            value.as_ptr()
        },
        value_length: value.len(),
        version,
        last_modified_us: i64::try_from(last_modified).unwrap_or(i64::MAX),
        has_expires_at: expires_at.is_some(),
        expires_at_us: expires_at.map_or(0, |at| i64::try_from(at).unwrap_or(i64::MAX)),
    }
}

/// Reads an item as of the snapshot without copying its value: `*view_out` lends the bytes
/// from the store's mapped log until tenure_snapshot_free(snapshot). Compaction removes no
/// segment the snapshot may read while it is open, and a written record is never written
/// again, so the bytes stay valid and unchanged for that long, whatever is written, compacted
/// or closed meanwhile (LMDB's rule for a read transaction). `options` (NULL = none) as for
/// tenure_store_get_value.
#[no_mangle]
pub unsafe extern "C" fn tenure_snapshot_get_view(
    snapshot: *const tenure_snapshot,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_read_options,
    view_out: *mut tenure_view,
) -> tenure_status {
    guard(|| {
        with_snapshot(snapshot, |snapshot| {
            // SAFETY: the documented argument contracts.
            unsafe {
                read_request(
                    container,
                    key,
                    key_length,
                    options,
                    |container, key, read| {
                        out("view_out", view_out)?;
                        let borrowed = snapshot.get_borrowed(container, key, read)?;
                        let item = &borrowed.item;
                        // The bytes are the snapshot's mapping, which the registry's snapshot
                        // object keeps until tenure_snapshot_free (the engine's contract of
                        // `Snapshot::get_borrowed`).
                        view_out.write(view_of(
                            borrowed.value,
                            item.version,
                            item.last_modified,
                            item.expires_at,
                        ));
                        Ok(())
                    },
                )
            }
        })
    })
}

/// The callback of tenure_store_get_with: `context` as given, `view` valid until it returns.
/// It must return normally (no longjmp, no C++ exception through it); it may call tenure, but
/// while it runs the read holds back the reclamation of replaced versions, so keep it short.
pub type tenure_view_fn =
    Option<unsafe extern "C" fn(context: *mut c_void, view: *const tenure_view)>;

/// Reads the newest version of an item and lends it to `read` without copying the value (the
/// Rust `Store::get_with`): `read(context, view)` is called once, on success only, its view
/// valid until it returns. The cheapest read of the ABI: no snapshot to take, nothing
/// allocated. `options` (NULL = none) as for tenure_store_get_value.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_get_with(
    store: *const tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_read_options,
    read: tenure_view_fn,
    context: *mut c_void,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        let lend = |container: &str, key: &[u8], options: &ReadOptions| {
            let read = read.ok_or_else(|| invalid("read", "is NULL"))?;
            store.get_with(container, key, options, |item| {
                let view = view_of(
                    item.value,
                    item.version,
                    item.last_modified,
                    item.expires_at,
                );
                // SAFETY: the caller's callback and context; the view lives for the call.
                unsafe { read(context, &view) };
            })?;
            Ok(())
        };
        // SAFETY: the documented argument contracts.
        unsafe { read_request(container, key, key_length, options, lend) }
    })
}

/// The ETag text of an item at `version` (ETags are derived from versions: docs/spec.md §1),
/// for a view's `version`. Changes nothing, not even the error state.
#[no_mangle]
pub unsafe extern "C" fn tenure_etag_from_version(
    version: u64,
    etag_out: *mut tenure_etag,
) -> tenure_status {
    guard_quiet(|| {
        out("etag_out", etag_out)?;
        // SAFETY: checked non-NULL.
        unsafe {
            etag_out.write(tenure_etag {
                text: etag_text(tenure::ETag(version)),
            })
        };
        Ok(())
    })
}
