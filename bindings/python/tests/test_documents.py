"""docs/spec.md §7 (TTL and paging, Cosmos DB style) and §1 (containers, items) through Python."""

from __future__ import annotations

import datetime
from typing import Optional

import pytest

import tenure
from conftest import START


@pytest.mark.parametrize(
    "default_ttl,item_ttl,lives_seconds",
    [
        (None, None, None),  # no TTL anywhere: never expires
        (60, None, 60),  # the container's default
        (60, 5, 5),  # the item's own TTL wins
        (60, -1, None),  # -1: never, whatever the default
        (None, 5, 5),  # an item TTL without a container default
    ],
)
def test_ttl_table(
    store: tenure.Store,
    clock: tenure.ManualClock,
    default_ttl: Optional[int],
    item_ttl: Optional[int],
    lives_seconds: Optional[int],
) -> None:
    container = store.create_container("ttl", default_ttl=default_ttl)
    container.put("key", b"value", ttl=item_ttl)
    item = container.get("key")
    if lives_seconds is None:
        assert item.expires_at is None
        clock.advance(10 * 365 * 24 * 3600)
        assert container.get("key").value == b"value"
        return
    assert item.expires_at == START + datetime.timedelta(seconds=lives_seconds)
    clock.advance(lives_seconds - 0.000_001)
    assert container.get("key").value == b"value"
    clock.advance(0.000_001)
    # Gone for every read path at once.
    with pytest.raises(tenure.NotFound):
        container.get("key")
    with pytest.raises(tenure.NotFound):
        container.get_properties("key")
    assert container.list().items == []
    with pytest.raises(tenure.NotFound):  # conditions see it missing too
        container.get("key", if_match="*")
    with pytest.raises(tenure.ConditionNotMet):
        container.put("key", b"again", if_match="*")
    with pytest.raises(tenure.FailedDependency) as refused:
        with store.batch() as batch:
            batch.check(container, "key")
    assert refused.value.cause is not None and refused.value.cause.code == "NotFound"
    container.create("key", b"created again")  # create succeeds: it does not exist


def test_any_write_resets_the_ttl(store: tenure.Store, clock: tenure.ManualClock) -> None:
    container = store.create_container("ttl", default_ttl=10)
    container.put("key", b"value")
    clock.advance(8)
    container.set_metadata("key", {"touched": "yes"})
    clock.advance(8)
    assert container.get("key").metadata == {"touched": "yes"}
    clock.advance(2)
    with pytest.raises(tenure.NotFound):
        container.get("key")


def test_a_snapshot_evaluates_expiry_at_its_own_time(
    store: tenure.Store, clock: tenure.ManualClock
) -> None:
    container = store.create_container("ttl")
    container.put("key", b"value", ttl=5)
    with store.snapshot() as snapshot:
        clock.advance(10)
        with pytest.raises(tenure.NotFound):
            container.get("key")
        assert snapshot.get("ttl", "key").value == b"value"


@pytest.mark.parametrize("bad", [0, -2, 2**32])
def test_bad_ttls_are_invalid(container: tenure.Container, bad: int) -> None:
    with pytest.raises(tenure.InvalidArgument) as refused:
        container.put("key", b"value", ttl=bad)
    assert refused.value.argument == "ttl"


