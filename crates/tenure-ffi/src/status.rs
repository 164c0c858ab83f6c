//! `tenure_status`: the stable numbers of the C ABI (README.md, "Status codes"). Never renumber.

use tenure::ErrorCode;

/// The result of every fallible call: `TENURE_OK` or one of the `TENURE_ERR_*` values.
pub type tenure_status = u32;

pub const TENURE_OK: tenure_status = 0;

// 1xx: 304, 400 and 403.
pub const TENURE_ERR_NOT_MODIFIED: tenure_status = 100;
pub const TENURE_ERR_INVALID_ARGUMENT: tenure_status = 101;
/// The store was opened read-only (403).
pub const TENURE_ERR_READ_ONLY: tenure_status = 102;
// 2xx: 404, 410.
pub const TENURE_ERR_NOT_FOUND: tenure_status = 200;
pub const TENURE_ERR_CONTAINER_NOT_FOUND: tenure_status = 201;
/// The change-feed position is older than the retained history (410).
pub const TENURE_ERR_COMPACTED: tenure_status = 202;
// 3xx: 409.
pub const TENURE_ERR_ALREADY_EXISTS: tenure_status = 300;
pub const TENURE_ERR_CONTAINER_ALREADY_EXISTS: tenure_status = 301;
pub const TENURE_ERR_LEASE_ALREADY_PRESENT: tenure_status = 302;
pub const TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION: tenure_status = 303;
pub const TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION: tenure_status = 304;
pub const TENURE_ERR_LEASE_IS_BROKEN_AND_CANNOT_BE_RENEWED: tenure_status = 305;
pub const TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_ACQUIRED: tenure_status = 306;
pub const TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_CHANGED: tenure_status = 307;
pub const TENURE_ERR_OBJECT_LOCKED: tenure_status = 308;
// 4xx: 412.
pub const TENURE_ERR_CONDITION_NOT_MET: tenure_status = 400;
pub const TENURE_ERR_VERSION_MISMATCH: tenure_status = 401;
pub const TENURE_ERR_LEASE_ID_MISSING: tenure_status = 402;
pub const TENURE_ERR_LEASE_ID_MISMATCH_WITH_BLOB_OPERATION: tenure_status = 403;
pub const TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION: tenure_status = 404;
pub const TENURE_ERR_LEASE_LOST: tenure_status = 405;
pub const TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION: tenure_status = 406;
pub const TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION: tenure_status = 407;
pub const TENURE_ERR_OBJECT_NOT_LOCKED: tenure_status = 408;
pub const TENURE_ERR_INVALID_LOCK_HANDLE: tenure_status = 409;
// 5xx: 423, 424, 500, 503.
pub const TENURE_ERR_FAILED_DEPENDENCY: tenure_status = 500;
pub const TENURE_ERR_STORE_LOCKED: tenure_status = 501;
pub const TENURE_ERR_CORRUPTION: tenure_status = 502;
pub const TENURE_ERR_IO: tenure_status = 503;
pub const TENURE_ERR_CLOSED: tenure_status = 504;
/// The handle was opened in another process and reached this one through `fork()`.
pub const TENURE_ERR_USED_AFTER_FORK: tenure_status = 505;
/// Gave up after too many concurrent writes to the same keys; nothing changed.
pub const TENURE_ERR_BUSY: tenure_status = 506;
// 9xx: the C boundary itself.
pub const TENURE_ERR_PANIC: tenure_status = 900;
pub const TENURE_ERR_BUFFER_TOO_SMALL: tenure_status = 901;

/// The statuses of the boundary itself, beside the engine's codes: (status, name, HTTP-style
/// number).
const BOUNDARY_STATUSES: [(tenure_status, &str, u16); 3] = [
    (TENURE_OK, "Ok", 200),
    (TENURE_ERR_PANIC, "Panic", 500),
    (TENURE_ERR_BUFFER_TOO_SMALL, "BufferTooSmall", 400),
];

/// The status of an engine error code: its C number in the engine's one table of codes
/// (`tenure::ErrorCode::abi_number`).
pub(crate) fn status_of(code: ErrorCode) -> tenure_status {
    code.abi_number()
}

