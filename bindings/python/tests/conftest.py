"""Shared fixtures: a store on a temporary directory whose time is a ManualClock (no test
sleeps to make a lease, lock or TTL run out)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Iterator

import pytest

import tenure

# Small log segments: a new segment file is made (and sized) on the first write.
SEGMENT = 4 << 20

START = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


@pytest.fixture
def clock() -> tenure.ManualClock:
    return tenure.ManualClock(START)


@pytest.fixture
def store(tmp_path: Path, clock: tenure.ManualClock) -> Iterator[tenure.Store]:
    with tenure.open(tmp_path / "store", durability="buffered", clock=clock, segment_size_bytes=SEGMENT) as opened:
        yield opened


@pytest.fixture
def container(store: tenure.Store) -> tenure.Container:
    return store.create_container("items")


@pytest.fixture(scope="module")
def table_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tenure.Store]:
    """One store for a whole module of table tests; each case uses its own keys."""
    clock = tenure.ManualClock(START)
    path = tmp_path_factory.mktemp("tables") / "store"
    with tenure.open(path, durability="buffered", clock=clock, segment_size_bytes=SEGMENT) as opened:
        yield opened


_counter = [0]


def fresh_key(prefix: str = "key") -> str:
    """A key no other case of the run uses."""
    _counter[0] += 1
    return f"{prefix}-{_counter[0]:06}"
