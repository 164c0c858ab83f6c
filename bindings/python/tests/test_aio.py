"""tenure.aio: the API as coroutines — the seed stories, many coroutines on few keys,
cancellation of waiting calls, and an event loop that never waits on the engine."""

from __future__ import annotations

import asyncio
import datetime
import json
import pickle
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Optional, TypeVar

import pytest

import tenure
import tenure.aio
from conftest import SEGMENT, START

T = TypeVar("T")


def run(test: Callable[[], Awaitable[T]]) -> T:
    """Runs one async test body on a fresh event loop (plain asyncio, no plugin)."""
    return asyncio.run(asyncio.wait_for(test(), timeout=120))


def opened(path: Path, clock: Optional[tenure.ManualClock] = None, **options: Any) -> tenure.aio.Pending[tenure.aio.Store]:
    options.setdefault("durability", "buffered")
    return tenure.aio.open(path, clock=clock, segment_size_bytes=SEGMENT, **options)


class Ticker:
    """Counts event-loop turns while it runs: a blocked loop does not tick."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task: Optional["asyncio.Task[None]"] = None

    async def _run(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0.001)

    def __enter__(self) -> Ticker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


# ----- the seed stories -----


def test_two_writers_racing_one_etag(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            profiles = await store.create_container("profiles")
            await profiles.put("ada", b'{"name": "Ada"}')
            first, second = await asyncio.gather(profiles.get("ada"), profiles.get("ada"))
            assert first == second

            async def write(read: tenure.Item, value: bytes) -> str:
                await asyncio.sleep(0)
                return await profiles.put("ada", value, if_match=read.etag)

            results = await asyncio.gather(
                write(first, b"first"), write(second, b"second"), return_exceptions=True
            )
            winners = [result for result in results if isinstance(result, str)]
            losers = [result for result in results if isinstance(result, tenure.ConditionNotMet)]
            assert len(winners) == 1 and len(losers) == 1
            assert losers[0].etag == winners[0]  # the current ETag, without another read
            assert losers[0].key == "ada" and losers[0].container == "profiles"

    run(body)


def test_a_lease_holder_a_writer_without_its_id_and_a_break(tmp_path: Path) -> None:
    clock = tenure.ManualClock(START)

    async def body() -> None:
        async with opened(tmp_path / "s", clock) as store:
            reports = await store.create_container("reports")
            await reports.put("report.pdf", b"draft")
            async with reports.lease("report.pdf", 30, holder="renderer-1") as lease:
                with pytest.raises(tenure.LeaseIdMissing) as refused:
                    await reports.put("report.pdf", b"overwritten")
                assert refused.value.key == "report.pdf"
                await reports.put("report.pdf", b"final", lease_id=lease)
                assert (await reports.lease_info("report.pdf")).holder == "renderer-1"
                # An operator breaks it; the late holder has lost it.
                assert await reports.break_lease("report.pdf", period=0) == 0
                with pytest.raises(tenure.LeaseLost):
                    await reports.put("report.pdf", b"late", lease_id=lease)
            # Leaving the block releases the broken lease; anyone may write again.
            await reports.put("report.pdf", b"edited")
            assert (await reports.get("report.pdf")).value == b"edited"
            assert (await reports.lease_info("report.pdf")).state == "available"

    run(body)


def test_two_cache_clients_with_versions_and_get_and_lock(tmp_path: Path) -> None:
    clock = tenure.ManualClock(START)

    async def body() -> None:
        async with opened(tmp_path / "s", clock) as store:
            cache = await store.create_container("cache")
            await cache.put("RadioInventory", b"10")
            client_a, client_b = await cache.get("RadioInventory"), await cache.get("RadioInventory")
            await cache.put("RadioInventory", b"9", if_version=client_a.version)
            with pytest.raises(tenure.VersionMismatch):
                await cache.put("RadioInventory", b"9", if_version=client_b.version)
            async with cache.lock("RadioInventory", lock_timeout=30) as lock:
                assert lock.item is not None and lock.item.value == b"9"
                with pytest.raises(tenure.ObjectLocked):
                    await cache.get_and_lock("RadioInventory", 30)
                assert (await cache.get("RadioInventory")).value == b"9"  # reads never blocked
                await lock.put(str(int(lock.item.value) - 1).encode())
            item, handle = await cache.get_and_lock("RadioInventory", datetime.timedelta(seconds=5))
            assert item is not None and item.value == b"8"
            clock.advance(6)  # the holder "crashed": the lock ends by itself
            item, _ = await cache.get_and_lock("RadioInventory", 5)
            assert item is not None
            with pytest.raises(tenure.InvalidLockHandle):
                await cache.put_and_unlock("RadioInventory", b"0", handle)

    run(body)


def test_the_cosmos_update_loop_saving_a_continuation(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            orders = await store.create_container("orders")
            state = await store.create_container("state")
            async with store.batch() as batch:
                for number in range(900):
                    batch.put(orders, f"order-{number:05}", json.dumps({"total": number}).encode())

            async def process_one_page() -> bool:
                try:
                    saved = json.loads((await state.get("checkpoint")).value)
                except tenure.NotFound:
                    saved = {}
                page = await orders.list(
                    "order-", page_size=400, continuation=saved.get("continuation"), include_values=True
                )
                page_total = sum(json.loads(item.value)["total"] for item in page.items)

                def advance(current: bytes) -> bytes:
                    checkpoint = json.loads(current or b"{}")
                    checkpoint["continuation"] = page.continuation
                    checkpoint["total"] = checkpoint.get("total", 0) + page_total
                    checkpoint["pages"] = checkpoint.get("pages", 0) + 1
                    return json.dumps(checkpoint).encode()

                await state.update("checkpoint", advance, create_default=b"{}")
                return page.continuation is not None

            while await process_one_page():
                pass
            checkpoint = json.loads((await state.get("checkpoint")).value)
            assert checkpoint == {"continuation": None, "total": sum(range(900)), "pages": 3}

    run(body)


# ----- many coroutines -----


@pytest.mark.parametrize("durability", ["buffered", "sync"])
def test_a_hundred_coroutines_update_ten_keys_without_losing_one(tmp_path: Path, durability: str) -> None:
    rounds = 10 if durability == "buffered" else 3

    async def body() -> None:
        async with opened(tmp_path / "s", durability=durability) as store:
            counters = await store.create_container("counters")
            for key in range(10):
                await counters.put(f"counter-{key}", b"0")

            async def slow_increment(current: bytes) -> bytes:
                await asyncio.sleep(0)  # lets the others read the same version: real races
                return str(int(current) + 1).encode()

            async def worker(number: int) -> None:
                for _ in range(rounds):
                    await counters.update(f"counter-{number % 10}", slow_increment)

            with Ticker() as ticker:
                await asyncio.gather(*(worker(number) for number in range(100)))
            totals = [int((await counters.get(f"counter-{key}")).value) for key in range(10)]
            assert totals == [10 * rounds] * 10
            assert ticker.ticks > 0

    run(body)


# ----- cancellation and waiting -----


def test_cancelling_a_waiting_acquire_leaves_no_lease_behind(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            jobs = await store.create_container("jobs")
            await jobs.put("job-1", b"pending")
            holder = await jobs.acquire_lease("job-1", 60)
            waiter = asyncio.create_task(jobs.acquire_lease("job-1", 15, wait=30))
            with Ticker() as ticker:
                await asyncio.sleep(0.2)
            assert not waiter.done()
            assert ticker.ticks > 20, "the loop runs while the acquire waits"
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            # The holder leaves; the cancelled waiter's thread gets the lease and gives it back.
            await holder.release()
            deadline = time.monotonic() + 10
            while (await jobs.lease_info("job-1")).state != "available":
                assert time.monotonic() < deadline, "a cancelled acquire kept the lease"
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            assert (await jobs.lease_info("job-1")).state == "available"
            # ... and the next one who asks gets it.
            taken = await jobs.acquire_lease("job-1", 15, wait=5)
            assert taken.fence > holder.fence + 1  # the cancelled grant came and went in between
            await taken.release()

    run(body)


def test_a_waiting_acquire_with_a_timeout_from_asyncio(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            jobs = await store.create_container("jobs")
            await jobs.put("job", b"x")
            holder = await jobs.acquire_lease("job", None)  # infinite
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(jobs.acquire_lease("job", wait=30), timeout=0.1)
            with pytest.raises(tenure.LeaseAlreadyPresent):
                await jobs.acquire_lease("job", wait=0.05)  # the engine's own timeout
            await holder.release()
            waiting = asyncio.create_task(jobs.acquire_lease("job", wait=10))
            lease = await waiting
            assert (await jobs.lease_info("job")).id == lease.id

    run(body)


def test_wait_for_changes_is_awaitable_and_cancellable(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            items = await store.create_container("items")
            since = store.version
            assert await store.wait_for_changes(since, 0.01) is False
            waiting = asyncio.create_task(store.wait_for_changes(since, 30))
            await asyncio.sleep(0.05)
            assert not waiting.done()
            await items.put("k", b"v")
            assert await asyncio.wait_for(waiting, 5) is True
            cancelled = asyncio.create_task(store.wait_for_changes(store.version, 3600))
            await asyncio.sleep(0.05)
            threads_waiting = sum(1 for thread in threading.enumerate() if "tenure-aio-wait" in thread.name)
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            assert threads_waiting >= 1
            with pytest.raises(tenure.InvalidArgument) as bad:
                await store.wait_for_changes(-1, 1)
            assert bad.value.argument == "since"

    run(body)


def test_the_change_feed_as_an_async_iterator(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            start = store.version
            items = await store.create_container("items")
            async with store.batch() as batch:
                for number in range(1_500 // 2):
                    batch.put(items, f"a-{number}", b"x")
            for number in range(5):
                await items.put(f"b-{number}", b"y")
            seen = [change async for change in store.changes(start)]
            assert len(seen) == 1 + 750 + 5
            assert seen[-1].key == "b-4"

            received: List[tenure.Change] = []

            async def follow() -> None:
                async for change in store.changes(store.version, follow=True):
                    received.append(change)
                    if len(received) == 3:
                        break

            follower = asyncio.create_task(follow())
            await asyncio.sleep(0.05)
            for number in range(3):
                await items.put(f"c-{number}", b"z")
            await asyncio.wait_for(follower, 5)
            assert [change.key for change in received] == ["c-0", "c-1", "c-2"]
            endless = asyncio.create_task(follow())
            await asyncio.sleep(0.05)
            endless.cancel()
            with pytest.raises(asyncio.CancelledError):
                await endless

    run(body)


# ----- the rest of the API -----


def test_durable_writes_do_not_block_the_event_loop(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s", durability="sync") as store:
            assert store.durability == "sync"
            items = await store.create_container("items")
            with Ticker() as ticker:
                etags = await asyncio.gather(*(items.put(f"k-{n}", b"v" * 100) for n in range(200)))
            assert len(set(etags)) == 200
            assert ticker.ticks >= 1
            assert await items.count() == 200

    run(body)


def test_snapshots_batches_iteration_and_container_leases(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            items = await store.create_container("items")
            assert await store.list_containers() == ["items"]
            async with store.batch() as batch:
                batch.put(items, "a", b"1")
                batch.create("items", "b", b"1")
            assert batch.version is not None
            async with store.snapshot() as snapshot:
                await items.put("a", b"2")
                assert (await snapshot.get(items, "a")).value == b"1"
                assert await snapshot.exists("items", "b") and await snapshot.count(items) == 2
                listed = await snapshot.list(items, include_values=True)
                assert [item.value for item in listed] == [b"1", b"1"]
                assert [item.key async for item in snapshot.iterate(items)] == ["a", "b"]
            assert snapshot.closed
            with pytest.raises(tenure.Closed):
                async with snapshot:
                    pass  # pragma: no cover
            with pytest.raises(tenure.FailedDependency) as failed:
                async with store.batch() as batch:
                    batch.create(items, "a", b"x")
            assert failed.value.key == "a"
            properties = [item async for item in items.iterate()]
            assert all(type(item) is tenure.ItemProperties for item in properties)
            values = await items.iterate(include_values=True).to_list()
            assert [item.value for item in values] == [b"2", b"1"]
            assert "a" in [item.key for item in (await items.list()).items]
            assert await items.exists("a") and not await items.exists("zzz")
            lease = await store.acquire_container_lease("items", 15)
            with pytest.raises(tenure.LeaseIdMissing):
                await store.delete_container("items")
            assert (await store.container_lease_info("items")).state == "leased"
            await store.release_container_lease("items", lease)
            await store.delete_container("items")
            with pytest.raises(tenure.ContainerNotFound):
                await store.container("items")

    run(body)


def test_aio_leases_serve_both_apis_and_pickle(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            items = await store.create_container("items")
            await items.put("k", b"v")
            lease = await items.acquire_lease("k", 20)
            assert lease.key == "k" and lease.container == "items" and str(lease) == lease.id
            items.sync.put("k", b"from the blocking API", lease_id=lease)
            await items.put("k", b"from asyncio", lease_id=lease)
            renewed = await items.renew_lease("k", lease)
            assert renewed == lease and hash(renewed) == hash(lease)
            copy = pickle.loads(pickle.dumps(lease))
            assert isinstance(copy, tenure.Lease) and copy.id == lease.id
            await lease.change("9b2a4f1c-0d3e-4f5a-8b6c-7d8e9fa0b1c2")
            assert lease.id == "9b2a4f1c-0d3e-4f5a-8b6c-7d8e9fa0b1c2"
            assert (await lease.info()).id == lease.id
            await lease.release()

    run(body)


def test_open_close_and_closed_stores(tmp_path: Path) -> None:
    async def body() -> None:
        store = await opened(tmp_path / "s")
        assert not store.closed and store.version == 0
        await store.close()
        await store.close()  # twice is harmless
        with pytest.raises(tenure.Closed):
            async with store:
                pass  # pragma: no cover
        with pytest.raises(tenure.Closed):
            await store.list_containers()
        with pytest.raises(tenure.Closed):
            await store.compact()
        # A store whose open was cancelled is closed again: the directory can be opened.
        opening = asyncio.ensure_future(_open(tmp_path / "t"))
        await asyncio.sleep(0)  # the open is under way on its thread
        opening.cancel()
        with pytest.raises(asyncio.CancelledError):
            await opening
        for _ in range(100):
            try:
                async with opened(tmp_path / "t") as again:
                    assert not again.closed
                break
            except tenure.StoreLocked:
                await asyncio.sleep(0.02)
        else:
            raise AssertionError("a cancelled open left the store open")

    run(body)


async def _open(path: Path) -> tenure.aio.Store:
    return await opened(path)


def test_update_validation_and_deadline(tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(tmp_path / "s") as store:
            items = await store.create_container("items")
            with pytest.raises(tenure.NotFound):
                await items.update("missing", lambda value: value)
            with pytest.raises(tenure.InvalidArgument):
                await items.update("missing", lambda value: value, max_attempts=0)
            with pytest.raises(TypeError):
                await items.update("missing", "not callable")  # type: ignore[arg-type]
            await items.put("k", b"0")

            async def always_loses(current: bytes) -> bytes:
                await items.put("k", current + b"+")
                return b"mine"

            with pytest.raises(tenure.ConditionNotMet):
                await items.update("k", always_loses, max_attempts=3)
            with pytest.raises(tenure.ConditionNotMet):
                await items.update("k", always_loses, timeout=datetime.timedelta(milliseconds=30))
            created = await items.update("new", lambda value: value + b"!", create_default=b"")
            assert created.value == b"!" and created.key == "new"

    run(body)


def test_the_aio_module_is_typed_and_documented() -> None:
    import inspect

    public: Dict[str, Any] = {name: getattr(tenure.aio, name) for name in tenure.aio.__all__}
    for name, thing in public.items():
        assert inspect.getdoc(thing), name
    for cls in (tenure.aio.Store, tenure.aio.Container, tenure.aio.Snapshot, tenure.aio.Batch):
        for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction):
            assert "return" in member.__annotations__, f"{cls.__name__}.{name}"
    sync_methods = {name for name in dir(tenure.Container) if not name.startswith("_")}
    aio_methods = {name for name in dir(tenure.aio.Container) if not name.startswith("_")}
    assert sync_methods - aio_methods == set(), "every Container method has a coroutine twin"
    sync_store = {name for name in dir(tenure.Store) if not name.startswith("_")}
    aio_store = {name for name in dir(tenure.aio.Store) if not name.startswith("_")}
    assert sync_store - aio_store == set()
