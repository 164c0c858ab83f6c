"""tenure.aio: tenure's whole API as coroutines, for asyncio programs — what `redis.asyncio`
and `azure.storage.blob.aio` are to their clients.

    import asyncio
    import tenure.aio

    async def main() -> None:
        async with tenure.aio.open("my-store") as store:
            inventory = await store.create_container("inventory", exist_ok=True)
            etag = await inventory.put("RadioInventory", b"10")
            await inventory.put("RadioInventory", b"9", if_match=etag)  # ConditionNotMet if it moved
            async with inventory.lease("RadioInventory", wait=10) as lease:
                await inventory.put("RadioInventory", b"8", lease_id=lease)
            async for change in store.changes(0):
                print(change.version, change.kind, change.key)

    asyncio.run(main())

The methods, arguments, results and exceptions are those of `tenure` (docs/spec.md is the
contract); results are the same plain types (`tenure.Item`, `tenure.Page`, ...). What differs is
only how a call runs, chosen so the event loop never waits on the disk or on another holder:

- A call that never waits — a point read, a lease or lock action, and with
  ``durability="buffered"`` every write — runs at once on the event loop's thread: it takes
  microseconds, and a thread hop would cost ten times the call.
- A call that waits for the disk or for time — with ``durability="sync"`` every write (it
  returns once its record is on stable storage; concurrent writers share one flush), a batch
  commit, a listing page, a change-feed page, `count`, `flush`, `compact`, `open`, `close` —
  runs on the store's thread pool (``executor_threads``, 32 by default), the GIL released
  while the engine works.
- A waiting lease acquire (``wait=``) and `wait_for_changes` wait on a second pool, so they
  never hold up other calls. Both can be cancelled (`asyncio.timeout`, `Task.cancel`): a
  cancelled `wait_for_changes` lets its thread go within 50 ms; a lease granted to an acquire
  that was cancelled meanwhile is released at once, so a cancelled acquire leaves no lease
  behind (and a cancelled `get_and_lock` no lock).

Cancelling any other awaited write does not undo it: it may still commit, as with any
client whose request is already on its way.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import datetime
import functools
import itertools
import random
import threading
from os import PathLike
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Callable,
    Deque,
    Dict,
    Generator,
    Generic,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Type,
    TypeVar,
    Union,
    overload,
)

import tenure

__all__ = [
    "open",
    "Store",
    "Container",
    "Snapshot",
    "Batch",
    "Lease",
    "CacheLock",
    "ChangeStream",
    "ItemStream",
    "Pending",
]

_T = TypeVar("_T")
_I = TypeVar("_I", tenure.Item, tenure.ItemProperties)

_Key = Union[str, bytes]
_Value = Union[bytes, bytearray, memoryview]
_Time = Union[datetime.datetime, int, float]
_Seconds = Union[int, float, datetime.timedelta]
_ETags = Union[str, Sequence[str]]
_LeaseIdArg = Union[str, tenure.Lease, "Lease"]
_LockHandleArg = Union[tenure.LockHandle, str]
_Metadata = Mapping[str, str]
_ContainerArg = Union[str, tenure.Container, "Container"]

#: Threads a store runs waiting calls on (writes with durability="sync", pages, ...).
EXECUTOR_THREADS = 32
#: Threads for waiting lease acquires and wait_for_changes.
WAIT_THREADS = 256
#: A cancelled wait_for_changes gives its thread back within this many seconds.
WAIT_SLICE = 0.05
#: Changes and items pulled from the engine per page of an async iteration.
PAGE = 1000
#: How long `update()` keeps retrying lost races by default, in seconds.
UPDATE_TIMEOUT = 30.0


def _invalid(argument: str, reason: str) -> tenure.InvalidArgument:
    return tenure.InvalidArgument(
        f"InvalidArgument (400): argument `{argument}`: {reason}", argument=argument
    )


def _seconds(value: _Seconds, argument: str) -> float:
    """Seconds (int, float or timedelta) as a float, not negative."""
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(
            f"argument `{argument}` must be seconds (int or float) or a timedelta, "
            f"not {type(value).__name__}"
        )
    if not seconds >= 0 or seconds == float("inf"):
        raise _invalid(argument, "must be a finite number of seconds, not negative")
    return seconds


def _backoff(attempt: int) -> float:
    """The jittered exponential backoff of `update()` after a lost race (at most ~13 ms)."""
    return random.uniform(0, 50e-6 * (1 << min(attempt, 8)))


def _native_container(container: _ContainerArg) -> Union[str, tenure.Container]:
    return container._container if isinstance(container, Container) else container


def _closed() -> tenure.Closed:
    return tenure.Closed("Closed (500): the store was closed")


# ----- opening -----


class Pending(Generic[_T]):
    """What `open()`, `Container.lease()` and `Container.lock()` return: await it for the
    object, or use it in ``async with`` to have the object closed, released or unlocked at
    the end of the block."""

    def __init__(self, make: Callable[[], Awaitable[_T]]) -> None:
        self._make = make
        self._value: Optional[_T] = None

    def __await__(self) -> Generator[Any, None, _T]:
        return self._make().__await__()

    async def __aenter__(self) -> _T:
        self._value = await self._make()
        return self._value

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        value: Any = self._value
        self._value = None
        if value is not None:
            await value.__aexit__(exc_type, exc_value, traceback)


def open(
    path: Union[str, PathLike[str]],
    *,
    durability: Literal["sync", "buffered"] = "sync",
    clock: Optional[tenure.ManualClock] = None,
    executor_threads: int = EXECUTOR_THREADS,
    **options: Any,
) -> Pending[Store]:
    """Opens (creating if needed) the store in directory `path`, on a worker thread (an open
    replays the log). ``store = await tenure.aio.open(path)``, or ``async with
    tenure.aio.open(path) as store:`` to close it at the end of the block. The arguments are
    those of `tenure.open`; ``executor_threads`` sizes the store's thread pool."""
    if isinstance(executor_threads, bool) or not isinstance(executor_threads, int):
        raise TypeError("argument `executor_threads` must be an int")
    if executor_threads < 1:
        raise _invalid("executor_threads", "must be at least 1")

    async def make() -> Store:
        loop = asyncio.get_running_loop()
        opening = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tenure-aio-open")
        future = opening.submit(
            functools.partial(tenure.open, path, durability=durability, clock=clock, **options)
        )
        opening.shutdown(wait=False)
        try:
            store = await asyncio.wrap_future(future, loop=loop)
        except asyncio.CancelledError:
            # Opened after all: close it, or the directory stays locked to this process.
            future.add_done_callback(_close_when_opened)
            raise
        return Store(store, executor_threads=executor_threads)

    return Pending(make)


