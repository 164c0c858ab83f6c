"""docs/spec.md §6 (cache locks, AppFabric DataCache) through Python. Nothing waits."""

from __future__ import annotations

from typing import Callable, Dict, Optional

import pytest

import tenure

COLUMNS = ["missing", "unlocked", "locked, right handle", "locked by another"]
OTHER_HANDLE = tenure.LockHandle("0123456789abcdef0123456789abcdef")


def prepare(container: tenure.Container, column: str) -> Optional[tenure.LockHandle]:
    """Puts "key" in the column's state; returns the lock's handle if locked."""
    if column == "missing":
        return None
    container.put("key", b"before")
    if column == "unlocked":
        return None
    _, handle = container.get_and_lock("key", lock_timeout=30)
    return handle


def handle_for(column: str, handle: Optional[tenure.LockHandle]) -> tenure.LockHandle:
    if column == "locked, right handle" and handle is not None:
        return handle
    return OTHER_HANDLE


# call → expected outcome per column (an error code, or what happens).
TABLE: Dict[str, tuple[str, str, str, str]] = {
    "get_and_lock": ("NotFound", "locked", "ObjectLocked", "ObjectLocked"),
    "get_and_lock(force)": ("locked absent", "locked", "ObjectLocked", "ObjectLocked"),
    "put_and_unlock": ("NotFound", "ObjectNotLocked", "replaced, unlocked", "InvalidLockHandle"),
    "unlock": ("NotFound", "ObjectNotLocked", "unlocked", "InvalidLockHandle"),
    "delete(handle)": ("NotFound", "ObjectNotLocked", "deleted", "InvalidLockHandle"),
    "get": ("NotFound", "item", "item", "item"),
    "put": ("created", "replaced", "replaced, unlocked", "replaced, unlocked"),
}


@pytest.mark.parametrize("call", list(TABLE))
@pytest.mark.parametrize("column", COLUMNS)
def test_lock_table(container: tenure.Container, column: str, call: str) -> None:
    handle = prepare(container, column)
    use = handle_for(column, handle)
    calls: Dict[str, Callable[[], object]] = {
        "get_and_lock": lambda: container.get_and_lock("key", 10),
        "get_and_lock(force)": lambda: container.get_and_lock("key", 10, force=True),
        "put_and_unlock": lambda: container.put_and_unlock("key", b"after", use),
        "unlock": lambda: container.unlock("key", use),
        "delete(handle)": lambda: container.delete("key", lock_handle=use),
        "get": lambda: container.get("key"),
        "put": lambda: container.put("key", b"after"),
    }
    expected = TABLE[call][COLUMNS.index(column)]
    before = None if column == "missing" else container.get("key").etag
    if expected[0].isupper():
        with pytest.raises(tenure.TenureError) as refused:
            calls[call]()
        assert refused.value.code == expected
        # Nothing changes: the value, the ETag, and the lock (still held if it was).
        if before is None:
            with pytest.raises(tenure.NotFound):
                container.get("key")
        else:
            assert container.get("key").etag == before
            assert container.get("key").value == b"before"
        if handle is not None:
            with pytest.raises(tenure.ObjectLocked):
                container.get_and_lock("key", 10)
        return
    result = calls[call]()
    if expected == "locked":
        assert isinstance(result, tuple)
        item, new_handle = result
        assert item is not None and item.value == b"before"
        assert isinstance(new_handle, tenure.LockHandle)
        with pytest.raises(tenure.ObjectLocked):
            container.get_and_lock("key", 10)
    elif expected == "locked absent":
        assert isinstance(result, tuple)
        item, new_handle = result
        assert item is None
        with pytest.raises(tenure.NotFound):
            container.get("key")
        # put_and_unlock of a key force-locked while absent creates it.
        container.put_and_unlock("key", b"created", new_handle)
        assert container.get("key").value == b"created"
    elif expected == "item":
        assert isinstance(result, tenure.Item) and result.value == b"before"
    elif expected == "deleted":
        with pytest.raises(tenure.NotFound):
            container.get("key")
    else:
        value = b"before" if expected == "unlocked" else b"after"
        assert container.get("key").value == value
        if expected in ("replaced, unlocked", "replaced", "created"):
            assert container.get("key").etag != before
        else:
            assert container.get("key").etag == before  # unlock keeps the ETag
        # Unlocked now: anyone can lock it.
        container.get_and_lock("key", 10)


