"""Threads: one Store shared by many threads, the GIL released around store calls."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import tenure

THREADS = 8
INCREMENTS = 2_000


def test_eight_threads_increment_one_counter_with_update(tmp_path: Path) -> None:
    with tenure.open(tmp_path / "store", durability="buffered", segment_size_bytes=4 << 20) as store:
        counters = store.create_container("counters")
        counters.put("hits", b"0")
        errors: list[BaseException] = []
        start = threading.Barrier(THREADS)

        def increment(current: bytes) -> bytes:
            return str(int(current) + 1).encode()

        def worker() -> None:
            try:
                start.wait()
                for _ in range(INCREMENTS):
                    # Eight writers on one key with no pause in between: a loaded machine can
                    # make one call lose more than the default 10 races. Correctness (no lost
                    # increment) is what this checks, so the retry budget is generous.
                    counters.update("hits", increment, max_attempts=1_000)
            except BaseException as error:  # noqa: BLE001 - reported by the main thread
                errors.append(error)

        threads = [threading.Thread(target=worker) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert counters.get("hits").value == str(THREADS * INCREMENTS).encode()


def test_a_waiting_lease_acquire_does_not_hold_the_gil(tmp_path: Path) -> None:
    with tenure.open(tmp_path / "store", durability="buffered", segment_size_bytes=4 << 20) as store:
        jobs = store.create_container("jobs")
        jobs.put("job-1", b"pending")
        holder = jobs.acquire_lease("job-1", duration=60)
        acquired: list[tenure.Lease] = []

        def waiter() -> None:
            acquired.append(jobs.acquire_lease("job-1", duration=15, wait=20))

        thread = threading.Thread(target=waiter)
        thread.start()
        # This thread keeps running Python while the other one waits inside tenure.
        deadline = time.monotonic() + 0.2
        spins = 0
        while time.monotonic() < deadline:
            spins += 1
        assert spins > 1_000
        assert not acquired
        holder.release()
        thread.join(timeout=20)
        assert len(acquired) == 1
        assert acquired[0].fence > holder.fence
        assert jobs.lease_info("job-1").id == acquired[0].id


def test_readers_and_writers_share_one_store(tmp_path: Path) -> None:
    with tenure.open(tmp_path / "store", durability="buffered", segment_size_bytes=4 << 20) as store:
        items = store.create_container("items")
        for number in range(100):
            items.put(f"key-{number:03}", b"0")
        stop = threading.Event()
        torn: list[bytes] = []

        def writer(name: str) -> None:
            value = 0
            while not stop.is_set():
                value += 1
                payload = f"{name}:{value}".encode() * 10
                for number in range(0, 100, 7):
                    items.put(f"key-{number:03}", payload)

        def reader() -> None:
            while not stop.is_set():
                with store.snapshot() as snapshot:
                    for item in snapshot.iterate("items", include_values=True):
                        value = item.value or b""
                        if value != b"0" and value != value[: len(value) // 10] * 10:
                            torn.append(value)

        threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(3)]
        threads += [threading.Thread(target=reader) for _ in range(3)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        stop.set()
        for thread in threads:
            thread.join()
        assert torn == []