def _close_when_opened(future: "concurrent.futures.Future[tenure.Store]") -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().close()


# ----- the store -----


class Store:
    """An open store for asyncio code (`tenure.aio.open`). Share it between tasks freely;
    ``async with store:`` or ``await store.close()`` releases the directory."""

    def __init__(self, store: tenure.Store, *, executor_threads: int = EXECUTOR_THREADS) -> None:
        self._store = store
        self._inline_writes = store.durability == "buffered"
        self._calls = concurrent.futures.ThreadPoolExecutor(
            executor_threads, thread_name_prefix="tenure-aio"
        )
        self._waits = concurrent.futures.ThreadPoolExecutor(
            WAIT_THREADS, thread_name_prefix="tenure-aio-wait"
        )
        self._waiting: Set[threading.Event] = set()
        self._lock = threading.Lock()

    # -- how calls run --

    async def _offload(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Runs `call` on the store's thread pool."""
        try:
            future = self._calls.submit(functools.partial(call, *args, **kwargs))
        except RuntimeError:
            raise _closed() from None
        return await asyncio.wrap_future(future)

    async def _write(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """A write: inline when it never waits for the disk (buffered), else offloaded."""
        if self._inline_writes:
            return call(*args, **kwargs)
        return await self._offload(call, *args, **kwargs)

    async def _grant(
        self,
        pool: Optional[concurrent.futures.ThreadPoolExecutor],
        release: Callable[[_T], object],
        call: Callable[..., _T],
        *args: Any,
        **kwargs: Any,
    ) -> _T:
        """A call that grants something (a lease, a lock). Run inline when `pool` is None;
        else on `pool`, and when the awaiting task is cancelled before the grant arrives,
        `release` gives back whatever is granted after all."""
        if pool is None:
            return call(*args, **kwargs)
        try:
            future = pool.submit(functools.partial(call, *args, **kwargs))
        except RuntimeError:
            raise _closed() from None
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.add_done_callback(functools.partial(_give_back, release))
            raise

    def _write_pool(self) -> Optional[concurrent.futures.ThreadPoolExecutor]:
        return None if self._inline_writes else self._calls

    # -- the store itself --

    @property
    def path(self) -> str:
        return self._store.path

    @property
    def closed(self) -> bool:
        return self._store.closed

    @property
    def durability(self) -> str:
        """ "sync" or "buffered", as the store was opened."""
        return self._store.durability

    @property
    def version(self) -> int:
        """The latest committed version."""
        return self._store.version

    @property
    def sync(self) -> tenure.Store:
        """The blocking `tenure.Store` underneath (for code that runs in a thread)."""
        return self._store

    async def close(self) -> None:
        """Flushes and closes the store (on a worker thread). Waiting `wait_for_changes`
        calls end; every later call raises `Closed`. Closing twice is harmless."""
        with self._lock:
            waiting = list(self._waiting)
        for event in waiting:
            event.set()
        loop = asyncio.get_running_loop()
        closing = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tenure-aio-close")
        try:
            await asyncio.wrap_future(closing.submit(self._store.close), loop=loop)
        finally:
            closing.shutdown(wait=False)
            self._calls.shutdown(wait=False)
            self._waits.shutdown(wait=False)

    aclose = close

    async def __aenter__(self) -> Store:
        if self._store.closed:
            raise _closed()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<tenure.aio.Store {self.path!r} ({state})>"

    async def flush(self) -> None:
        """Makes every acknowledged write durable (needed only with durability="buffered")."""
        await self._offload(self._store.flush)

    async def compact(self) -> Dict[str, Union[int, bool]]:
        """Reclaims the space of superseded, deleted and expired items now."""
        return await self._offload(self._store.compact)

    # -- the change feed (docs/spec.md §10) --

    def changes(
        self,
        since: int = 0,
        *,
        container: Optional[str] = None,
        include_values: bool = False,
        follow: bool = False,
    ) -> ChangeStream:
        """Every committed change after version `since`, oldest first, as an async iterator
        (``async for change in store.changes(since):``). It ends at the newest change, or
        with ``follow=True`` keeps waiting for the next ones until the loop is left or the
        task cancelled. A position older than the retained history raises `Compacted`."""
        iterator = self._store.changes(since, container=container, include_values=include_values)
        return ChangeStream(self, iterator, follow)

    async def wait_for_changes(self, since: int, timeout: _Seconds) -> bool:
        """Waits until a change newer than `since` commits or `timeout` passes (seconds or a
        timedelta, at most a day); returns whether one is there. Cancellable."""
        if self._store.wait_for_changes(since, 0):  # checks the arguments too
            return True
        seconds = _seconds(timeout, "timeout")
        if seconds > 86_400:
            raise _invalid("timeout", "at most 86400 seconds (a day)")
        if seconds == 0:
            return False
        cancelled = threading.Event()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds

        def wait() -> bool:
            while not cancelled.is_set():
                left = deadline - loop.time()
                if left <= 0:
                    return False
                if self._store.wait_for_changes(since, min(left, WAIT_SLICE)):
                    return True
            return False

        with self._lock:
            self._waiting.add(cancelled)
        try:
            future = self._waits.submit(wait)
        except RuntimeError:
            raise _closed() from None
        try:
            return await asyncio.wrap_future(future)
        finally:
            cancelled.set()
            with self._lock:
                self._waiting.discard(cancelled)

    # -- containers (docs/spec.md §1, §5) --

    def _container(self, container: tenure.Container) -> Container:
        return Container(self, container)

    async def create_container(
        self,
        name: str,
        *,
        metadata: Optional[_Metadata] = None,
        default_ttl: Optional[_Seconds] = None,
        exist_ok: bool = False,
    ) -> Container:
        created = await self._write(
            self._store.create_container,
            name,
            metadata=metadata,
            default_ttl=default_ttl,
            exist_ok=exist_ok,
        )
        return self._container(created)

    async def container(self, name: str) -> Container:
        """The container `name`; `ContainerNotFound` if it does not exist."""
        return self._container(self._store.container(name))

    async def delete_container(
        self,
        name: str,
        *,
        lease_id: Optional[_LeaseIdArg] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
    ) -> None:
        """Deletes the container and every item in it, atomically."""
        await self._write(
            self._store.delete_container,
            name,
            lease_id=lease_id,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
        )

    async def list_containers(self) -> List[str]:
        return self._store.list_containers()

    async def acquire_container_lease(
        self,
        name: str,
        duration: Optional[_Seconds] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
    ) -> Lease:
        """Acquires the container's lease (docs/spec.md §5): only delete_container is guarded."""
        lease = await self._grant(
            self._write_pool(),
            _release_quietly,
            self._store.acquire_container_lease,
            name,
            duration,
            proposed_id=proposed_id,
            holder=holder,
        )
        return Lease(self, lease)

    async def renew_container_lease(self, name: str, lease_id: _LeaseIdArg) -> Lease:
        return Lease(self, await self._write(self._store.renew_container_lease, name, lease_id))

    async def change_container_lease(
        self, name: str, lease_id: _LeaseIdArg, proposed_id: str
    ) -> Lease:
        lease = await self._write(self._store.change_container_lease, name, lease_id, proposed_id)
        return Lease(self, lease)

    async def release_container_lease(self, name: str, lease_id: _LeaseIdArg) -> None:
        await self._write(self._store.release_container_lease, name, lease_id)

    async def break_container_lease(self, name: str, period: Optional[_Seconds] = None) -> float:
        return await self._write(self._store.break_container_lease, name, period)

    async def container_lease_info(self, name: str) -> tenure.LeaseInfo:
        return self._store.container_lease_info(name)

    # -- snapshots and batches (docs/spec.md §8, §9) --

    def snapshot(self) -> Snapshot:
        """A repeatable view of the whole store at the current version: ``async with
        store.snapshot() as snapshot:`` releases it at the end of the block."""
        return Snapshot(self, self._store.snapshot())

    def batch(self) -> Batch:
        """An all-or-nothing batch: ``async with store.batch() as batch:`` commits on a clean
        exit and discards on an exception; or queue operations and ``await batch.commit()``."""
        return Batch(self, self._store.batch())


def _give_back(release: Callable[[_T], object], future: "concurrent.futures.Future[_T]") -> None:
    """Releases what a cancelled call was granted after all."""
    if future.cancelled() or future.exception() is not None:
        return
    try:
        release(future.result())
    except tenure.TenureError:
        pass  # already gone (expired, broken, the store closed)


def _release_quietly(lease: tenure.Lease) -> None:
    lease.release()


# ----- containers -----


class Container:
    """A container of the store, for asyncio code (`Store.container`,
    `Store.create_container`). Cheap to make; holds no state of its own but its name."""

    def __init__(self, store: Store, container: tenure.Container) -> None:
        self._store = store
        self._container = container

    @property
    def name(self) -> str:
        return self._container.name

    @property
    def sync(self) -> tenure.Container:
        """The blocking `tenure.Container` underneath."""
        return self._container

    def __repr__(self) -> str:
        return f"tenure.aio.Container({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Container) and other._store is self._store and other.name == self.name

    def __hash__(self) -> int:
        return hash((id(self._store), self.name))

    # -- reads: never wait, run at once --

    async def get(
        self,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> tenure.Item:
        """Reads an item, value included (docs/spec.md §3): `NotModified`,
        `ConditionNotMet`, `NotFound` (`exists()` asks without an error)."""
        if (
            if_match is None
            and if_none_match is None
            and if_modified_since is None
            and if_unmodified_since is None
            and lease_id is None
        ):
            return self._container.get(key)  # the common read, without five None arguments
        return self._container.get(
            key,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            lease_id=lease_id,
        )

    async def get_properties(
        self,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> tenure.ItemProperties:
        """Like `get`, without the value."""
        return self._container.get_properties(
            key,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            lease_id=lease_id,
        )

    async def exists(self, key: _Key) -> bool:
        """Whether the item exists (and has not expired)."""
        return self._container.exists(key)

    async def get_if_newer(self, key: _Key, version: int) -> Optional[tenure.Item]:
        """The item if its version differs from `version`, else `None` (docs/spec.md §6)."""
        return self._container.get_if_newer(key, version)

    async def count(self, prefix: _Key = "") -> int:
        """How many live items have keys starting with `prefix` (a scan, on a worker)."""
        return await self._store._offload(self._container.count, prefix)

    # -- writes --

    async def put(
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
    ) -> str:
        """Writes the item, creating or replacing it; returns the new ETag."""
        if self._store._inline_writes:  # never waits: no thread hop, no extra coroutine
            if (
                content_type is None
                and metadata is None
                and ttl is None
                and if_none_match is None
                and if_modified_since is None
                and if_unmodified_since is None
                and if_version is None
                and lease_id is None
                and lock_handle is None
            ):  # a plain or compare-and-swap write, without ten None arguments
                if if_match is None:
                    return self._container.put(key, value)
                return self._container.put(key, value, if_match=if_match)
            return self._container.put(
                key,
                value,
                content_type=content_type,
                metadata=metadata,
                ttl=ttl,
                if_match=if_match,
                if_none_match=if_none_match,
                if_modified_since=if_modified_since,
                if_unmodified_since=if_unmodified_since,
                if_version=if_version,
                lease_id=lease_id,
                lock_handle=lock_handle,
            )
        return await self._store._offload(
            self._container.put,
            key,
            bytes(value),  # a copy: the caller may change a mutable buffer while it waits
            content_type=content_type,
            metadata=metadata,
            ttl=ttl,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

    async def create(
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
    ) -> str:
        """Writes the item only if it does not exist (`AlreadyExists` otherwise)."""
        if self._store._inline_writes:  # never waits: no thread hop, no extra coroutine
            if (
                content_type is None
                and metadata is None
                and ttl is None
                and if_none_match is None
                and if_modified_since is None
                and if_unmodified_since is None
                and if_version is None
                and lease_id is None
                and lock_handle is None
            ):  # a plain or compare-and-swap write, without ten None arguments
                if if_match is None:
                    return self._container.create(key, value)
                return self._container.create(key, value, if_match=if_match)
            return self._container.create(
                key,
                value,
                content_type=content_type,
                metadata=metadata,
                ttl=ttl,
                if_match=if_match,
                if_none_match=if_none_match,
                if_modified_since=if_modified_since,
                if_unmodified_since=if_unmodified_since,
                if_version=if_version,
                lease_id=lease_id,
                lock_handle=lock_handle,
            )
        return await self._store._offload(
            self._container.create,
            key,
            bytes(value),  # a copy: the caller may change a mutable buffer while it waits
            content_type=content_type,
            metadata=metadata,
            ttl=ttl,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

    async def replace(
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
    ) -> str:
        """Writes the item only if it exists (`NotFound` otherwise)."""
        if self._store._inline_writes:  # never waits: no thread hop, no extra coroutine
            if (
                content_type is None
                and metadata is None
                and ttl is None
                and if_none_match is None
                and if_modified_since is None
                and if_unmodified_since is None
                and if_version is None
                and lease_id is None
                and lock_handle is None
            ):  # a plain or compare-and-swap write, without ten None arguments
                if if_match is None:
                    return self._container.replace(key, value)
                return self._container.replace(key, value, if_match=if_match)
            return self._container.replace(
                key,
                value,
                content_type=content_type,
                metadata=metadata,
                ttl=ttl,
                if_match=if_match,
                if_none_match=if_none_match,
                if_modified_since=if_modified_since,
                if_unmodified_since=if_unmodified_since,
                if_version=if_version,
                lease_id=lease_id,
                lock_handle=lock_handle,
            )
        return await self._store._offload(
            self._container.replace,
            key,
            bytes(value),  # a copy: the caller may change a mutable buffer while it waits
            content_type=content_type,
            metadata=metadata,
            ttl=ttl,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

    async def delete(
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
    ) -> None:
        await self._store._write(
            self._container.delete,
            key,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

    async def set_metadata(
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
    ) -> str:
        """Replaces the item's metadata, keeping its value; returns the new ETag."""
        return await self._store._write(
            self._container.set_metadata,
            key,
            metadata,
            content_type=content_type,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

    async def update(
        self,
        key: _Key,
        fn: Callable[[bytes], Union[_Value, Awaitable[_Value]]],
        *,
        max_attempts: Optional[int] = None,
        timeout: Optional[_Seconds] = None,
        create_default: Optional[_Value] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> tenure.Item:
        """Read, apply `fn`, write back with `if_match` (docs/spec.md §3), as
        `tenure.Container.update`; `fn` may also be a coroutine function.

        Under contention a lost race (`ConditionNotMet`, `AlreadyExists` for a concurrent
        create, or `Busy`) re-reads and retries after a jittered exponential backoff (up to
        about 13 ms, awaited with `asyncio.sleep`), until the write wins, `timeout` passes
        (30 s by default) or `max_attempts` attempts were made (no limit by default); then
        the last conflict is raised. `fn` may run several times: keep it free of side
        effects. A missing item raises `NotFound`, or with `create_default` is created from
        `fn(create_default)`."""
        if not callable(fn):
            raise TypeError(f"argument `fn` must be callable, not {type(fn).__name__}")
        if max_attempts is not None:
            if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
                raise TypeError("argument `max_attempts` must be an int")
            if max_attempts < 1:
                raise _invalid("max_attempts", "must be at least 1")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (
            UPDATE_TIMEOUT if timeout is None else _seconds(timeout, "timeout")
        )
        attempt = 0
        while True:
            attempt += 1
            current: Optional[tenure.Item]
            try:
                current = self._container.get(key, lease_id=lease_id)
            except tenure.NotFound as missing:
                if create_default is None or isinstance(missing, tenure.ContainerNotFound):
                    raise
                current = None
            produced = fn(current.value if current is not None else bytes(create_default or b""))
            new_value: Any = await produced if asyncio.iscoroutine(produced) or isinstance(produced, asyncio.Future) else produced
            try:
                if current is None:
                    etag = await self.create(key, new_value, lease_id=lease_id)
                else:
                    etag = await self.put(
                        key,
                        new_value,
                        if_match=current.etag,
                        content_type=current.content_type,
                        metadata=current.metadata,
                        lease_id=lease_id,
                    )
            except (tenure.ConditionNotMet, tenure.AlreadyExists, tenure.Busy):
                pause = _backoff(attempt - 1)
                if (max_attempts is not None and attempt >= max_attempts) or (
                    loop.time() + pause >= deadline
                ):
                    raise
                await asyncio.sleep(pause)
                continue
            return self._written(key, etag, bytes(new_value), current, lease_id)

    def _written(
        self,
        key: _Key,
        etag: str,
        value: bytes,
        previous: Optional[tenure.Item],
        lease_id: Optional[_LeaseIdArg],
    ) -> tenure.Item:
        """The item `update()` wrote, as a read of its ETag sees it (or as written, when a
        later write already replaced it)."""
        try:
            return self._container.get(key, if_match=etag, lease_id=lease_id)
        except tenure.TenureError:
            pass
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return tenure.Item(
            key,
            value,
            etag,
            previous.last_modified if previous is not None else epoch,
            previous.content_type if previous is not None else None,
            previous.metadata if previous is not None else None,
            previous.expires_at if previous is not None else None,
        )

    # -- listings --

    @overload
    async def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[False] = False,
    ) -> tenure.Page[tenure.ItemProperties]: ...

    @overload
    async def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[True],
    ) -> tenure.Page[tenure.Item]: ...

    @overload
    async def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> tenure.Page[tenure.ItemProperties]: ...

    async def list(
        self,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> Any:
        """One page of the items whose keys start with `prefix`, in key order (on a worker)."""
        return await self._store._offload(
            self._container.list,
            prefix,
            page_size=page_size,
            continuation=continuation,
            include_values=include_values,
        )

    @overload
    def iterate(
        self, prefix: _Key = "", *, include_values: Literal[False] = False
    ) -> ItemStream[tenure.ItemProperties]: ...

    @overload
    def iterate(self, prefix: _Key = "", *, include_values: Literal[True]) -> ItemStream[tenure.Item]: ...

    @overload
    def iterate(
        self, prefix: _Key = "", *, include_values: bool = False
    ) -> ItemStream[tenure.ItemProperties]: ...

    def iterate(self, prefix: _Key = "", *, include_values: bool = False) -> Any:
        """Every item whose key starts with `prefix`, as an async iterator that reads page
        after page on a worker: ``async for item in container.iterate("part-"):``."""
        return ItemStream(self._store, self._container.iterate(prefix, include_values=include_values))

    # -- leases (docs/spec.md §4) --

    async def acquire_lease(
        self,
        key: _Key,
        duration: Optional[_Seconds] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
        wait: Optional[_Seconds] = None,
    ) -> Lease:
        """Acquires the item's lease. `duration`: 15–60 seconds, `None` = infinite. `wait`:
        how long to wait for it (first come, first served); the wait can be cancelled, and a
        cancelled acquire leaves no lease behind."""
        store = self._store
        pool = store._waits if wait is not None else store._write_pool()
        lease = await store._grant(
            pool,
            _release_quietly,
            self._container.acquire_lease,
            key,
            duration,
            proposed_id=proposed_id,
            holder=holder,
            wait=wait,
        )
        return Lease(store, lease)

    def lease(
        self,
        key: _Key,
        duration: Optional[_Seconds] = 15,
        *,
        proposed_id: Optional[str] = None,
        holder: Optional[str] = None,
        wait: Optional[_Seconds] = None,
    ) -> Pending[Lease]:
        """The lease for an ``async with`` block, released at its end: ``async with
        container.lease(key, wait=10) as lease:``. (``await`` it for the `Lease`.)"""
        return Pending(
            functools.partial(
                self.acquire_lease, key, duration, proposed_id=proposed_id, holder=holder, wait=wait
            )
        )

    async def renew_lease(self, key: _Key, lease_id: _LeaseIdArg) -> Lease:
        return Lease(self._store, await self._store._write(self._container.renew_lease, key, lease_id))

    async def change_lease(self, key: _Key, lease_id: _LeaseIdArg, proposed_id: str) -> Lease:
        lease = await self._store._write(self._container.change_lease, key, lease_id, proposed_id)
        return Lease(self._store, lease)

    async def release_lease(self, key: _Key, lease_id: _LeaseIdArg) -> None:
        await self._store._write(self._container.release_lease, key, lease_id)

    async def break_lease(self, key: _Key, period: Optional[_Seconds] = None) -> float:
        """Breaks the lease; returns the seconds until a new lease can be acquired."""
        return await self._store._write(self._container.break_lease, key, period)

    async def lease_info(self, key: _Key) -> tenure.LeaseInfo:
        return self._container.lease_info(key)

    # -- cache locks (docs/spec.md §6) --

    async def get_and_lock(
        self, key: _Key, lock_timeout: _Seconds, *, force: bool = False
    ) -> Tuple[Optional[tenure.Item], tenure.LockHandle]:
        """Locks the item for `lock_timeout`; returns it (or `None` when force-locking an
        absent key) and the handle. Never waits: `ObjectLocked` if it is locked or leased.
        A lock granted to a call cancelled meanwhile is released at once."""
        container = self._container

        def unlock(granted: Tuple[Optional[tenure.Item], tenure.LockHandle]) -> None:
            container.unlock(key, granted[1])

        return await self._store._grant(
            self._store._write_pool(), unlock, container.get_and_lock, key, lock_timeout, force=force
        )

    def lock(self, key: _Key, lock_timeout: _Seconds, *, force: bool = False) -> Pending[CacheLock]:
        """The cache lock for an ``async with`` block, unlocked at its end unless
        ``await lock.put(value)`` (put-and-unlock) or ``await lock.unlock()`` ran."""

        async def make() -> CacheLock:
            item, handle = await self.get_and_lock(key, lock_timeout, force=force)
            return CacheLock(self, key, item, handle)

        return Pending(make)

    async def put_and_unlock(
        self, key: _Key, value: _Value, handle: _LockHandleArg, *, ttl: Optional[_Seconds] = None
    ) -> str:
        """Replaces the locked item and unlocks it; returns the new ETag."""
        return await self._store._write(self._container.put_and_unlock, key, value, handle, ttl=ttl)

    async def unlock(self, key: _Key, handle: _LockHandleArg, *, ttl: Optional[_Seconds] = None) -> None:
        await self._store._write(self._container.unlock, key, handle, ttl=ttl)


# ----- leases and locks -----


class Lease:
    """A granted lease, for asyncio code. ``async with lease:`` releases it at the end of the
    block; pass it (or its `id`) as ``lease_id=`` — to `tenure.aio` and to `tenure` calls
    alike. Equal to another when both name the same grant."""

    def __init__(self, store: Store, lease: tenure.Lease) -> None:
        self._store = store
        self._tenure_lease = lease

    @property
    def id(self) -> str:
        return self._tenure_lease.id

    @property
    def fence(self) -> int:
        """The fencing token: strictly increasing per item across all grants."""
        return self._tenure_lease.fence

    @property
    def container(self) -> str:
        return self._tenure_lease.container

    @property
    def key(self) -> Optional[str]:
        return self._tenure_lease.key

    @property
    def key_bytes(self) -> Optional[bytes]:
        return self._tenure_lease.key_bytes

    @property
    def sync(self) -> tenure.Lease:
        """The `tenure.Lease` underneath."""
        return self._tenure_lease

    async def renew(self) -> Lease:
        """Renews the lease for its duration from now; returns this Lease."""
        await self._store._write(self._tenure_lease.renew)
        return self

    async def change(self, proposed_id: str) -> Lease:
        """Changes the lease id to `proposed_id`; returns this Lease."""
        await self._store._write(self._tenure_lease.change, proposed_id)
        return self

    async def release(self) -> None:
        await self._store._write(self._tenure_lease.release)

    async def info(self) -> tenure.LeaseInfo:
        return self._tenure_lease.info()

    async def __aenter__(self) -> Lease:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        """Releases the lease, as `tenure.Lease.__exit__` does (a failed release is ignored
        after an exception in the block, and when the item or container is gone)."""
        await self._store._write(self._tenure_lease.__exit__, exc_type, exc_value, traceback)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Lease):
            return self._tenure_lease == other._tenure_lease
        return self._tenure_lease == other

    def __hash__(self) -> int:
        return hash(self._tenure_lease)

    def __str__(self) -> str:
        return self.id

    def __repr__(self) -> str:
        return "tenure.aio." + repr(self._tenure_lease)[len("tenure.") :]

    def __reduce__(self) -> Tuple[Any, ...]:
        # Another process gets the plain (detached) tenure.Lease: usable as lease_id=.
        return self._tenure_lease.__reduce__()


class CacheLock:
    """A cache lock held for an ``async with`` block (`Container.lock`): `item` as locked
    (`None` when force-locking an absent key), `handle`; ``await lock.put(value)`` writes and
    unlocks, ``await lock.unlock()`` releases. The end of the block unlocks what is still
    locked (as `tenure.CacheLock`)."""

    def __init__(
        self, container: Container, key: _Key, item: Optional[tenure.Item], handle: tenure.LockHandle
    ) -> None:
        self.container = container
        self.key = key
        self.item = item
        self.handle = handle
        self.held = True

    async def put(self, value: _Value, *, ttl: Optional[_Seconds] = None) -> str:
        etag = await self.container.put_and_unlock(self.key, value, self.handle, ttl=ttl)
        self.held = False
        return etag

    async def unlock(self, *, ttl: Optional[_Seconds] = None) -> None:
        await self.container.unlock(self.key, self.handle, ttl=ttl)
        self.held = False

    async def __aenter__(self) -> CacheLock:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        if not self.held:
            return
        try:
            await self.unlock()
        except tenure.NotFound:
            self.held = False
        except tenure.TenureError:
            self.held = False
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        state = "held" if self.held else "released"
        return f"tenure.aio.CacheLock(container={self.container.name!r}, key={self.key!r}, {state})"


# ----- snapshots and batches -----


class Snapshot:
    """A repeatable view of the store at one version (docs/spec.md §9), for asyncio code.
    Point reads run at once; listings on a worker. ``async with`` releases it."""

    def __init__(self, store: Store, snapshot: tenure.Snapshot) -> None:
        self._store = store
        self._snapshot = snapshot

    @property
    def version(self) -> int:
        return self._snapshot.version

    @property
    def closed(self) -> bool:
        return self._snapshot.closed

    @property
    def sync(self) -> tenure.Snapshot:
        """The `tenure.Snapshot` underneath."""
        return self._snapshot

    async def close(self) -> None:
        """Releases the snapshot; later reads raise `Closed`."""
        self._snapshot.close()

    async def __aenter__(self) -> Snapshot:
        self._snapshot.__enter__()  # raises Closed on a closed snapshot
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self._snapshot.close()

    def __repr__(self) -> str:
        return f"<tenure.aio.Snapshot at version {self.version}>"

    async def get(
        self,
        container: _ContainerArg,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> tenure.Item:
        return self._snapshot.get(
            _native_container(container),
            key,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            lease_id=lease_id,
        )

    async def get_properties(
        self,
        container: _ContainerArg,
        key: _Key,
        *,
        if_match: Optional[_ETags] = None,
        if_none_match: Optional[_ETags] = None,
        if_modified_since: Optional[_Time] = None,
        if_unmodified_since: Optional[_Time] = None,
        lease_id: Optional[_LeaseIdArg] = None,
    ) -> tenure.ItemProperties:
        return self._snapshot.get_properties(
            _native_container(container),
            key,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            lease_id=lease_id,
        )

    async def exists(self, container: _ContainerArg, key: _Key) -> bool:
        return self._snapshot.exists(_native_container(container), key)

    async def count(self, container: _ContainerArg, prefix: _Key = "") -> int:
        return await self._store._offload(self._snapshot.count, _native_container(container), prefix)

    @overload
    async def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[False] = False,
    ) -> tenure.Page[tenure.ItemProperties]: ...

    @overload
    async def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: Literal[True],
    ) -> tenure.Page[tenure.Item]: ...

    @overload
    async def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> tenure.Page[tenure.ItemProperties]: ...

    async def list(
        self,
        container: _ContainerArg,
        prefix: _Key = "",
        *,
        page_size: int = 1000,
        continuation: Optional[str] = None,
        include_values: bool = False,
    ) -> Any:
        return await self._store._offload(
            self._snapshot.list,
            _native_container(container),
            prefix,
            page_size=page_size,
            continuation=continuation,
            include_values=include_values,
        )

    @overload
    def iterate(
        self, container: _ContainerArg, prefix: _Key = "", *, include_values: Literal[False] = False
    ) -> ItemStream[tenure.ItemProperties]: ...

    @overload
    def iterate(
        self, container: _ContainerArg, prefix: _Key = "", *, include_values: Literal[True]
    ) -> ItemStream[tenure.Item]: ...

    @overload
    def iterate(
        self, container: _ContainerArg, prefix: _Key = "", *, include_values: bool = False
    ) -> ItemStream[tenure.ItemProperties]: ...

    def iterate(self, container: _ContainerArg, prefix: _Key = "", *, include_values: bool = False) -> Any:
        iterator = self._snapshot.iterate(
            _native_container(container), prefix, include_values=include_values
        )
        return ItemStream(self._store, iterator)

    async def list_containers(self) -> List[str]:
        return self._snapshot.list_containers()


class Batch:
    """An all-or-nothing batch (docs/spec.md §8), for asyncio code. Queuing an operation
    returns its index at once; ``await batch.commit()`` commits. As ``async with`` it commits
    on a clean exit and discards on an exception."""

    def __init__(self, store: Store, batch: tenure.Batch) -> None:
        self._store = store
        self._batch = batch

    @property
    def version(self) -> Optional[int]:
        """The batch's version once committed, else `None`."""
        return self._batch.version

    def __len__(self) -> int:
        return len(self._batch)

    def __repr__(self) -> str:
        return "<tenure.aio." + repr(self._batch)[len("<tenure.") :]

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
    ) -> int:
        return self._batch.put(
            _native_container(container),
            key,
            value,
            content_type=content_type,
            metadata=metadata,
            ttl=ttl,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

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
    ) -> int:
        return self._batch.create(
            _native_container(container),
            key,
            value,
            content_type=content_type,
            metadata=metadata,
            ttl=ttl,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

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
    ) -> int:
        return self._batch.replace(
            _native_container(container),
            key,
            value,
            content_type=content_type,
            metadata=metadata,
            ttl=ttl,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

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
    ) -> int:
        return self._batch.delete(
            _native_container(container),
            key,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
            lease_id=lease_id,
            lock_handle=lock_handle,
        )

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
    ) -> int:
        return self._batch.check(
            _native_container(container),
            key,
            if_match=if_match,
            if_none_match=if_none_match,
            if_modified_since=if_modified_since,
            if_unmodified_since=if_unmodified_since,
            if_version=if_version,
        )

    async def commit(self) -> int:
        """Commits every operation or none; returns the batch's version. On failure raises
        `FailedDependency` naming the failing operation (`.index`, `.container`, `.key`)."""
        return await self._store._write(self._batch.commit)

    def discard(self) -> None:
        self._batch.discard()

    async def __aenter__(self) -> Batch:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        if exc_type is not None or len(self._batch) == 0:
            self._batch.discard()
            return
        await self.commit()


# ----- async iteration -----


class ChangeStream:
    """The change feed as an async iterator (`Store.changes`). Pages are read on a worker;
    with ``follow=True`` it waits (cancellably) for new changes at the end. `since` is the
    version up to which every change was returned: pass it to resume."""

    def __init__(self, store: Store, iterator: tenure.ChangeIterator, follow: bool) -> None:
        self._store = store
        self._iterator = iterator
        self._follow = follow
        self._buffered: Deque[tenure.Change] = collections.deque()

    @property
    def since(self) -> int:
        return self._iterator.since

    def __aiter__(self) -> ChangeStream:
        return self

    async def __anext__(self) -> tenure.Change:
        while not self._buffered:
            page = await self._store._offload(self._iterator.next_page)
            if page:
                self._buffered.extend(page)
                break
            if not self._follow:
                raise StopAsyncIteration
            await self._store.wait_for_changes(self._iterator.since, 3600)
        return self._buffered.popleft()


class ItemStream(Generic[_I]):
    """A listing as an async iterator (`Container.iterate`, `Snapshot.iterate`): pages are
    read on a worker, items handed out from memory."""

    def __init__(self, store: Store, iterator: tenure.ItemIterator[Any]) -> None:
        self._store = store
        self._iterator = iterator
        self._buffered: Deque[_I] = collections.deque()
        self._finished = False

    def __aiter__(self) -> ItemStream[_I]:
        return self

    async def __anext__(self) -> _I:
        if not self._buffered and not self._finished:
            page: List[_I] = await self._store._offload(
                lambda: list(itertools.islice(self._iterator, PAGE))
            )
            self._finished = len(page) < PAGE
            self._buffered.extend(page)
        if not self._buffered:
            raise StopAsyncIteration
        return self._buffered.popleft()

    async def to_list(self) -> List[_I]:
        """Every remaining item in a list."""
        return [item async for item in self]

