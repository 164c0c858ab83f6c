"""tenure: an embedded key/value and blob store with the concurrency controls of the big cloud
stores — ETags and conditions, leases, cache locks — over a checksummed log.

    import tenure

    with tenure.open("my-store") as store:
        inventory = store.create_container("inventory", exist_ok=True)
        etag = inventory.put("RadioInventory", b"10")
        inventory.put("RadioInventory", b"9", if_match=etag)   # ConditionNotMet if it moved

The behaviour contract is docs/spec.md of the tenure project; every error is a subclass of
`TenureError` carrying the code name of docs/spec.md §12 (`.code`), its status number (`.status`) and, for a
refused precondition, the item's current ETag (`.etag`).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

from ._tenure import (
    Batch,
    Change,
    ChangeIterator,
    Container,
    Item,
    ItemIterator,
    Lease,
    LeaseInfo,
    LockHandle,
    ManualClock,
    Page,
    Snapshot,
    Store,
    __version__,
    open,
)

__all__ = [
    "open",
    "Store",
    "Change",
    "ChangeIterator",
    "Container",
    "Item",
    "ItemIterator",
    "Page",
    "Snapshot",
    "Batch",
    "Lease",
    "LeaseInfo",
    "LockHandle",
    "ManualClock",
    "TenureError",
    "NotModified",
    "InvalidArgument",
    "NotFound",
    "ContainerNotFound",
    "Conflict",
    "AlreadyExists",
    "ContainerAlreadyExists",
    "LeaseAlreadyPresent",
    "LeaseIdMismatchWithLeaseOperation",
    "LeaseNotPresentWithLeaseOperation",
    "LeaseIsBrokenAndCannotBeRenewed",
    "LeaseIsBreakingAndCannotBeAcquired",
    "LeaseIsBreakingAndCannotBeChanged",
    "ObjectLocked",
    "PreconditionFailed",
    "ConditionNotMet",
    "VersionMismatch",
    "LeaseIdMissing",
    "LeaseIdMismatchWithBlobOperation",
    "LeaseNotPresentWithBlobOperation",
    "LeaseLost",
    "LeaseIdMismatchWithContainerOperation",
    "LeaseNotPresentWithContainerOperation",
    "ObjectNotLocked",
    "InvalidLockHandle",
    "FailedDependency",
    "StoreLocked",
    "StorageError",
    "Corruption",
    "Io",
    "Closed",
    "UsedAfterFork",
    "Busy",
    "Compacted",
    "ReadOnly",
    "ERROR_CODES",
]


# ----- the exception tree (docs/spec.md §12) -----


class TenureError(Exception):
    """Base of every tenure error.

    ``code`` is the docs/spec.md §12 code name, ``status`` its HTTP-style number, ``etag`` the item's
    current ETag where a refused precondition reports one (else ``None``).
    """

    code: str = "TenureError"
    status: int = 500

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.etag = etag


class NotModified(TenureError):
    """304: the read condition group says the caller's copy is current."""

    code = "NotModified"
    status = 304


class InvalidArgument(TenureError, ValueError):
    """400: a bad argument (``argument`` names it); nothing changed."""

    code = "InvalidArgument"
    status = 400

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        argument: Optional[str] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag)
        self.argument = argument


class NotFound(TenureError):
    """404: the item is absent."""

    code = "NotFound"
    status = 404


class ContainerNotFound(NotFound):
    """404: the container is absent."""

    code = "ContainerNotFound"


class Conflict(TenureError):
    """409: the family of refusals because of the item's or container's state."""

    code = "Conflict"
    status = 409


class AlreadyExists(Conflict):
    code = "AlreadyExists"


class ContainerAlreadyExists(Conflict):
    code = "ContainerAlreadyExists"


class LeaseAlreadyPresent(Conflict):
    code = "LeaseAlreadyPresent"


class LeaseIdMismatchWithLeaseOperation(Conflict):
    code = "LeaseIdMismatchWithLeaseOperation"


class LeaseNotPresentWithLeaseOperation(Conflict):
    code = "LeaseNotPresentWithLeaseOperation"


class LeaseIsBrokenAndCannotBeRenewed(Conflict):
    code = "LeaseIsBrokenAndCannotBeRenewed"


class LeaseIsBreakingAndCannotBeAcquired(Conflict):
    code = "LeaseIsBreakingAndCannotBeAcquired"


class LeaseIsBreakingAndCannotBeChanged(Conflict):
    code = "LeaseIsBreakingAndCannotBeChanged"


class ObjectLocked(Conflict):
    code = "ObjectLocked"


