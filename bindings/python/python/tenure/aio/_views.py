"""`tenure.aio.Snapshot` and `Batch`, and the async iterators of the change feed and of listings."""

from __future__ import annotations

import collections
import itertools
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Deque,
    Generic,
    List,
    Literal,
    Optional,
    Type,
    overload,
)

import tenure

from ._common import (
    PAGE,
    _ContainerArg,
    _ETags,
    _I,
    _Key,
    _LeaseIdArg,
    _LockHandleArg,
    _Metadata,
    _native_container,
    _Seconds,
    _Time,
    _Value,
)

if TYPE_CHECKING:
    from ._store import Store


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
