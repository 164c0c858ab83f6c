"""What tenure.aio costs beside the blocking API: one run prints the medians.

    python bindings/python/benches/aio_overhead.py [--rounds 7] [--durability buffered|sync|both]

1. point reads: `container.get(key)` in a loop against `await container.get(key)` in a
   coroutine (both on one thread; the difference is the price of the coroutine);
2. conditional puts: one thread doing `put(key, value, if_match=etag)` with the ETag of its
   last write, against 1,000 coroutines doing the same through tenure.aio, each on its own
   key, all at once.

Each measurement runs `--rounds` times on a fresh store in a temporary directory; the
medians are printed. It needs the module installed (run-tests.sh's virtualenv has it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, List

import tenure
import tenure.aio

KEYS = 1_000
VALUE = b"v" * 100


def timed(run: Callable[[], int]) -> float:
    """Seconds per operation of `run` (which returns how many it did)."""
    start = time.perf_counter()
    count = run()
    return (time.perf_counter() - start) / count


def blocking_get(directory: Path, reads: int) -> float:
    with tenure.open(directory, durability="buffered") as store:
        items = store.create_container("items")
        for key in range(KEYS):
            items.put(f"key-{key}", VALUE)
        get = items.get
        keys = [f"key-{key % KEYS}" for key in range(reads)]

        def run() -> int:
            for key in keys:
                get(key)
            return len(keys)

        run()  # warm up
        return timed(run)


def aio_get(directory: Path, reads: int) -> float:
    async def main() -> float:
        async with tenure.aio.open(directory, durability="buffered") as store:
            items = await store.create_container("items")
            for key in range(KEYS):
                await items.put(f"key-{key}", VALUE)
            keys = [f"key-{key % KEYS}" for key in range(reads)]

            async def loop() -> float:
                get = items.get
                start = time.perf_counter()
                for key in keys:
                    await get(key)
                return (time.perf_counter() - start) / len(keys)

            await loop()  # warm up
            return await loop()

    return asyncio.run(main())


def blocking_puts(directory: Path, durability: str, writes: int) -> float:
    with tenure.open(directory, durability=durability) as store:  # type: ignore[arg-type]
        items = store.create_container("items")
        put = items.put
        etags = {f"key-{key}": put(f"key-{key}", VALUE) for key in range(KEYS)}
        keys = [f"key-{key % KEYS}" for key in range(writes)]

        def run() -> int:
            for key in keys:
                etags[key] = put(key, VALUE, if_match=etags[key])
            return len(keys)

        return timed(run)


def aio_puts(directory: Path, durability: str, writes: int) -> float:
    async def main() -> float:
        async with tenure.aio.open(directory, durability=durability) as store:  # type: ignore[arg-type]
            items = await store.create_container("items")
            etags = {}
            for key in range(KEYS):
                etags[f"key-{key}"] = await items.put(f"key-{key}", VALUE)
            per_coroutine = max(1, writes // KEYS)

            async def writer(key: str) -> None:
                etag = etags[key]
                for _ in range(per_coroutine):
                    etag = await items.put(key, VALUE, if_match=etag)

            start = time.perf_counter()
            await asyncio.gather(*(writer(key) for key in etags))
            return (time.perf_counter() - start) / (per_coroutine * KEYS)

    return asyncio.run(main())


def median_of(rounds: int, measure: Callable[[Path], float]) -> float:
    results: List[float] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="tenure-aio-bench-") as directory:
            results.append(measure(Path(directory) / "store"))
    return statistics.median(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--durability", choices=["buffered", "sync", "both"], default="both")
    arguments = parser.parse_args()
    rounds = arguments.rounds

    reads = 200_000
    get_blocking = median_of(rounds, lambda path: blocking_get(path, reads))
    get_aio = median_of(rounds, lambda path: aio_get(path, reads))
    print(f"point read, blocking get:        {get_blocking * 1e6:7.3f} µs")
    print(f"point read, await aio get:       {get_aio * 1e6:7.3f} µs")
    print(f"  await costs                    {(get_aio - get_blocking) * 1e6:+7.3f} µs more (target ≤ 3 µs)")

    modes = ["buffered", "sync"] if arguments.durability == "both" else [arguments.durability]
    for durability in modes:
        writes = 100_000 if durability == "buffered" else 5_000
        blocking = median_of(rounds, lambda path: blocking_puts(path, durability, writes))
        concurrent = median_of(rounds, lambda path: aio_puts(path, durability, writes))
        print(f"conditional put ({durability}), blocking, 1 thread:      {1 / blocking:10,.0f} /s")
        print(f"conditional put ({durability}), aio, 1,000 coroutines:   {1 / concurrent:10,.0f} /s")
        print(f"  aio ÷ blocking                 {blocking / concurrent:7.2f} (target ≥ 0.5)")


if __name__ == "__main__":
    main()
