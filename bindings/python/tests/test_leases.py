"""docs/spec.md §4 (item leases) and §5 (container leases) through Python, with a ManualClock."""

from __future__ import annotations

import uuid
from typing import Callable, Dict, Optional, Tuple

import pytest

import tenure

A = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
B = "9b2a4f1c-0d3e-4f5a-8b6c-7d8e9fa0b1c2"
C = "c0ffee00-0000-4000-8000-000000000001"

STATES = ["available", "leased", "breaking", "broken", "expired"]


def put_in_state(
    container: tenure.Container, clock: tenure.ManualClock, key: str, state: str
) -> None:
    """Leaves `key` in the lease state `state`, held (if at all) by A with 15 s."""
    container.put(key, b"value")
    if state == "available":
        return
    container.acquire_lease(key, 15, proposed_id=A)
    if state == "breaking":
        container.break_lease(key, period=10)
    elif state == "broken":
        container.break_lease(key, period=0)
    elif state == "expired":
        clock.advance(16)
    assert container.lease_info(key).state == state


# Each action's outcome per state, in STATES order: a state name (possibly with the id that
# holds it) or an error code. docs/spec.md §4, lease-action table.
LAP = "LeaseAlreadyPresent"
MISMATCH = "LeaseIdMismatchWithLeaseOperation"
NOT_PRESENT = "LeaseNotPresentWithLeaseOperation"
BROKEN_NO_RENEW = "LeaseIsBrokenAndCannotBeRenewed"
BREAKING_NO_ACQUIRE = "LeaseIsBreakingAndCannotBeAcquired"
BREAKING_NO_CHANGE = "LeaseIsBreakingAndCannotBeChanged"

ACTION_TABLE: Dict[str, Tuple[str, str, str, str, str]] = {
    "acquire": ("leased:new", LAP, LAP, "leased:new", "leased:new"),
    "acquire(A)": ("leased:A", "leased:A", BREAKING_NO_ACQUIRE, "leased:A", "leased:A"),
    "acquire(B)": ("leased:B", LAP, LAP, "leased:B", "leased:B"),
    "renew(A)": (MISMATCH, "leased:A", BROKEN_NO_RENEW, BROKEN_NO_RENEW, "leased:A"),
    "renew(B)": (MISMATCH, MISMATCH, MISMATCH, MISMATCH, MISMATCH),
    "change(A->B)": (NOT_PRESENT, "leased:B", BREAKING_NO_CHANGE, NOT_PRESENT, NOT_PRESENT),
    "change(B->A)": (NOT_PRESENT, "leased:A", MISMATCH, NOT_PRESENT, NOT_PRESENT),
    "change(B->C)": (NOT_PRESENT, MISMATCH, MISMATCH, NOT_PRESENT, NOT_PRESENT),
    "release(A)": (MISMATCH, "available", "available", "available", "available"),
    "release(B)": (MISMATCH, MISMATCH, MISMATCH, MISMATCH, MISMATCH),
    "break(0)": (NOT_PRESENT, "broken", "broken", "broken", "broken"),
    "break(5)": (NOT_PRESENT, "breaking", "breaking", "broken", "broken"),
    "break()": (NOT_PRESENT, "breaking", "breaking", "broken", "broken"),
}


def run_action(container: tenure.Container, key: str, action: str) -> Optional[tenure.Lease]:
    calls: Dict[str, Callable[[], object]] = {
        "acquire": lambda: container.acquire_lease(key, 15),
        "acquire(A)": lambda: container.acquire_lease(key, 15, proposed_id=A),
        "acquire(B)": lambda: container.acquire_lease(key, 15, proposed_id=B),
        "renew(A)": lambda: container.renew_lease(key, A),
        "renew(B)": lambda: container.renew_lease(key, B),
        "change(A->B)": lambda: container.change_lease(key, A, B),
        "change(B->A)": lambda: container.change_lease(key, B, A),
        "change(B->C)": lambda: container.change_lease(key, B, C),
        "release(A)": lambda: container.release_lease(key, A),
        "release(B)": lambda: container.release_lease(key, B),
        "break(0)": lambda: container.break_lease(key, period=0),
        "break(5)": lambda: container.break_lease(key, period=5),
        "break()": lambda: container.break_lease(key),
    }
    result = calls[action]()
    return result if isinstance(result, tenure.Lease) else None


