"""docs/spec.md §11 "A full disk", through Python: a store at its quota raises StorageFull for
writes that add data and changes nothing; reads, deletes and compact() go on; writes succeed
again once compaction frees space, without a reopen; close() succeeds; nothing acknowledged is
lost."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

import tenure

VALUE = 1024


def value(index: int, round_: int) -> bytes:
    return index.to_bytes(8, "little") + bytes([round_]) * (VALUE - 8)


def fill(items: tenure.Container, first: int, round_: int, expected: Dict[str, bytes]) -> int:
    for index in range(first, first + 100_000):
        key = f"item-{index:08}"
        try:
            items.put(key, value(index, round_))
        except tenure.StorageFull as error:
            assert error.status == 507 and "quota" in str(error)
            assert key not in items  # the refused write changed nothing
            return index - first
        expected[key] = value(index, round_)
    raise AssertionError("100,000 puts never filled the quota")


def open_store(path: Path) -> tenure.Store:
    return tenure.open(
        path,
        durability="buffered",
        segment_size_bytes=1 << 20,
        background_compaction_interval=None,
        quota_bytes=12 << 20,
        space_reserve_bytes=4 << 20,
    )


def test_a_full_quota_refuses_writes_and_recovers_through_deletes_and_compaction(tmp_path: Path) -> None:
    expected: Dict[str, bytes] = {}
    with open_store(tmp_path / "store") as store:
        items = store.create_container("items")
        filled = fill(items, 0, 1, expected)
        assert filled > 1000
        stats = store.stats()
        assert stats["storage_full"] is True
        assert stats["quota_bytes"] == 12 << 20 and stats["reserve_bytes"] == 4 << 20
        doomed = sorted(expected)[::2]
        for key in doomed:
            items.delete(key)
            del expected[key]
        store.compact()
        refilled = fill(items, 1_000_000, 2, expected)
        assert refilled * 4 > len(doomed)
    with open_store(tmp_path / "store") as store:
        items = store.container("items")
        for key, data in expected.items():
            assert items.get(key).value == data
        for key in doomed:
            assert key not in items
        assert store.stats()["store_bytes"] <= (12 << 20) + (4 << 20)


def test_bad_space_options_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(tenure.InvalidArgument, match="quota_bytes"):
        tenure.open(tmp_path / "a", quota_bytes=0)
    with pytest.raises(TypeError, match="space_reserve_bytes"):
        tenure.open(tmp_path / "b", space_reserve_bytes="lots")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
