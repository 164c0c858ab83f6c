"""The seed scenarios of the Python issue, written as a user of tenure would write them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tenure


def test_two_writers_with_one_etag(container: tenure.Container) -> None:
    etag = container.put("profile", b'{"name": "Ada"}')
    # Both writers read the same version...
    first = container.get("profile")
    second = container.get("profile")
    assert first.etag == second.etag == etag
    # ...the first one's conditional write wins,
    winning_etag = container.put("profile", b'{"name": "Ada L."}', if_match=first.etag)
    # the second one's is refused and learns the current ETag without another read.
    with pytest.raises(tenure.ConditionNotMet) as refused:
        container.put("profile", b'{"name": "Ada Lovelace"}', if_match=second.etag)
    assert refused.value.etag == winning_etag
    assert refused.value.code == "ConditionNotMet"
    assert refused.value.status == 412
    assert isinstance(refused.value, tenure.PreconditionFailed)
    assert container.get("profile").value == b'{"name": "Ada L."}'


def test_lease_holder_against_a_writer_without_the_lease_id(container: tenure.Container) -> None:
    container.put("report.pdf", b"draft")
    lease = container.acquire_lease("report.pdf", duration=30, holder="renderer-1")
    # Someone else writes without the lease id: refused, nothing changes.
    with pytest.raises(tenure.LeaseIdMissing) as refused:
        container.put("report.pdf", b"overwritten")
    assert refused.value.status == 412
    assert refused.value.etag == container.get("report.pdf").etag
    assert container.get("report.pdf").value == b"draft"
    # Reads are never blocked by a lease.
    assert container.get("report.pdf").value == b"draft"
    # The holder writes with its lease id, then releases.
    container.put("report.pdf", b"final", lease_id=lease.id)
    assert container.lease_info("report.pdf").holder == "renderer-1"
    lease.release()
    assert container.lease_info("report.pdf").state == "available"
    # Now anyone may write.
    container.put("report.pdf", b"edited by someone else")
    assert container.get("report.pdf").value == b"edited by someone else"


def test_two_cache_clients_with_versions(store: tenure.Store) -> None:
    cache = store.create_container("cache")
    cache.put("RadioInventory", b"10")
    client_a = cache.get("RadioInventory")
    client_b = cache.get("RadioInventory")
    cache.put("RadioInventory", b"9", if_version=client_a.version)
    with pytest.raises(tenure.VersionMismatch) as refused:
        cache.put("RadioInventory", b"9", if_version=client_b.version)
    assert refused.value.status == 412
    # Client B re-reads and retries with the fresh version.
    fresh = cache.get("RadioInventory")
    cache.put("RadioInventory", str(int(fresh.value or b"0") - 1).encode(), if_version=fresh.version)
    assert cache.get("RadioInventory").value == b"8"


def test_two_cache_clients_with_get_and_lock(store: tenure.Store, clock: tenure.ManualClock) -> None:
    cache = store.create_container("cache")
    cache.put("RadioInventory", b"10")
    item, handle = cache.get_and_lock("RadioInventory", lock_timeout=30)
    assert item is not None and item.value == b"10"
    # The second client cannot lock it (nothing waits)...
    with pytest.raises(tenure.ObjectLocked) as refused:
        cache.get_and_lock("RadioInventory", lock_timeout=30)
    assert refused.value.status == 409
    # ...but it can still read it.
    assert cache.get("RadioInventory").value == b"10"
    # The first client writes back and unlocks in one call.
    cache.put_and_unlock("RadioInventory", b"9", handle)
    item_b, handle_b = cache.get_and_lock("RadioInventory", lock_timeout=30)
    assert item_b is not None and item_b.value == b"9"
    # A stale handle is refused and changes nothing.
    with pytest.raises(tenure.InvalidLockHandle):
        cache.put_and_unlock("RadioInventory", b"0", handle)
    # A crashed client cannot hold the key forever: the lock ends by itself.
    clock.advance(31)
    item_c, _ = cache.get_and_lock("RadioInventory", lock_timeout=5)
    assert item_c is not None and item_c.value == b"9"
    assert handle_b != handle


def test_cosmos_style_loop_saving_a_continuation_token(store: tenure.Store) -> None:
    orders = store.create_container("orders")
    state = store.create_container("state")
    for number in range(2_500):
        orders.put(f"order-{number:05}", json.dumps({"total": number}).encode())

    # A worker reads one page at a time and saves its continuation token (and a running
    # total) after each page with update(), so a restarted worker resumes where it stopped.
    def process_one_page() -> bool:
        try:
            saved = json.loads(state.get("checkpoint").value or b"{}")
        except tenure.NotFound:
            saved = {}
        page = orders.list(
            "order-",
            page_size=1_000,
            continuation=saved.get("continuation"),
            include_values=True,
        )
        page_total = sum(json.loads(item.value or b"{}")["total"] for item in page.items)

        def advance(current: bytes) -> bytes:
            checkpoint = json.loads(current or b"{}")
            checkpoint["continuation"] = page.continuation
            checkpoint["total"] = checkpoint.get("total", 0) + page_total
            checkpoint["pages"] = checkpoint.get("pages", 0) + 1
            return json.dumps(checkpoint).encode()

        state.update("checkpoint", advance, create_default=b"{}")
        return page.continuation is not None

    while process_one_page():
        pass
    checkpoint = json.loads(state.get("checkpoint").value or b"{}")
    assert checkpoint == {"continuation": None, "total": sum(range(2_500)), "pages": 3}


def test_store_is_opened_once(tmp_path: Path) -> None:
    with tenure.open(tmp_path / "once", durability="buffered", segment_size_bytes=1 << 20):
        with pytest.raises(tenure.StoreLocked) as refused:
            tenure.open(tmp_path / "once")
        assert refused.value.status == 423
        assert refused.value.path is not None and "once" in refused.value.path
    # Closed: it opens again, and the data is still there.
    with tenure.open(tmp_path / "once") as reopened:
        assert reopened.list_containers() == []