@pytest.mark.parametrize("action", list(ACTION_TABLE))
@pytest.mark.parametrize("state", STATES)
def test_lease_action_table(
    container: tenure.Container, clock: tenure.ManualClock, state: str, action: str
) -> None:
    key = "leased-item"
    put_in_state(container, clock, key, state)
    etag = container.get(key).etag
    expected = ACTION_TABLE[action][STATES.index(state)]
    if ":" in expected or expected in STATES:
        lease = run_action(container, key, action)
        info = container.lease_info(key)
        expected_state, _, holder = expected.partition(":")
        assert info.state == expected_state
        if holder == "new":
            assert lease is not None and info.id == lease.id and info.id not in (A, B)
        elif holder:
            assert info.id == {"A": A, "B": B}[holder]
            assert lease is not None and lease.id == info.id
    else:
        before = container.lease_info(key)
        with pytest.raises(tenure.Conflict) as refused:
            run_action(container, key, action)
        assert refused.value.code == expected
        assert refused.value.status == 409
        after = container.lease_info(key)
        assert (after.state, after.id, after.fence) == (before.state, before.id, before.fence)
    # Lease operations change neither ETag nor last_modified.
    assert container.get(key).etag == etag


def test_break_reports_the_time_left(container: tenure.Container, clock: tenure.ManualClock) -> None:
    container.put("key", b"value")
    container.acquire_lease("key", 15)
    clock.advance(3)
    assert container.break_lease("key", period=5) == pytest.approx(5.0)
    assert container.lease_info("key").remaining == pytest.approx(5.0)
    # A later break with a longer period keeps the earlier deadline.
    clock.advance(1)
    assert container.break_lease("key", period=30) == pytest.approx(4.0)
    # A break without a period leaves a fixed lease breaking until its own deadline.
    container.put("other", b"value")
    container.acquire_lease("other", 20)
    clock.advance(2)
    assert container.break_lease("other") == pytest.approx(18.0)
    # An infinite lease without a period breaks at once.
    container.put("forever", b"value")
    container.acquire_lease("forever", None)
    assert container.break_lease("forever") == 0.0
    assert container.lease_info("forever").state == "broken"
    # Broken: a new lease can be taken.
    clock.advance(5)
    assert container.lease_info("key").state == "broken"
    container.acquire_lease("key", 15)


def test_renew_of_an_expired_lease_after_a_write_is_refused(
    container: tenure.Container, clock: tenure.ManualClock
) -> None:
    container.put("key", b"value")
    container.acquire_lease("key", 15, proposed_id=A)
    clock.advance(16)
    container.put("key", b"written after expiry")  # clears the expired lease
    with pytest.raises(tenure.LeaseIdMismatchWithLeaseOperation):
        container.renew_lease("key", A)


def test_time_moves_leased_to_expired_and_breaking_to_broken(
    container: tenure.Container, clock: tenure.ManualClock
) -> None:
    container.put("key", b"value")
    lease = container.acquire_lease("key", 15)
    info = container.lease_info("key")
    assert (info.state, info.remaining, info.duration) == ("leased", 15.0, 15)
    clock.advance(14.5)
    assert container.lease_info("key").remaining == pytest.approx(0.5)
    clock.advance(0.5)
    assert container.lease_info("key").state == "expired"
    assert container.lease_info("key").remaining is None
    lease.renew()
    assert container.lease_info("key").state == "leased"
    container.break_lease("key", period=2)
    assert container.lease_info("key").state == "breaking"
    clock.advance(2)
    assert container.lease_info("key").state == "broken"


def test_infinite_lease(container: tenure.Container, clock: tenure.ManualClock) -> None:
    container.put("key", b"value")
    lease = container.acquire_lease("key", None)
    clock.advance(10 * 365 * 24 * 3600)
    info = container.lease_info("key")
    assert (info.state, info.remaining, info.duration) == ("leased", None, -1)
    assert info.fence == lease.fence


# Data operations against a leased item (docs/spec.md §4): every failure is 412.
NP = "LeaseNotPresentWithBlobOperation"
MM = "LeaseIdMismatchWithBlobOperation"
LOST = "LeaseLost"
MISSING = "LeaseIdMissing"

DATA_TABLE = {
    # request: outcome per state (available, leased, breaking, broken, expired)
    "write A": (NP, "ok", "ok", LOST, LOST),
    "write B": (NP, MM, MM, LOST, LOST),
    "write -": ("ok", MISSING, MISSING, "ok", "ok"),
    "read A": (NP, "ok", "ok", LOST, LOST),
    "read B": (NP, MM, MM, LOST, LOST),
    "read -": ("ok", "ok", "ok", "ok", "ok"),
}


