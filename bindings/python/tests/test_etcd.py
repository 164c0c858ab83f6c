"""The seed stories on a store on an etcd cluster (docs/etcd.md), with two clients — two
`tenure.open` handles on one URL — where the stories have two parties.

Runs when TENURE_ETCD_ENDPOINTS names a cluster (scripts/etcd-cluster.sh starts one); with
TENURE_REQUIRE_ETCD=1 a missing cluster fails instead of skipping."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
import uuid
from typing import Iterator, Tuple

import pytest

import tenure

ENDPOINTS = os.environ.get("TENURE_ETCD_ENDPOINTS", "")
if not ENDPOINTS:
    if os.environ.get("TENURE_REQUIRE_ETCD") == "1":
        raise RuntimeError("TENURE_REQUIRE_ETCD=1 but no cluster: run under scripts/etcd-cluster.sh")
    pytest.skip("no etcd cluster (TENURE_ETCD_ENDPOINTS unset)", allow_module_level=True)


@pytest.fixture
def clients() -> Iterator[Tuple[tenure.Store, tenure.Store]]:
    url = f"etcd://{ENDPOINTS}/python/{uuid.uuid4()}"
    with tenure.open(url) as first, tenure.open(url) as second:
        first.create_container("items")
        yield first, second


def test_the_etag_race_has_one_winner(clients: Tuple[tenure.Store, tenure.Store]) -> None:
    alice, bob = (client.container("items") for client in clients)
    etag = alice.put("profile", b'{"name": "Ada"}')
    seen_by_alice = alice.get("profile")
    seen_by_bob = bob.get("profile")
    assert seen_by_alice.etag == seen_by_bob.etag == etag
    winning = alice.put("profile", b'{"name": "Ada L."}', if_match=seen_by_alice.etag)
    with pytest.raises(tenure.ConditionNotMet) as refused:
        bob.put("profile", b'{"name": "Ada Lovelace"}', if_match=seen_by_bob.etag)
    assert refused.value.etag == winning
    assert refused.value.status == 412
    assert bob.get("profile").value == b'{"name": "Ada L."}'


def test_a_lease_blocks_the_other_client_until_broken(clients: Tuple[tenure.Store, tenure.Store]) -> None:
    holder, other = (client.container("items") for client in clients)
    holder.put("report.pdf", b"draft")
    lease = holder.acquire_lease("report.pdf", duration=30, holder="renderer-1")
    with pytest.raises(tenure.LeaseIdMissing):
        other.put("report.pdf", b"overwritten")
    with pytest.raises(tenure.LeaseAlreadyPresent):
        other.acquire_lease("report.pdf", duration=15)
    assert other.lease_info("report.pdf").holder == "renderer-1"
    holder.put("report.pdf", b"final", lease_id=lease.id)
    # The other client breaks the lease at once and takes its own, with a higher fence.
    assert other.break_lease("report.pdf", period=0) == 0
    taken = other.acquire_lease("report.pdf", duration=15)
    assert taken.fence > lease.fence
    with pytest.raises(tenure.PreconditionFailed):
        holder.put("report.pdf", b"late", lease_id=lease.id)
    assert other.get("report.pdf").value == b"final"


def test_two_cache_clients_with_get_and_lock(clients: Tuple[tenure.Store, tenure.Store]) -> None:
    first, second = (client.container("items") for client in clients)
    first.put("RadioInventory", b"10")
    item, handle = first.get_and_lock("RadioInventory", lock_timeout=30)
    assert item is not None and item.value == b"10"
    with pytest.raises(tenure.ObjectLocked):
        second.get_and_lock("RadioInventory", lock_timeout=30)
    assert second.get("RadioInventory").value == b"10"
    first.put_and_unlock("RadioInventory", b"9", handle)
    item_b, handle_b = second.get_and_lock("RadioInventory", lock_timeout=30)
    assert item_b is not None and item_b.value == b"9"
    second.put_and_unlock("RadioInventory", b"8", handle_b)
    assert first.get("RadioInventory").value == b"8"


def test_the_update_loop_of_two_clients_loses_no_increment(clients: Tuple[tenure.Store, tenure.Store]) -> None:
    containers = [client.container("items") for client in clients]
    containers[0].put("counter", struct.pack("<Q", 0))
    increments = 20

    def worker(container: tenure.Container) -> None:
        for _ in range(increments):
            container.update("counter", lambda value: struct.pack("<Q", struct.unpack("<Q", value)[0] + 1))

    threads = [threading.Thread(target=worker, args=(containers[index % 2],)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    value = containers[1].get("counter").value
    assert value is not None and struct.unpack("<Q", value)[0] == 4 * increments


def test_no_quorum_is_unavailable_within_the_deadline() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(tenure.Unavailable) as refused:
        tenure.open(f"etcd://127.0.0.1:{port}/p?timeout_ms=500&connect_timeout_ms=300")
    assert refused.value.status == 503
    assert "nothing was committed" in str(refused.value)
    assert time.monotonic() - started < 5


def test_a_manual_clock_cannot_drive_a_cluster() -> None:
    with pytest.raises(tenure.InvalidArgument, match="clock"):
        tenure.open(f"etcd://{ENDPOINTS}/manual", clock=tenure.ManualClock(1_700_000_000))
