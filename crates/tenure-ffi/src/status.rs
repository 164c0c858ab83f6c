//! `tenure_status`: the stable numbers of the C ABI (README.md, "Status codes"). Never renumber.
//!
//! A C enum, so a `switch` over a status gets the compiler's missing-case warning. Rust never
//! receives a `tenure_status` from C (a value outside the enum would be undefined behaviour):
//! the functions that take a status from C (`tenure_status_name`, `tenure_status_http`) take a
//! `uint32_t`.

use std::fmt;

use tenure::ErrorCode;

/// The result of every fallible call: `TENURE_OK` or one of the `TENURE_ERR_*` values. The
/// numbers are fixed: a status is never renumbered or reused, and a new one takes the next free
/// number of its family.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum tenure_status {
    TENURE_OK = 0,
    // 1xx: 304, 400 and 403.
    /// The read's condition group says the caller's copy is current (304).
    TENURE_ERR_NOT_MODIFIED = 100,
    /// A bad argument, named in the message; nothing changed (400).
    TENURE_ERR_INVALID_ARGUMENT = 101,
    /// The store was opened read-only (403).
    TENURE_ERR_READ_ONLY = 102,
    // 2xx: 404, 410.
    TENURE_ERR_NOT_FOUND = 200,
    TENURE_ERR_CONTAINER_NOT_FOUND = 201,
    /// The change-feed position is older than the retained history (410).
    TENURE_ERR_COMPACTED = 202,
    // 3xx: 409.
    TENURE_ERR_ALREADY_EXISTS = 300,
    TENURE_ERR_CONTAINER_ALREADY_EXISTS = 301,
    TENURE_ERR_LEASE_ALREADY_PRESENT = 302,
    TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION = 303,
    TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION = 304,
    TENURE_ERR_LEASE_IS_BROKEN_AND_CANNOT_BE_RENEWED = 305,
    TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_ACQUIRED = 306,
    TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_CHANGED = 307,
    TENURE_ERR_OBJECT_LOCKED = 308,
    // 4xx: 412.
    TENURE_ERR_CONDITION_NOT_MET = 400,
    TENURE_ERR_VERSION_MISMATCH = 401,
    TENURE_ERR_LEASE_ID_MISSING = 402,
    TENURE_ERR_LEASE_ID_MISMATCH_WITH_BLOB_OPERATION = 403,
    TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION = 404,
    TENURE_ERR_LEASE_LOST = 405,
    TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION = 406,
    TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION = 407,
    TENURE_ERR_OBJECT_NOT_LOCKED = 408,
    TENURE_ERR_INVALID_LOCK_HANDLE = 409,
    // 5xx: 423, 424, 500, 503.
    TENURE_ERR_FAILED_DEPENDENCY = 500,
    TENURE_ERR_STORE_LOCKED = 501,
    TENURE_ERR_CORRUPTION = 502,
    TENURE_ERR_IO = 503,
    TENURE_ERR_CLOSED = 504,
    /// The handle was opened in another process and reached this one through `fork()`.
    TENURE_ERR_USED_AFTER_FORK = 505,
    /// Gave up after too many concurrent writes to the same keys; nothing changed.
    TENURE_ERR_BUSY = 506,
    /// The disk or the store's quota is full: the write was refused and nothing changed;
    /// reads, deletes and compaction go on, and writes succeed again once space is freed.
    TENURE_ERR_STORAGE_FULL = 507,
    /// A cluster store's members did not answer within the deadline; the message says whether
    /// a write's outcome is unknown (read the item before writing again).
    TENURE_ERR_UNAVAILABLE = 508,
    // 9xx: the C boundary itself.
    /// tenure panicked; the message says where. Nothing unwinds into C.
    TENURE_ERR_PANIC = 900,
    /// A caller buffer is too small; the length needed was written.
    TENURE_ERR_BUFFER_TOO_SMALL = 901,
}

pub use tenure_status::*;

/// Every status, in number order.
pub(crate) const ALL_STATUSES: [tenure_status; 37] = [
    TENURE_OK,
    TENURE_ERR_NOT_MODIFIED,
    TENURE_ERR_INVALID_ARGUMENT,
    TENURE_ERR_READ_ONLY,
    TENURE_ERR_NOT_FOUND,
    TENURE_ERR_CONTAINER_NOT_FOUND,
    TENURE_ERR_COMPACTED,
    TENURE_ERR_ALREADY_EXISTS,
    TENURE_ERR_CONTAINER_ALREADY_EXISTS,
    TENURE_ERR_LEASE_ALREADY_PRESENT,
    TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION,
    TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION,
    TENURE_ERR_LEASE_IS_BROKEN_AND_CANNOT_BE_RENEWED,
    TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_ACQUIRED,
    TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_CHANGED,
    TENURE_ERR_OBJECT_LOCKED,
    TENURE_ERR_CONDITION_NOT_MET,
    TENURE_ERR_VERSION_MISMATCH,
    TENURE_ERR_LEASE_ID_MISSING,
    TENURE_ERR_LEASE_ID_MISMATCH_WITH_BLOB_OPERATION,
    TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION,
    TENURE_ERR_LEASE_LOST,
    TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION,
    TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION,
    TENURE_ERR_OBJECT_NOT_LOCKED,
    TENURE_ERR_INVALID_LOCK_HANDLE,
    TENURE_ERR_FAILED_DEPENDENCY,
    TENURE_ERR_STORE_LOCKED,
    TENURE_ERR_CORRUPTION,
    TENURE_ERR_IO,
    TENURE_ERR_CLOSED,
    TENURE_ERR_USED_AFTER_FORK,
    TENURE_ERR_BUSY,
    TENURE_ERR_STORAGE_FULL,
    TENURE_ERR_UNAVAILABLE,
    TENURE_ERR_PANIC,
    TENURE_ERR_BUFFER_TOO_SMALL,
];

