"""docs/spec.md §13 through Python: a wrong type raises TypeError, a bad value InvalidArgument naming
the argument; either way nothing changes. A closed store raises Closed."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Tuple

import pytest

import tenure
from conftest import SEGMENT, START

LEASE = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"


@pytest.fixture
def bad_store(tmp_path: Path, clock: tenure.ManualClock) -> Iterator[tenure.Store]:
    with tenure.open(
        tmp_path / "store",
        durability="buffered",
        clock=clock,
        max_value_bytes=1024,
        segment_size_bytes=SEGMENT,
    ) as store:
        items = store.create_container("items")
        items.put("k", b"value", metadata={"m": "1"}, content_type="text/plain")
        items.put("leased", b"value")
        items.acquire_lease("leased", 30, proposed_id=LEASE)
        yield store


def state_of(store: tenure.Store) -> List[Tuple[Any, ...]]:
    state: List[Tuple[Any, ...]] = [("version", store.version)]
    for name in store.list_containers():
        container = store.container(name)
        for item in container.iterate(include_values=True):
            info = container.lease_info(item.key)
            state.append(
                (name, item.key, item.value, item.etag, item.metadata, item.content_type)
                + (info.state, info.id, info.fence)
            )
    return state


Call = Callable[[tenure.Store, tenure.Container], object]

TYPE_ERRORS: List[Tuple[str, Call]] = [
    ("key int", lambda s, c: c.put(1, b"v")),  # type: ignore[arg-type]
    ("key None", lambda s, c: c.get(None)),  # type: ignore[arg-type]
    ("value str", lambda s, c: c.put("k", "text")),  # type: ignore[arg-type]
    ("value int", lambda s, c: c.put("k", 5)),  # type: ignore[arg-type]
    ("metadata value int", lambda s, c: c.put("k", b"v", metadata={"a": 1})),  # type: ignore[dict-item]
    ("metadata list", lambda s, c: c.put("k", b"v", metadata=["a"])),  # type: ignore[arg-type]
    ("ttl str", lambda s, c: c.put("k", b"v", ttl="10")),  # type: ignore[arg-type]
    ("ttl bool", lambda s, c: c.put("k", b"v", ttl=True)),
    ("if_match int", lambda s, c: c.put("k", b"v", if_match=5)),  # type: ignore[arg-type]
    ("if_version str", lambda s, c: c.put("k", b"v", if_version="3")),  # type: ignore[arg-type]
    ("date str", lambda s, c: c.put("k", b"v", if_modified_since="yesterday")),  # type: ignore[arg-type]
    ("date date", lambda s, c: c.get("k", if_modified_since=datetime.date(2020, 1, 1))),  # type: ignore[arg-type]
    ("lease_id int", lambda s, c: c.put("k", b"v", lease_id=5)),  # type: ignore[arg-type]
    ("lock_handle int", lambda s, c: c.put("k", b"v", lock_handle=5)),  # type: ignore[arg-type]
    ("content_type int", lambda s, c: c.put("k", b"v", content_type=5)),  # type: ignore[arg-type]
    ("page_size str", lambda s, c: c.list(page_size="10")),  # type: ignore[arg-type]
    ("duration str", lambda s, c: c.acquire_lease("k", "15")),  # type: ignore[arg-type]
    ("lock_timeout str", lambda s, c: c.get_and_lock("k", "10")),  # type: ignore[arg-type]
    ("container name int", lambda s, c: s.create_container(5)),  # type: ignore[arg-type]
    ("container name bytes", lambda s, c: s.container(b"items")),  # type: ignore[arg-type]
    ("update fn", lambda s, c: c.update("k", "not callable")),  # type: ignore[arg-type]
    ("batch container", lambda s, c: s.batch().put(5, "k", b"v")),  # type: ignore[arg-type]
    ("unknown open option", lambda s, c: tenure.open("/nonexistent/x", colour="blue")),
    ("open clock", lambda s, c: tenure.open("/nonexistent/x", clock="now")),  # type: ignore[arg-type]
    ("open durability", lambda s, c: tenure.open("/nonexistent/x", durability=1)),  # type: ignore[arg-type]
    ("clock str", lambda s, c: tenure.ManualClock("now")),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("case,call", TYPE_ERRORS, ids=[case for case, _ in TYPE_ERRORS])
def test_wrong_types_raise_type_error(
    bad_store: tenure.Store, case: str, call: Call
) -> None:
    before = state_of(bad_store)
    with pytest.raises(TypeError):
        call(bad_store, bad_store.container("items"))
    assert state_of(bad_store) == before


INVALID: List[Tuple[str, str, Call]] = [
    ("empty key", "key", lambda s, c: c.put("", b"v")),
    ("long key", "key", lambda s, c: c.put("x" * 1025, b"v")),
    ("surrogate key", "key", lambda s, c: c.put("\ud800", b"v")),
    ("big value", "value", lambda s, c: c.put("k", b"x" * 1025)),
    ("big metadata", "metadata", lambda s, c: c.put("k", b"v", metadata={"a": "x" * 9000})),
    ("empty metadata name", "metadata", lambda s, c: c.put("k", b"v", metadata={"": "x"})),
    ("empty etag", "if_match", lambda s, c: c.put("k", b"v", if_match="")),
    ("inner quote", "if_none_match", lambda s, c: c.put("k", b"v", if_none_match='a"b')),
    ("negative version", "if_version", lambda s, c: c.put("k", b"v", if_version=-1)),
    ("negative date", "if_modified_since", lambda s, c: c.put("k", b"v", if_modified_since=-5)),
    ("ttl 0", "ttl", lambda s, c: c.put("k", b"v", ttl=0)),
    ("ttl -2", "ttl", lambda s, c: c.put("k", b"v", ttl=-2)),
    ("ttl fraction", "ttl", lambda s, c: c.put("k", b"v", ttl=1.5)),
    ("lease id", "lease_id", lambda s, c: c.put("leased", b"v", lease_id="not-a-uuid")),
    ("lock handle", "lock_handle", lambda s, c: c.delete("k", lock_handle="zz")),
    ("duration 14", "duration", lambda s, c: c.acquire_lease("k", 14)),
    ("duration 61", "duration", lambda s, c: c.acquire_lease("k", 61)),
    ("duration 0", "duration", lambda s, c: c.acquire_lease("k", 0)),
    ("duration fraction", "duration", lambda s, c: c.acquire_lease("k", 15.5)),
    ("holder", "holder", lambda s, c: c.acquire_lease("k", holder="h" * 300)),
    ("proposed id", "proposed_id", lambda s, c: c.acquire_lease("k", proposed_id="nope")),
    ("break period 61", "period", lambda s, c: c.break_lease("leased", period=61)),
    ("break period -1", "period", lambda s, c: c.break_lease("leased", period=-1)),
    ("lock timeout 0", "lock_timeout", lambda s, c: c.get_and_lock("k", 0)),
    ("lock timeout -1", "lock_timeout", lambda s, c: c.get_and_lock("k", -1)),
    ("wait -1", "wait", lambda s, c: c.acquire_lease("k", wait=-1)),
    ("page size 0", "page_size", lambda s, c: c.list(page_size=0)),
    ("page size -1", "page_size", lambda s, c: c.list(page_size=-1)),
    ("continuation", "continuation", lambda s, c: c.list(continuation="garbage")),
    ("read if_none_match *", "if_none_match", lambda s, c: c.get("k", if_none_match="*")),
    ("container empty", "name", lambda s, c: s.create_container("")),
    ("container slash", "name", lambda s, c: s.create_container("/x")),
    ("container nul", "name", lambda s, c: s.create_container("a\0b")),
    ("container long", "name", lambda s, c: s.create_container("x" * 256)),
    ("default ttl 0", "default_ttl", lambda s, c: s.create_container("new", default_ttl=0)),
    ("default ttl -5", "default_ttl", lambda s, c: s.create_container("new", default_ttl=-5)),
    ("max attempts 0", "max_attempts", lambda s, c: c.update("k", lambda v: v, max_attempts=0)),
    ("durability", "durability", lambda s, c: tenure.open("/nonexistent/x", durability="fast")),  # type: ignore[arg-type]
    ("open limit", "max_key_bytes", lambda s, c: tenure.open("/nonexistent/x", max_key_bytes=0)),
    ("clock before 1970", "now", lambda s, c: tenure.ManualClock(-1)),
    ("huge integer", "if_version", lambda s, c: c.put("k", b"v", if_version=2**80)),
    ("nan date", "if_unmodified_since", lambda s, c: c.get("k", if_unmodified_since=float("nan"))),
    ("empty batch", "batch", lambda s, c: s.batch().commit()),
]


@pytest.mark.parametrize(
    "case,argument,call", INVALID, ids=[case for case, _, _ in INVALID]
)
def test_bad_values_raise_invalid_argument(
    bad_store: tenure.Store, case: str, argument: str, call: Call
) -> None:
    before = state_of(bad_store)
    with pytest.raises(tenure.InvalidArgument) as refused:
        call(bad_store, bad_store.container("items"))
    assert refused.value.argument == argument
    assert refused.value.status == 400
    assert isinstance(refused.value, ValueError)
    assert argument in str(refused.value)
    assert state_of(bad_store) == before


def test_a_bad_argument_wins_over_a_missing_container(store: tenure.Store) -> None:
    # docs/spec.md §3 order of checks: arguments first, nothing is looked up yet.
    with pytest.raises(tenure.ContainerNotFound):
        store.container("absent")
    store.create_container("absent")
    absent = store.container("absent")
    store.delete_container("absent")
    with pytest.raises(tenure.InvalidArgument):
        absent.put("", b"v")
    with pytest.raises(tenure.ContainerNotFound):
        absent.put("k", b"v")


def test_clock_arguments(clock: tenure.ManualClock) -> None:
    assert clock.now() == START
    assert clock.timestamp() == START.timestamp()
    with pytest.raises(tenure.InvalidArgument):
        clock.advance(-1)
    clock.advance(1.5)
    assert clock.now() == START + datetime.timedelta(seconds=1.5)
    clock.set(START.timestamp())  # epoch seconds; backwards is allowed
    assert clock.now() == START
    clock.set(START.replace(tzinfo=None))  # naive = UTC
    assert clock.now() == START
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    clock.set(START.astimezone(plus_two))
    assert clock.now() == START


# ----- a closed store -----

CLOSED_CALLS: List[Tuple[str, Callable[[tenure.Store, tenure.Container, Optional[tenure.Lease]], object]]] = [
    ("get", lambda s, c, l: c.get("k")),
    ("get_properties", lambda s, c, l: c.get_properties("k")),
    ("put", lambda s, c, l: c.put("k", b"v")),
    ("create", lambda s, c, l: c.create("new", b"v")),
    ("replace", lambda s, c, l: c.replace("k", b"v")),
    ("delete", lambda s, c, l: c.delete("k")),
    ("set_metadata", lambda s, c, l: c.set_metadata("k", {})),
    ("update", lambda s, c, l: c.update("k", lambda v: v)),
    ("get_if_newer", lambda s, c, l: c.get_if_newer("k", 1)),
    ("list", lambda s, c, l: c.list()),
    ("iterate", lambda s, c, l: list(c.iterate())),
    ("acquire_lease", lambda s, c, l: c.acquire_lease("k")),
    ("lease_info", lambda s, c, l: c.lease_info("k")),
    ("break_lease", lambda s, c, l: c.break_lease("k")),
    ("get_and_lock", lambda s, c, l: c.get_and_lock("k", 5)),
    ("unlock", lambda s, c, l: c.unlock("k", "0" * 32)),
    ("put_and_unlock", lambda s, c, l: c.put_and_unlock("k", b"v", "0" * 32)),
    ("lease.renew", lambda s, c, l: l.renew() if l else None),
    ("lease.release", lambda s, c, l: l.release() if l else None),
    ("lease.info", lambda s, c, l: l.info() if l else None),
    ("create_container", lambda s, c, l: s.create_container("other")),
    ("container", lambda s, c, l: s.container("items")),
    ("delete_container", lambda s, c, l: s.delete_container("items")),
    ("list_containers", lambda s, c, l: s.list_containers()),
    ("acquire_container_lease", lambda s, c, l: s.acquire_container_lease("items")),
    ("container_lease_info", lambda s, c, l: s.container_lease_info("items")),
    ("snapshot", lambda s, c, l: s.snapshot()),
    ("batch commit", lambda s, c, l: _commit(s, c)),
    ("compact", lambda s, c, l: s.compact()),
    ("flush", lambda s, c, l: s.flush()),
    ("version", lambda s, c, l: s.version),
]


def _commit(store: tenure.Store, container: tenure.Container) -> int:
    batch = store.batch()
    batch.put(container, "k", b"v")
    return batch.commit()


@pytest.mark.parametrize("case,call", CLOSED_CALLS, ids=[case for case, _ in CLOSED_CALLS])
def test_a_closed_store_raises_closed(
    tmp_path: Path,
    case: str,
    call: Callable[[tenure.Store, tenure.Container, Optional[tenure.Lease]], object],
) -> None:
    store = tenure.open(tmp_path / "store", durability="buffered", segment_size_bytes=SEGMENT)
    container = store.create_container("items")
    container.put("k", b"v")
    lease = container.acquire_lease("k") if case.startswith("lease.") else None
    store.close()
    assert store.closed
    with pytest.raises(tenure.Closed) as raised:
        call(store, container, lease)
    assert (raised.value.code, raised.value.status) == ("Closed", 500)
    store.close()  # closing again is harmless


def test_close_ends_open_snapshots_and_pending_batches(tmp_path: Path) -> None:
    store = tenure.open(tmp_path / "store", durability="buffered", segment_size_bytes=SEGMENT)
    items = store.create_container("items")
    items.put("k", b"v")
    snapshot = store.snapshot()
    iterator = items.iterate()
    batch = store.batch()
    batch.put(items, "k2", b"v")
    store.close()
    with pytest.raises(tenure.Closed):
        snapshot.get(items, "k")
    with pytest.raises(tenure.Closed):
        next(iterator)
    with pytest.raises(tenure.Closed):
        batch.commit()
    # The directory is free again at once.
    with tenure.open(tmp_path / "store") as reopened:
        assert reopened.container("items").get("k").value == b"v"
        with pytest.raises(tenure.NotFound):
            reopened.container("items").get("k2")
