//! One error type for the whole engine. Every error carries a stable code name and the
//! HTTP-style status number of docs/spec.md §12, so Rust, C and Python users see the same
//! thing.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::types::ETag;

/// The one table of error codes: name, HTTP-style status, the stable number of the C ABI's
/// `tenure_status`, and the meaning (docs/spec.md §12). `ErrorCode`, its name, status and
/// meaning, the C statuses (`crates/tenure-ffi`, checked against this table by a test), the
/// Python exception classes (built from `ErrorCode::ALL` by the native module) and the CLI's
/// messages and exit codes all come from here. Names and numbers never change once released;
/// a new code takes the next C number of its status family.
macro_rules! error_codes {
    ($($(#[$attribute:meta])* $code:ident = $status:literal, $c_number:literal, $meaning:literal;)*) => {
        /// The stable code names of docs/spec.md §12.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[$attribute])* #[doc = $meaning] $code,)*
        }

        impl ErrorCode {
            /// Every code, in the order of docs/spec.md §12.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$code,)*];

            /// The code name exactly as docs/spec.md §12 spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$code => stringify!($code),)*
                }
            }

            /// The HTTP-style status number of docs/spec.md §12.
            pub fn status(self) -> u16 {
                match self {
                    $(ErrorCode::$code => $status,)*
                }
            }

            /// The code's number in the C ABI (`tenure_status`).
            pub fn abi_number(self) -> u32 {
                match self {
                    $(ErrorCode::$code => $c_number,)*
                }
            }

            /// What the code means, in one line (docs/spec.md §12).
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$code => $meaning,)*
                }
            }
        }
    };
}

error_codes! {
    NotModified = 304, 100, "the read's condition group says the caller's copy is current";
    InvalidArgument = 400, 101, "a bad argument (named, with why); nothing changed";
    ReadOnly = 403, 102, "the store was opened read-only; nothing changed";
    NotFound = 404, 200, "the item does not exist (or has expired)";
    ContainerNotFound = 404, 201, "the container does not exist";
    Compacted = 410, 202, "the change-feed position is older than the retained history; resume from the oldest available version";
    AlreadyExists = 409, 300, "create-only write of an item that exists";
    ContainerAlreadyExists = 409, 301, "a container of that name exists";
    LeaseAlreadyPresent = 409, 302, "the item or container is leased (or locked) by someone else";
    LeaseIdMismatchWithLeaseOperation = 409, 303, "the lease id given is not the current lease's";
    LeaseNotPresentWithLeaseOperation = 409, 304, "there is no live lease to act on";
    LeaseIsBrokenAndCannotBeRenewed = 409, 305, "the lease was broken; acquire a new one";
    LeaseIsBreakingAndCannotBeAcquired = 409, 306, "the lease is breaking; wait for its break period to end";
    LeaseIsBreakingAndCannotBeChanged = 409, 307, "the lease is breaking and cannot be changed";
    ObjectLocked = 409, 308, "the item is locked (get-and-lock) or leased by someone else";
    ConditionNotMet = 412, 400, "a write or read condition does not hold; nothing changed";
    VersionMismatch = 412, 401, "the item is not at the version given (if_version); nothing changed";
    LeaseIdMissing = 412, 402, "the item or container is leased: pass its lease id to write it";
    LeaseIdMismatchWithBlobOperation = 412, 403, "the lease id given is not the item's current lease";
    LeaseNotPresentWithBlobOperation = 412, 404, "a lease id was given but the item has no lease";
    LeaseLost = 412, 405, "the lease given has expired or was broken";
    LeaseIdMismatchWithContainerOperation = 412, 406, "the lease id given is not the container's current lease";
    LeaseNotPresentWithContainerOperation = 412, 407, "a lease id was given but the container has no lease";
    ObjectNotLocked = 412, 408, "a lock handle was given but the item is not locked";
    InvalidLockHandle = 412, 409, "the lock handle given is not the item's current lock";
    FailedDependency = 424, 500, "another operation of the batch failed";
    StoreLocked = 423, 501, "another process has the store open";
    Corruption = 500, 502, "a checksum or structure check failed (file and offset named)";
    Io = 500, 503, "the operating system refused (errno and path named)";
    Closed = 500, 504, "the store was closed";
    UsedAfterFork = 500, 505, "the store was opened by another process and reached this one through fork(); open it here";
    Busy = 503, 506, "gave up after too many concurrent writes to the same keys; nothing changed; try again";
    Unavailable = 503, 508, "the cluster did not answer within the deadline (no quorum, or no member reachable); the message says whether the write's outcome is unknown";
    StorageFull = 507, 507, "the disk or the store's quota is full: the write was refused and nothing changed; reads, deletes and compaction go on, and writes succeed again once space is freed";
}

