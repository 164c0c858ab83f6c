//! The boundary helpers: failures, the per-thread last error, the panic guard, and checked
//! conversions of C arguments.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use tenure::{ETag, Error, Limits};

use crate::status::*;

/// A failure on its way to C. Boxed, so a `Result` of the boundary helpers stays two or three
/// words and the success path moves no failure-sized values around.
pub(crate) struct Fail(Box<Failure>);

/// The status, the message, and what the last-error API reports.
pub(crate) struct Failure {
    pub(crate) status: tenure_status,
    pub(crate) message: String,
    pub(crate) current_etag: Option<ETag>,
    pub(crate) batch_index: Option<usize>,
}

impl From<Error> for Fail {
    #[cold]
    fn from(error: Error) -> Fail {
        let batch_index = match &error {
            Error::BatchFailed { index, .. } => Some(*index),
            _ => None,
        };
        Fail(Box::new(Failure {
            status: status_of(error.code()),
            message: error.to_string(),
            current_etag: error.current_etag(),
            batch_index,
        }))
    }
}

#[cold]
pub(crate) fn fail(status: tenure_status, message: impl Into<String>) -> Fail {
    Fail(Box::new(Failure {
        status,
        message: message.into(),
        current_etag: None,
        batch_index: None,
    }))
}

#[cold]
pub(crate) fn invalid(argument: &str, reason: impl std::fmt::Display) -> Fail {
    fail(
        TENURE_ERR_INVALID_ARGUMENT,
        format!("InvalidArgument: argument `{argument}`: {reason}"),
    )
}

/// The calling thread's error state: the last call's failure, or nothing after a success.
pub(crate) struct LastError {
    pub(crate) status: tenure_status,
    pub(crate) message: String,
    pub(crate) current_etag: Option<ETag>,
    pub(crate) batch_index: Option<usize>,
}

thread_local! {
    pub(crate) static LAST_ERROR: RefCell<LastError> = const {
        RefCell::new(LastError {
            status: TENURE_OK,
            message: String::new(),
            current_etag: None,
            batch_index: None,
        })
    };
    /// Whether LAST_ERROR holds a failure: one load on the success path, which clears the
    /// state only when there is something to clear.
    static HAS_ERROR: Cell<bool> = const { Cell::new(false) };
}

/// Runs `body` behind the panic boundary and sets the thread's error state: a failure records
/// its status, message, ETag and batch index; a success clears it. The success path is a check
/// of the result and of one thread-local flag; recording and clearing are out of line.
#[inline]
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Fail>) -> tenure_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {
            if HAS_ERROR.try_with(Cell::get).unwrap_or(false) {
                clear();
            }
            TENURE_OK
        }
        Ok(Err(failure)) => record(failure),
        Err(panic) => record(panicked(panic)),
    }
}

/// Runs a reader of the error state behind the panic boundary without changing the state: its
/// own failures (a NULL out-pointer, a short buffer) are returned, never recorded.
#[inline]
pub(crate) fn guard_quiet(body: impl FnOnce() -> Result<(), Fail>) -> tenure_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => TENURE_OK,
        Ok(Err(Fail(failure))) => failure.status,
        Err(_) => TENURE_ERR_PANIC,
    }
}

/// Reads the thread's error state (an empty state when the thread is being torn down).
pub(crate) fn with_last_error<T>(read: impl FnOnce(&LastError) -> T) -> Option<T> {
    LAST_ERROR
        .try_with(|last| last.try_borrow().ok().map(|last| read(&last)))
        .ok()
        .flatten()
}

#[cold]
#[inline(never)]
fn clear() {
    let _ = LAST_ERROR.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            last.status = TENURE_OK;
            last.message.clear();
            last.current_etag = None;
            last.batch_index = None;
        }
    });
    let _ = HAS_ERROR.try_with(|flag| flag.set(false));
}

#[cold]
#[inline(never)]
fn panicked(panic: Box<dyn std::any::Any + Send>) -> Fail {
    let text = panic
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    fail(TENURE_ERR_PANIC, format!("Panic: tenure panicked: {text}"))
}

