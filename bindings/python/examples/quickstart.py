"""A tour of tenure's Python API. Run: python examples/quickstart.py [store-directory]

It is also the program `mypy --strict` checks against the type stubs (run-tests.sh).
"""

from __future__ import annotations

import sys
import tempfile
from datetime import datetime, timedelta, timezone
from typing import List, Optional

import tenure


def main(directory: str) -> None:
    clock = tenure.ManualClock(datetime(2026, 1, 1, tzinfo=timezone.utc))
    with tenure.open(directory, durability="sync", clock=clock) as store:
        inventory = store.create_container("inventory", exist_ok=True)

        # Last writer wins by default; ETags make writes conditional.
        etag: str = inventory.put("RadioInventory", b"10", content_type="text/plain")
        inventory.put("RadioInventory", b"9", if_match=etag)
        try:
            inventory.put("RadioInventory", b"8", if_match=etag)  # stale ETag
        except tenure.ConditionNotMet as refused:
            print("refused:", refused.code, refused.status, "current ETag", refused.etag)

        # The retry loop users write around Cosmos DB, built in.
        def decrement(current: bytes) -> bytes:
            return str(int(current) - 1).encode()

        item: tenure.Item = inventory.update("RadioInventory", decrement)
        print(item.key, item.value, item.etag, item.version, item.last_modified.isoformat())

        # Cache-style versions and locks.
        fresh = inventory.get("RadioInventory")
        inventory.put("RadioInventory", b"7", if_version=fresh.version)
        locked, handle = inventory.get_and_lock("RadioInventory", lock_timeout=30)
        assert locked is not None
        inventory.put_and_unlock("RadioInventory", b"6", handle)

        # Leases: a holder's writes carry its id; others are refused.
        inventory.put("report.pdf", b"draft")
        with inventory.lease("report.pdf", duration=15, holder="renderer") as lease:
            inventory.put("report.pdf", b"final", lease_id=lease)
            info: tenure.LeaseInfo = lease.info()
            print("lease", lease.id, "fence", lease.fence, info.state, info.remaining)
            try:
                inventory.put("report.pdf", b"oops")
            except tenure.LeaseIdMissing:
                print("a writer without the lease id was refused")

        # TTL, paging and continuations.
        inventory.put("session", b"token", ttl=60)
        clock.advance(61)
        try:
            inventory.get("session")
        except tenure.NotFound:
            print("expired")
        for number in range(25):
            inventory.put(f"part-{number:03}", b"x")
        continuation: Optional[str] = None
        keys: List[str] = []
        while True:
            page = inventory.list("part-", page_size=10, continuation=continuation)
            keys += [str(entry.key) for entry in page.items]
            continuation = page.continuation
            if continuation is None:
                break
        assert keys == [str(entry.key) for entry in inventory.iterate("part-")]

        # Batches: all or nothing.
        try:
            with store.batch() as batch:
                batch.put(inventory, "a", b"1")
                batch.create(inventory, "RadioInventory", b"0")  # exists: fails
        except tenure.FailedDependency as failed:
            print("batch failed at", failed.index, "because", failed.cause)

        # Snapshots: repeatable reads.
        with store.snapshot() as snapshot:
            inventory.put("RadioInventory", b"5")
            assert snapshot.get(inventory, "RadioInventory").value == b"6"

        version: int = store.version
        print("version", version, "containers", store.list_containers())
        clock.set(clock.now() + timedelta(hours=1))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        # A store preallocates its first segment (64 MiB): leave nothing behind.
        with tempfile.TemporaryDirectory(prefix="tenure-example-") as directory:
            main(directory + "/store")
