"""docs/spec.md §12: the exception tree, and every code reachable from Python as `err.code`."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict

import pytest

import tenure

SPEC_CODES = {
    "NotModified": 304,
    "InvalidArgument": 400,
    "NotFound": 404,
    "ContainerNotFound": 404,
    "AlreadyExists": 409,
    "ContainerAlreadyExists": 409,
    "LeaseAlreadyPresent": 409,
    "LeaseIdMismatchWithLeaseOperation": 409,
    "LeaseNotPresentWithLeaseOperation": 409,
    "LeaseIsBrokenAndCannotBeRenewed": 409,
    "LeaseIsBreakingAndCannotBeAcquired": 409,
    "LeaseIsBreakingAndCannotBeChanged": 409,
    "ObjectLocked": 409,
    "ConditionNotMet": 412,
    "VersionMismatch": 412,
    "LeaseIdMissing": 412,
    "LeaseIdMismatchWithBlobOperation": 412,
    "LeaseNotPresentWithBlobOperation": 412,
    "LeaseLost": 412,
    "LeaseIdMismatchWithContainerOperation": 412,
    "LeaseNotPresentWithContainerOperation": 412,
    "ObjectNotLocked": 412,
    "InvalidLockHandle": 412,
    "FailedDependency": 424,
    "StoreLocked": 423,
    "Corruption": 500,
    "Io": 500,
    "Closed": 500,
    "UsedAfterFork": 500,
    "Busy": 503,
    "StorageFull": 507,
    "Unavailable": 503,
    "Compacted": 410,
    "ReadOnly": 403,
}

FAMILY = {
    304: tenure.NotModified,
    400: tenure.InvalidArgument,
    404: tenure.NotFound,
    409: tenure.Conflict,
    412: tenure.PreconditionFailed,
    423: tenure.StoreLocked,
    424: tenure.FailedDependency,
}


@pytest.mark.parametrize("code,status", sorted(SPEC_CODES.items()))
def test_every_code_has_a_class_in_its_family(code: str, status: int) -> None:
    cls = tenure.ERROR_CODES[code]
    assert cls.__name__ == code
    assert getattr(tenure, code) is cls
    assert cls.code == code and cls.status == status
    assert issubclass(cls, tenure.TenureError)
    if code in ("Corruption", "Io"):
        assert issubclass(cls, tenure.StorageError)
    elif status in FAMILY:
        assert issubclass(cls, FAMILY[status])
    error = cls("message")
    assert (error.code, error.status, error.etag) == (code, status, None)


def test_the_tree() -> None:
    assert set(tenure.ERROR_CODES) == set(SPEC_CODES)
    assert issubclass(tenure.InvalidArgument, ValueError)
    assert issubclass(tenure.ContainerNotFound, tenure.NotFound)
    assert not issubclass(tenure.Closed, tenure.StorageError)
    for group in (tenure.Conflict, tenure.PreconditionFailed, tenure.StorageError):
        assert issubclass(group, tenure.TenureError)


A = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
B = "9b2a4f1c-0d3e-4f5a-8b6c-7d8e9fa0b1c2"


def scenarios(
    tmp_path: Path, store: tenure.Store, clock: tenure.ManualClock
) -> Dict[str, Callable[[], object]]:
    items = store.create_container("items")
    etag = items.put("item", b"value")
    items.put("leased", b"value")
    items.acquire_lease("leased", 15, proposed_id=A)
    items.put("breaking", b"value")
    items.acquire_lease("breaking", 15, proposed_id=A)
    items.break_lease("breaking", period=30)
    items.put("broken", b"value")
    items.acquire_lease("broken", 15, proposed_id=A)
    items.break_lease("broken", period=0)
    items.put("locked", b"value")
    items.get_and_lock("locked", 60)
    store.create_container("leased-container")
    store.acquire_container_lease("leased-container", 15, proposed_id=A)
    store.create_container("free-container")

    def closed() -> object:
        other = tenure.open(tmp_path / "closed", durability="buffered", segment_size_bytes=1 << 20)
        other.close()
        return other.list_containers()

    def corrupt() -> object:
        path = tmp_path / "corrupt"
        with tenure.open(path, segment_size_bytes=1 << 20) as damaged:
            container = damaged.create_container("c")
            for number in range(100):
                container.put(f"key-{number}", b"x" * 100)
        segment = next(path.glob("segment-*.log"))
        data = bytearray(segment.read_bytes())
        for offset in range(2000, 2010):
            data[offset] ^= 0xFF
        segment.write_bytes(bytes(data))
        return tenure.open(path)

    def storage_full() -> object:
        with tenure.open(tmp_path / "full", segment_size_bytes=1 << 20, quota_bytes=1) as full:
            return full.create_container("c")

    def io() -> object:
        (tmp_path / "a-file").write_bytes(b"")
        return tenure.open(tmp_path / "a-file")

    return {
        "NotModified": lambda: items.get("item", if_none_match=etag),
        "InvalidArgument": lambda: items.get(""),
        "NotFound": lambda: items.get("missing"),
        "ContainerNotFound": lambda: store.container("missing"),
        "AlreadyExists": lambda: items.create("item", b"x"),
        "ContainerAlreadyExists": lambda: store.create_container("items"),
        "LeaseAlreadyPresent": lambda: items.acquire_lease("leased", proposed_id=B),
        "LeaseIdMismatchWithLeaseOperation": lambda: items.renew_lease("leased", B),
        "LeaseNotPresentWithLeaseOperation": lambda: items.break_lease("item"),
        "LeaseIsBrokenAndCannotBeRenewed": lambda: items.renew_lease("broken", A),
        "LeaseIsBreakingAndCannotBeAcquired": lambda: items.acquire_lease("breaking", proposed_id=A),
        "LeaseIsBreakingAndCannotBeChanged": lambda: items.change_lease("breaking", A, B),
        "ObjectLocked": lambda: items.get_and_lock("locked", 10),
        "ConditionNotMet": lambda: items.put("item", b"x", if_match='"0x0000000000000001"'),
        "VersionMismatch": lambda: items.put("item", b"x", if_version=1),
        "LeaseIdMissing": lambda: items.put("leased", b"x"),
        "LeaseIdMismatchWithBlobOperation": lambda: items.put("leased", b"x", lease_id=B),
        "LeaseNotPresentWithBlobOperation": lambda: items.put("item", b"x", lease_id=B),
        "LeaseLost": lambda: items.put("broken", b"x", lease_id=A),
        "LeaseIdMismatchWithContainerOperation": lambda: store.delete_container(
            "leased-container", lease_id=B
        ),
        "LeaseNotPresentWithContainerOperation": lambda: store.delete_container(
            "free-container", lease_id=B
        ),
        "ObjectNotLocked": lambda: items.unlock("item", "0" * 32),
        "InvalidLockHandle": lambda: items.unlock("locked", "0" * 32),
        "FailedDependency": lambda: _fail_batch(store),
        "StoreLocked": lambda: tenure.open(store.path),
        "Corruption": corrupt,
        "Io": io,
        "Closed": closed,
        "StorageFull": storage_full,
        # An etcd:// store whose cluster nobody answers for (port 1 on the loopback).
        "Unavailable": lambda: tenure.open("etcd://127.0.0.1:1/p?timeout_ms=300&connect_timeout_ms=200"),
    }


def _fail_batch(store: tenure.Store) -> object:
    batch = store.batch()
    batch.create("items", "item", b"x")
    return batch.commit()


def test_the_classes_are_the_engines_table() -> None:
    """One exception class per code of the engine's table, with its status."""
    from tenure import _tenure

    table = {name: status for name, status, _meaning in _tenure.ERROR_TABLE}
    assert table == SPEC_CODES
    for name, status in table.items():
        assert tenure.ERROR_CODES[name].status == status


