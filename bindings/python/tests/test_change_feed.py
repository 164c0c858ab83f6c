"""The change feed through Python (docs/spec.md §10)."""

import threading
from pathlib import Path

import pytest

import tenure


def test_changes_reports_every_committed_change_in_order(store: tenure.Store) -> None:
    start = store.version
    container = store.create_container("feed")
    etag = container.put("a", b"1")
    container.put("a", b"2")
    container.delete("a")
    with store.batch() as batch:
        batch.put("feed", "b", b"x")
        batch.put("feed", "c", b"y")
    changes = list(store.changes(start, include_values=True))
    assert [change.kind for change in changes] == [
        "container_created",
        "created",
        "updated",
        "deleted",
        "created",
        "created",
    ]
    assert changes[1].key == "a" and changes[1].key_bytes == b"a"  # the rule of Item.key
    assert changes[1].etag == etag and changes[1].value == b"1"
    assert changes[4].version == changes[5].version, "a batch shares one version"
    assert all(earlier.version <= later.version for earlier, later in zip(changes, changes[1:]))
    # Resume from the last version processed: nothing is repeated.
    assert list(store.changes(changes[-1].version)) == []
    only_other = list(store.changes(start, container="nope"))
    assert only_other == []


def test_a_waiting_consumer_wakes_on_a_commit(store: tenure.Store) -> None:
    container = store.create_container("waits")
    since = store.version
    assert store.wait_for_changes(since, 0.01) is False
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(store.wait_for_changes(since, 30.0)))
    waiter.start()
    container.put("k", b"v")
    waiter.join(30)
    assert woke == [True]


def test_bad_feed_arguments(store: tenure.Store) -> None:
    try:
        store.wait_for_changes(0, -1.0)
    except tenure.InvalidArgument as error:
        assert error.code == "InvalidArgument"
    else:
        raise AssertionError("a negative timeout must be refused")


def test_a_compacted_away_position_is_compacted(tmp_path: Path) -> None:
    with tenure.open(tmp_path / "store", durability="buffered", segment_size_bytes=1 << 20) as store:
        items = store.create_container("items")
        for round_number in range(4):
            for key in range(2_000):
                items.put(str(key), bytes([round_number]) * 100)
        assert store.compact()["segments_removed"] > 0
        with pytest.raises(tenure.Compacted) as raised:
            list(store.changes(0))
        assert raised.value.status == 410
        assert "oldest available version" in str(raised.value)
