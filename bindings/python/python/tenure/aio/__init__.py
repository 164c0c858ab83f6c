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

- A call that never waits — a point read, and with ``durability="buffered"`` every write,
  lease and lock actions included — runs at once on the event loop's thread: it takes
  microseconds, and a hop to a thread and back would cost several times the call.
- A call that waits for the disk or for time — with ``durability="sync"`` every write, lease
  and lock actions included (it returns once its record is on stable storage; concurrent
  writers share one flush), a batch
  commit, a listing page, a change-feed page, `count`, `flush`, `compact`, `checkpoint`,
  `open`, `close` —
  runs on the store's thread pool (``executor_threads``, 32 by default), the GIL released
  while the engine works.
- A waiting lease acquire (``wait=``) and `wait_for_changes` wait on threads of their own,
  so they never hold up other calls (nor, being daemon threads, the interpreter's exit). Both can be cancelled (`asyncio.timeout`, `Task.cancel`): a
  cancelled `wait_for_changes` lets its thread go within 50 ms; a lease granted to an acquire
  that was cancelled meanwhile is released at once, so a cancelled acquire leaves no lease
  behind (and a cancelled `get_and_lock` no lock).

Cancelling any other awaited write does not undo it: it may still commit, as with any
client whose request is already on its way.
"""

from ._common import EXECUTOR_THREADS, PAGE, UPDATE_TIMEOUT, WAIT_SLICE, Pending
from ._container import CacheLock, Container, Lease
from ._store import Store, open
from ._views import Batch, ChangeStream, ItemStream, Snapshot

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

# The public names live in tenure.aio, whichever module defines them (reprs, docs).
for _public in (open, Store, Container, Snapshot, Batch, Lease, CacheLock, ChangeStream, ItemStream, Pending):
    _public.__module__ = __name__
del _public