# UsedAfterFork needs a forked child (tests/test_fork.py); Busy needs writers that keep
# winning the same key 100,000 times in a row (the engine's bound).
# Compacted needs a compacted log (tests/test_change_feed.py); ReadOnly a read-only open
# beside a writer (tests/test_clear_errors.py).
@pytest.mark.parametrize("code", sorted(set(SPEC_CODES) - {"UsedAfterFork", "Busy", "Compacted", "ReadOnly"}))
def test_every_code_is_reachable(
    tmp_path: Path, store: tenure.Store, clock: tenure.ManualClock, code: str
) -> None:
    run = scenarios(tmp_path, store, clock)[code]
    with pytest.raises(tenure.TenureError) as raised:
        run()
    error = raised.value
    assert type(error) is tenure.ERROR_CODES[code]
    assert (error.code, error.status) == (code, SPEC_CODES[code])
    assert str(error)  # a message naming what happened


def test_precondition_errors_carry_the_current_etag(container: tenure.Container) -> None:
    etag = container.put("key", b"value")
    for attempt in (
        lambda: container.put("key", b"x", if_match='"0x0000000000000001"'),
        lambda: container.create("key", b"x"),
        lambda: container.put("key", b"x", if_version=1),
        lambda: container.get("key", if_none_match=etag),
    ):
        with pytest.raises(tenure.TenureError) as refused:
            attempt()
        assert refused.value.etag == etag


def test_io_and_corruption_details(tmp_path: Path, store: tenure.Store, clock: tenure.ManualClock) -> None:
    run = scenarios(tmp_path, store, clock)
    with pytest.raises(tenure.Io) as io:
        run["Io"]()
    assert io.value.path is not None and io.value.path.endswith("a-file")
    assert isinstance(io.value.errno, int)
    with pytest.raises(tenure.Corruption) as corruption:
        run["Corruption"]()
    assert corruption.value.path is not None and corruption.value.path.endswith(".log")
    assert isinstance(corruption.value.offset, int)
