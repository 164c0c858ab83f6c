"""Python idioms users of redis-py, py-lmdb and azure-storage-blob expect: value equality,
pickling, `exists()` and `in`, durations as timedelta, one key type rule, typed values."""

from __future__ import annotations

import datetime
import pickle
from pathlib import Path

import pytest

import tenure
from conftest import START

A = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"


def roundtrip(value: object) -> object:
    return pickle.loads(pickle.dumps(value))


# ----- value equality and pickling -----


def test_items_are_equal_when_their_fields_are(container: tenure.Container) -> None:
    etag = container.put("k", b"v", content_type="text/plain", metadata={"a": "1"}, ttl=60)
    assert container.get("k") == container.get("k")
    assert hash(container.get("k")) == hash(container.get("k"))
    assert container.get_properties("k") == container.get_properties("k")
    assert container.get("k") != container.get_properties("k")  # with and without a value
    assert len({container.get("k"), container.get("k")}) == 1
    before = container.get("k")
    container.put("k", b"v", content_type="text/plain", metadata={"a": "1"}, ttl=60)
    assert container.get("k", if_none_match=etag) != before  # same value, a new version
    assert container.get("k") != "k"


def test_items_pickle(container: tenure.Container) -> None:
    container.put("k", b"\x00value", content_type="text/plain", metadata={"a": "1"}, ttl=60)
    container.put(b"\xff-binary", b"")
    for item in (
        container.get("k"),
        container.get_properties("k"),
        container.get(b"\xff-binary"),
    ):
        copy = roundtrip(item)
        assert copy == item and type(copy) is type(item)
        assert copy.key_bytes == item.key_bytes and copy.expires_at == item.expires_at
    item = container.get("k")
    assert roundtrip(item).value == b"\x00value"
    assert roundtrip(item).last_modified == START


def test_pages_pickle_and_compare(container: tenure.Container) -> None:
    for number in range(5):
        container.put(f"p-{number}", b"x")
    page = container.list("p-", page_size=2, include_values=True)
    assert page == container.list("p-", page_size=2, include_values=True)
    assert page != container.list("p-", page_size=3, include_values=True)
    copy = roundtrip(page)
    assert copy == page and copy.continuation == page.continuation
    assert [item.key for item in copy] == ["p-0", "p-1"]
    assert tenure.Page([], None) == tenure.Page([])


def test_leases_lock_handles_and_lease_info_pickle(container: tenure.Container) -> None:
    container.put("k", b"v")
    lease = container.acquire_lease("k", datetime.timedelta(seconds=30), proposed_id=A)
    assert lease == container.renew_lease("k", lease)  # the same grant
    copy = roundtrip(lease)
    assert isinstance(copy, tenure.Lease)
    assert (copy.id, copy.fence, copy.container, copy.key) == (A, lease.fence, "items", "k")
    assert copy == lease and hash(copy) == hash(lease)
    # An unpickled Lease serves as lease_id=, but belongs to no store of its own.
    container.put("k", b"written with the unpickled lease", lease_id=copy)
    with pytest.raises(tenure.Closed) as refused:
        copy.renew()
    assert "unpickled" in str(refused.value)
    info = container.lease_info("k")
    assert info == container.lease_info("k") and roundtrip(info) == info
    assert roundtrip(info).duration == 30
    lease.release()
    assert container.lease_info("k") != info
    _, handle = container.get_and_lock("k", 10)
    assert roundtrip(handle) == handle
    container.unlock("k", roundtrip(handle))  # type: ignore[arg-type]


def test_changes_compare_and_pickle(store: tenure.Store) -> None:
    start = store.version
    items = store.create_container("feed")
    items.put("k", b"v")
    first = list(store.changes(start, include_values=True))
    again = list(store.changes(start, include_values=True))
    assert first == again
    assert [roundtrip(change) for change in first] == first
    assert len(set(first)) == len(first)


def test_errors_pickle_with_their_attributes(container: tenure.Container) -> None:
    etag = container.put("k", b"v")
    with pytest.raises(tenure.ConditionNotMet) as refused:
        container.put("k", b"x", if_match='"0x0000000000000001"')
    copy = roundtrip(refused.value)
    assert isinstance(copy, tenure.ConditionNotMet)
    assert (copy.etag, copy.container, copy.key, str(copy)) == (
        etag,
        "items",
        "k",
        str(refused.value),
    )


# ----- exists, in, count; why no len -----


def test_exists_and_in(store: tenure.Store, container: tenure.Container, clock: tenure.ManualClock) -> None:
    assert not container.exists("k") and "k" not in container
    container.put("k", b"v", ttl=5)
    assert container.exists("k") and "k" in container and b"k" in container
    clock.advance(5)
    assert "k" not in container  # expired is gone for every read
    with store.snapshot() as snapshot:
        assert not snapshot.exists(container, "k")
    store.delete_container("items")
    with pytest.raises(tenure.ContainerNotFound):
        container.exists("k")  # a missing container is still an error


def test_count_instead_of_len(container: tenure.Container, clock: tenure.ManualClock) -> None:
    for number in range(30):
        container.put(f"a-{number}", b"x")
    container.put("b-0", b"x", ttl=1)
    assert container.count() == 31 and container.count("a-") == 30
    clock.advance(1)
    assert container.count() == 30
    # No __len__: an empty container would be falsy, and a count is a scan, not a field.
    with pytest.raises(TypeError):
        len(container)  # type: ignore[arg-type]
    container.delete("a-0")
    assert bool(container) and container.count("b-") == 0


