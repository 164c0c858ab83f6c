# Type stubs for tenure (hand-written; `python -m mypy.stubtest tenure` checks them against the
# runtime). The classes below Store are defined by the native module tenure._tenure.

from datetime import datetime, timedelta
from os import PathLike
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
    final,
    overload,
)

from typing_extensions import disjoint_base

__version__: str

__all__ = [
    "open",
    "Store",
    "Container",
    "Item",
    "ItemProperties",
    "ItemIterator",
    "Change",
    "ChangeIterator",
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

_Key = Union[str, bytes]
_Value = Union[bytes, bytearray, memoryview]
_Time = Union[datetime, int, float]
# Durations: seconds (int or float) or a timedelta, everywhere.
_Seconds = Union[int, float, timedelta]
_I = TypeVar("_I", bound=ItemProperties, covariant=True)
_ETags = Union[str, Sequence[str]]
class _LeaseHolder(Protocol):
    """Anything holding a Lease as `_tenure_lease` (a `tenure.aio.Lease`)."""
    @property
    def _tenure_lease(self) -> Lease: ...

_LeaseIdArg = Union[str, Lease, _LeaseHolder]
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
    """Opens (creating if needed) the store in directory `path`, or the store that an
    ``etcd://host:port[,host:port...]/prefix`` URL names on an etcd cluster (docs/etcd.md:
    the same rules across every client of the cluster; when no quorum answers in time, calls
    raise Unavailable).

    options: segment_size_bytes, max_key_bytes, max_value_bytes, max_metadata_bytes,
    max_content_type_bytes, max_batch_operations, max_batch_bytes, max_page_size,
    background_compaction_interval (seconds, a timedelta or None),
    background_compaction_sealed_segments, change_feed_retention_versions,
    change_feed_retention_bytes, read_only (open beside a writer, or files this process
    cannot write: no lock taken, nothing written, every write raises ReadOnly; beside a
    writer each call sees every write committed before it started, in any process),
    quota_bytes (the most bytes the store's files may take: writes that add data past it
    raise StorageFull), space_reserve_bytes (free disk that such writes leave for deletes and
    compaction; default two segments, at least 8 MiB).
    """

@final
class ManualClock:
    def __new__(cls, now: _Time) -> ManualClock: ...
    def advance(self, seconds: _Seconds) -> None: ...
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
    @property
    def durability(self) -> Literal["sync", "buffered"]: ...
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
    def checkpoint(self) -> bool: ...
    def stats(self) -> Dict[str, Union[int, bool, None]]: ...
    def changes(
        self, since: int = 0, *, container: Optional[str] = None, include_values: bool = False
    ) -> ChangeIterator: ...
    def wait_for_changes(self, since: int, timeout: _Seconds) -> bool: ...
    def create_container(
        self,
        name: str,
        *,
        metadata: Optional[_Metadata] = None,
        default_ttl: Optional[_Seconds] = None,
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
        duration: Optional[_Seconds] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
    ) -> Lease: ...
    def renew_container_lease(self, name: str, lease_id: _LeaseIdArg) -> Lease: ...
    def change_container_lease(self, name: str, lease_id: _LeaseIdArg, proposed_id: str) -> Lease: ...
    def release_container_lease(self, name: str, lease_id: _LeaseIdArg) -> None: ...
    def break_container_lease(self, name: str, period: Optional[_Seconds] = None) -> float: ...
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
    ) -> ItemProperties: ...
    def exists(self, key: _Key) -> bool: ...
    def __contains__(self, key: object, /) -> bool: ...
    def count(self, prefix: _Key = "") -> int: ...
    def put(
        self,
        key: _Key,
        value: _Value,
        *,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        ttl: Optional[_Seconds] = None,
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
        ttl: Optional[_Seconds] = None,
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
        ttl: Optional[_Seconds] = None,
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
        max_attempts: Optional[int] = None,
        timeout: Optional[_Seconds] = 30.0,
        create_default: Optional[_Value] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> Item:
        """Read, apply `fn`, write back with `if_match`; under contention retries with a
        jittered backoff until it wins, `timeout` passes or `max_attempts` were made."""
    def get_if_newer(self, key: _Key, version: int) -> Optional[Item]: ...
    @overload
    def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[False] = False,
    ) -> Page[ItemProperties]: ...
    @overload
    def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[True],
    ) -> Page[Item]: ...
    @overload
    def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> Page[ItemProperties]: ...
    @overload
    def iterate(self, prefix: _Key = "", *, include_values: Literal[False] = False) -> ItemIterator[ItemProperties]: ...
    @overload
    def iterate(self, prefix: _Key = "", *, include_values: Literal[True]) -> ItemIterator[Item]: ...
    @overload
    def iterate(self, prefix: _Key = "", *, include_values: bool = False) -> ItemIterator[ItemProperties]: ...
    def acquire_lease(
        self,
        key: _Key,
        duration: Optional[_Seconds] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
        wait: Optional[_Seconds] = None,
    ) -> Lease: ...
    def lease(
        self,
        key: _Key,
        duration: Optional[_Seconds] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
        wait: Optional[_Seconds] = None,
    ) -> Lease: ...
    def renew_lease(self, key: _Key, lease_id: _LeaseIdArg) -> Lease: ...
    def change_lease(self, key: _Key, lease_id: _LeaseIdArg, proposed_id: str) -> Lease: ...
    def release_lease(self, key: _Key, lease_id: _LeaseIdArg) -> None: ...
    def break_lease(self, key: _Key, period: Optional[_Seconds] = None) -> float: ...
    def lease_info(self, key: _Key) -> LeaseInfo: ...
    def get_and_lock(
        self, key: _Key, lock_timeout: _Seconds, *, force: bool = False
    ) -> Tuple[Optional[Item], LockHandle]: ...
    def lock(self, key: _Key, lock_timeout: _Seconds, *, force: bool = False) -> CacheLock: ...
    def put_and_unlock(
        self, key: _Key, value: _Value, handle: _LockHandleArg, *, ttl: Optional[_Seconds] = None
    ) -> str: ...
    def unlock(self, key: _Key, handle: _LockHandleArg, *, ttl: Optional[_Seconds] = None) -> None: ...

