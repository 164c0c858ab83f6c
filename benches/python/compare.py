#!/usr/bin/env python3
"""tenure's Python module side by side with py-lmdb, sqlite3, redis-py and pymemcache.

    python benches/python/compare.py --quick                 # smoke run, under a minute
    python benches/python/compare.py --full --out docs/benchmarks-python.md   # full run, ~8 min

`benches/python/run.sh` builds the module into a virtualenv and runs this script. Every engine
gets the same 16 B keys and 100 B values, one thread, and a durability class that does not wait
for a disk sync (the report's Method section says exactly which setting each one uses). Rounds
interleave the engines (each round starts with a different one, and within a round the engines
take turns in short slices), every slice follows an untimed warm-up of the same work, and the
report gives medians, every round's figure and
tenure ÷ engine as the median of per-round ratios: the paired ratio is the figure to quote on a
shared, noisy machine. redis-server and memcached are started here on free 127.0.0.1 ports with
persistence off and stopped at the end (also on error); an engine that is not installed is left
out and the report says so. Nothing is ever estimated or filled in.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import importlib.metadata
import importlib.util
import os
import platform
import random
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import FrameType
from typing import Callable, Dict, Iterator, List, Literal, Optional, Sequence, Tuple

KEY_BYTES = 16
VALUE_BYTES = 100
# A Python loop runs this many operations between two clock reads: enough that reading
# the clock costs nothing measurable (< 0.1 %), few enough that a slice of the slowest engine
# (redis CAS, ~3 k/s here) overshoots its length by ~20 ms at most.
OPERATIONS_PER_BATCH = 64
# Every engine sees the same pseudo-random key sequence of this length, cycled.
KEY_STREAM_LENGTH = 1 << 18
LEASE_SECONDS = 15  # tenure's shortest finite lease; redis PX and memcached expiry match it
LOCK_KEY_COUNT = 10_000
SEED = 20261130


def key_of(index: int) -> bytes:
    return b"k%015d" % index


def lock_key_of(index: int) -> bytes:
    return b"l%015d" % index


def value_of(index: int, generation: int = 0) -> bytes:
    return (b"v%015d-%03d-" % (index, generation)).ljust(VALUE_BYTES, b".")


# The value every timed write stores: the same 100 B for every engine.
WRITTEN_VALUE = value_of(0, 1)
assert len(key_of(0)) == KEY_BYTES and len(lock_key_of(0)) == KEY_BYTES
assert len(WRITTEN_VALUE) == VALUE_BYTES


class BenchmarkFailure(RuntimeError):
    """An operation did not do what the workload requires (a missed key, a refused CAS)."""


# --------------------------------------------------------------------------------------------
# Engines. Each one runs a batch of the same operation in a plain loop, so the per-call
# overhead of the harness is identical for all of them and stays out of the ratios.
# --------------------------------------------------------------------------------------------


class Engine(ABC):
    name: str
    # One line for the Method table: how commits relate to disk syncs for this engine.
    durability: str

    @abstractmethod
    def load(self, count: int) -> None:
        """Writes key_of(i) -> value_of(i) for i < count (untimed)."""

    @abstractmethod
    def get_many(self, keys: Sequence[bytes]) -> None: ...

    @abstractmethod
    def put_many(self, keys: Sequence[bytes]) -> None: ...

    @abstractmethod
    def cas_with_known_version_many(self, keys: Sequence[bytes]) -> None:
        """A conditional write pinned to what this client's previous write of the key returned
        (engines with no such token read first, as they must)."""

    @abstractmethod
    def read_then_cas_many(self, keys: Sequence[bytes]) -> None:
        """Read the key (value and version), then write it conditionally on that version."""

    def prepare_locks(self, lock_keys: Sequence[bytes]) -> None:
        """Untimed set-up for lease_many (tenure leases need an existing item)."""

    def lease_many(self, lock_keys: Sequence[bytes]) -> None:
        raise NotImplementedError

    supports_leases = False

    @abstractmethod
    def close(self) -> None: ...


class TenureEngine(Engine):
    name = "tenure"
    durability = (
        '`tenure.open(..., durability="buffered")`: a put returns once its record is in the '
        "mapped log (the OS page cache); a background flusher fdatasyncs every 200 ms"
    )
    supports_leases = True

    def __init__(self, directory: str) -> None:
        import tenure

        self.store = tenure.open(directory, durability="buffered")
        self.items = self.store.create_container("bench")
        self.locks = self.store.create_container("locks")
        # The ETag each key's last write returned: what put(if_match=...) is pinned to.
        self.etag_by_key: Dict[bytes, str] = {}

    def load(self, count: int) -> None:
        put = self.items.put
        etag_by_key = self.etag_by_key
        for index in range(count):
            key = key_of(index)
            etag_by_key[key] = put(key, value_of(index))

    def get_many(self, keys: Sequence[bytes]) -> None:
        get = self.items.get
        for key in keys:
            if get(key).value is None:
                raise BenchmarkFailure(f"tenure: no value for {key!r}")

    def put_many(self, keys: Sequence[bytes]) -> None:
        put = self.items.put
        for key in keys:
            put(key, WRITTEN_VALUE)

    def cas_with_known_version_many(self, keys: Sequence[bytes]) -> None:
        # A refused condition raises tenure.ConditionNotMet, which ends the run.
        put = self.items.put
        etag_by_key = self.etag_by_key
        for key in keys:
            etag_by_key[key] = put(key, WRITTEN_VALUE, if_match=etag_by_key[key])

    def read_then_cas_many(self, keys: Sequence[bytes]) -> None:
        get = self.items.get
        put = self.items.put
        for key in keys:
            item = get(key)
            if item.value is None:
                raise BenchmarkFailure(f"tenure: no value for {key!r}")
            put(key, WRITTEN_VALUE, if_match=item.etag)

    def prepare_locks(self, lock_keys: Sequence[bytes]) -> None:
        for key in lock_keys:
            self.locks.put(key, b"lock")

    def lease_many(self, lock_keys: Sequence[bytes]) -> None:
        acquire = self.locks.acquire_lease
        release = self.locks.release_lease
        for key in lock_keys:
            release(key, acquire(key, LEASE_SECONDS))

    def close(self) -> None:
        self.store.close()


class LmdbEngine(Engine):
    name = "lmdb"
    durability = (
        "py-lmdb `Environment(sync=False, metasync=False)`: a commit writes to the OS page cache "
        "and does not fsync; `env.sync(True)` would"
    )

    def __init__(self, directory: str, map_size: int) -> None:
        import lmdb

        self.env = lmdb.open(directory, map_size=map_size, sync=False, metasync=False)

    def load(self, count: int) -> None:
        for start in range(0, count, 10_000):
            with self.env.begin(write=True) as txn:
                for index in range(start, min(count, start + 10_000)):
                    txn.put(key_of(index), value_of(index))

    def get_many(self, keys: Sequence[bytes]) -> None:
        # Each get in its own read transaction: a point read that sees the latest commit, as
        # every other engine's get does.
        begin = self.env.begin
        for key in keys:
            with begin() as txn:
                if txn.get(key) is None:
                    raise BenchmarkFailure(f"lmdb: no value for {key!r}")

    def put_many(self, keys: Sequence[bytes]) -> None:
        begin = self.env.begin
        for key in keys:
            with begin(write=True) as txn:
                txn.put(key, WRITTEN_VALUE)

    def cas_with_known_version_many(self, keys: Sequence[bytes]) -> None:
        # LMDB keeps no version: its compare-and-set is a read and a write in one write
        # transaction (writers are serialized, so nothing can come in between).
        self.read_then_cas_many(keys)

    def read_then_cas_many(self, keys: Sequence[bytes]) -> None:
        begin = self.env.begin
        for key in keys:
            with begin(write=True) as txn:
                if txn.get(key) is None:
                    raise BenchmarkFailure(f"lmdb: no value for {key!r}")
                txn.put(key, WRITTEN_VALUE)

    def close(self) -> None:
        self.env.close()


class SqliteEngine(Engine):
    name = "sqlite"
    durability = (
        "sqlite3, `journal_mode=WAL`, `synchronous=NORMAL`, autocommit (one transaction per "
        "statement): a commit appends to the WAL without fsync; checkpoints fsync"
    )

    def __init__(self, directory: str) -> None:
        # isolation_level=None: autocommit, so every statement is its own transaction, as every
        # tenure put is.
        self.connection = sqlite3.connect(os.path.join(directory, "bench.sqlite"), isolation_level=None)
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("PRAGMA synchronous=NORMAL")
        self.connection.execute(
            "CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID"
        )
        self.cursor = self.connection.cursor()
        # The version each key's last write set: what the conditional UPDATE is pinned to.
        self.version_by_key: Dict[bytes, int] = {}

    def load(self, count: int) -> None:
        self.cursor.execute("BEGIN")
        self.cursor.executemany(
            "INSERT INTO kv (k, v, version) VALUES (?, ?, 1)", ((key_of(i), value_of(i)) for i in range(count))
        )
        self.cursor.execute("COMMIT")
        self.version_by_key = {key_of(i): 1 for i in range(count)}

    def get_many(self, keys: Sequence[bytes]) -> None:
        execute = self.cursor.execute
        fetchone = self.cursor.fetchone
        for key in keys:
            execute("SELECT v FROM kv WHERE k = ?", (key,))
            if fetchone() is None:
                raise BenchmarkFailure(f"sqlite: no value for {key!r}")

    def put_many(self, keys: Sequence[bytes]) -> None:
        execute = self.cursor.execute
        for key in keys:
            execute("UPDATE kv SET v = ?, version = version + 1 WHERE k = ?", (WRITTEN_VALUE, key))

    def cas_with_known_version_many(self, keys: Sequence[bytes]) -> None:
        cursor = self.cursor
        version_by_key = self.version_by_key
        for key in keys:
            version = version_by_key[key]
            cursor.execute(
                "UPDATE kv SET v = ?, version = ? WHERE k = ? AND version = ?",
                (WRITTEN_VALUE, version + 1, key, version),
            )
            if cursor.rowcount != 1:
                raise BenchmarkFailure(f"sqlite: conditional UPDATE of {key!r} matched no row")
            version_by_key[key] = version + 1

    def read_then_cas_many(self, keys: Sequence[bytes]) -> None:
        cursor = self.cursor
        for key in keys:
            cursor.execute("SELECT v, version FROM kv WHERE k = ?", (key,))
            row = cursor.fetchone()
            if row is None:
                raise BenchmarkFailure(f"sqlite: no value for {key!r}")
            version = row[1]
            cursor.execute(
                "UPDATE kv SET v = ?, version = ? WHERE k = ? AND version = ?",
                (WRITTEN_VALUE, version + 1, key, version),
            )
            if cursor.rowcount != 1:
                raise BenchmarkFailure(f"sqlite: conditional UPDATE of {key!r} matched no row")

    def close(self) -> None:
        self.connection.close()


class RedisEngine(Engine):
    name = "redis"
    durability = (
        "redis-server `--save '' --appendonly no` on 127.0.0.1 (redis-py, one connection): "
        "memory only, nothing survives a restart — a weaker class than the others"
    )
    supports_leases = True

    def __init__(self, port: int) -> None:
        import redis

        self.client = redis.Redis(host="127.0.0.1", port=port)
        # One pipeline object reused for every WATCH/MULTI/EXEC (execute() resets it), so the
        # CAS does not pay for building a pipeline per operation.
        self.pipeline = self.client.pipeline(transaction=True)

    def load(self, count: int) -> None:
        for start in range(0, count, 10_000):
            self.client.mset({key_of(i): value_of(i) for i in range(start, min(count, start + 10_000))})

    def get_many(self, keys: Sequence[bytes]) -> None:
        get = self.client.get
        for key in keys:
            if get(key) is None:
                raise BenchmarkFailure(f"redis: no value for {key!r}")

    def put_many(self, keys: Sequence[bytes]) -> None:
        set_ = self.client.set
        for key in keys:
            set_(key, WRITTEN_VALUE)

    def cas_with_known_version_many(self, keys: Sequence[bytes]) -> None:
        # Redis keeps no version a client could pin to: WATCH, GET, MULTI, SET, EXEC.
        self.read_then_cas_many(keys)

    def read_then_cas_many(self, keys: Sequence[bytes]) -> None:
        pipeline = self.pipeline
        for key in keys:
            pipeline.watch(key)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
            if pipeline.get(key) is None:
                raise BenchmarkFailure(f"redis: no value for {key!r}")
            pipeline.multi()
            pipeline.set(key, WRITTEN_VALUE)
            pipeline.execute()  # raises redis.WatchError if the key changed since WATCH

    def lease_many(self, lock_keys: Sequence[bytes]) -> None:
        set_ = self.client.set
        delete = self.client.delete
        for key in lock_keys:
            if not set_(key, b"holder", nx=True, px=LEASE_SECONDS * 1000):
                raise BenchmarkFailure(f"redis: SET NX of {key!r} refused")
            delete(key)

    def close(self) -> None:
        self.pipeline.reset()
        self.client.close()


class MemcachedEngine(Engine):
    name = "memcached"
    durability = (
        "memcached on 127.0.0.1 (pymemcache, one connection, every write waits for the "
        "server's reply: `noreply=False`): memory only — a weaker class than the others"
    )
    supports_leases = True

    def __init__(self, port: int) -> None:
        from pymemcache.client.base import Client  # type: ignore[import-untyped]  # ships no types

        # default_noreply=False: pymemcache's default (True) would not wait for a write's
        # reply, which no other engine here gets to skip.
        self.client = Client(("127.0.0.1", port), default_noreply=False)

    def load(self, count: int) -> None:
        for start in range(0, count, 10_000):
            failed = self.client.set_many({key_of(i): value_of(i) for i in range(start, min(count, start + 10_000))})
            if failed:
                raise BenchmarkFailure(f"memcached: {len(failed)} keys not stored during the load")

    def get_many(self, keys: Sequence[bytes]) -> None:
        get = self.client.get
        for key in keys:
            if get(key) is None:
                raise BenchmarkFailure(f"memcached: no value for {key!r}")

    def put_many(self, keys: Sequence[bytes]) -> None:
        set_ = self.client.set
        for key in keys:
            if not set_(key, WRITTEN_VALUE, noreply=False):
                raise BenchmarkFailure(f"memcached: set of {key!r} refused")

    def cas_with_known_version_many(self, keys: Sequence[bytes]) -> None:
        # pymemcache's cas() returns no new token, so every CAS starts with gets.
        self.read_then_cas_many(keys)

    def read_then_cas_many(self, keys: Sequence[bytes]) -> None:
        gets = self.client.gets
        cas = self.client.cas
        for key in keys:
            value, token = gets(key)
            if value is None:
                raise BenchmarkFailure(f"memcached: no value for {key!r}")
            if not cas(key, WRITTEN_VALUE, token, noreply=False):
                raise BenchmarkFailure(f"memcached: cas of {key!r} refused")

    def lease_many(self, lock_keys: Sequence[bytes]) -> None:
        add = self.client.add
        delete = self.client.delete
        for key in lock_keys:
            if not add(key, b"holder", expire=LEASE_SECONDS, noreply=False):
                raise BenchmarkFailure(f"memcached: add of {key!r} refused")
            delete(key, noreply=False)

    def close(self) -> None:
        self.client.close()


# --------------------------------------------------------------------------------------------
# Servers: started on free loopback ports, persistence off, stopped on every way out.
# --------------------------------------------------------------------------------------------


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_listening(
    port: int, process: "subprocess.Popen[bytes]", name: str, log_path: str, timeout: float = 15.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            with open(log_path, encoding="utf-8", errors="replace") as log:
                output = log.read()[-2000:]
            raise RuntimeError(f"{name} exited with code {process.returncode} before listening on port {port}:\n{output}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@contextlib.contextmanager
def server_process(name: str, command: List[str], port: int, log_path: str) -> Iterator[None]:
    # Output goes to a file, not a pipe: a pipe nobody reads would stall a chatty server.
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_listening(port, process, name, log_path)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def redis_server_command(port: int) -> List[str]:
    return [
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--daemonize", "no", "--logfile", "",
    ]  # fmt: skip


def memcached_command(port: int) -> List[str]:
    command = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "2048"]
    if os.geteuid() == 0:
        command += ["-u", "root"]  # memcached refuses to run as root without naming a user
    return command


def tool_version(command: List[str]) -> str:
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unknown ({error})"
    output_lines = (completed.stdout or completed.stderr).strip().splitlines()
    return output_lines[0] if output_lines else "unknown"


# --------------------------------------------------------------------------------------------
# Workloads and measurement.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    id: str
    title: str
    description: str
    # "latency": reported as time per operation, lower is better; "rate": operations per second.
    kind: Literal["latency", "rate"]
    run: Callable[[Engine, Sequence[bytes]], None]
    applies_to: Callable[[Engine], bool] = lambda engine: True


WORKLOADS: List[Workload] = [
    Workload(
        "get",
        "Random get of a 100 B value",
        "time per get of a uniformly random existing key (all hits), value read into a `bytes`; "
        "lmdb opens a read transaction per get (a transaction kept open across gets would be faster but "
        "would keep reading an old snapshot; every other engine's get sees the latest write)",
        "latency",
        lambda engine, keys: engine.get_many(keys),
    ),
    Workload(
        "put",
        "Plain put (overwrite) of a 100 B value",
        "puts/s, a random existing key overwritten with no condition, each write its own "
        "transaction (sqlite `UPDATE ... SET v=?, version=version+1`, lmdb one write "
        "transaction per put, memcached `set` waiting for the reply)",
        "rate",
        lambda engine, keys: engine.put_many(keys),
    ),
    Workload(
        "cas",
        "Conditional put with the version from the previous write (the issue's CAS row)",
        "CAS/s on a random existing key: tenure `put(key, value, if_match=etag)` with the ETag "
        "that key's previous put returned; sqlite `UPDATE kv SET v=?, version=? WHERE k=? AND "
        "version=?` with the version its previous write set; engines with no such token read "
        "first: redis WATCH/GET/MULTI/SET/EXEC, memcached `gets` + `cas`, lmdb `get` + `put` in "
        "one write transaction. Every CAS must succeed (one client, no contention)",
        "rate",
        lambda engine, keys: engine.cas_with_known_version_many(keys),
    ),
    Workload(
        "read_cas",
        "Read, then conditional put (read-modify-write)",
        "CAS/s where every engine first reads the key's value and version: tenure `get` then "
        "`put(if_match=item.etag)`; sqlite `SELECT v, version` then the conditional UPDATE; "
        "redis, memcached and lmdb as in the row above (they read first there too)",
        "rate",
        lambda engine, keys: engine.read_then_cas_many(keys),
    ),
    Workload(
        "lease",
        "Lease acquire + release",
        f"pairs/s on a random key of {LOCK_KEY_COUNT:,}: tenure `acquire_lease(key, "
        f"{LEASE_SECONDS})` + `release_lease(key, lease)` (on an existing item); redis `SET key "
        f"holder NX PX {LEASE_SECONDS * 1000}` + `DEL key`; memcached `add(key, expire="
        f"{LEASE_SECONDS})` + `delete(key)`. lmdb and sqlite have no lease primitive and are left out",
        "rate",
        lambda engine, keys: engine.lease_many(keys),
        lambda engine: engine.supports_leases,
    ),
]


@dataclass
class KeyStream:
    """A fixed pseudo-random key sequence; each engine walks it from the start, so all engines
    see the same keys in the same order."""

    keys: List[bytes]
    position_by_engine: Dict[str, int] = field(default_factory=dict)

    def next_batch(self, engine_name: str) -> List[bytes]:
        position = self.position_by_engine.get(engine_name, 0)
        end = position + OPERATIONS_PER_BATCH
        batch = self.keys[position:end]
        self.position_by_engine[engine_name] = end % len(self.keys)
        if len(batch) < OPERATIONS_PER_BATCH:
            batch += self.keys[: OPERATIONS_PER_BATCH - len(batch)]
        return batch


def run_for(engine: Engine, workload: Workload, stream: KeyStream, seconds: float) -> Tuple[int, float]:
    """Runs the workload for at least `seconds`; returns (operations, seconds taken)."""
    operations = 0
    clock = time.perf_counter
    start = clock()
    elapsed = 0.0
    while elapsed < seconds:
        workload.run(engine, stream.next_batch(engine.name))
        operations += OPERATIONS_PER_BATCH
        elapsed = clock() - start
    return operations, elapsed


@dataclass
class Settings:
    keys: int
    rounds: int
    warmup_seconds: float
    measure_seconds: float
    slices: int
    engines: List[str]
    workloads: List[str]
    out: Optional[str]
    note: Optional[str]
    quick: bool


# results[workload id][engine name] = one figure per round (ops/s)
Results = Dict[str, Dict[str, List[float]]]


def run_rounds(settings: Settings, engines: List[Engine], log: Callable[[str], None]) -> Results:
    randomness = random.Random(SEED)
    half = settings.keys // 2
    # The "cas" row caches each key's version between writes, so nothing else may write those
    # keys: it owns the first half of the key space; plain puts and read-then-CAS write the
    # second half. Gets read all of it.
    key_range_by_workload = {
        "get": (0, settings.keys),
        "cas": (0, half),
        "put": (half, settings.keys),
        "read_cas": (half, settings.keys),
    }
    streams: Dict[str, KeyStream] = {}
    for workload in WORKLOADS:
        if workload.id == "lease":
            lock_count = min(LOCK_KEY_COUNT, settings.keys)
            keys = [lock_key_of(randomness.randrange(lock_count)) for _ in range(KEY_STREAM_LENGTH)]
        else:
            low, high = key_range_by_workload[workload.id]
            keys = [key_of(randomness.randrange(low, high)) for _ in range(KEY_STREAM_LENGTH)]
        streams[workload.id] = KeyStream(keys)

    # The key streams and the loaded engines' state live until the end: moving them out of the
    # collector's reach makes the gc.collect() before every slice take microseconds, not ~50 ms.
    gc.collect()
    gc.freeze()
    results: Results = {workload.id: {} for workload in WORKLOADS if workload.id in settings.workloads}
    for round_index in range(settings.rounds):
        # Each round starts one engine later, so no engine always runs first (or last) after
        # another engine's writes.
        shift = round_index % len(engines)
        order = engines[shift:] + engines[:shift]
        for workload in WORKLOADS:
            if workload.id not in settings.workloads:
                continue
            participants = [engine for engine in order if workload.applies_to(engine)]
            stream = streams[workload.id]
            # The engines take turns in short slices rather than one long run each: the load on a
            # shared machine drifts within seconds, and slices put every engine of a round under
            # nearly the same load, which is what makes the per-round ratio a fair pairing.
            operations_by_engine = {engine.name: 0 for engine in participants}
            seconds_by_engine = {engine.name: 0.0 for engine in participants}
            for _ in range(settings.slices):
                for engine in participants:
                    gc.collect()
                    run_for(engine, workload, stream, settings.warmup_seconds / settings.slices)  # untimed
                    operations, seconds = run_for(engine, workload, stream, settings.measure_seconds / settings.slices)
                    operations_by_engine[engine.name] += operations
                    seconds_by_engine[engine.name] += seconds
            for engine in participants:
                rate = operations_by_engine[engine.name] / seconds_by_engine[engine.name]
                results[workload.id].setdefault(engine.name, []).append(rate)
                log(f"round {round_index + 1}/{settings.rounds} {workload.id:9} {engine.name:10} {rate:12,.0f} ops/s")
    return results


# --------------------------------------------------------------------------------------------
# Report.
# --------------------------------------------------------------------------------------------


def format_rate(rate: float) -> str:
    if rate >= 1e6:
        return f"{rate / 1e6:.2f} M/s"
    if rate >= 1e3:
        return f"{rate / 1e3:.0f} k/s" if rate >= 1e5 else f"{rate / 1e3:.1f} k/s"
    return f"{rate:.0f} /s"


def format_figure(workload: Workload, rate: float) -> str:
    if workload.kind == "latency":
        microseconds = 1e6 / rate
        return f"{microseconds:.3f} µs" if microseconds < 10 else f"{microseconds:.1f} µs"
    return format_rate(rate)


def tenure_over(workload: Workload, tenure_rate: float, other_rate: float) -> float:
    """tenure ÷ engine in the row's own unit: time per op for latency rows, ops/s otherwise."""
    if workload.kind == "latency":
        return other_rate / tenure_rate  # (1/tenure) / (1/other)
    return tenure_rate / other_rate


