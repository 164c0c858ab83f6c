//! One error type for the whole engine. Every error carries a stable code name and the
//! HTTP-style status number of SPEC §12, so Rust, C and Python users see the same thing.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::types::ETag;

/// The stable code names of SPEC §12. Numbers and names never change once released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorCode {
    NotModified,
    InvalidArgument,
    NotFound,
    ContainerNotFound,
    AlreadyExists,
    ContainerAlreadyExists,
    LeaseAlreadyPresent,
    LeaseIdMismatchWithLeaseOperation,
    LeaseNotPresentWithLeaseOperation,
    LeaseIsBrokenAndCannotBeRenewed,
    LeaseIsBreakingAndCannotBeAcquired,
    LeaseIsBreakingAndCannotBeChanged,
    ObjectLocked,
    ConditionNotMet,
    VersionMismatch,
    LeaseIdMissing,
    LeaseIdMismatchWithBlobOperation,
    LeaseNotPresentWithBlobOperation,
    LeaseLost,
    LeaseIdMismatchWithContainerOperation,
    LeaseNotPresentWithContainerOperation,
    ObjectNotLocked,
    InvalidLockHandle,
    FailedDependency,
    StoreLocked,
    Corruption,
    Io,
    Closed,
    UsedAfterFork,
}

impl ErrorCode {
    /// Every code, in the order of SPEC §12.
    pub const ALL: [ErrorCode; 29] = [
        ErrorCode::NotModified,
        ErrorCode::InvalidArgument,
        ErrorCode::NotFound,
        ErrorCode::ContainerNotFound,
        ErrorCode::AlreadyExists,
        ErrorCode::ContainerAlreadyExists,
        ErrorCode::LeaseAlreadyPresent,
        ErrorCode::LeaseIdMismatchWithLeaseOperation,
        ErrorCode::LeaseNotPresentWithLeaseOperation,
        ErrorCode::LeaseIsBrokenAndCannotBeRenewed,
        ErrorCode::LeaseIsBreakingAndCannotBeAcquired,
        ErrorCode::LeaseIsBreakingAndCannotBeChanged,
        ErrorCode::ObjectLocked,
        ErrorCode::ConditionNotMet,
        ErrorCode::VersionMismatch,
        ErrorCode::LeaseIdMissing,
        ErrorCode::LeaseIdMismatchWithBlobOperation,
        ErrorCode::LeaseNotPresentWithBlobOperation,
        ErrorCode::LeaseLost,
        ErrorCode::LeaseIdMismatchWithContainerOperation,
        ErrorCode::LeaseNotPresentWithContainerOperation,
        ErrorCode::ObjectNotLocked,
        ErrorCode::InvalidLockHandle,
        ErrorCode::FailedDependency,
        ErrorCode::StoreLocked,
        ErrorCode::Corruption,
        ErrorCode::Io,
        ErrorCode::Closed,
        ErrorCode::UsedAfterFork,
    ];

