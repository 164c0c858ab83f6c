# Type stubs for tenure (hand-written; `python -m mypy.stubtest tenure` checks them against the
# runtime). The classes below Store are defined by the native module tenure._tenure.

from datetime import datetime
from os import PathLike
from types import TracebackType
from typing import Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple, Type, Union, final

__version__: str

__all__ = [
    "open",
    "Store",
    "Container",
    "Item",
    "ItemIterator",
    "Change",
    "ChangeIterator",
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

_Key = Union[str, bytes]
_Value = Union[bytes, bytearray, memoryview]
_Time = Union[datetime, int, float]
_ETags = Union[str, Sequence[str]]
_LeaseIdArg = Union[str, Lease]
_LockHandleArg = Union[LockHandle, str]
_Metadata = Mapping[str, str]
_ContainerArg = Union[str, Container]

def open(
    path: Union[str, PathLike[str]],
    *,
    durability: Literal["sync", "buffered"] = "sync",
    clock: Optional[ManualClock] = None,
    **options: Any,
) -> Store:
    """Opens (creating if needed) the store in directory `path`.

    options: segment_size_bytes, max_key_bytes, max_value_bytes, max_metadata_bytes,
    max_content_type_bytes, max_batch_operations, max_batch_bytes, max_page_size,
    background_compaction_interval (seconds or None), background_compaction_sealed_segments.
    """

@final
class ManualClock:
    def __new__(cls, now: _Time) -> ManualClock: ...
    def advance(self, seconds: Union[int, float]) -> None: ...
    def set(self, now: _Time) -> None: ...
    def now(self) -> datetime: ...
    def timestamp(self) -> float: ...

@final
class Store:
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def version(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> Store: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None: ...
    def flush(self) -> None: ...
    def compact(self) -> Dict[str, Union[int, bool]]: ...
    def changes(
        self, since: int = 0, *, container: Optional[str] = None, include_values: bool = False
    ) -> ChangeIterator: ...
    def wait_for_changes(self, since: int, timeout: float) -> bool: ...
    def create_container(
        self,
        name: str,
        *,
        metadata: Optional[_Metadata] = None,
        default_ttl: Optional[int] = None,
        exist_ok: bool = False,
    ) -> Container: ...
    def container(self, name: str) -> Container: ...
    def delete_container(
        self,
        name: str,
        *,
        lease_id: Optional[_LeaseIdArg] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
    ) -> None: ...
    def list_containers(self) -> List[str]: ...
    def acquire_container_lease(
        self,
        name: str,
        duration: Optional[int] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
    ) -> Lease: ...
    def renew_container_lease(self, name: str, lease_id: _LeaseIdArg) -> Lease: ...
    def change_container_lease(self, name: str, lease_id: _LeaseIdArg, proposed_id: str) -> Lease: ...
    def release_container_lease(self, name: str, lease_id: _LeaseIdArg) -> None: ...
    def break_container_lease(self, name: str, period: Optional[int] = None) -> float: ...
    def container_lease_info(self, name: str) -> LeaseInfo: ...
    def snapshot(self) -> Snapshot: ...
    def batch(self) -> Batch: ...

@final
class Container:
    @property
    def name(self) -> str: ...
    def get(
        self,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> Item: ...
    def get_properties(
        self,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> Item: ...
    def put(
        self,
        key: _Key,
        value: _Value,
        *,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        ttl: Optional[int] = None,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> str: ...
    def create(
        self,
        key: _Key,
        value: _Value,
        *,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        ttl: Optional[int] = None,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> str: ...
    def replace(
        self,
        key: _Key,
        value: _Value,
        *,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        ttl: Optional[int] = None,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> str: ...
    def delete(
        self,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> None: ...
    def set_metadata(
        self,
        key: _Key,
        metadata: _Metadata,
        *,
        content_type: Optional[str] = None,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> str: ...
    def update(
        self,
        key: _Key,
        fn: Callable[[bytes], _Value],
        *,
        max_attempts: int = 10,
        create_default: Optional[_Value] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> Item: ...
    def get_if_newer(self, key: _Key, version: int) -> Optional[Item]: ...
    def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> Page: ...
    def iterate(self, prefix: _Key = "", *, include_values: bool = False) -> ItemIterator: ...
    def acquire_lease(
        self,
        key: _Key,
        duration: Optional[int] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
        wait: Optional[float] = None,
    ) -> Lease: ...
    def lease(
        self,
        key: _Key,
        duration: Optional[int] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
        wait: Optional[float] = None,
    ) -> Lease: ...
    def renew_lease(self, key: _Key, lease_id: _LeaseIdArg) -> Lease: ...
    def change_lease(self, key: _Key, lease_id: _LeaseIdArg, proposed_id: str) -> Lease: ...
    def release_lease(self, key: _Key, lease_id: _LeaseIdArg) -> None: ...
    def break_lease(self, key: _Key, period: Optional[int] = None) -> float: ...
    def lease_info(self, key: _Key) -> LeaseInfo: ...
    def get_and_lock(
        self, key: _Key, lock_timeout: float, *, force: bool = False
    ) -> Tuple[Optional[Item], LockHandle]: ...
    def put_and_unlock(
        self, key: _Key, value: _Value, handle: _LockHandleArg, *, ttl: Optional[int] = None
    ) -> str: ...
    def unlock(self, key: _Key, handle: _LockHandleArg, *, ttl: Optional[int] = None) -> None: ...

@final
class Item:
    @property
    def key(self) -> Union[str, bytes]:
        """`str` when the stored key is valid UTF-8, else `bytes` (see `key_bytes`)."""
    @property
    def key_bytes(self) -> bytes: ...
    @property
    def value(self) -> Optional[bytes]: ...
    @property
    def etag(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def last_modified(self) -> datetime: ...
    @property
    def content_type(self) -> Optional[str]: ...
    @property
    def metadata(self) -> Dict[str, str]: ...
    @property
    def expires_at(self) -> Optional[datetime]: ...

@final
class Change:
    @property
    def version(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def container(self) -> str: ...
    @property
    def key(self) -> Optional[bytes]: ...
    @property
    def etag(self) -> Optional[str]: ...
    @property
    def value(self) -> Optional[bytes]: ...

@final
class ChangeIterator:
    def __iter__(self) -> ChangeIterator: ...
    def __next__(self) -> Change: ...

@final
class Page:
    @property
    def items(self) -> List[Item]: ...
    @property
    def continuation(self) -> Optional[str]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Item]: ...

@final
class ItemIterator:
    def __iter__(self) -> ItemIterator: ...
    def __next__(self) -> Item: ...

@final
class Snapshot:
    @property
    def version(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> Snapshot: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None: ...
    def get(
        self,
        container: _ContainerArg,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> Item: ...
    def get_properties(
        self,
        container: _ContainerArg,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> Item: ...
    def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> Page: ...
    def iterate(
        self, container: _ContainerArg, prefix: _Key = "", *, include_values: bool = False
    ) -> ItemIterator: ...
    def list_containers(self) -> List[str]: ...

@final
class Batch:
    @property
    def version(self) -> Optional[int]: ...
    def put(
        self,
        container: _ContainerArg,
        key: _Key,
        value: _Value,
        *,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        ttl: Optional[int] = None,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> int: ...
    def create(
        self,
        container: _ContainerArg,
        key: _Key,
        value: _Value,
        *,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        ttl: Optional[int] = None,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> int: ...
    def replace(
        self,
        container: _ContainerArg,
        key: _Key,
        value: _Value,
        *,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        ttl: Optional[int] = None,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> int: ...
    def delete(
        self,
        container: _ContainerArg,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
        lease_id: Optional[_LeaseIdArg] = None,
        lock_handle: Optional[_LockHandleArg] = None,
    ) -> int: ...
    def check(
        self,
        container: _ContainerArg,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        if_version: Optional[int] = None,
    ) -> int: ...
    def commit(self) -> int: ...
    def discard(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Batch: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None: ...

@final
class Lease:
    @property
    def id(self) -> str: ...
    @property
    def fence(self) -> int: ...
    @property
    def container(self) -> str: ...
    @property
    def key(self) -> Union[str, bytes, None]: ...
    def renew(self) -> Lease: ...
    def change(self, proposed_id: str) -> Lease: ...
    def release(self) -> None: ...
    def info(self) -> LeaseInfo: ...
    def __enter__(self) -> Lease: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None: ...

@final
class LeaseInfo:
    @property
    def state(self) -> Literal["available", "leased", "expired", "breaking", "broken"]: ...
    @property
    def id(self) -> Optional[str]: ...
    @property
    def fence(self) -> Optional[int]: ...
    @property
    def remaining(self) -> Optional[float]: ...
    @property
    def duration(self) -> Optional[int]: ...
    @property
    def holder(self) -> Optional[str]: ...

@final
class LockHandle:
    def __new__(cls, text: Union[str, LockHandle]) -> LockHandle: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

# ----- exceptions (docs/spec.md §12) -----

class TenureError(Exception):
    code: str
    status: int
    etag: Optional[str]
    message: str
    def __init__(self, message: str = "", *, code: Optional[str] = None, etag: Optional[str] = None) -> None: ...

class NotModified(TenureError): ...

class InvalidArgument(TenureError, ValueError):
    argument: Optional[str]
    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        argument: Optional[str] = None,
    ) -> None: ...

class NotFound(TenureError): ...
class ContainerNotFound(NotFound): ...
class Conflict(TenureError): ...
class AlreadyExists(Conflict): ...
class ContainerAlreadyExists(Conflict): ...
class LeaseAlreadyPresent(Conflict): ...
class LeaseIdMismatchWithLeaseOperation(Conflict): ...
class LeaseNotPresentWithLeaseOperation(Conflict): ...
class LeaseIsBrokenAndCannotBeRenewed(Conflict): ...
class LeaseIsBreakingAndCannotBeAcquired(Conflict): ...
class LeaseIsBreakingAndCannotBeChanged(Conflict): ...
class ObjectLocked(Conflict): ...
class PreconditionFailed(TenureError): ...
class ConditionNotMet(PreconditionFailed): ...
class VersionMismatch(PreconditionFailed): ...
class LeaseIdMissing(PreconditionFailed): ...
class LeaseIdMismatchWithBlobOperation(PreconditionFailed): ...
class LeaseNotPresentWithBlobOperation(PreconditionFailed): ...
class LeaseLost(PreconditionFailed): ...
class LeaseIdMismatchWithContainerOperation(PreconditionFailed): ...
class LeaseNotPresentWithContainerOperation(PreconditionFailed): ...
class ObjectNotLocked(PreconditionFailed): ...
class InvalidLockHandle(PreconditionFailed): ...

class FailedDependency(TenureError):
    index: int
    cause: Optional[TenureError]
    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        index: int = 0,
        cause: Optional[TenureError] = None,
    ) -> None: ...

class StoreLocked(TenureError):
    path: Optional[str]
    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        path: Optional[str] = None,
    ) -> None: ...

class StorageError(TenureError):
    path: Optional[str]
    offset: Optional[int]
    errno: Optional[int]
    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        path: Optional[str] = None,
        offset: Optional[int] = None,
        errno: Optional[int] = None,
    ) -> None: ...

class Corruption(StorageError): ...
class Io(StorageError): ...
class Closed(TenureError): ...
class UsedAfterFork(TenureError): ...
class Busy(TenureError): ...
class Compacted(TenureError): ...
class ReadOnly(TenureError): ...

ERROR_CODES: Dict[str, Type[TenureError]]