impl ErrorCode {
    /// Looks a code up by its name.
    pub fn from_name(name: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .iter()
            .copied()
            .find(|code| code.name() == name)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Everything that can go wrong in tenure.
///
/// A refusal by the rules (a failed condition, a lease or lock in the way, a missing item) is a
/// [`Error::Rejected`]: an expected outcome, carrying the item's current ETag where one exists so
/// the caller can decide without another read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// A bad argument; nothing was looked up or changed.
    InvalidArgument {
        argument: &'static str,
        reason: String,
    },
    /// The rules refused the operation (304, 404, 409, 412).
    Rejected {
        code: ErrorCode,
        current_etag: Option<ETag>,
    },
    /// One operation of a batch failed; the others report `FailedDependency`.
    BatchFailed {
        index: usize,
        error: Box<Error>,
        operation_count: usize,
    },
    /// Another open handle (this process or another) holds the store.
    StoreLocked { path: PathBuf },
    /// A checksum or structure check failed.
    Corruption {
        file: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The operating system refused. After a failed flush the store is poisoned and every
    /// later write fails with this until it is reopened.
    Io {
        path: PathBuf,
        operation: &'static str,
        source: Arc<std::io::Error>,
    },
    /// The change-feed position `since` is older than the history the store keeps: changes
    /// before `oldest_available` were compacted away.
    Compacted {
        since: crate::types::Version,
        oldest_available: crate::types::Version,
    },
    /// The store was closed.
    Closed,
    /// The handle was opened in another process and reached this one through `fork()`: a
    /// forked child opens the store itself.
    UsedAfterFork { opened_by_pid: u32 },
    /// The disk, or the store's quota, has no room for this write: it was refused before it
    /// took a version, and nothing changed. Deletes and compaction may still use the reserve
    /// held back for them (`StoreOptions::space_reserve_bytes`); once they or the operating
    /// system free space, writes succeed again.
    StorageFull {
        path: PathBuf,
        /// Bytes the write needed allocated.
        needed_bytes: u64,
        /// Bytes free on the device, where it can tell.
        free_bytes: Option<u64>,
        reserve_bytes: u64,
        /// Bytes the store's segments take on disk, and its quota if it has one.
        store_bytes: u64,
        quota_bytes: Option<u64>,
    },
    /// A cluster backend got no answer from a quorum within the deadline. With
    /// `outcome_unknown`, a write was sent and may or may not have been committed: read the
    /// item before retrying. Without it, nothing was committed.
    Unavailable {
        endpoints: String,
        reason: String,
        outcome_unknown: bool,
    },
}

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Error::Rejected { code, .. } => *code,
            Error::BatchFailed { error, .. } => error.code(),
            Error::StoreLocked { .. } => ErrorCode::StoreLocked,
            Error::Corruption { .. } => ErrorCode::Corruption,
            Error::Io { .. } => ErrorCode::Io,
            Error::Compacted { .. } => ErrorCode::Compacted,
            Error::Closed => ErrorCode::Closed,
            Error::UsedAfterFork { .. } => ErrorCode::UsedAfterFork,
            Error::StorageFull { .. } => ErrorCode::StorageFull,
            Error::Unavailable { .. } => ErrorCode::Unavailable,
        }
    }

    pub fn status(&self) -> u16 {
        self.code().status()
    }

    /// The item's current ETag, reported with a precondition failure where the item exists.
    pub fn current_etag(&self) -> Option<ETag> {
        match self {
            Error::Rejected { current_etag, .. } => *current_etag,
            Error::BatchFailed { error, .. } => error.current_etag(),
            _ => None,
        }
    }

    pub fn invalid(argument: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument {
            argument,
            reason: reason.into(),
        }
    }

    pub fn rejected(code: ErrorCode) -> Error {
        Error::Rejected {
            code,
            current_etag: None,
        }
    }

    pub fn io(path: impl Into<PathBuf>, operation: &'static str, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            operation,
            source: Arc::new(source),
        }
    }

    pub(crate) fn corruption(
        file: impl Into<PathBuf>,
        offset: u64,
        reason: impl Into<String>,
    ) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument { argument, reason } => {
                write!(
                    formatter,
                    "InvalidArgument: argument `{argument}`: {reason}"
                )
            }
            Error::Rejected { code, current_etag } => {
                write!(formatter, "{code} ({})", code.status())?;
                if let Some(etag) = current_etag {
                    write!(formatter, ", current ETag {etag}")?;
                }
                Ok(())
            }
            Error::BatchFailed { index, error, .. } => {
                write!(formatter, "batch operation {index} failed: {error}")
            }
            Error::StoreLocked { path } => write!(
                formatter,
                "StoreLocked: the store at {} is already open (in this or another process)",
                path.display()
            ),
            Error::Corruption {
                file,
                offset,
                reason,
            } => write!(
                formatter,
                "Corruption: {} at offset {offset}: {reason}",
                file.display()
            ),
            Error::Io {
                path,
                operation,
                source,
            } => write!(
                formatter,
                "Io: {operation} {} failed: {source} (errno {})",
                path.display(),
                source.raw_os_error().unwrap_or(0)
            ),
            Error::Compacted {
                since,
                oldest_available,
            } => write!(
                formatter,
                "Compacted (410): changes after version {since} were compacted away; the oldest \
                 available version is {oldest_available} (resume from {})",
                oldest_available - 1
            ),
            Error::Closed => formatter.write_str("Closed: the store was closed"),
            Error::UsedAfterFork { opened_by_pid } => write!(
                formatter,
                "UsedAfterFork: this store handle was opened by process {opened_by_pid} and \
                 reached process {} through fork(); open the store in the child instead",
                std::process::id()
            ),
            Error::StorageFull {
                path,
                needed_bytes,
                free_bytes,
                reserve_bytes,
                store_bytes,
                quota_bytes,
            } => {
                write!(
                    formatter,
                    "StorageFull (507): no room to write {needed_bytes} more bytes under {}: ",
                    path.display()
                )?;
                match (quota_bytes, free_bytes) {
                    (Some(quota), _) if store_bytes + needed_bytes > *quota => write!(
                        formatter,
                        "the store takes {store_bytes} bytes of its {quota}-byte quota"
                    )?,
                    (_, Some(free)) => write!(
                        formatter,
                        "the disk has {free} bytes free and the store keeps {reserve_bytes} \
                         of them in reserve for deletes and compaction"
                    )?,
                    _ => formatter.write_str("the disk is full")?,
                }
                formatter.write_str(
                    "; nothing changed. Delete items and compact (or free disk space), then \
                     write again",
                )
            }
            Error::Unavailable {
                endpoints,
                reason,
                outcome_unknown,
            } => {
                write!(
                    formatter,
                    "Unavailable (503): the cluster at {endpoints} {reason}; "
                )?;
                formatter.write_str(if *outcome_unknown {
                    "the write was sent and its outcome is unknown: read the item before \
                     writing again"
                } else {
                    "nothing was committed"
                })
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