@pytest.mark.parametrize("write", ["put", "delete", "set_metadata", "batch put"])
@pytest.mark.parametrize("lease_id", ["A", "B", "-"])
@pytest.mark.parametrize("state", STATES)
def test_writes_against_a_leased_item(
    store: tenure.Store,
    container: tenure.Container,
    clock: tenure.ManualClock,
    state: str,
    lease_id: str,
    write: str,
) -> None:
    key = "leased-item"
    put_in_state(container, clock, key, state)
    etag = container.get(key).etag
    argument = {"A": A, "B": B, "-": None}[lease_id]
    expected = DATA_TABLE[f"write {lease_id}"][STATES.index(state)]

    def run() -> None:
        if write == "put":
            container.put(key, b"new", lease_id=argument)
        elif write == "delete":
            container.delete(key, lease_id=argument)
        elif write == "set_metadata":
            container.set_metadata(key, {"new": "yes"}, lease_id=argument)
        else:
            with store.batch() as batch:
                batch.put(container, key, b"new", lease_id=argument)

    if expected == "ok":
        run()
        if write == "delete":
            with pytest.raises(tenure.NotFound):
                container.get(key)
            return
        assert container.get(key).etag != etag
        kept = {"leased": "leased", "breaking": "breaking"}.get(state, "available")
        assert container.lease_info(key).state == kept  # kept, or cleared to available
    else:
        with pytest.raises(tenure.TenureError) as refused:
            run()
        error = refused.value
        if write == "batch put":
            assert isinstance(error, tenure.FailedDependency) and error.cause is not None
            assert error.index == 0
            error = error.cause
        assert error.code == expected
        assert error.status == 412
        assert error.etag == etag
        assert container.get(key).etag == etag
        assert container.lease_info(key).state == state


@pytest.mark.parametrize("read", ["get", "get_properties"])
@pytest.mark.parametrize("lease_id", ["A", "B", "-"])
@pytest.mark.parametrize("state", STATES)
def test_reads_against_a_leased_item(
    container: tenure.Container, clock: tenure.ManualClock, state: str, lease_id: str, read: str
) -> None:
    key = "leased-item"
    put_in_state(container, clock, key, state)
    argument = {"A": A, "B": B, "-": None}[lease_id]
    expected = DATA_TABLE[f"read {lease_id}"][STATES.index(state)]
    call = getattr(container, read)
    if expected == "ok":
        assert call(key, lease_id=argument).key == key
    else:
        with pytest.raises(tenure.PreconditionFailed) as refused:
            call(key, lease_id=argument)
        assert refused.value.code == expected
    assert container.lease_info(key).state == state  # reads never change the lease


def test_lease_rules_beyond_the_table(container: tenure.Container) -> None:
    # Leasing a missing item is NotFound.
    with pytest.raises(tenure.NotFound):
        container.acquire_lease("missing")
    # A put with a lease id on a missing item.
    with pytest.raises(tenure.LeaseNotPresentWithBlobOperation):
        container.put("missing", b"value", lease_id=A)
    # A lease survives an overwrite made with its id; deleting the item drops it; an item
    # re-created under the same key starts available.
    container.put("key", b"value")
    lease = container.acquire_lease("key")
    container.put("key", b"again", lease_id=lease)
    assert container.lease_info("key").id == lease.id
    container.delete("key", lease_id=lease.id)
    container.put("key", b"re-created")
    assert container.lease_info("key").state == "available"
    # Lease ids are compared by value, whatever the UUID text form.
    upper = str(uuid.UUID(A)).upper()
    braced = "{" + A.replace("-", "") + "}"
    lease = container.acquire_lease("key", proposed_id=upper)
    assert lease.id == A
    container.put("key", b"by braced id", lease_id=braced)


def test_fences_strictly_increase_per_item(
    container: tenure.Container, clock: tenure.ManualClock
) -> None:
    container.put("key", b"value")
    first = container.acquire_lease("key", 15)
    again = container.acquire_lease("key", 30, proposed_id=first.id)  # same grant
    assert again.fence == first.fence
    assert first.renew().fence == first.fence
    changed = container.change_lease("key", first.id, B)
    assert changed.fence == first.fence
    container.release_lease("key", B)
    second = container.acquire_lease("key", 15)
    assert second.fence > first.fence
    clock.advance(16)
    third = container.acquire_lease("key", 15)  # expired → a new grant
    assert third.fence > second.fence


