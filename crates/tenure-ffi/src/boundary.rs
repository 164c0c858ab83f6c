//! The library version, status names and numbers, and the per-thread last error.

use crate::prelude::*;

pub const TENURE_VERSION_MAJOR: u32 = 0;
pub const TENURE_VERSION_MINOR: u32 = 1;
pub const TENURE_VERSION_PATCH: u32 = 0;
/// The ABI's version: the shared library is `libtenure.so.<TENURE_ABI_VERSION>`. It changes
/// only when a function or struct of the ABI is removed or changed incompatibly.
pub const TENURE_ABI_VERSION: u32 = 0;

/// Size of an ETag text buffer (`"0x` + 16 hex digits + `"` + NUL fits).
pub const TENURE_ETAG_SIZE: usize = 32;
/// Size of a lease id text buffer (a hyphenated UUID + NUL fits).
pub const TENURE_LEASE_ID_SIZE: usize = 40;
/// Size of a lock handle text buffer (32 hex digits + NUL fits).
pub const TENURE_LOCK_HANDLE_SIZE: usize = 40;

/// The library version, e.g. "0.1.0". Static; never free it.
#[no_mangle]
pub extern "C" fn tenure_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// ----- status and the error state -----

/// The docs/spec.md §12 name of a status ("ConditionNotMet"), "Ok" for 0, "Unknown" for a number
/// that is no status. Static; never free it. Changes nothing, not even the error state.
#[no_mangle]
pub extern "C" fn tenure_status_name(status: u32) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<(u32, std::ffi::CString)>> = std::sync::OnceLock::new();
    const UNKNOWN: &str = "Unknown\0";
    // Built once from the statuses and the engine's table of codes; lives for the rest of the
    // process.
    let names = NAMES.get_or_init(|| {
        crate::status::ALL_STATUSES
            .iter()
            .filter_map(|status| {
                let (name, _) = crate::status::describe(*status as u32)?;
                Some((*status as u32, std::ffi::CString::new(name).ok()?))
            })
            .collect()
    });
    names
        .iter()
        .find(|(known, _)| *known == status)
        .map_or(UNKNOWN.as_ptr().cast(), |(_, name)| name.as_ptr())
}

/// The HTTP-style number of a status (200 for TENURE_OK, 0 for a number that is no status).
/// Changes nothing, not even the error state.
#[no_mangle]
pub extern "C" fn tenure_status_http(status: u32) -> u32 {
    crate::status::describe(status).map_or(0, |(_, http)| u32::from(http))
}

/// The status of the calling thread's last call: TENURE_OK after a success (or before any
/// call), else the failure's status. The error state is per thread; every call of the ABI sets
/// it (a failure) or clears it (a success), except the ones that only read it
/// (tenure_last_error_*) and the pure ones (tenure_version, tenure_status_name,
/// tenure_status_http, tenure_etag_from_version).
#[no_mangle]
pub extern "C" fn tenure_last_error_status() -> tenure_status {
    with_last_error(|last| last.status).unwrap_or(TENURE_OK)
}

/// Copies the calling thread's last failure message (UTF-8, no NUL added) into `buffer`
/// (`capacity` bytes; NULL only with 0); `*length_out` gets its length — also on
/// TENURE_ERR_BUFFER_TOO_SMALL, so a size query `(NULL, 0, &length)` followed by a read with
/// `length` bytes returns the whole message. Empty after a success. Reading never changes the
/// error state, whatever it returns.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_message(
    buffer: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard_quiet(|| {
        crate::util::buffer("buffer", buffer, capacity)?;
        out("length_out", length_out)?;
        with_last_error(|last| {
            // SAFETY: checked above; the caller vouches for `capacity` bytes.
            unsafe { copy_out(last.message.as_bytes(), buffer, capacity, length_out) }
        })
        .unwrap_or_else(|| {
            // SAFETY: checked non-NULL.
            unsafe { *length_out = 0 };
            Ok(())
        })
    })
}

/// The item's current ETag reported with the calling thread's last failure (a precondition
/// failure on an existing item): `*has_etag_out` false when there is none. Reading never
/// changes the error state.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_current_etag(
    etag_out: *mut crate::options::tenure_etag,
    has_etag_out: *mut bool,
) -> tenure_status {
    let etag = with_last_error(|last| last.current_etag).flatten();
    guard_quiet(|| {
        out("etag_out", etag_out)?;
        out("has_etag_out", has_etag_out)?;
        // SAFETY: checked non-NULL.
        unsafe {
            if let Some(etag) = etag {
                etag_out.write(crate::options::tenure_etag {
                    text: etag_text(etag),
                });
            }
            *has_etag_out = etag.is_some();
        }
        Ok(())
    })
}

/// The current ETag of the thread's last failure, into `etag_out` (TENURE_ETAG_SIZE bytes): as
/// tenure_last_error_current_etag, whose output's type carries its capacity.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_last_error_current_etag")
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_etag(
    etag_out: *mut c_char,
    has_etag_out: *mut bool,
) -> tenure_status {
    let etag = with_last_error(|last| last.current_etag).flatten();
    guard_quiet(|| {
        out("etag_out", etag_out)?;
        out("has_etag_out", has_etag_out)?;
        // SAFETY: checked non-NULL; the caller passes TENURE_ETAG_SIZE bytes.
        unsafe {
            if let Some(etag) = etag {
                write_etag(etag, etag_out);
            }
            *has_etag_out = etag.is_some();
        }
        Ok(())
    })
}

/// The index of the failing operation of the calling thread's last failed batch commit:
/// `*has_index_out` false when the last call was not a failed commit. Reading never changes
/// the error state.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_batch_index(
    index_out: *mut u64,
    has_index_out: *mut bool,
) -> tenure_status {
    let index = with_last_error(|last| last.batch_index).flatten();
    guard_quiet(|| {
        out("index_out", index_out)?;
        out("has_index_out", has_index_out)?;
        // SAFETY: checked non-NULL.
        unsafe {
            *index_out = index.unwrap_or(0) as u64;
            *has_index_out = index.is_some();
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_macros_agree_with_cargo() {
        assert_eq!(
            format!(
                "{}.{}.{}",
                crate::boundary::TENURE_VERSION_MAJOR,
                crate::boundary::TENURE_VERSION_MINOR,
                crate::boundary::TENURE_VERSION_PATCH
            ),
            env!("CARGO_PKG_VERSION")
        );
    }

    #[test]
    fn the_abi_version_is_the_sonames() {
        assert_eq!(
            crate::boundary::TENURE_ABI_VERSION.to_string(),
            env!("TENURE_BUILD_ABI_VERSION")
        );
    }
}