/// Keeps the failure for this thread's last-error API; returns its status.
#[cold]
#[inline(never)]
fn record(Fail(failure): Fail) -> tenure_status {
    let Failure {
        status,
        message,
        current_etag,
        batch_index,
    } = *failure;
    let _ = LAST_ERROR.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = LastError {
                status,
                message,
                current_etag,
                batch_index,
            };
        }
    });
    let _ = HAS_ERROR.try_with(|flag| flag.set(true));
    status
}

/// A required NUL-terminated UTF-8 string.
///
/// # Safety
/// `pointer` is NULL or points to a NUL-terminated string.
#[inline]
pub(crate) unsafe fn text<'a>(argument: &str, pointer: *const c_char) -> Result<&'a str, Fail> {
    if pointer.is_null() {
        return Err(invalid(argument, "is NULL"));
    }
    // Names are short and mostly ASCII: one pass finds the NUL and checks every byte below it
    // is ASCII (so valid UTF-8). Anything longer or non-ASCII takes the general path below.
    const SHORT: usize = 64;
    let start = pointer.cast::<u8>();
    for length in 0..SHORT {
        // SAFETY: every byte up to and including the terminating NUL is readable, and the loop
        // stops at the NUL.
        let byte = unsafe { *start.add(length) };
        if byte == 0 {
            // SAFETY: `length` readable bytes, each checked to be ASCII.
            return Ok(unsafe {
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(start, length))
            });
        }
        if !byte.is_ascii() {
            break;
        }
    }
    // SAFETY: the caller passes a NUL-terminated string (the documented contract).
    let bytes = unsafe { CStr::from_ptr(pointer) };
    bytes
        .to_str()
        .map_err(|_| invalid(argument, "is not valid UTF-8"))
}

/// An optional string: NULL = absent.
///
/// # Safety
/// As for [`text`].
pub(crate) unsafe fn optional_text<'a>(
    argument: &str,
    pointer: *const c_char,
) -> Result<Option<&'a str>, Fail> {
    if pointer.is_null() {
        return Ok(None);
    }
    // SAFETY: as for `text`.
    unsafe { text(argument, pointer) }.map(Some)
}

/// A key: non-NULL, 1..=max_key_bytes long. Lengths are checked before the slice is formed,
/// so an oversized length never reads past the caller's buffer.
///
/// # Safety
/// `pointer` points to `length` readable bytes when `length` is within the limit.
#[inline]
pub(crate) unsafe fn key<'a>(pointer: *const u8, length: usize) -> Result<&'a [u8], Fail> {
    if pointer.is_null() {
        return Err(invalid("key", "is NULL"));
    }
    let limit = Limits::default().max_key_bytes;
    if length == 0 || length > limit {
        return Err(invalid(
            "key",
            format!("must be 1..={limit} bytes, not {length}"),
        ));
    }
    // SAFETY: non-NULL, and the caller vouches for `length` bytes.
    Ok(unsafe { std::slice::from_raw_parts(pointer, length) })
}

/// A prefix: NULL only with length 0.
///
/// # Safety
/// As for [`key`].
pub(crate) unsafe fn prefix<'a>(
    argument: &'static str,
    pointer: *const u8,
    length: usize,
) -> Result<&'a [u8], Fail> {
    if length == 0 {
        return Ok(&[]);
    }
    if pointer.is_null() {
        return Err(invalid(argument, "is NULL with a non-zero length"));
    }
    let limit = Limits::default().max_key_bytes;
    if length > limit {
        return Err(invalid(argument, format!("must be at most {limit} bytes")));
    }
    // SAFETY: as for `key`.
    Ok(unsafe { std::slice::from_raw_parts(pointer, length) })
}

/// A value: NULL only with length 0; at most max_value_bytes.
///
/// # Safety
/// As for [`key`].
pub(crate) unsafe fn value<'a>(pointer: *const u8, length: usize) -> Result<&'a [u8], Fail> {
    if length == 0 {
        return Ok(&[]);
    }
    if pointer.is_null() {
        return Err(invalid("value", "is NULL with a non-zero length"));
    }
    let limit = Limits::default().max_value_bytes;
    if length > limit {
        return Err(invalid(
            "value",
            format!("must be at most {limit} bytes, not {length}"),
        ));
    }
    // SAFETY: as for `key`.
    Ok(unsafe { std::slice::from_raw_parts(pointer, length) })
}