impl tenure_status {
    /// The status of a number, if it is one.
    pub fn from_number(number: u32) -> Option<tenure_status> {
        ALL_STATUSES
            .iter()
            .copied()
            .find(|status| *status as u32 == number)
    }

    /// The status's number (what C sees).
    pub fn number(self) -> u32 {
        self as u32
    }
}

impl fmt::Display for tenure_status {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = describe(*self as u32).map_or("Unknown", |(name, _)| name);
        write!(formatter, "{} ({name})", *self as u32)
    }
}

/// The statuses of the boundary itself, beside the engine's codes: (status, name, HTTP-style
/// number).
const BOUNDARY_STATUSES: [(tenure_status, &str, u16); 3] = [
    (TENURE_OK, "Ok", 200),
    (TENURE_ERR_PANIC, "Panic", 500),
    (TENURE_ERR_BUFFER_TOO_SMALL, "BufferTooSmall", 400),
];

/// The status of an engine error code: its C number in the engine's one table of codes
/// (`tenure::ErrorCode::abi_number`). A code the enum lacks (a test keeps the two in step) is
/// reported as a panic of the boundary, its message kept.
pub(crate) fn status_of(code: ErrorCode) -> tenure_status {
    tenure_status::from_number(code.abi_number()).unwrap_or(TENURE_ERR_PANIC)
}

/// The name and HTTP-style number of a status number, from the engine's table or the
/// boundary's.
pub(crate) fn describe(status: u32) -> Option<(&'static str, u16)> {
    if let Some(code) = ErrorCode::ALL
        .iter()
        .find(|code| code.abi_number() == status)
    {
        return Some((code.name(), code.status()));
    }
    BOUNDARY_STATUSES
        .iter()
        .find(|(known, _, _)| *known as u32 == status)
        .map(|(_, name, http)| (*name, *http))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The enum (what C programs compile against) is the engine table's numbers, one for one,
    /// plus the boundary's own: a code added to the engine needs its variant here.
    #[test]
    fn every_variant_is_the_engine_tables_number() {
        let engine: Vec<u32> = ErrorCode::ALL
            .iter()
            .map(|code| code.abi_number())
            .collect();
        for code in ErrorCode::ALL {
            let status = tenure_status::from_number(code.abi_number())
                .unwrap_or_else(|| panic!("{code} ({}) has no tenure_status", code.abi_number()));
            let expected = code
                .name()
                .chars()
                .flat_map(|c| {
                    let upper = c.to_ascii_uppercase();
                    if c.is_ascii_uppercase() {
                        vec!['_', upper]
                    } else {
                        vec![upper]
                    }
                })
                .collect::<String>();
            assert_eq!(
                format!("{status:?}"),
                format!("TENURE_ERR{expected}"),
                "the variant of {code} is named after it"
            );
            assert_eq!(describe(status as u32), Some((code.name(), code.status())));
        }
        for status in ALL_STATUSES {
            let boundary = BOUNDARY_STATUSES
                .iter()
                .any(|(known, _, _)| *known == status);
            assert!(
                boundary || engine.contains(&(status as u32)),
                "{status:?} is neither an engine code nor a boundary status"
            );
        }
        assert_eq!(
            ALL_STATUSES.len(),
            ErrorCode::ALL.len() + BOUNDARY_STATUSES.len()
        );
    }

    #[test]
    fn statuses_are_unique_and_in_order() {
        for pair in ALL_STATUSES.windows(2) {
            assert!((pair[0] as u32) < (pair[1] as u32), "{pair:?}");
        }
    }

    #[test]
    fn the_statuses_of_0_1_keep_their_numbers() {
        // The numbers C programs were compiled with: never renumbered.
        let fixed: [(tenure_status, u32); 8] = [
            (TENURE_OK, 0),
            (TENURE_ERR_INVALID_ARGUMENT, 101),
            (TENURE_ERR_NOT_FOUND, 200),
            (TENURE_ERR_OBJECT_LOCKED, 308),
            (TENURE_ERR_CONDITION_NOT_MET, 400),
            (TENURE_ERR_USED_AFTER_FORK, 505),
            (TENURE_ERR_PANIC, 900),
            (TENURE_ERR_BUFFER_TOO_SMALL, 901),
        ];
        for (status, number) in fixed {
            assert_eq!(status as u32, number);
        }
    }
}