@disjoint_base
class ItemProperties:
    """An item's properties: what a read returns, but the value."""
    def __new__(
        cls,
        key: _Key,
        etag: str,
        last_modified: _Time,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        expires_at: Optional[_Time] = None,
    ) -> ItemProperties: ...
    @property
    def key(self) -> str:
        """Always a `str`: the UTF-8 text, or a non-UTF-8 key decoded with surrogateescape."""
    @property
    def key_bytes(self) -> bytes: ...
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
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...

@final
class Item(ItemProperties):
    """An item with its value (`get`, `update`, listings with values)."""
    def __new__(
        cls,
        key: _Key,
        value: _Value,
        etag: str,
        last_modified: _Time,
        content_type: Optional[str] = None,
        metadata: Optional[_Metadata] = None,
        expires_at: Optional[_Time] = None,
    ) -> Item: ...
    @property
    def value(self) -> bytes: ...

@final
class Change:
    def __new__(
        cls,
        version: int,
        kind: str,
        container: str,
        key: Optional[_Key] = None,
        etag: Optional[str] = None,
        value: Optional[_Value] = None,
    ) -> Change: ...
    @property
    def version(self) -> int: ...
    @property
    def kind(self) -> Literal["created", "updated", "deleted", "expired", "container_created", "container_deleted"]: ...
    @property
    def container(self) -> str: ...
    @property
    def key(self) -> Optional[str]: ...
    @property
    def key_bytes(self) -> Optional[bytes]: ...
    @property
    def etag(self) -> Optional[str]: ...
    @property
    def value(self) -> Optional[bytes]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...

@final
class ChangeIterator:
    def __iter__(self) -> ChangeIterator: ...
    def __next__(self) -> Change: ...
    def next_page(self) -> List[Change]: ...
    @property
    def since(self) -> int: ...

@final
class Page(Generic[_I]):
    @classmethod
    def __class_getitem__(cls, item: Any) -> Any: ...
    def __new__(cls, items: Sequence[_I], continuation: Optional[str] = None) -> Page[_I]: ...
    @property
    def items(self) -> List[_I]: ...
    @property
    def continuation(self) -> Optional[str]: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[_I]: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...