/// Checks a required out-pointer.
pub(crate) fn out<T>(argument: &str, pointer: *mut T) -> Result<(), Fail> {
    if pointer.is_null() {
        return Err(invalid(argument, "is NULL"));
    }
    Ok(())
}

/// Checks a caller buffer for copy-out: `buffer` may be NULL only when `capacity` is 0.
pub(crate) fn buffer(argument: &str, buffer: *mut u8, capacity: usize) -> Result<(), Fail> {
    if buffer.is_null() && capacity != 0 {
        return Err(invalid(argument, "is NULL with a non-zero capacity"));
    }
    Ok(())
}

/// Copies `bytes` out, or reports the needed size. `length_out` receives the length in both
/// cases (the one documented exception to "written only on success").
///
/// # Safety
/// `buffer` has `capacity` writable bytes; `length_out` is valid (both checked non-NULL before).
pub(crate) unsafe fn copy_out(
    bytes: &[u8],
    buffer: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> Result<(), Fail> {
    // SAFETY: checked non-NULL by the caller of this helper.
    unsafe { *length_out = bytes.len() };
    if bytes.len() > capacity {
        return Err(fail(
            TENURE_ERR_BUFFER_TOO_SMALL,
            format!(
                "BufferTooSmall: {} bytes needed, the buffer holds {capacity}",
                bytes.len()
            ),
        ));
    }
    if !bytes.is_empty() {
        // SAFETY: `buffer` holds `capacity >= bytes.len()` writable bytes, and cannot overlap
        // tenure's own memory.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer, bytes.len()) };
    }
    Ok(())
}

/// Writes `text` and a NUL into a fixed `char` array.
pub(crate) fn fill(target: &mut [c_char], text: &str) {
    debug_assert!(text.len() < target.len());
    target.iter_mut().for_each(|byte| *byte = 0);
    for (slot, byte) in target.iter_mut().zip(text.bytes()) {
        *slot = byte as c_char;
    }
}

/// Every byte as two upper-case hex digits, for [`etag_text`].
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut pairs = [[0u8; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [DIGITS[byte >> 4], DIGITS[byte & 0xF]];
        byte += 1;
    }
    pairs
};

/// An ETag's text, NUL-padded, as C sees it: `"0x` + 16 upper-case hex digits + `"`, formatted
/// in place a byte at a time (no allocation: reads with an ETag out stay cheap).
pub(crate) fn etag_text(etag: ETag) -> [c_char; crate::boundary::TENURE_ETAG_SIZE] {
    let mut text = [0u8; crate::boundary::TENURE_ETAG_SIZE];
    text[..3].copy_from_slice(b"\"0x");
    for (index, byte) in etag.version().to_be_bytes().iter().enumerate() {
        text[3 + 2 * index..5 + 2 * index].copy_from_slice(&HEX_PAIRS[usize::from(*byte)]);
    }
    text[19] = b'"';
    text.map(|byte| byte as c_char)
}

/// Writes an ETag's text into a caller array.
///
/// # Safety
/// `target` holds crate::boundary::TENURE_ETAG_SIZE bytes.
pub(crate) unsafe fn write_etag(etag: ETag, target: *mut c_char) {
    // SAFETY: the caller's contract.
    unsafe {
        target
            .cast::<[c_char; crate::boundary::TENURE_ETAG_SIZE]>()
            .write_unaligned(etag_text(etag))
    };
}

/// Writes the ETag for a caller that asked for it (`target` NULL = not wanted).
///
/// # Safety
/// `target` is NULL or holds crate::boundary::TENURE_ETAG_SIZE bytes.
pub(crate) unsafe fn optional_etag_out(etag: ETag, target: *mut c_char) {
    if !target.is_null() {
        // SAFETY: non-NULL; the caller's contract.
        unsafe { write_etag(etag, target) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_text_is_the_engines_text() {
        for version in [0, 1, 0x4D2, 0x0123_4567_89AB_CDEF, u64::MAX] {
            let text = etag_text(ETag(version));
            let bytes: Vec<u8> = text.iter().map(|byte| *byte as u8).collect();
            let expected = ETag(version).to_text();
            assert_eq!(&bytes[..expected.len()], expected.as_bytes());
            assert!(bytes[expected.len()..].iter().all(|byte| *byte == 0));
        }
    }
}