class PreconditionFailed(TenureError):
    """412: a condition, lease or lock handle refused the operation."""

    code = "PreconditionFailed"
    status = 412


class ConditionNotMet(PreconditionFailed):
    code = "ConditionNotMet"


class VersionMismatch(PreconditionFailed):
    code = "VersionMismatch"


class LeaseIdMissing(PreconditionFailed):
    code = "LeaseIdMissing"


class LeaseIdMismatchWithBlobOperation(PreconditionFailed):
    code = "LeaseIdMismatchWithBlobOperation"


class LeaseNotPresentWithBlobOperation(PreconditionFailed):
    code = "LeaseNotPresentWithBlobOperation"


class LeaseLost(PreconditionFailed):
    code = "LeaseLost"


class LeaseIdMismatchWithContainerOperation(PreconditionFailed):
    code = "LeaseIdMismatchWithContainerOperation"


class LeaseNotPresentWithContainerOperation(PreconditionFailed):
    code = "LeaseNotPresentWithContainerOperation"


class ObjectNotLocked(PreconditionFailed):
    code = "ObjectNotLocked"


class InvalidLockHandle(PreconditionFailed):
    code = "InvalidLockHandle"


class FailedDependency(TenureError):
    """424: an operation of a batch failed. ``index`` is the failing operation's index and
    ``cause`` its error (also ``__cause__``); every other operation depended on it."""

    code = "FailedDependency"
    status = 424

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        index: int = 0,
        cause: Optional[TenureError] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag)
        self.index = index
        self.cause = cause


class StoreLocked(TenureError):
    """423: the store directory is already open (in this or another process)."""

    code = "StoreLocked"
    status = 423

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        path: Optional[str] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag)
        self.path = path


class StorageError(TenureError):
    """500: the storage failed (``Corruption``, ``Io``)."""

    code = "StorageError"
    status = 500

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        path: Optional[str] = None,
        offset: Optional[int] = None,
        errno: Optional[int] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag)
        self.path = path
        self.offset = offset
        self.errno = errno


class Corruption(StorageError):
    """500: a checksum or structure check failed (``path``, ``offset``)."""

    code = "Corruption"


class Io(StorageError):
    """500: the operating system refused (``path``, ``errno``). After a failed flush the store
    refuses writes until it is reopened."""

    code = "Io"


class Closed(TenureError):
    """500: the store (or the snapshot) was closed."""

    code = "Closed"
    status = 500


class ReadOnly(TenureError):
    """403: the store was opened read-only (``tenure.open(path, read_only=True)``); nothing
    changed."""

    code = "ReadOnly"
    status = 403


class Compacted(TenureError):
    """410: the change-feed position is older than the history the store keeps (compacted
    away); the message names the oldest available version. Resume from there, or re-read the
    current state."""

    code = "Compacted"
    status = 410


class Busy(TenureError):
    """503: the write gave up after too many concurrent writes to the same keys (the engine's
    retries are bounded); nothing changed. Try again, perhaps after a pause."""

    code = "Busy"
    status = 503


class UsedAfterFork(TenureError):
    """500: the store was opened in another process and reached this one through
    ``os.fork()`` (``multiprocessing``'s "fork" start method, a pre-forking server). Open the
    store in the child instead; the parent's handle is unaffected. Closing the inherited handle
    in the child is allowed and changes nothing on disk."""

    code = "UsedAfterFork"
    status = 500


#: Every docs/spec.md §12 code name → its exception class.
ERROR_CODES: Dict[str, Type[TenureError]] = {
    cls.code: cls
    for cls in (
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
        Busy,
        Compacted,
        ReadOnly,
    )
}


def _make_error(
    code: str, message: str, etag: Optional[str], details: Dict[str, Any]
) -> TenureError:
    """Called by the native module: the exception for one engine error."""
    cls = ERROR_CODES.get(code, TenureError)
    if code == "InvalidArgument":
        return InvalidArgument(message, etag=etag, argument=details.get("argument"))
    if code == "StoreLocked":
        path = details.get("path")
        return StoreLocked(message, etag=etag, path=None if path is None else str(path))
    if issubclass(cls, StorageError):
        path = details.get("path")
        return cls(
            message,
            etag=etag,
            path=None if path is None else str(path),
            offset=details.get("offset"),
            errno=details.get("errno"),
        )
    if cls is TenureError:
        return TenureError(message, code=code, etag=etag)
    return cls(message, etag=etag)


def _batch_failed(index: int, cause: TenureError, message: str) -> FailedDependency:
    """Called by the native module when a batch fails at operation ``index``."""
    error = FailedDependency(message, etag=cause.etag, index=index, cause=cause)
    error.__cause__ = cause
    return error
