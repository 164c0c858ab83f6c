"""`tenure.aio.open` and `tenure.aio.Store`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from os import PathLike
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Literal,
    Optional,
    Set,
    Type,
    Union,
)

import tenure

from ._common import (
    EXECUTOR_THREADS,
    WAIT_SLICE,
    Pending,
    _closed,
    _give_back,
    _invalid,
    _LeaseIdArg,
    _Metadata,
    _release_quietly,
    _Seconds,
    _seconds,
    _Time,
    _T,
    _WaitThreads,
)
from ._container import Container, Lease
from ._views import Batch, ChangeStream, Snapshot


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


class Store:
    """An open store for asyncio code (`tenure.aio.open`). Share it between tasks freely;
    ``async with store:`` or ``await store.close()`` releases the directory."""

    def __init__(self, store: tenure.Store, *, executor_threads: int = EXECUTOR_THREADS) -> None:
        self._store = store
        self._inline_writes = store.durability == "buffered"
        self._calls = concurrent.futures.ThreadPoolExecutor(
            executor_threads, thread_name_prefix="tenure-aio"
        )
        self._waits = _WaitThreads()
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
        pool: Union[concurrent.futures.ThreadPoolExecutor, _WaitThreads, None],
        release: Callable[[_T], object],
        call: Callable[..., _T],
        *args: Any,
        **kwargs: Any,
    ) -> _T:
        """A call that grants something (a lease, a lock). Run inline when `pool` is None;
        else through `pool`, and when the awaiting task is cancelled before the grant arrives,
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

    async def checkpoint(self) -> bool:
        """Saves the index now, so an open after a crash replays only what follows (see
        ``tenure.Store.checkpoint``)."""
        return await self._offload(self._store.checkpoint)

    async def stats(self) -> Dict[str, Union[int, bool, None]]:
        """What the store holds and how full it is (see ``tenure.Store.stats``)."""
        return await self._offload(self._store.stats)

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