def ratio_list(values: Sequence[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


@dataclass
class Target:
    row: str
    target_text: str
    workload_id: str
    peer: str
    bound: float
    at_most: bool  # True: the ratio must be ≤ bound; False: ≥ bound
    divided: str


TARGETS = [
    Target("get of a 100 B value", "≤ 1× py-lmdb's get", "get", "lmdb", 1.0, True, "tenure µs per get ÷ lmdb µs per get"),
    Target(
        "`put(if_match=…)`",
        "≥ 5× sqlite3's conditional UPDATE (WAL, synchronous=NORMAL)",
        "cas",
        "sqlite",
        5.0,
        False,
        "tenure CAS/s ÷ sqlite CAS/s",
    ),
    Target(
        "`put(if_match=…)`",
        "≥ 20× redis-py WATCH/MULTI/EXEC",
        "cas",
        "redis",
        20.0,
        False,
        "tenure CAS/s ÷ redis CAS/s",
    ),
]


def machine_lines() -> List[str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            memory = f", {int(meminfo.readline().split()[1]) / 1024 / 1024:.1f} GiB RAM"
    return [f"{os.cpu_count()} CPUs ({model}){memory}, {platform.system()} {platform.release()}"]


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def build_report(
    settings: Settings,
    command: str,
    started: datetime.datetime,
    seconds_taken: float,
    load_at_start: Tuple[float, float, float],
    engines: List[Engine],
    skipped: Dict[str, str],
    versions: Dict[str, str],
    results: Results,
) -> str:
    lines: List[str] = []
    add = lines.append
    engine_names = [engine.name for engine in engines]
    add("# tenure's Python module beside py-lmdb, sqlite3, redis-py and pymemcache")
    add("")
    add(
        f"Written by `benches/python/compare.py` ({'quick' if settings.quick else 'full'} mode); every figure below "
        "is measured, none is edited by hand. Run `benches/python/run.sh --full` to refresh it."
    )
    add("")
    add("## Run")
    add("")
    add(f"- date: {started:%Y-%m-%d %H:%M} UTC")
    wrapper = os.environ.get("TENURE_PYBENCH_WRAPPER")
    add(f"- command: `{command}`" + (f" (run by `{wrapper}`)" if wrapper else ""))
    add(
        f"- shape: {settings.keys:,} keys of {KEY_BYTES} B, values of {VALUE_BYTES} B, 1 thread; {settings.rounds} rounds; "
        f"each engine's figure for a workload and round is {settings.measure_seconds:g} s of timed work in "
        f"{settings.slices} slices, each after an untimed warm-up of {settings.warmup_seconds / settings.slices:g} s of the "
        f"same work; took {seconds_taken:.0f} s in all"
    )
    add(f"- machine: {machine_lines()[0]}")
    load_at_end = os.getloadavg()
    add(
        "- load average (1, 5, 15 min) at the start: "
        + " ".join(f"{value:.2f}" for value in load_at_start)
        + "; at the end: "
        + " ".join(f"{value:.2f}" for value in load_at_end)
    )
    add(f"- Python {platform.python_version()} ({platform.python_implementation()})")
    add("- versions: " + "; ".join(f"{name} {version}" for name, version in versions.items()))
    cpus = os.cpu_count() or 1
    if max(load_at_start[0], load_at_end[0]) > cpus:
        add(
            f"- **the machine was busy**: the 1-minute load average ({load_at_start[0]:.1f} at the start, "
            f"{load_at_end[0]:.1f} at the end) exceeded its {cpus} CPUs, so figures move from round to round; "
            "quote the per-round ratios (engines of a round ran under nearly the same load), not single figures. "
            "The load weighs most on redis and memcached: each of their round trips also waits for the server "
            "process to get a CPU, so their ratios here are likely more favourable to tenure than on an idle machine"
        )
    for name, reason in skipped.items():
        add(f"- **{name} left out**: {reason}")
    if settings.note:
        add(f"- note: {settings.note}")
    add("")
    add("## Method")
    add("")
    add(
        "- All engines run in this one Python process (redis-server and memcached in their own, reached "
        "over 127.0.0.1), each on a fresh directory under the temp dir (removed at the end), loaded once "
        f"with key i → value i for i < {settings.keys:,} (keys `k` + 15 digits, values 100 B)."
    )
    add(
        "- Each workload's operations run in a plain Python loop of "
        f"{OPERATIONS_PER_BATCH} operations between clock reads, the same loop shape for every engine; every "
        "engine walks the same pseudo-random key sequence. A round measures every workload for every engine; "
        "within it the engines take turns in short slices (all engines, then all again), so that every engine "
        "of a round runs under nearly the same machine load, and each round starts one engine later in the "
        "list. Every slice follows an untimed warm-up of the same work."
    )
    add(
        "- A table's **median** is the median over the rounds; the last column divides tenure's figure by that "
        "engine's *in the same round* and takes the median of those ratios. \"tenure ÷ best peer\" divides "
        "tenure's figure by the best peer's of the same round."
    )
    add(
        "- Key ranges: the issue's CAS row caches each key's version from its previous write, so it owns the "
        "first half of the keys; plain puts and read-then-CAS write the second half; gets read all keys."
    )
    add(
        "- Durability: no engine waits for a disk sync on a commit. The embedded ones (tenure, lmdb, sqlite) "
        "keep every acknowledged write through a crash of the process but not of the machine; redis and "
        "memcached run with persistence off, a weaker class (memory only):"
    )
    add("")
    add("| engine | durability class and settings |")
    add("| --- | --- |")
    for engine in engines:
        add(f"| {engine.name} | {engine.durability} |")
    add("")
    add("- Otherwise every engine keeps its defaults (cache sizes, server threads, client pools).")
    add("")
    add("## Targets of the issue \"Python module\"")
    add("")
    add("| row | target | measured (median of per-round ratios) | per round | met? | what is divided |")
    add("| --- | --- | --- | --- | --- | --- |")
    workload_by_id = {workload.id: workload for workload in WORKLOADS}
    for target in TARGETS:
        figures = results.get(target.workload_id, {})
        if "tenure" not in figures or target.peer not in figures:
            if target.peer in skipped:
                reason = f"{target.peer} left out: {skipped[target.peer]}"
            elif target.peer not in settings.engines:
                reason = f"{target.peer} not among --engines"
            else:
                reason = f"workload {target.workload_id} not among --workloads"
            add(f"| {target.row} | {target.target_text} | not measured | — | — ({reason}) | {target.divided} |")
            continue
        workload = workload_by_id[target.workload_id]
        ratios = [tenure_over(workload, t, p) for t, p in zip(figures["tenure"], figures[target.peer])]
        median = statistics.median(ratios)
        met = median <= target.bound if target.at_most else median >= target.bound
        add(
            f"| {target.row} | {target.target_text} | {median:.2f}× | {ratio_list(ratios)} | "
            f"{'yes' if met else '**no**'} | {target.divided} |"
        )
    add("")
    add("## Results")
    for workload in WORKLOADS:
        if workload.id not in results:
            continue
        figures = results[workload.id]
        add("")
        add(f"### {workload.title}")
        add("")
        better = "lower is better" if workload.kind == "latency" else "higher is better"
        add(f"{workload.description}; 1 thread ({better}).")
        add("")
        rounds = settings.rounds
        add("| engine | median | " + " | ".join(f"round {r + 1}" for r in range(rounds)) + " | tenure ÷ engine (median of rounds) |")
        add("| --- " * (rounds + 3) + "|")
        for name in engine_names:
            if name not in figures:
                continue
            rates = figures[name]
            median_rate = statistics.median(rates)
            if "tenure" in figures:
                ratio = f"{statistics.median([tenure_over(workload, t, o) for t, o in zip(figures['tenure'], rates)]):.2f}"
            else:
                ratio = "—"
            add(
                f"| {name} | **{format_figure(workload, median_rate)}** | "
                + " | ".join(format_figure(workload, rate) for rate in rates)
                + f" | {ratio} |"
            )
        peers = [name for name in engine_names if name in figures and name != "tenure"]
        if "tenure" in figures and peers:
            best_peer_by_round: List[str] = []
            ratios = []
            for round_index in range(rounds):
                best = max(peers, key=lambda name: figures[name][round_index])  # most ops/s wins
                best_peer_by_round.append(best)
                ratios.append(tenure_over(workload, figures["tenure"][round_index], figures[best][round_index]))
            median = statistics.median(ratios)
            loses = median > 1 if workload.kind == "latency" else median < 1
            best_peers = ", ".join(sorted(set(best_peer_by_round)))
            if abs(median - 1) < 0.05:
                verdict = f"tenure and the best peer ({best_peers}) are about even in this row (within 5 %)"
            elif loses:
                verdict = f"**tenure loses this row** (to {best_peers})"
            else:
                verdict = "tenure leads this row"
            add("")
            add(
                f"tenure ÷ best peer: **{median:.2f}** ({better}; per round: {ratio_list(ratios)}; best peer per round: "
                f"{', '.join(best_peer_by_round)}) — {verdict}."
            )
    add("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Main.
# --------------------------------------------------------------------------------------------

ALL_ENGINES = ["tenure", "lmdb", "sqlite", "redis", "memcached"]


def parse_settings(argv: Sequence[str]) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smoke run: 20k keys, 0.2 s per engine, workload and round (under a minute)")
    mode.add_argument("--full", action="store_true", help="full run (the default): 1M keys, 2 s per engine, workload and round")
    parser.add_argument("--keys", type=int, help="number of keys loaded into every engine")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (at least 5 for a report; default 5)")
    parser.add_argument("--measure-seconds", type=float, help="timed seconds per engine, workload and round (split over the slices)")
    parser.add_argument("--warmup-seconds", type=float, help="untimed warm-up per engine, workload and round (split over the slices)")
    parser.add_argument("--slices", type=int, help="turns the engines take within each workload and round")
    parser.add_argument("--engines", default=",".join(ALL_ENGINES), help="comma-separated subset of " + ",".join(ALL_ENGINES))
    parser.add_argument(
        "--workloads", default=",".join(w.id for w in WORKLOADS), help="comma-separated subset of " + ",".join(w.id for w in WORKLOADS)
    )
    parser.add_argument("--out", help="write the markdown report to this file (it is printed either way)")
    parser.add_argument("--note", help="a sentence to put into the report's Run section")
    arguments = parser.parse_args(argv)
    engines = [name.strip() for name in arguments.engines.split(",") if name.strip()]
    workloads = [name.strip() for name in arguments.workloads.split(",") if name.strip()]
    for name in engines:
        if name not in ALL_ENGINES:
            parser.error(f"unknown engine {name!r}")
    for name in workloads:
        if name not in {w.id for w in WORKLOADS}:
            parser.error(f"unknown workload {name!r}")
    if "tenure" not in engines:
        parser.error("tenure must be one of the engines: every ratio is tenure ÷ engine")
    if arguments.rounds < 1:
        parser.error("--rounds must be at least 1")
    if arguments.slices is not None and arguments.slices < 1:
        parser.error("--slices must be at least 1")
    quick = bool(arguments.quick)
    keys = arguments.keys or (20_000 if quick else 1_000_000)
    if keys < 2:
        parser.error("--keys must be at least 2")
    return Settings(
        keys=keys,
        rounds=arguments.rounds,
        warmup_seconds=arguments.warmup_seconds if arguments.warmup_seconds is not None else (0.05 if quick else 0.5),
        measure_seconds=arguments.measure_seconds if arguments.measure_seconds is not None else (0.2 if quick else 2.0),
        slices=arguments.slices or (2 if quick else 4),
        engines=engines,
        workloads=workloads,
        out=arguments.out,
        note=arguments.note,
        quick=quick,
    )


def raise_system_exit_on_sigterm(signal_number: int, frame: Optional[FrameType]) -> None:
    # Turns `kill` into an exception, so the servers and the temp directory are cleaned up.
    raise SystemExit(128 + signal_number)


def main(argv: Sequence[str]) -> int:
    settings = parse_settings(argv)
    signal.signal(signal.SIGTERM, raise_system_exit_on_sigterm)
    command = " ".join(shlex.quote(part) for part in ["python", "benches/python/compare.py", *argv])
    started = datetime.datetime.now(datetime.timezone.utc)
    load_at_start = os.getloadavg()
    clock_start = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - clock_start:7.1f} s] {message}", file=sys.stderr, flush=True)

    skipped: Dict[str, str] = {}
    versions: Dict[str, str] = {"tenure": package_version("tenure"), "sqlite3 module, SQLite": sqlite3.sqlite_version}
    engines: List[Engine] = []
    with contextlib.ExitStack() as cleanup:
        directory = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="tenure-pybench-"))
        for name in settings.engines:
            engine: Optional[Engine] = None
            if name == "tenure":
                engine = TenureEngine(os.path.join(directory, "tenure"))
            elif name == "lmdb":
                try:
                    import lmdb
                except ImportError:
                    skipped[name] = "the `lmdb` package is not installed (`pip install lmdb`)"
                    continue
                versions["py-lmdb"] = f"{package_version('lmdb')} (LMDB {'.'.join(map(str, lmdb.version()))})"
                os.mkdir(os.path.join(directory, "lmdb"))
                # Room for the keys three times over: LMDB's map never grows by itself.
                map_size = max(1 << 30, settings.keys * (KEY_BYTES + VALUE_BYTES) * 6)
                engine = LmdbEngine(os.path.join(directory, "lmdb"), map_size)
            elif name == "sqlite":
                os.mkdir(os.path.join(directory, "sqlite"))
                engine = SqliteEngine(os.path.join(directory, "sqlite"))
            elif name == "redis":
                if shutil.which("redis-server") is None:
                    skipped[name] = "`redis-server` is not on the PATH (`apt-get install -y redis-server`)"
                    continue
                if importlib.util.find_spec("redis") is None:
                    skipped[name] = "the `redis` package is not installed (`pip install redis`)"
                    continue
                port = free_loopback_port()
                try:
                    cleanup.enter_context(
                        server_process("redis-server", redis_server_command(port), port, os.path.join(directory, "redis.log"))
                    )
                except RuntimeError as error:
                    skipped[name] = f"redis-server did not start: {' '.join(str(error).split())}"
                    continue
                versions["redis-py"] = package_version("redis")
                versions["redis-server"] = tool_version(["redis-server", "--version"])
                engine = RedisEngine(port)
            elif name == "memcached":
                if shutil.which("memcached") is None:
                    skipped[name] = "`memcached` is not on the PATH (`apt-get install -y memcached`)"
                    continue
                if importlib.util.find_spec("pymemcache") is None:
                    skipped[name] = "the `pymemcache` package is not installed (`pip install pymemcache`)"
                    continue
                port = free_loopback_port()
                try:
                    cleanup.enter_context(
                        server_process("memcached", memcached_command(port), port, os.path.join(directory, "memcached.log"))
                    )
                except RuntimeError as error:
                    skipped[name] = f"memcached did not start: {' '.join(str(error).split())}"
                    continue
                versions["pymemcache"] = package_version("pymemcache")
                versions["memcached"] = tool_version(["memcached", "-V"])
                engine = MemcachedEngine(port)
            assert engine is not None
            cleanup.callback(engine.close)
            log(f"loading {settings.keys:,} keys into {name}")
            engine.load(settings.keys)
            engine.prepare_locks([lock_key_of(i) for i in range(min(LOCK_KEY_COUNT, settings.keys))])
            engines.append(engine)
        for name, reason in skipped.items():
            log(f"{name} left out: {reason}")
        results = run_rounds(settings, engines, log)
    report = build_report(
        settings, command, started, time.monotonic() - clock_start, load_at_start, engines, skipped, versions, results
    )
    print(report)
    if settings.out:
        with open(settings.out, "w", encoding="utf-8") as out:
            out.write(report)
        log(f"report written to {settings.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