def test_a_lock_ends_by_itself(container: tenure.Container, clock: tenure.ManualClock) -> None:
    container.put("key", b"value")
    _, handle = container.get_and_lock("key", lock_timeout=5)
    clock.advance(4.999)
    with pytest.raises(tenure.ObjectLocked):
        container.get_and_lock("key", 5)
    clock.advance(0.001)
    _, second = container.get_and_lock("key", 5)
    with pytest.raises(tenure.InvalidLockHandle):
        container.unlock("key", handle)
    container.unlock("key", str(second))  # the handle's text form works too


def test_zero_lock_timeout_is_invalid(container: tenure.Container) -> None:
    container.put("key", b"value")
    with pytest.raises(tenure.InvalidArgument) as refused:
        container.get_and_lock("key", lock_timeout=0)
    assert refused.value.argument == "lock_timeout"
    container.get_and_lock("key", lock_timeout=0.5)


def test_a_key_holds_a_lease_or_a_lock(
    container: tenure.Container, clock: tenure.ManualClock
) -> None:
    container.put("key", b"value")
    lease = container.acquire_lease("key", 15)
    with pytest.raises(tenure.ObjectLocked):
        container.get_and_lock("key", 10)
    container.break_lease("key", period=5)
    with pytest.raises(tenure.ObjectLocked):  # breaking still counts
        container.get_and_lock("key", 10)
    clock.advance(5)
    _, handle = container.get_and_lock("key", 10)  # a broken lease is cleared by the lock
    assert container.lease_info("key").state == "available"
    with pytest.raises(tenure.LeaseAlreadyPresent):
        container.acquire_lease("key", 15)
    container.unlock("key", handle)
    assert container.acquire_lease("key", 15).fence > lease.fence


def test_a_locked_item_never_expires(
    container: tenure.Container, clock: tenure.ManualClock
) -> None:
    container.put("expiring", b"value", ttl=10)
    _, handle = container.get_and_lock("expiring", lock_timeout=60)
    clock.advance(30)
    assert container.get("expiring").value == b"value"  # locked: not expired
    container.unlock("expiring", handle)
    with pytest.raises(tenure.NotFound):  # unlocked past its expiry: gone at once
        container.get("expiring")

    container.put("renewed", b"value", ttl=10)
    _, handle = container.get_and_lock("renewed", lock_timeout=60)
    clock.advance(30)
    container.unlock("renewed", handle, ttl=10)  # a new TTL restarts the count
    clock.advance(9)
    assert container.get("renewed").value == b"value"
    clock.advance(1)
    with pytest.raises(tenure.NotFound):
        container.get("renewed")


def test_versioned_delete_and_unlock_of_a_force_locked_absent_key(
    container: tenure.Container,
) -> None:
    container.put("key", b"value")
    version = container.get("key").version
    with pytest.raises(tenure.VersionMismatch):
        container.delete("key", if_version=version + 1)
    container.delete("key", if_version=version)
    _, handle = container.get_and_lock("absent", 10, force=True)
    container.unlock("absent", handle)  # simply releases the lock
    with pytest.raises(tenure.NotFound):
        container.get_and_lock("absent", 10)


def test_lock_handles() -> None:
    handle = tenure.LockHandle("FEDCBA9876543210FEDCBA9876543210")
    assert str(handle) == "fedcba9876543210fedcba9876543210"
    assert handle == tenure.LockHandle(str(handle))
    assert handle != OTHER_HANDLE
    assert len({handle, tenure.LockHandle(str(handle))}) == 1
    assert handle != str(handle)
    with pytest.raises(tenure.InvalidArgument):
        tenure.LockHandle("not a handle")
    with pytest.raises(TypeError):
        tenure.LockHandle(12)  # type: ignore[arg-type]
