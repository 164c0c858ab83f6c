"""tenure: an embedded key/value and blob store with the concurrency controls of the big cloud
stores — ETags and conditions, leases, cache locks — over a checksummed log.

    import tenure

    with tenure.open("my-store") as store:
        inventory = store.create_container("inventory", exist_ok=True)
        etag = inventory.put("RadioInventory", b"10")
        inventory.put("RadioInventory", b"9", if_match=etag)   # ConditionNotMet if it moved

The behaviour contract is docs/spec.md of the tenure project; every error is a subclass of
`TenureError` carrying the code name of docs/spec.md §12 (`.code`), its status number
(`.status`), the container and key it concerns (`.container`, `.key`) and, for a refused
precondition, the item's current ETag (`.etag`).

`tenure.aio` is the same API as coroutines, for asyncio programs.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Dict, Optional, Type, Union

from ._tenure import (
    Batch,
    Change,
    ChangeIterator,
    Container,
    Item,
    ItemIterator,
    ItemProperties,
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
    "ItemProperties",
    "ItemIterator",
    "Page",
    "Snapshot",
    "Batch",
    "Lease",
    "LeaseInfo",
    "LockHandle",
    "CacheLock",
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
    "StorageFull",
    "Unavailable",
    "Compacted",
    "ReadOnly",
    "ERROR_CODES",
]


# ----- the exception tree (docs/spec.md §12) -----


class TenureError(Exception):
    """Base of every tenure error.

    ``code`` is the docs/spec.md §12 code name, ``status`` its HTTP-style number, ``etag`` the
    item's current ETag where a refused precondition reports one (else ``None``), and
    ``container`` and ``key`` what the failed call was about (``None`` where it was about no
    container or key). ``key`` follows the rule of ``Item.key``: always a ``str``.
    """

    code: str = "TenureError"
    status: int = 500

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        container: Optional[str] = None,
        key: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.etag = etag
        self.container = container
        self.key = key

    def __reduce__(self) -> Any:
        # Rebuild with every attribute (a worker process re-raising it keeps them).
        return (_rebuild_error, (type(self), self.message, dict(self.__dict__)))


def _rebuild_error(cls: Type[TenureError], message: str, state: Dict[str, Any]) -> TenureError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class NotModified(TenureError):
    """304: the read condition group says the caller's copy is current."""

    code = "NotModified"
    status = 304


class InvalidArgument(TenureError, ValueError):
    """400: a bad argument (``argument`` names it as the caller did); nothing changed."""

    code = "InvalidArgument"
    status = 400

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        container: Optional[str] = None,
        key: Optional[str] = None,
        argument: Optional[str] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag, container=container, key=key)
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
        container: Optional[str] = None,
        key: Optional[str] = None,
        index: int = 0,
        cause: Optional[TenureError] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag, container=container, key=key)
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
        container: Optional[str] = None,
        key: Optional[str] = None,
        path: Optional[str] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag, container=container, key=key)
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
        container: Optional[str] = None,
        key: Optional[str] = None,
        path: Optional[str] = None,
        offset: Optional[int] = None,
        errno: Optional[int] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag, container=container, key=key)
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
    away). ``oldest_available`` is the oldest version still in the feed: resume from
    ``oldest_available - 1``, or re-read the current state. Keep more history with
    ``tenure.open(..., change_feed_retention_versions=N)`` or ``..._bytes=N``."""

    code = "Compacted"
    status = 410

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        container: Optional[str] = None,
        key: Optional[str] = None,
        oldest_available: Optional[int] = None,
    ) -> None:
        super().__init__(message, code=code, etag=etag, container=container, key=key)
        self.oldest_available = oldest_available


class Busy(TenureError):
    """503: the write gave up after too many concurrent writes to the same keys (the engine's
    retries are bounded); nothing changed. Try again, perhaps after a pause."""

    code = "Busy"
    status = 503


class StorageFull(TenureError):
    """507: the disk, or the store's quota (``tenure.open(path, quota_bytes=...)``), has no room
    for a write that adds data; nothing changed. Reads, deletes and ``compact()`` go on (they
    use the reserve held back for them, ``space_reserve_bytes``); once compaction or anything
    else frees space, writes succeed again without a reopen. ``Store.stats()`` shows the
    state."""

    code = "StorageFull"
    status = 507


class Unavailable(TenureError):
    """503: the etcd cluster of an ``etcd://`` store did not answer within the deadline (no
    quorum, or no member reachable). The message says whether a write was sent and its
    outcome is unknown: then read the item before writing again."""

    code = "Unavailable"
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
        StorageFull,
        Unavailable,
        Compacted,
        ReadOnly,
    )
}


def _make_error(
    code: str, message: str, etag: Optional[str], details: Dict[str, Any]
) -> TenureError:
    """Called by the native module: the exception for one engine error."""
    cls = ERROR_CODES.get(code, TenureError)
    where: Dict[str, Any] = {
        "etag": etag,
        "container": details.get("container"),
        "key": details.get("key"),
    }
    if code == "InvalidArgument":
        return InvalidArgument(message, argument=details.get("argument"), **where)
    if code == "StoreLocked":
        path = details.get("path")
        return StoreLocked(message, path=None if path is None else str(path), **where)
    if code == "Compacted":
        return Compacted(message, oldest_available=details.get("oldest_available"), **where)
    if issubclass(cls, StorageError):
        path = details.get("path")
        return cls(
            message,
            path=None if path is None else str(path),
            offset=details.get("offset"),
            errno=details.get("errno"),
            **where,
        )
    if cls is TenureError:
        return TenureError(message, code=code, **where)
    return cls(message, **where)


def _batch_failed(index: int, cause: TenureError, message: str) -> FailedDependency:
    """Called by the native module when a batch fails at operation ``index``."""
    error = FailedDependency(
        message,
        etag=cause.etag,
        container=cause.container,
        key=cause.key,
        index=index,
        cause=cause,
    )
    error.__cause__ = cause
    return error


# ----- helpers written in Python -----


class CacheLock:
    """A cache lock held for a ``with`` block (``Container.lock``, docs/spec.md §6).

    ``item`` is the item as locked (``None`` when force-locking an absent key) and
    ``handle`` the lock handle. ``put(value)`` writes and unlocks in one call
    (put-and-unlock); ``unlock()`` releases without writing. Leaving the block unlocks the
    item if it is still locked; after an exception in the block a failed unlock is ignored
    (the block's exception goes on), after a clean block it is raised — it means the lock ran
    out (``ObjectNotLocked``) or was taken over (``InvalidLockHandle``) — except when the item
    is gone.
    """

    def __init__(
        self, container: Container, key: Union[str, bytes], item: Optional[Item], handle: LockHandle
    ) -> None:
        self.container = container
        self.key = key
        self.item = item
        self.handle = handle
        self.held = True

    def put(self, value: Union[bytes, bytearray, memoryview], *, ttl: Any = None) -> str:
        """Replaces the locked item with ``value`` and unlocks it; returns the new ETag."""
        etag = self.container.put_and_unlock(self.key, value, self.handle, ttl=ttl)
        self.held = False
        return etag

    def unlock(self, *, ttl: Any = None) -> None:
        """Releases the lock without writing (``ttl`` given: the expiry restarts with it)."""
        self.container.unlock(self.key, self.handle, ttl=ttl)
        self.held = False

    def __enter__(self) -> "CacheLock":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        if not self.held:
            return
        try:
            self.unlock()
        except NotFound:
            self.held = False
        except TenureError:
            self.held = False
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        state = "held" if self.held else "released"
        return f"tenure.CacheLock(container={self.container.name!r}, key={self.key!r}, {state})"