def test_fences_survive_reopen(tmp_path: object, clock: tenure.ManualClock) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "store"
    with tenure.open(path, clock=clock, segment_size_bytes=1 << 20) as store:
        container = store.create_container("c")
        container.put("key", b"value")
        lease = container.acquire_lease("key", 60, holder="worker-7")
    clock.advance(10)
    with tenure.open(path, clock=clock) as store:
        container = store.container("c")
        info = container.lease_info("key")
        # A lease still runs after reopen.
        assert (info.state, info.id, info.holder) == ("leased", lease.id, "worker-7")
        assert info.remaining == pytest.approx(50.0)
        with pytest.raises(tenure.LeaseIdMissing):
            container.put("key", b"x")
        container.release_lease("key", lease.id)
        assert container.acquire_lease("key").fence > lease.fence


def test_lease_objects(container: tenure.Container, clock: tenure.ManualClock) -> None:
    container.put("key", b"value")
    with container.lease("key", 20, holder="me") as lease:
        assert (lease.container, lease.key) == ("items", "key")
        assert str(lease) == lease.id
        info = lease.info()
        assert (info.state, info.holder, info.duration) == ("leased", "me", 20)
        clock.advance(10)
        assert lease.renew() is lease
        assert lease.info().remaining == pytest.approx(20.0)
        old = lease.id
        assert lease.change(B) is lease
        assert lease.id == B != old
        container.put("key", b"written", lease_id=lease)
    # Released on exit, with the changed id.
    assert container.lease_info("key").state == "available"
    # An exception in the block still releases it, and the exception goes on.
    with pytest.raises(KeyError):
        with container.lease("key"):
            raise KeyError("boom")
    assert container.lease_info("key").state == "available"
    # Deleting the item inside the block is fine: its lease went with it.
    with container.lease("key") as lease:
        container.delete("key", lease_id=lease)


def test_waiting_acquire_times_out_with_lease_already_present(
    container: tenure.Container,
) -> None:
    container.put("key", b"value")
    container.acquire_lease("key", 60)
    with pytest.raises(tenure.LeaseAlreadyPresent):
        container.acquire_lease("key", 15, wait=0.05)
    # The plain acquire never waits.
    with pytest.raises(tenure.LeaseAlreadyPresent):
        container.acquire_lease("key", 15)


# ----- container leases (docs/spec.md §5) -----


def test_container_lease_guards_only_delete(store: tenure.Store, clock: tenure.ManualClock) -> None:
    store.create_container("guarded")
    lease = store.acquire_container_lease("guarded", 15, holder="admin")
    assert (lease.container, lease.key) == ("guarded", None)
    info = store.container_lease_info("guarded")
    assert (info.state, info.id, info.holder) == ("leased", lease.id, "admin")
    # Item writes are not guarded by the container's lease.
    store.container("guarded").put("key", b"value")
    with pytest.raises(tenure.LeaseIdMissing):
        store.delete_container("guarded")
    with pytest.raises(tenure.LeaseIdMismatchWithContainerOperation):
        store.delete_container("guarded", lease_id=B)
    assert "guarded" in store.list_containers()
    renewed = store.renew_container_lease("guarded", lease.id)
    assert renewed.fence == lease.fence
    changed = store.change_container_lease("guarded", lease.id, C)
    assert changed.id == C
    store.release_container_lease("guarded", C)
    with pytest.raises(tenure.LeaseNotPresentWithContainerOperation):
        store.delete_container("guarded", lease_id=C)
    # Expired, an id given → LeaseLost; without one the delete proceeds.
    again = store.acquire_container_lease("guarded", 15)
    clock.advance(16)
    with pytest.raises(tenure.LeaseLost):
        store.delete_container("guarded", lease_id=again)
    assert store.break_container_lease("guarded", period=0) == 0.0
    store.delete_container("guarded")
    assert "guarded" not in store.list_containers()


def test_container_lease_actions_share_the_state_machine(store: tenure.Store) -> None:
    store.create_container("c")
    store.acquire_container_lease("c", 15, proposed_id=A)
    with pytest.raises(tenure.LeaseAlreadyPresent):
        store.acquire_container_lease("c", 15, proposed_id=B)
    store.break_container_lease("c", period=10)
    with pytest.raises(tenure.LeaseIsBreakingAndCannotBeAcquired):
        store.acquire_container_lease("c", 15, proposed_id=A)
    with pytest.raises(tenure.LeaseIsBreakingAndCannotBeChanged):
        store.change_container_lease("c", A, B)