    /// The code name exactly as SPEC §12 spells it.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::NotModified => "NotModified",
            ErrorCode::InvalidArgument => "InvalidArgument",
            ErrorCode::NotFound => "NotFound",
            ErrorCode::ContainerNotFound => "ContainerNotFound",
            ErrorCode::AlreadyExists => "AlreadyExists",
            ErrorCode::ContainerAlreadyExists => "ContainerAlreadyExists",
            ErrorCode::LeaseAlreadyPresent => "LeaseAlreadyPresent",
            ErrorCode::LeaseIdMismatchWithLeaseOperation => "LeaseIdMismatchWithLeaseOperation",
            ErrorCode::LeaseNotPresentWithLeaseOperation => "LeaseNotPresentWithLeaseOperation",
            ErrorCode::LeaseIsBrokenAndCannotBeRenewed => "LeaseIsBrokenAndCannotBeRenewed",
            ErrorCode::LeaseIsBreakingAndCannotBeAcquired => "LeaseIsBreakingAndCannotBeAcquired",
            ErrorCode::LeaseIsBreakingAndCannotBeChanged => "LeaseIsBreakingAndCannotBeChanged",
            ErrorCode::ObjectLocked => "ObjectLocked",
            ErrorCode::ConditionNotMet => "ConditionNotMet",
            ErrorCode::VersionMismatch => "VersionMismatch",
            ErrorCode::LeaseIdMissing => "LeaseIdMissing",
            ErrorCode::LeaseIdMismatchWithBlobOperation => "LeaseIdMismatchWithBlobOperation",
            ErrorCode::LeaseNotPresentWithBlobOperation => "LeaseNotPresentWithBlobOperation",
            ErrorCode::LeaseLost => "LeaseLost",
            ErrorCode::LeaseIdMismatchWithContainerOperation => {
                "LeaseIdMismatchWithContainerOperation"
            }
            ErrorCode::LeaseNotPresentWithContainerOperation => {
                "LeaseNotPresentWithContainerOperation"
            }
            ErrorCode::ObjectNotLocked => "ObjectNotLocked",
            ErrorCode::InvalidLockHandle => "InvalidLockHandle",
            ErrorCode::FailedDependency => "FailedDependency",
            ErrorCode::StoreLocked => "StoreLocked",
            ErrorCode::Corruption => "Corruption",
            ErrorCode::Io => "Io",
            ErrorCode::Closed => "Closed",
            ErrorCode::UsedAfterFork => "UsedAfterFork",
        }
    }

    /// The HTTP-style status number of SPEC §12.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::NotModified => 304,
            ErrorCode::InvalidArgument => 400,
            ErrorCode::NotFound | ErrorCode::ContainerNotFound => 404,
            ErrorCode::AlreadyExists
            | ErrorCode::ContainerAlreadyExists
            | ErrorCode::LeaseAlreadyPresent
            | ErrorCode::LeaseIdMismatchWithLeaseOperation
            | ErrorCode::LeaseNotPresentWithLeaseOperation
            | ErrorCode::LeaseIsBrokenAndCannotBeRenewed
            | ErrorCode::LeaseIsBreakingAndCannotBeAcquired
            | ErrorCode::LeaseIsBreakingAndCannotBeChanged
            | ErrorCode::ObjectLocked => 409,
            ErrorCode::ConditionNotMet
            | ErrorCode::VersionMismatch
            | ErrorCode::LeaseIdMissing
            | ErrorCode::LeaseIdMismatchWithBlobOperation
            | ErrorCode::LeaseNotPresentWithBlobOperation
            | ErrorCode::LeaseLost
            | ErrorCode::LeaseIdMismatchWithContainerOperation
            | ErrorCode::LeaseNotPresentWithContainerOperation
            | ErrorCode::ObjectNotLocked
            | ErrorCode::InvalidLockHandle => 412,
            ErrorCode::StoreLocked => 423,
            ErrorCode::FailedDependency => 424,
            ErrorCode::Corruption
            | ErrorCode::Io
            | ErrorCode::Closed
            | ErrorCode::UsedAfterFork => 500,
        }
    }

    /// Looks a code up by its SPEC name.
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
    /// The store was closed.
    Closed,
    /// The handle was opened in another process and reached this one through `fork()`: a
    /// forked child opens the store itself.
    UsedAfterFork { opened_by_pid: u32 },
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
            Error::Closed => ErrorCode::Closed,
            Error::UsedAfterFork { .. } => ErrorCode::UsedAfterFork,
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

    pub(crate) fn invalid(argument: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument {
            argument,
            reason: reason.into(),
        }
    }

    pub(crate) fn rejected(code: ErrorCode) -> Error {
        Error::Rejected {
            code,
            current_etag: None,
        }
    }

    pub(crate) fn io(
        path: impl Into<PathBuf>,
        operation: &'static str,
        source: std::io::Error,
    ) -> Error {
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
            Error::Closed => formatter.write_str("Closed: the store was closed"),
            Error::UsedAfterFork { opened_by_pid } => write!(
                formatter,
                "UsedAfterFork: this store handle was opened by process {opened_by_pid} and \
                 reached process {} through fork(); open the store in the child instead",
                std::process::id()
            ),
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