# ----- durations as timedelta or seconds -----


def test_durations_take_timedelta_everywhere(
    store: tenure.Store, container: tenure.Container, clock: tenure.ManualClock
) -> None:
    minute = datetime.timedelta(minutes=1)
    ttl_container = store.create_container("ttl", default_ttl=minute)
    ttl_container.put("k", b"v")
    assert ttl_container.get("k").expires_at == START + minute
    container.put("k", b"v", ttl=datetime.timedelta(seconds=90))
    assert container.get("k").expires_at == START + datetime.timedelta(seconds=90)
    lease = container.acquire_lease("k", duration=datetime.timedelta(seconds=20))
    assert container.lease_info("k").duration == 20
    assert container.break_lease("k", period=datetime.timedelta(seconds=5)) == 5
    clock.advance(datetime.timedelta(seconds=5))
    assert container.lease_info("k").state == "broken"
    del lease
    _, handle = container.get_and_lock("k", lock_timeout=datetime.timedelta(milliseconds=1500))
    container.unlock("k", handle, ttl=datetime.timedelta(hours=1))
    assert store.wait_for_changes(store.version, datetime.timedelta(0)) is False
    item = container.update("k", lambda value: value + b"!", timeout=datetime.timedelta(seconds=5))
    assert item.value == b"v!"
    with pytest.raises(tenure.InvalidArgument) as refused:
        container.put("k", b"v", ttl=datetime.timedelta(seconds=1.5))
    assert refused.value.argument == "ttl" and "whole number of seconds" in str(refused.value)
    with pytest.raises(tenure.InvalidArgument):
        container.get_and_lock("k", lock_timeout=datetime.timedelta(seconds=-1))


def test_open_takes_a_timedelta_interval(tmp_path: Path) -> None:
    with tenure.open(
        tmp_path / "s",
        segment_size_bytes=1 << 20,
        background_compaction_interval=datetime.timedelta(milliseconds=250),
    ) as opened:
        assert opened.durability == "sync"


# ----- one key type rule -----


def test_one_key_type_rule(store: tenure.Store, container: tenure.Container) -> None:
    """`key` is always a `str` (non-UTF-8 bytes decoded with surrogateescape, PEP 383) and
    `key_bytes` always the bytes: Item, ItemProperties, Page items, Change and Lease alike."""
    start = store.version
    for key in ("text", b"\xfe\xffbinary"):
        container.put(key, b"v")
        lease = container.acquire_lease(key)
        seen = [
            container.get(key),
            container.get_properties(key),
            container.list(page_size=10).items[-1 if isinstance(key, bytes) else 0],
            lease,
        ]
        for thing in seen:
            assert isinstance(thing.key, str)
            assert thing.key_bytes == (key if isinstance(key, bytes) else key.encode())
        assert container.get(seen[0].key) == seen[0]  # the str names the same item
        lease.release()
    changes = [change for change in store.changes(start) if change.key is not None]
    assert all(isinstance(change.key, str) for change in changes)
    assert [change.key_bytes for change in changes] == [b"text", b"\xfe\xffbinary"]
    container_change = next(iter(store.changes(0)))
    assert container_change.kind == "container_created"
    assert container_change.key is None and container_change.key_bytes is None


# ----- a typed value without an assert -----


def test_get_returns_an_item_whose_value_is_bytes(container: tenure.Container) -> None:
    container.put("k", b"")
    item: tenure.Item = container.get("k")
    value: bytes = item.value  # bytes, never None: no assert needed
    assert value == b""
    properties: tenure.ItemProperties = container.get_properties("k")
    assert not isinstance(properties, tenure.Item)
    listed = container.list(include_values=True).items
    assert all(isinstance(entry, tenure.Item) for entry in listed)
    assert all(type(entry) is tenure.ItemProperties for entry in container.iterate())
    assert all(isinstance(entry, tenure.Item) for entry in container.iterate(include_values=True))
    updated = container.update("k", lambda current: current + b"1")
    assert updated.value == b"1"
    assert tenure.Page[tenure.Item] is not None  # generic at run time too, as in the stubs


def test_fakes_can_be_built(container: tenure.Container) -> None:
    etag = container.put("k", b"v", metadata={"a": "1"})
    real = container.get("k")
    fake = tenure.Item("k", b"v", etag, real.last_modified, None, {"a": "1"})
    assert fake == real
    with pytest.raises(tenure.InvalidArgument):
        tenure.Item("k", b"v", "not-an-etag", real.last_modified)


# ----- the cache-lock helper -----


def test_lock_helper_unlocks_at_the_end_of_the_block(container: tenure.Container) -> None:
    container.put("k", b"10")
    with container.lock("k", lock_timeout=30) as lock:
        assert lock.item is not None and lock.item.value == b"10"
        with pytest.raises(tenure.ObjectLocked):
            container.get_and_lock("k", 30)
    container.get_and_lock("k", 30)  # unlocked on exit
    container.put("k", b"9")  # a plain put releases the lock
    with container.lock("k", lock_timeout=30) as lock:
        lock.put(b"8")
    assert container.get("k").value == b"8"
    with pytest.raises(RuntimeError):
        with container.lock("k", 30):
            raise RuntimeError("the block's exception goes on")
    container.get_and_lock("k", 30)
