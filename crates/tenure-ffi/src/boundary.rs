//! The library version, status names and numbers, and the per-thread last error.

use crate::prelude::*;

pub const TENURE_VERSION_MAJOR: u32 = 0;
pub const TENURE_VERSION_MINOR: u32 = 1;
pub const TENURE_VERSION_PATCH: u32 = 0;

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

// ----- status and last error -----

/// The docs/spec.md §12 name of a status ("ConditionNotMet"), "Ok" for 0, "Unknown" otherwise.
/// Static; never free it.
#[no_mangle]
pub extern "C" fn tenure_status_name(status: tenure_status) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<(tenure_status, std::ffi::CString)>> =
        std::sync::OnceLock::new();
    const UNKNOWN: &str = "Unknown\0";
    // Built once from the engine's table of codes and the boundary's statuses; lives for
    // the rest of the process.
    let names = NAMES.get_or_init(|| {
        let statuses = tenure::ErrorCode::ALL
            .iter()
            .map(|code| code.abi_number())
            .chain([TENURE_OK, TENURE_ERR_PANIC, TENURE_ERR_BUFFER_TOO_SMALL]);
        statuses
            .filter_map(|status| {
                let (name, _) = crate::status::describe(status)?;
                Some((status, std::ffi::CString::new(name).ok()?))
            })
            .collect()
    });
    names
        .iter()
        .find(|(known, _)| *known == status)
        .map_or(UNKNOWN.as_ptr().cast(), |(_, name)| name.as_ptr())
}

/// The HTTP-style number of a status (200 for TENURE_OK, 0 for an unknown status).
#[no_mangle]
pub extern "C" fn tenure_status_http(status: tenure_status) -> u32 {
    crate::status::describe(status).map_or(0, |(_, http)| u32::from(http))
}

/// Copies this thread's last failure message (UTF-8, no NUL added) into `buffer`; `*length_out`
/// gets its length (also on TENURE_ERR_BUFFER_TOO_SMALL). Empty if nothing failed yet.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_message(
    buffer: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    let message = LAST_ERROR.with(|last| last.borrow().message.clone());
    guard(|| {
        crate::util::buffer("buffer", buffer, capacity)?;
        out("length_out", length_out)?;
        // SAFETY: checked above; the caller vouches for `capacity` bytes.
        unsafe { copy_out(message.as_bytes(), buffer, capacity, length_out) }
    })
}

/// The current ETag reported with this thread's last failure (a precondition failure on an
/// existing item). `*has_etag_out` false when there was none. `etag_out` holds
/// TENURE_ETAG_SIZE bytes.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_etag(
    etag_out: *mut c_char,
    has_etag_out: *mut bool,
) -> tenure_status {
    let etag = LAST_ERROR.with(|last| last.borrow().current_etag);
    guard(|| {
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

/// The index of the failing operation of this thread's last failed batch commit.
/// `*has_index_out` false when the last failure was not a batch operation's.
#[no_mangle]
pub unsafe extern "C" fn tenure_last_error_batch_index(
    index_out: *mut u64,
    has_index_out: *mut bool,
) -> tenure_status {
    let index = LAST_ERROR.with(|last| last.borrow().batch_index);
    guard(|| {
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
}
