"""docs/spec.md §8 (batches) and §9 (snapshots) through Python."""

from __future__ import annotations

from pathlib import Path

import pytest

import tenure


def test_a_batch_commits_all_under_one_version(store: tenure.Store) -> None:
    accounts = store.create_container("accounts")
    ledger = store.create_container("ledger")
    accounts.put("alice", b"100")
    accounts.put("bob", b"0")
    alice = accounts.get("alice")
    with store.batch() as batch:
        assert batch.put(accounts, "alice", b"70", if_match=alice.etag) == 0
        assert batch.put("accounts", "bob", b"30") == 1
        assert batch.create(ledger, "tx-1", b"alice->bob 30") == 2
        assert batch.check(accounts, "bob") == 3
        assert len(batch) == 4
    assert batch.version is not None
    etag = f'"0x{batch.version:016X}"'
    assert accounts.get("alice").etag == accounts.get("bob").etag == ledger.get("tx-1").etag == etag
    assert store.version == batch.version


def test_operations_see_the_ones_before_them(store: tenure.Store) -> None:
    items = store.create_container("items")
    batch = store.batch()
    batch.create(items, "key", b"1")
    batch.replace(items, "key", b"2")  # exists now
    batch.check(items, "key")
    batch.delete(items, "key")
    batch.create(items, "key", b"3")
    batch.put(items, "other", b"x")
    version = batch.commit()
    assert batch.version == version
    assert items.get("key").value == b"3"
    with pytest.raises(tenure.InvalidArgument):
        batch.commit()  # a batch commits once
    with pytest.raises(tenure.InvalidArgument):
        batch.put(items, "late", b"x")


def test_a_failing_operation_fails_the_whole_batch(store: tenure.Store) -> None:
    items = store.create_container("items")
    existing = items.put("existing", b"keep")
    version = store.version
    with pytest.raises(tenure.FailedDependency) as refused:
        with store.batch() as batch:
            batch.put(items, "new-1", b"x")
            batch.put(items, "existing", b"changed")
            batch.create(items, "existing", b"again")  # index 2 fails
            batch.put(items, "new-2", b"x")
    error = refused.value
    assert (error.code, error.status, error.index) == ("FailedDependency", 424, 2)
    assert isinstance(error.cause, tenure.AlreadyExists)
    assert error.__cause__ is error.cause
    # Nothing of it is visible.
    assert store.version == version
    assert items.get("existing").etag == existing
    assert items.get("existing").value == b"keep"
    with pytest.raises(tenure.NotFound):
        items.get("new-1")


@pytest.mark.parametrize(
    "operation,code",
    [
        ("replace missing", "NotFound"),
        ("delete missing", "NotFound"),
        ("check stale etag", "ConditionNotMet"),
        ("check version", "VersionMismatch"),
        ("missing container", "ContainerNotFound"),
        ("empty key", "InvalidArgument"),
    ],
)
def test_failed_dependency_names_the_failing_operation(
    store: tenure.Store, operation: str, code: str
) -> None:
    items = store.create_container("items")
    items.put("present", b"value")
    version = items.get("present").version
    batch = store.batch()
    batch.put(items, "first", b"ok")
    if operation == "replace missing":
        batch.replace(items, "missing", b"x")
    elif operation == "delete missing":
        batch.delete(items, "missing")
    elif operation == "check stale etag":
        batch.check(items, "present", if_match='"0x0000000000000001"')
    elif operation == "check version":
        batch.check(items, "present", if_version=version + 1)
    elif operation == "missing container":
        batch.put("no-such-container", "key", b"x")
    else:
        batch.put(items, "", b"x")
    with pytest.raises(tenure.FailedDependency) as refused:
        batch.commit()
    assert refused.value.index == 1
    assert refused.value.cause is not None and refused.value.cause.code == code
    with pytest.raises(tenure.NotFound):
        items.get("first")


def test_an_exception_in_the_block_discards_the_batch(store: tenure.Store) -> None:
    items = store.create_container("items")
    with pytest.raises(RuntimeError):
        with store.batch() as batch:
            batch.put(items, "key", b"x")
            raise RuntimeError("changed my mind")
    assert batch.version is None
    with pytest.raises(tenure.NotFound):
        items.get("key")
    with store.batch() as empty:  # an empty batch commits nothing and raises nothing
        pass
    assert empty.version is None


