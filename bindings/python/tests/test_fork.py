"""A store inherited through fork(): the child's calls raise UsedAfterFork and change nothing;
the parent goes on; the child may close its copy; a child opens the store itself."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Dict

import pytest

import tenure


def _files(directory: Path) -> Dict[str, bytes]:
    """Each file's bytes, trailing zeros cut (the store extends its files with zeros)."""
    return {path.name: path.read_bytes().rstrip(b"\0") for path in directory.iterdir()}


def _in_child(body) -> int:  # type: ignore[no-untyped-def]
    """Runs ``body`` in a forked child; its exit status (0: every check held)."""
    pid = os.fork()
    if pid == 0:
        try:
            code = body()
        except BaseException:  # noqa: BLE001 — anything unexpected fails the check
            code = 99
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status), status
    return os.WEXITSTATUS(status)


def test_fork_after_open_refuses_writes_in_the_child_and_loses_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    store = tenure.open(directory, durability="sync")
    items = store.create_container("items")
    for index in range(50):
        items.put(f"parent-{index}", b"parent")
    before = _files(directory)

    def child() -> int:
        refused = 0
        for index in range(200):
            try:
                items.put(f"child-{index}", b"child")
            except tenure.UsedAfterFork as error:
                assert error.code == "UsedAfterFork" and error.status == 500
                assert f"opened by process {os.getppid()}" in str(error)
                refused += 1
        calls = (
            lambda: items.get("parent-0"),
            lambda: items.delete("parent-1"),
            lambda: store.snapshot(),
            lambda: list(store.changes(0)),
            lambda: items.acquire_lease("parent-2", duration=15),
            lambda: store.flush(),
        )
        for number, call in enumerate(calls):
            try:
                call()
                return 10 + number
            except tenure.UsedAfterFork:
                refused += 1
        store.close()  # allowed: releases nothing the parent holds
        return 0 if refused == 206 else 1

    assert _in_child(child) == 0
    assert _files(directory) == before

    # The parent goes on, and still holds the store.
    with pytest.raises(tenure.StoreLocked):
        tenure.open(directory)
    for index in range(50, 100):
        items.put(f"parent-{index}", b"parent")
    store.close()

    with tenure.open(directory) as reopened:
        reopened_items = reopened.container("items")
        for index in range(100):
            assert reopened_items.get(f"parent-{index}").value == b"parent"
        for index in range(200):
            with pytest.raises(tenure.NotFound):
                reopened_items.get(f"child-{index}")


def _count_in_fresh_open(directory: str, queue: "multiprocessing.Queue[int]") -> None:
    """A worker that opens the store itself: what the docs tell a child to do."""
    with tenure.open(directory) as store:
        items = store.container("items")
        items.put("from-worker", b"worker")
        queue.put(len(items.list(page_size=1000).items))


def _follow_in_read_only_open(
    directory: str, asked: "multiprocessing.Queue[str]", answers: "multiprocessing.Queue[str]"
) -> None:
    """A reader process beside the writer: answers each question with what it reads then."""
    with tenure.open(directory, read_only=True) as store:
        items = store.container("items")
        answers.put("open")
        while (key := asked.get(timeout=30)) != "stop":
            try:
                answers.put(items.get(key).value.decode())
            except tenure.NotFound:
                answers.put("absent")


def test_a_read_only_process_sees_each_write_committed_before_its_read(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    context = multiprocessing.get_context("spawn")
    asked: "multiprocessing.Queue[str]" = context.Queue()
    answers: "multiprocessing.Queue[str]" = context.Queue()
    with tenure.open(directory, durability="buffered") as store:
        items = store.create_container("items")
        reader = context.Process(
            target=_follow_in_read_only_open, args=(str(directory), asked, answers)
        )
        reader.start()
        assert answers.get(timeout=60) == "open"
        for round in range(20):
            items.put("k", f"value {round}".encode())
            asked.put("k")
            assert answers.get(timeout=30) == f"value {round}"
        items.delete("k")
        asked.put("k")
        assert answers.get(timeout=30) == "absent"
        asked.put("stop")
        reader.join(60)
        assert reader.exitcode == 0


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_worker_opens_the_store_itself(tmp_path: Path, method: str) -> None:
    directory = tmp_path / "store"
    with tenure.open(directory) as store:
        items = store.create_container("items")
        items.put("from-parent", b"parent")
    # One process at a time holds the store: the parent closed it before starting the worker.
    context = multiprocessing.get_context(method)
    queue: "multiprocessing.Queue[int]" = context.Queue()
    worker = context.Process(target=_count_in_fresh_open, args=(str(directory), queue))
    worker.start()
    worker.join(60)
    assert worker.exitcode == 0
    assert queue.get(timeout=5) == 2
    with tenure.open(directory) as store:
        assert store.container("items").get("from-worker").value == b"worker"


def test_a_child_that_inherited_the_store_does_not_keep_it_locked(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    store = tenure.open(directory)
    store.create_container("items").put("before", b"the fork")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        # The child holds its inherited copy and waits for the parent to let it go.
        os.close(write_end)
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    try:
        with pytest.raises(tenure.StoreLocked):
            tenure.open(directory)
        store.close()
        # The parent closed it: it opens again while the child still lives.
        with tenure.open(directory) as reopened:
            assert reopened.container("items").get("before").value == b"the fork"
    finally:
        os.close(write_end)
        _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
