"""A tour of tenure.aio, tenure's API as coroutines. Run: python examples/asyncio_tour.py [dir]

It is also a program `mypy --strict` checks against the types of tenure.aio (run-tests.sh).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import timedelta
from typing import List

import tenure
import tenure.aio


async def main(directory: str) -> None:
    async with tenure.aio.open(directory, durability="sync") as store:
        inventory = await store.create_container("inventory", exist_ok=True)

        # Optimistic concurrency, as in the blocking API.
        etag: str = await inventory.put("RadioInventory", b"10", content_type="text/plain")
        await inventory.put("RadioInventory", b"9", if_match=etag)
        try:
            await inventory.put("RadioInventory", b"8", if_match=etag)
        except tenure.ConditionNotMet as refused:
            print("refused:", refused, "current ETag", refused.etag)

        # A hundred coroutines decrement the stock; update() retries lost races.
        await inventory.put("RadioInventory", b"1000")

        async def take_one() -> None:
            await inventory.update("RadioInventory", lambda value: str(int(value) - 1).encode())

        await asyncio.gather(*(take_one() for _ in range(100)))
        item: tenure.Item = await inventory.get("RadioInventory")
        value: bytes = item.value
        print("left:", int(value))

        # A lease for a block, waiting up to 10 s for it; a cache lock for another.
        await inventory.put("report.pdf", b"draft")
        async with inventory.lease("report.pdf", timedelta(seconds=15), wait=10) as lease:
            await inventory.put("report.pdf", b"final", lease_id=lease)
        async with inventory.lock("RadioInventory", lock_timeout=timedelta(seconds=30)) as lock:
            await lock.put(b"900")

        # The change feed as an async iterator; wait_for_changes can be cancelled.
        kinds: List[str] = [change.kind async for change in store.changes(0)]
        print(len(kinds), "changes")
        try:
            await asyncio.wait_for(store.wait_for_changes(store.version, 60), timeout=0.05)
        except asyncio.TimeoutError:
            print("no change in 50 ms")

        # Snapshots and batches with async with.
        async with store.snapshot() as snapshot:
            async with store.batch() as batch:
                batch.put(inventory, "a", b"1")
                batch.put(inventory, "b", b"2")
            print("snapshot sees a:", await snapshot.exists(inventory, "a"))
        async for entry in inventory.iterate(include_values=True):
            print(entry.key, len(entry.value))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory(prefix="tenure-aio-example-") as scratch:
            asyncio.run(main(scratch + "/store"))