def test_batch_limits(tmp_path: Path) -> None:
    with tenure.open(
        tmp_path / "store", durability="buffered", max_batch_operations=3, segment_size_bytes=1 << 20
    ) as store:
        items = store.create_container("items")
        with pytest.raises(tenure.InvalidArgument) as refused:
            with store.batch() as batch:
                for number in range(4):
                    batch.put(items, f"key-{number}", b"x")
        assert refused.value.argument == "batch"
        assert items.list().items == []


def test_a_snapshot_is_repeatable(store: tenure.Store) -> None:
    items = store.create_container("items")
    items.put("a", b"1")
    items.put("b", b"1")
    with store.snapshot() as snapshot:
        version = snapshot.version
        items.put("a", b"2")
        items.delete("b")
        items.put("c", b"new")
        store.create_container("later")
        with store.batch() as batch:
            batch.put(items, "a", b"3")
            batch.put(items, "d", b"3")
        assert snapshot.get("items", "a").value == b"1"
        assert snapshot.get(items, "b").value == b"1"
        with pytest.raises(tenure.NotFound):
            snapshot.get(items, "c")
        assert [item.key for item in snapshot.iterate(items)] == ["a", "b"]
        assert snapshot.list_containers() == ["items"]
        assert type(snapshot.get_properties(items, "a")) is tenure.ItemProperties
        assert snapshot.version == version
        # A compaction meanwhile does not take what the snapshot needs.
        store.compact()
        assert snapshot.get("items", "a").value == b"1"
    assert snapshot.closed
    with pytest.raises(tenure.Closed):
        snapshot.get("items", "a")
    assert items.get("a").value == b"3"


def test_snapshot_read_conditions(store: tenure.Store) -> None:
    items = store.create_container("items")
    etag = items.put("a", b"1")
    snapshot = store.snapshot()
    items.put("a", b"2")
    with pytest.raises(tenure.NotModified):
        snapshot.get(items, "a", if_none_match=etag)
    assert snapshot.get(items, "a", if_match=etag).value == b"1"
    snapshot.close()
    snapshot.close()  # harmless


def test_a_reopen_after_a_clean_close_loads_the_persisted_index(tmp_path: Path, clock: tenure.ManualClock) -> None:
    path = tmp_path / "store"
    with tenure.open(path, durability="buffered", clock=clock) as store:
        items = store.create_container("items")
        for number in range(100):
            items.put(f"key-{number}", f"value-{number}".encode())
        assert store.stats()["opened_from_persisted_index"] is False
    assert (path / "index.checkpoint").exists()
    with tenure.open(path, durability="buffered", clock=clock) as store:
        assert store.stats()["opened_from_persisted_index"] is True
        assert store.stats()["log_bytes_replayed_at_open"] == 0
        assert store.container("items").get("key-42").value == b"value-42"
        # The writer's open keeps it: it still describes the log up to where it was saved.
        assert (path / "index.checkpoint").exists()


_CHECKPOINT_THEN_WAIT = """
import sys, time, tenure
store = tenure.open(sys.argv[1], durability="buffered")
items = store.create_container("items")
for number in range(1000):
    items.put(f"key-{number}", f"value-{number}".encode())
assert store.checkpoint() is True
for number in range(500):
    items.put(f"key-{number}", f"after-{number}".encode())
print("ready", flush=True)
time.sleep(600)
"""


def test_after_a_kill_the_open_loads_the_checkpoint_and_replays_the_rest(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "store"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHECKPOINT_THEN_WAIT, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
    finally:
        child.kill()
        child.wait()
    with tenure.open(path, read_only=True) as store:
        stats = store.stats()
        assert stats["opened_from_persisted_index"] is True
        assert 0 < stats["log_bytes_replayed_at_open"] < stats["log_bytes"]
        items = store.container("items")
        assert items.get("key-42").value == b"after-42"
        assert items.get("key-742").value == b"value-742"
        assert store.checkpoint() is False