@pytest.mark.parametrize("count,page_size", [(0, 10), (1, 10), (10, 10), (25, 10), (250, 7)])
def test_paging_returns_every_item_once_in_key_order(
    container: tenure.Container, count: int, page_size: int
) -> None:
    keys = [f"doc-{number:04}" for number in range(count)]
    for key in reversed(keys):
        container.put(key, key.encode())
    container.put("other", b"not in the prefix")
    seen = []
    continuation: Optional[str] = None
    pages = 0
    while True:
        page = container.list("doc-", page_size=page_size, continuation=continuation)
        pages += 1
        assert len(page.items) <= page_size
        # Values only when asked: properties-only items have no value attribute.
        assert all(type(item) is tenure.ItemProperties for item in page.items)
        seen += [item.key for item in page.items]
        continuation = page.continuation
        if continuation is None:
            break
    assert seen == keys
    assert pages >= max(1, -(-count // page_size))
    assert [item.key for item in container.iterate("doc-")] == keys
    with_values = list(container.iterate("doc-", include_values=True))
    assert [item.value for item in with_values] == [key.encode() for key in keys]
    assert len(list(container.list(page_size=1000))) == count + 1


def test_listing_through_a_snapshot_never_skips_or_repeats(store: tenure.Store) -> None:
    container = store.create_container("docs")
    for number in range(0, 200, 2):
        container.put(f"doc-{number:04}", b"old")
    with store.snapshot() as snapshot:
        listed = []
        continuation: Optional[str] = None
        while True:
            page = snapshot.list(container, "doc-", page_size=9, continuation=continuation)
            listed += [item.key for item in page.items]
            # Writers keep going between pages: inserts, deletes, rewrites.
            for number in range(1, 200, 10):
                container.put(f"doc-{number:04}", b"new")
            for item in page.items:
                container.delete(item.key)
            continuation = page.continuation
            if continuation is None:
                break
        assert listed == [f"doc-{number:04}" for number in range(0, 200, 2)]
        assert [item.key for item in snapshot.iterate("docs")] == listed


def test_bytes_keys_and_values(container: tenure.Container) -> None:
    container.put(b"\xff\x00binary", bytearray(b"from a bytearray"))
    container.put("text-ключ", memoryview(b"from a memoryview"))
    binary = container.get(b"\xff\x00binary")
    # Not UTF-8: still a str (PEP 383 surrogateescape), which names the same item again.
    assert binary.key == "\udcff\x00binary"
    assert binary.key_bytes == b"\xff\x00binary"
    assert binary.value == b"from a bytearray"
    assert container.get(binary.key).key_bytes == b"\xff\x00binary"
    assert [item.key for item in container.iterate()][-1] == binary.key  # sorts last (0xff)
    text = container.get("text-ключ".encode())
    assert text.key == "text-ключ"  # valid UTF-8: str
    assert text.value == b"from a memoryview"
    container.put("empty", b"")
    assert container.get("empty").value == b""


def test_item_properties(container: tenure.Container) -> None:
    etag = container.put("key", b"value", content_type="application/json", metadata={"a": "1"})
    item = container.get("key")
    assert (item.key, item.value, item.etag, item.content_type, item.metadata) == (
        "key",
        b"value",
        etag,
        "application/json",
        {"a": "1"},
    )
    assert item.last_modified == START and item.last_modified.tzinfo is not None
    assert item.expires_at is None
    assert isinstance(item.version, int) and etag == f'"0x{item.version:016X}"'
    properties = container.get_properties("key")
    assert type(properties) is tenure.ItemProperties and properties.etag == etag
    assert not hasattr(properties, "value")
    assert isinstance(item, tenure.ItemProperties)  # an Item is its properties plus value
    assert "key" in repr(item)


def test_containers(store: tenure.Store) -> None:
    created = store.create_container("alpha", metadata={"team": "infra"}, default_ttl=30)
    assert created.name == "alpha"
    with pytest.raises(tenure.ContainerAlreadyExists) as refused:
        store.create_container("alpha")
    assert refused.value.status == 409
    assert store.create_container("alpha", exist_ok=True).name == "alpha"
    with pytest.raises(tenure.ContainerNotFound) as missing:
        store.container("beta")
    assert missing.value.status == 404 and isinstance(missing.value, tenure.NotFound)
    store.create_container("beta")
    assert store.list_containers() == ["alpha", "beta"]
    alpha = store.container("alpha")
    alpha.put("one", b"1")
    alpha.put("two", b"2")
    version_before = store.version
    store.delete_container("alpha")  # every item with it, atomically
    assert store.version > version_before
    with pytest.raises(tenure.ContainerNotFound):
        alpha.get("one")
    recreated = store.create_container("alpha")
    assert recreated.list().items == []


def test_container_conditions_on_delete(store: tenure.Store, clock: tenure.ManualClock) -> None:
    store.create_container("dated")
    with pytest.raises(tenure.ConditionNotMet):
        store.delete_container("dated", if_modified_since=START)
    with pytest.raises(tenure.ConditionNotMet):
        store.delete_container("dated", if_unmodified_since=START - datetime.timedelta(seconds=1))
    store.delete_container("dated", if_unmodified_since=START)


def test_data_survives_reopen(tmp_path: object, clock: tenure.ManualClock) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "store"
    with tenure.open(path, clock=clock, segment_size_bytes=1 << 20) as store:
        container = store.create_container("durable", default_ttl=100)
        etag = container.put("key", b"value", metadata={"m": "v"})
        version = store.version
    with tenure.open(str(path), clock=clock) as store:
        item = store.container("durable").get("key")
        assert (item.value, item.etag, item.metadata) == (b"value", etag, {"m": "v"})
        assert store.version == version
        clock.advance(100)
        with pytest.raises(tenure.NotFound):
            store.container("durable").get("key")