/// The name and HTTP-style number of a status, from the engine's table or the boundary's.
pub(crate) fn describe(status: tenure_status) -> Option<(&'static str, u16)> {
    if let Some(code) = ErrorCode::ALL
        .iter()
        .find(|code| code.abi_number() == status)
    {
        return Some((code.name(), code.status()));
    }
    BOUNDARY_STATUSES
        .iter()
        .find(|(known, _, _)| *known == status)
        .map(|(_, name, http)| (*name, *http))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header's constants (what C programs compile against) are the engine table's
    /// numbers, one for one: a code added to the engine needs its constant here.
    #[test]
    fn every_constant_is_the_engine_tables_number() {
        let constants: [(tenure_status, &str); 32] = [
            (TENURE_ERR_NOT_MODIFIED, "NotModified"),
            (TENURE_ERR_INVALID_ARGUMENT, "InvalidArgument"),
            (TENURE_ERR_READ_ONLY, "ReadOnly"),
            (TENURE_ERR_NOT_FOUND, "NotFound"),
            (TENURE_ERR_CONTAINER_NOT_FOUND, "ContainerNotFound"),
            (TENURE_ERR_COMPACTED, "Compacted"),
            (TENURE_ERR_ALREADY_EXISTS, "AlreadyExists"),
            (
                TENURE_ERR_CONTAINER_ALREADY_EXISTS,
                "ContainerAlreadyExists",
            ),
            (TENURE_ERR_LEASE_ALREADY_PRESENT, "LeaseAlreadyPresent"),
            (
                TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION,
                "LeaseIdMismatchWithLeaseOperation",
            ),
            (
                TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION,
                "LeaseNotPresentWithLeaseOperation",
            ),
            (
                TENURE_ERR_LEASE_IS_BROKEN_AND_CANNOT_BE_RENEWED,
                "LeaseIsBrokenAndCannotBeRenewed",
            ),
            (
                TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_ACQUIRED,
                "LeaseIsBreakingAndCannotBeAcquired",
            ),
            (
                TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_CHANGED,
                "LeaseIsBreakingAndCannotBeChanged",
            ),
            (TENURE_ERR_OBJECT_LOCKED, "ObjectLocked"),
            (TENURE_ERR_CONDITION_NOT_MET, "ConditionNotMet"),
            (TENURE_ERR_VERSION_MISMATCH, "VersionMismatch"),
            (TENURE_ERR_LEASE_ID_MISSING, "LeaseIdMissing"),
            (
                TENURE_ERR_LEASE_ID_MISMATCH_WITH_BLOB_OPERATION,
                "LeaseIdMismatchWithBlobOperation",
            ),
            (
                TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION,
                "LeaseNotPresentWithBlobOperation",
            ),
            (TENURE_ERR_LEASE_LOST, "LeaseLost"),
            (
                TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION,
                "LeaseIdMismatchWithContainerOperation",
            ),
            (
                TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION,
                "LeaseNotPresentWithContainerOperation",
            ),
            (TENURE_ERR_OBJECT_NOT_LOCKED, "ObjectNotLocked"),
            (TENURE_ERR_INVALID_LOCK_HANDLE, "InvalidLockHandle"),
            (TENURE_ERR_FAILED_DEPENDENCY, "FailedDependency"),
            (TENURE_ERR_STORE_LOCKED, "StoreLocked"),
            (TENURE_ERR_CORRUPTION, "Corruption"),
            (TENURE_ERR_IO, "Io"),
            (TENURE_ERR_CLOSED, "Closed"),
            (TENURE_ERR_USED_AFTER_FORK, "UsedAfterFork"),
            (TENURE_ERR_BUSY, "Busy"),
        ];
        assert_eq!(constants.len(), ErrorCode::ALL.len());
        for (constant, name) in constants {
            let code = ErrorCode::from_name(name).expect("an engine code");
            assert_eq!(constant, code.abi_number(), "{name}");
            assert_eq!(describe(constant), Some((name, code.status())));
        }
    }

    #[test]
    fn statuses_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert!(seen.insert(code.abi_number()), "{code}");
        }
        for (status, _, _) in BOUNDARY_STATUSES {
            assert!(seen.insert(status));
        }
    }
}
