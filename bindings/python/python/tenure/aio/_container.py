"""`tenure.aio.Container`, and the leases and cache locks it grants."""

from __future__ import annotations

import asyncio
import datetime
import functools
import inspect
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Literal,
    Optional,
    Tuple,
    Type,
    Union,
    overload,
)

import tenure

from ._common import (
    UPDATE_TIMEOUT,
    Pending,
    _backoff,
    _ETags,
    _invalid,
    _Key,
    _LeaseIdArg,
    _LockHandleArg,
    _Metadata,
    _release_quietly,
    _Seconds,
    _seconds,
    _Time,
    _Value,
)
from ._views import ItemStream

if TYPE_CHECKING:
    from ._store import Store


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
            new_value: Any = await produced if inspect.isawaitable(produced) else produced
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
