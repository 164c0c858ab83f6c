"""Errors say what they are about: the container and key, the argument by the caller's name,
which object was closed; retention options and the feed's positions as a user writes them."""

from __future__ import annotations

import importlib
import inspect
import re
import threading
import time
from pathlib import Path
from typing import List

import pytest

import tenure


def test_not_found_names_the_container_and_the_key(container: tenure.Container) -> None:
    with pytest.raises(tenure.NotFound) as refused:
        container.get("missing")
    error = refused.value
    assert (error.container, error.key) == ("items", "missing")
    assert "key 'missing'" in str(error) and "container 'items'" in str(error)
    assert str(error).startswith("NotFound (404): ")
    with pytest.raises(tenure.NotFound) as binary:
        container.delete(b"\xffgone")
    assert "b'\\xffgone'" in str(binary.value)
    assert binary.value.key is not None and binary.value.key.encode("utf-8", "surrogateescape") == b"\xffgone"


def test_every_item_error_names_its_target(store: tenure.Store, container: tenure.Container) -> None:
    etag = container.put("k", b"v")
    container.put("leased-key", b"v")
    container.acquire_lease("leased-key", 15)
    attempts = [
        lambda: container.put("k", b"x", if_match='"0x0000000000000001"'),
        lambda: container.create("k", b"x"),
        lambda: container.put("leased-key", b"x"),
        lambda: container.get("k", if_none_match=etag),
        lambda: container.unlock("k", "0" * 32),
        lambda: container.renew_lease("k", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
    ]
    for attempt in attempts:
        with pytest.raises(tenure.TenureError) as refused:
            attempt()
        assert refused.value.container == "items", refused.value
        assert refused.value.key in ("k", "leased-key")
        assert f"key '{refused.value.key}' in container 'items'" in str(refused.value)
    with pytest.raises(tenure.ConditionNotMet) as stale:
        container.put("k", b"x", if_match='"0x0000000000000001"')
    assert f"current ETag {etag}" in str(stale.value)


def test_container_errors_name_the_container(store: tenure.Store) -> None:
    with pytest.raises(tenure.ContainerNotFound) as missing:
        store.container("nope")
    assert missing.value.container == "nope" and "container 'nope'" in str(missing.value)
    with pytest.raises(tenure.ContainerNotFound) as through_item:
        items = store.create_container("gone")
        store.delete_container("gone")
        items.get("k")
    assert through_item.value.container == "gone"
    assert "container 'gone'" in str(through_item.value)
    store.create_container("twice")
    with pytest.raises(tenure.ContainerAlreadyExists) as twice:
        store.create_container("twice")
    assert twice.value.container == "twice"


def test_a_failed_batch_names_the_failing_operation(store: tenure.Store, container: tenure.Container) -> None:
    container.put("exists", b"v")
    with pytest.raises(tenure.FailedDependency) as failed:
        with store.batch() as batch:
            batch.put(container, "fine", b"1")
            batch.create(container, "exists", b"2")
    error = failed.value
    assert (error.index, error.container, error.key) == (1, "items", "exists")
    assert error.cause is not None and error.cause.key == "exists"
    assert "batch operation 1 failed" in str(error) and "key 'exists'" in str(error)


def test_arguments_are_named_as_the_caller_wrote_them(store: tenure.Store, container: tenure.Container) -> None:
    container.put("k", b"v")
    holder = container.acquire_lease("k")
    cases = [
        ("since", lambda: list(store.changes(-1))),
        ("since", lambda: store.wait_for_changes(-5, 0)),
        ("wait", lambda: container.acquire_lease("k", wait=90_000)),
        ("handle", lambda: container.put_and_unlock("k", b"v", "not-a-handle")),
        ("name", lambda: store.create_container("")),
        ("timeout", lambda: store.wait_for_changes(0, 100_000)),
    ]
    for argument, call in cases:
        with pytest.raises(tenure.InvalidArgument) as refused:
            call()
        assert refused.value.argument == argument, refused.value
        assert f"argument `{argument}`" in str(refused.value)
        assert isinstance(refused.value, ValueError)  # not OverflowError
    holder.release()


def test_changes_before_zero_is_a_value_error_not_an_overflow(store: tenure.Store) -> None:
    with pytest.raises(ValueError) as refused:
        store.changes(-1)
    assert not isinstance(refused.value, OverflowError)
    assert isinstance(refused.value, tenure.InvalidArgument)


def test_retention_options_are_accepted_and_kept(tmp_path: Path) -> None:
    def fill(store: tenure.Store) -> None:
        items = store.create_container("items")
        for round_number in range(4):
            for key in range(2_000):
                items.put(str(key), bytes([round_number]) * 100)
        store.compact()

    with tenure.open(
        tmp_path / "kept",
        durability="buffered",
        segment_size_bytes=1 << 20,
        change_feed_retention_versions=100_000,
        change_feed_retention_bytes=64 << 20,
    ) as kept:
        fill(kept)
        assert len(list(kept.changes(0))) == 1 + 4 * 2_000  # nothing compacted away
    with tenure.open(tmp_path / "default", durability="buffered", segment_size_bytes=1 << 20) as plain:
        fill(plain)
        with pytest.raises(tenure.Compacted) as compacted:
            list(plain.changes(0))
        oldest = compacted.value.oldest_available
        assert isinstance(oldest, int) and oldest > 1
        list(plain.changes(oldest - 1))  # resuming where it says works
    with pytest.raises(tenure.InvalidArgument) as bad:
        tenure.open(tmp_path / "bad", change_feed_retention_versions=0)
    assert bad.value.argument == "change_feed_retention_versions"


def test_with_on_a_closed_store_raises_closed(tmp_path: Path) -> None:
    store = tenure.open(tmp_path / "s", durability="buffered", segment_size_bytes=1 << 20)
    with store:
        pass
    assert store.closed
    with pytest.raises(tenure.Closed) as refused:
        with store:
            pass  # pragma: no cover - never reached
    assert "store was closed" in str(refused.value)


def test_a_closed_snapshot_says_the_snapshot_was_closed(tmp_path: Path) -> None:
    with tenure.open(tmp_path / "s", durability="buffered", segment_size_bytes=1 << 20) as store:
        store.create_container("items").put("k", b"v")
        snapshot = store.snapshot()
        snapshot.close()
        with pytest.raises(tenure.Closed) as refused:
            snapshot.get("items", "k")
        assert "snapshot was closed" in str(refused.value)
        assert "store" not in str(refused.value).split("take a new one")[0]
        with pytest.raises(tenure.Closed):
            with snapshot:
                pass  # pragma: no cover - never reached
        open_one = store.snapshot()
    with pytest.raises(tenure.Closed) as with_store:
        open_one.get("items", "k")
    assert "store was closed" in str(with_store.value)


def test_update_under_contention_completes_with_its_defaults(tmp_path: Path) -> None:
    """8 threads x 300 increments on one key: no call gives up, no increment is lost. The
    callback pauses briefly (as one doing a little I/O does), so the threads really race:
    with the old default of 10 attempts a few percent of the calls gave up."""
    with tenure.open(tmp_path / "s", durability="buffered", segment_size_bytes=4 << 20) as store:
        counters = store.create_container("counters")
        counters.put("hits", b"0")
        errors: List[BaseException] = []
        start = threading.Barrier(8)

        def increment(current: bytes) -> bytes:
            time.sleep(0.0001)
            return str(int(current) + 1).encode()

        def worker() -> None:
            start.wait()
            for _ in range(300):
                try:
                    counters.update("hits", increment)
                except BaseException as error:  # noqa: BLE001 - counted by the main thread
                    errors.append(error)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert counters.get("hits").value == b"2400"


def test_update_gives_up_at_its_deadline_with_the_last_conflict(container: tenure.Container) -> None:
    container.put("k", b"0")

    def always_loses(current: bytes) -> bytes:
        container.put("k", current + b"+")  # someone else writes in between, every time
        return b"mine"

    with pytest.raises(tenure.ConditionNotMet) as gave_up:
        container.update("k", always_loses, max_attempts=5)
    assert gave_up.value.key == "k"
    assert container.get("k").value == b"0" + b"+" * 5
    with pytest.raises(tenure.ConditionNotMet):
        container.update("k", always_loses, timeout=0.05)
    doc = inspect.getdoc(tenure.Container.update) or ""
    assert "contention" in doc.lower() and "backoff" in doc and "timeout" in doc


def test_a_batch_split_across_feed_pages_loses_no_change(store: tenure.Store) -> None:
    start = store.version
    items = store.create_container("items")
    for number in range(10):
        items.put(f"single-{number}", b"x")
    with store.batch() as batch:  # 1,000 changes under one version: the first page ends inside
        for number in range(1_000):
            batch.put(items, f"batch-{number:04}", b"y")
    items.put("after", b"z")
    changes = list(store.changes(start))
    assert len(changes) == 1 + 10 + 1_000 + 1
    assert len({(change.version, change.key) for change in changes}) == len(changes)
    iterator = store.changes(start)
    pages = []
    while True:
        page = iterator.next_page()
        if not page:
            break
        pages.append(page)
    assert sum(len(page) for page in pages) == len(changes)
    assert iterator.since == store.version


def test_docstrings_cite_docs_spec_md(store: tenure.Store) -> None:
    texts = [tenure.__doc__ or ""]
    for name in dir(tenure):
        thing = getattr(tenure, name)
        texts.append(getattr(thing, "__doc__", None) or "")
        if inspect.isclass(thing):
            texts += [getattr(member, "__doc__", None) or "" for _, member in inspect.getmembers(thing)]
    aio = importlib.import_module("tenure.aio")
    texts.append(aio.__doc__ or "")
    for name in dir(aio):
        thing = getattr(aio, name)
        if inspect.isclass(thing) and thing.__module__.startswith("tenure.aio"):
            texts += [getattr(member, "__doc__", None) or "" for _, member in inspect.getmembers(thing)]
    joined = "\n".join(texts)
    assert "SPEC" not in joined
    assert re.findall(r"docs/spec\.md §\d+", joined), "section references name docs/spec.md"


def test_a_read_only_open_beside_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with tenure.open(path, durability="sync", segment_size_bytes=1 << 20) as writer:
        items = writer.create_container("items")
        items.put("k", b"v")
        with tenure.open(path, read_only=True) as reader:  # beside the writer: no StoreLocked
            seen = reader.container("items")
            assert seen.get("k").value == b"v"
            with pytest.raises(tenure.ReadOnly) as refused:
                seen.put("k", b"x")
            assert refused.value.status == 403 and refused.value.key == "k"
        items.put("k", b"still writable")
    with pytest.raises(TypeError):
        tenure.open(path, read_only="yes")