@final
class ItemIterator(Generic[_I]):
    @classmethod
    def __class_getitem__(cls, item: Any) -> Any: ...
    def __iter__(self) -> ItemIterator[_I]: ...
    def __next__(self) -> _I: ...

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
    ) -> ItemProperties: ...
    def exists(self, container: _ContainerArg, key: _Key) -> bool: ...
    def count(self, container: _ContainerArg, prefix: _Key = "") -> int: ...
    @overload
    def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[False] = False,
    ) -> Page[ItemProperties]: ...
    @overload
    def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[True],
    ) -> Page[Item]: ...
    @overload
    def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> Page[ItemProperties]: ...
    @overload
    def iterate(
        self, container: _ContainerArg, prefix: _Key = "", *, include_values: Literal[False] = False
    ) -> ItemIterator[ItemProperties]: ...
    @overload
    def iterate(
        self, container: _ContainerArg, prefix: _Key = "", *, include_values: Literal[True]
    ) -> ItemIterator[Item]: ...
    @overload
    def iterate(
        self, container: _ContainerArg, prefix: _Key = "", *, include_values: bool = False
    ) -> ItemIterator[ItemProperties]: ...
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
        ttl: Optional[_Seconds] = None,
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
        ttl: Optional[_Seconds] = None,
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
        ttl: Optional[_Seconds] = None,
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
    def key(self) -> Optional[str]: ...
    @property
    def key_bytes(self) -> Optional[bytes]: ...
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
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...

@final
class LeaseInfo:
    def __new__(
        cls,
        state: Literal["available", "leased", "expired", "breaking", "broken"],
        id: Optional[str] = None,
        fence: Optional[int] = None,
        remaining: Optional[_Seconds] = None,
        duration: Optional[int] = None,
        holder: Optional[str] = None,
    ) -> LeaseInfo: ...
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
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...

@final
class LockHandle:
    def __new__(cls, text: Union[str, LockHandle]) -> LockHandle: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __ne__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...

class CacheLock:
    """A cache lock held for a `with` block (`Container.lock`)."""
    container: Container
    key: _Key
    item: Optional[Item]
    handle: LockHandle
    held: bool
    def __init__(self, container: Container, key: _Key, item: Optional[Item], handle: LockHandle) -> None: ...
    def put(self, value: _Value, *, ttl: Optional[_Seconds] = None) -> str: ...
    def unlock(self, *, ttl: Optional[_Seconds] = None) -> None: ...
    def __enter__(self) -> CacheLock: ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None: ...

# ----- exceptions (docs/spec.md §12) -----

class TenureError(Exception):
    code: str
    status: int
    etag: Optional[str]
    container: Optional[str]
    key: Optional[str]
    message: str
    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        container: Optional[str] = None,
        key: Optional[str] = None,
    ) -> None: ...

class NotModified(TenureError): ...

class InvalidArgument(TenureError, ValueError):
    argument: Optional[str]
    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        container: Optional[str] = None,
        key: Optional[str] = None,
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
        container: Optional[str] = None,
        key: Optional[str] = None,
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
        container: Optional[str] = None,
        key: Optional[str] = None,
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
        container: Optional[str] = None,
        key: Optional[str] = None,
        path: Optional[str] = None,
        offset: Optional[int] = None,
        errno: Optional[int] = None,
    ) -> None: ...

class Corruption(StorageError): ...
class Io(StorageError): ...
class Closed(TenureError): ...
class UsedAfterFork(TenureError): ...
class Busy(TenureError): ...
class StorageFull(TenureError): ...
class Unavailable(TenureError): ...
class Compacted(TenureError):
    oldest_available: Optional[int]
    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[str] = None,
        etag: Optional[str] = None,
        container: Optional[str] = None,
        key: Optional[str] = None,
        oldest_available: Optional[int] = None,
    ) -> None: ...
class ReadOnly(TenureError): ...

ERROR_CODES: Dict[str, Type[TenureError]]
