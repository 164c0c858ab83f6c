//! `tenure_status`: the stable numbers of the C ABI (README.md, "Status codes"). Never renumber.

use tenure::ErrorCode;

/// The result of every fallible call: `TENURE_OK` or one of the `TENURE_ERR_*` values.
pub type tenure_status = u32;

pub const TENURE_OK: tenure_status = 0;

// 1xx: 304 and 400.
pub const TENURE_ERR_NOT_MODIFIED: tenure_status = 100;
pub const TENURE_ERR_INVALID_ARGUMENT: tenure_status = 101;
// 2xx: 404.
pub const TENURE_ERR_NOT_FOUND: tenure_status = 200;
pub const TENURE_ERR_CONTAINER_NOT_FOUND: tenure_status = 201;
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
// 5xx: 423, 424, 500.
pub const TENURE_ERR_FAILED_DEPENDENCY: tenure_status = 500;
pub const TENURE_ERR_STORE_LOCKED: tenure_status = 501;
pub const TENURE_ERR_CORRUPTION: tenure_status = 502;
pub const TENURE_ERR_IO: tenure_status = 503;
pub const TENURE_ERR_CLOSED: tenure_status = 504;
/// The handle was opened in another process and reached this one through `fork()`.
pub const TENURE_ERR_USED_AFTER_FORK: tenure_status = 505;
// 9xx: the C boundary itself.
pub const TENURE_ERR_PANIC: tenure_status = 900;
pub const TENURE_ERR_BUFFER_TOO_SMALL: tenure_status = 901;

/// (status, SPEC §12 name, HTTP-style number) for every status.
pub(crate) const TABLE: [(tenure_status, &str, u16); 32] = [
    (TENURE_OK, "Ok", 200),
    (TENURE_ERR_NOT_MODIFIED, "NotModified", 304),
    (TENURE_ERR_INVALID_ARGUMENT, "InvalidArgument", 400),
    (TENURE_ERR_NOT_FOUND, "NotFound", 404),
    (TENURE_ERR_CONTAINER_NOT_FOUND, "ContainerNotFound", 404),
    (TENURE_ERR_ALREADY_EXISTS, "AlreadyExists", 409),
    (
        TENURE_ERR_CONTAINER_ALREADY_EXISTS,
        "ContainerAlreadyExists",
        409,
    ),
    (TENURE_ERR_LEASE_ALREADY_PRESENT, "LeaseAlreadyPresent", 409),
    (
        TENURE_ERR_LEASE_ID_MISMATCH_WITH_LEASE_OPERATION,
        "LeaseIdMismatchWithLeaseOperation",
        409,
    ),
    (
        TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION,
        "LeaseNotPresentWithLeaseOperation",
        409,
    ),
    (
        TENURE_ERR_LEASE_IS_BROKEN_AND_CANNOT_BE_RENEWED,
        "LeaseIsBrokenAndCannotBeRenewed",
        409,
    ),
    (
        TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_ACQUIRED,
        "LeaseIsBreakingAndCannotBeAcquired",
        409,
    ),
    (
        TENURE_ERR_LEASE_IS_BREAKING_AND_CANNOT_BE_CHANGED,
        "LeaseIsBreakingAndCannotBeChanged",
        409,
    ),
    (TENURE_ERR_OBJECT_LOCKED, "ObjectLocked", 409),
    (TENURE_ERR_CONDITION_NOT_MET, "ConditionNotMet", 412),
    (TENURE_ERR_VERSION_MISMATCH, "VersionMismatch", 412),
    (TENURE_ERR_LEASE_ID_MISSING, "LeaseIdMissing", 412),
    (
        TENURE_ERR_LEASE_ID_MISMATCH_WITH_BLOB_OPERATION,
        "LeaseIdMismatchWithBlobOperation",
        412,
    ),
    (
        TENURE_ERR_LEASE_NOT_PRESENT_WITH_BLOB_OPERATION,
        "LeaseNotPresentWithBlobOperation",
        412,
    ),
    (TENURE_ERR_LEASE_LOST, "LeaseLost", 412),
    (
        TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION,
        "LeaseIdMismatchWithContainerOperation",
        412,
    ),
    (
        TENURE_ERR_LEASE_NOT_PRESENT_WITH_CONTAINER_OPERATION,
        "LeaseNotPresentWithContainerOperation",
        412,
    ),
    (TENURE_ERR_OBJECT_NOT_LOCKED, "ObjectNotLocked", 412),
    (TENURE_ERR_INVALID_LOCK_HANDLE, "InvalidLockHandle", 412),
    (TENURE_ERR_FAILED_DEPENDENCY, "FailedDependency", 424),
    (TENURE_ERR_STORE_LOCKED, "StoreLocked", 423),
    (TENURE_ERR_CORRUPTION, "Corruption", 500),
    (TENURE_ERR_IO, "Io", 500),
    (TENURE_ERR_CLOSED, "Closed", 500),
    (TENURE_ERR_USED_AFTER_FORK, "UsedAfterFork", 500),
    (TENURE_ERR_PANIC, "Panic", 500),
    (TENURE_ERR_BUFFER_TOO_SMALL, "BufferTooSmall", 400),
];

/// The status of an engine error code, found by its SPEC name (so a code added to the engine
/// without a status here is caught by the test below, not silently misnumbered).
pub(crate) fn status_of(code: ErrorCode) -> tenure_status {
    let name = code.name();
    TABLE
        .iter()
        .find(|(_, table_name, _)| *table_name == name)
        .map(|(status, _, _)| *status)
        .unwrap_or(TENURE_ERR_IO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_code_has_a_status_with_the_same_http_number() {
        for code in ErrorCode::ALL {
            let entry = TABLE
                .iter()
                .find(|(_, name, _)| *name == code.name())
                .unwrap_or_else(|| panic!("{code} has no tenure_status"));
            assert_eq!(entry.2, code.status(), "{code}");
        }
    }

    #[test]
    fn statuses_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (status, _, _) in TABLE {
            assert!(seen.insert(status));
        }
    }
}
