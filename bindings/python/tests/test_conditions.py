"""docs/spec.md §3 (optimistic concurrency) and §7 (create/replace) through Python, table by table."""

from __future__ import annotations

import datetime
import itertools
from typing import Any, Callable, Dict, Optional

import pytest

import tenure
from conftest import START, fresh_key

ONE_SECOND = datetime.timedelta(seconds=1)
OTHER_ETAG = '"0x7FFFFFFFFFFFFFF0"'  # well formed, never this item's


@pytest.fixture(scope="module")
def items(table_store: tenure.Store) -> tenure.Container:
    return table_store.create_container("conditions")


def etag_argument(choice: Optional[str], etag: str) -> Optional[str]:
    return {None: None, "match": etag, "nomatch": OTHER_ETAG, "*": "*"}[choice]


def date_argument(choice: Optional[str]) -> Optional[datetime.datetime]:
    # The item is written at START.
    return {None: None, "before": START - ONE_SECOND, "equal": START, "after": START + ONE_SECOND}[
        choice
    ]


# ----- reads: if_match ∧ if_unmodified_since ∧ (if_none_match ∨ if_modified_since) -----


def expected_read(
    if_match: Optional[str],
    if_none_match: Optional[str],
    if_modified_since: Optional[str],
    if_unmodified_since: Optional[str],
) -> Optional[str]:
    strict_part = if_match in (None, "match", "*") and if_unmodified_since in (None, "equal", "after")
    if not strict_part:
        return "ConditionNotMet"
    group_given = if_none_match is not None or if_modified_since is not None
    group = (
        not group_given
        or if_none_match == "nomatch"
        or if_modified_since == "before"  # last_modified > T strictly
    )
    return None if group else "NotModified"


READ_CASES = list(
    itertools.product(
        [None, "match", "nomatch", "*"],
        [None, "match", "nomatch"],
        [None, "before", "equal", "after"],
        [None, "before", "equal", "after"],
    )
)


@pytest.mark.parametrize("read", ["get", "get_properties"])
@pytest.mark.parametrize("if_match,if_none_match,if_modified_since,if_unmodified_since", READ_CASES)
def test_read_conditions(
    items: tenure.Container,
    read: str,
    if_match: Optional[str],
    if_none_match: Optional[str],
    if_modified_since: Optional[str],
    if_unmodified_since: Optional[str],
) -> None:
    key = fresh_key()
    etag = items.put(key, b"value")
    call: Callable[..., tenure.ItemProperties] = getattr(items, read)
    arguments: Dict[str, Any] = dict(
        if_match=etag_argument(if_match, etag),
        if_none_match=etag_argument(if_none_match, etag),
        if_modified_since=date_argument(if_modified_since),
        if_unmodified_since=date_argument(if_unmodified_since),
    )
    expected = expected_read(if_match, if_none_match, if_modified_since, if_unmodified_since)
    if expected is None:
        item = call(key, **arguments)
        assert item.etag == etag
        if read == "get":
            assert isinstance(item, tenure.Item) and item.value == b"value"
        else:  # properties only: no value attribute at all
            assert type(item) is tenure.ItemProperties and not hasattr(item, "value")
    else:
        with pytest.raises(tenure.TenureError) as refused:
            call(key, **arguments)
        assert refused.value.code == expected
        assert refused.value.etag == etag  # the current ETag comes with the refusal


@pytest.mark.parametrize(
    "conditions",
    [{}, {"if_match": "*"}, {"if_none_match": OTHER_ETAG}, {"if_modified_since": START}],
)
def test_any_read_of_a_missing_item_is_not_found(
    items: tenure.Container, conditions: Dict[str, Any]
) -> None:
    with pytest.raises(tenure.NotFound) as refused:
        items.get(fresh_key(), **conditions)
    assert refused.value.status == 404
    assert refused.value.etag is None


def test_if_none_match_star_on_a_read_is_invalid(items: tenure.Container) -> None:
    key = fresh_key()
    items.put(key, b"value")
    with pytest.raises(tenure.InvalidArgument) as refused:
        items.get(key, if_none_match="*")
    assert refused.value.argument == "if_none_match"
    assert isinstance(refused.value, ValueError)


def test_read_with_if_none_match_of_the_current_etag_is_not_modified(
    items: tenure.Container,
) -> None:
    key = fresh_key()
    etag = items.put(key, b"value")
    with pytest.raises(tenure.NotModified) as refused:
        items.get(key, if_none_match=etag)
    assert refused.value.status == 304


# ----- writes: every condition given must hold; the first failing one is reported -----


def expected_write(
    if_match: Optional[str],
    if_none_match: Optional[str],
    if_modified_since: Optional[str],
    if_unmodified_since: Optional[str],
    if_version: Optional[str],
) -> Optional[str]:
    if if_match == "nomatch":
        return "ConditionNotMet"
    if if_none_match == "*":
        return "AlreadyExists"
    if if_none_match == "match":
        return "ConditionNotMet"
    if if_modified_since in ("equal", "after"):
        return "ConditionNotMet"
    if if_unmodified_since == "before":
        return "ConditionNotMet"
    if if_version == "nomatch":
        return "VersionMismatch"
    return None


WRITE_CASES = list(
    itertools.product(
        [None, "match", "nomatch", "*"],
        [None, "match", "nomatch", "*"],
        [None, "before", "after"],
        [None, "before", "after"],
        [None, "match", "nomatch"],
    )
)


def write_arguments(
    etag: str,
    version: int,
    if_match: Optional[str],
    if_none_match: Optional[str],
    if_modified_since: Optional[str],
    if_unmodified_since: Optional[str],
    if_version: Optional[str],
) -> Dict[str, Any]:
    return dict(
        if_match=etag_argument(if_match, etag),
        if_none_match=etag_argument(if_none_match, etag),
        if_modified_since=date_argument(if_modified_since),
        if_unmodified_since=date_argument(if_unmodified_since),
        if_version={None: None, "match": version, "nomatch": version + 1_000_000}[if_version],
    )


@pytest.mark.parametrize(
    "if_match,if_none_match,if_modified_since,if_unmodified_since,if_version", WRITE_CASES
)
def test_put_conditions_on_an_existing_item(
    items: tenure.Container,
    if_match: Optional[str],
    if_none_match: Optional[str],
    if_modified_since: Optional[str],
    if_unmodified_since: Optional[str],
    if_version: Optional[str],
) -> None:
    key = fresh_key()
    etag = items.put(key, b"before")
    version = items.get(key).version
    arguments = write_arguments(
        etag, version, if_match, if_none_match, if_modified_since, if_unmodified_since, if_version
    )
    expected = expected_write(
        if_match, if_none_match, if_modified_since, if_unmodified_since, if_version
    )
    if expected is None:
        new_etag = items.put(key, b"after", **arguments)
        assert new_etag != etag
        assert items.get(key).value == b"after"
    else:
        with pytest.raises(tenure.TenureError) as refused:
            items.put(key, b"after", **arguments)
        assert refused.value.code == expected
        assert refused.value.etag == etag
        # A failed operation changes nothing.
        item = items.get(key)
        assert (item.value, item.etag) == (b"before", etag)


SINGLE_CONDITIONS = [
    ("if_match", "match"),
    ("if_match", "nomatch"),
    ("if_match", "*"),
    ("if_none_match", "match"),
    ("if_none_match", "nomatch"),
    ("if_none_match", "*"),
    ("if_modified_since", "before"),
    ("if_modified_since", "after"),
    ("if_unmodified_since", "before"),
    ("if_unmodified_since", "after"),
    ("if_version", "match"),
    ("if_version", "nomatch"),
]


def single(condition: str, choice: str) -> Dict[str, Optional[str]]:
    names = ["if_match", "if_none_match", "if_modified_since", "if_unmodified_since", "if_version"]
    return {name: (choice if name == condition else None) for name in names}


@pytest.mark.parametrize("kind", ["replace", "delete", "set_metadata"])
@pytest.mark.parametrize("condition,choice", SINGLE_CONDITIONS)
def test_other_writes_decide_conditions_like_put(
    items: tenure.Container, kind: str, condition: str, choice: str
) -> None:
    key = fresh_key()
    etag = items.put(key, b"before", content_type="text/plain")
    version = items.get(key).version
    choices = single(condition, choice)
    arguments = write_arguments(etag, version, **choices)
    expected = expected_write(**choices)
    if kind == "replace":
        action: Callable[[], object] = lambda: items.replace(key, b"after", **arguments)
    elif kind == "delete":
        action = lambda: items.delete(key, **arguments)
    else:
        action = lambda: items.set_metadata(key, {"stage": "after"}, **arguments)
    if expected is None:
        action()
        if kind == "delete":
            with pytest.raises(tenure.NotFound):
                items.get(key)
        elif kind == "replace":
            assert items.get(key).value == b"after"
        else:
            item = items.get(key)
            assert (item.value, item.metadata, item.content_type) == (
                b"before",
                {"stage": "after"},
                "text/plain",
            )
            assert item.etag != etag
    else:
        with pytest.raises(tenure.TenureError) as refused:
            action()
        assert refused.value.code == expected
        item = items.get(key)
        assert (item.value, item.etag, item.metadata) == (b"before", etag, {})


MISSING_CASES = [
    # (condition, choice) → expected per kind: put, create, replace, delete, set_metadata
    (None, None, [None, None, "NotFound", "NotFound", "NotFound"]),
    ("if_match", "*", ["ConditionNotMet", "ConditionNotMet", "NotFound", "NotFound", "NotFound"]),
    ("if_match", "nomatch", ["ConditionNotMet", "ConditionNotMet", "NotFound", "NotFound", "NotFound"]),
    ("if_none_match", "*", [None, None, "NotFound", "NotFound", "NotFound"]),
    ("if_none_match", "nomatch", [None, None, "NotFound", "NotFound", "NotFound"]),
    ("if_modified_since", "after", [None, None, "NotFound", "NotFound", "NotFound"]),
    ("if_unmodified_since", "before", [None, None, "NotFound", "NotFound", "NotFound"]),
    ("if_version", "match", ["NotFound", "NotFound", "NotFound", "NotFound", "NotFound"]),
]
KINDS = ["put", "create", "replace", "delete", "set_metadata"]


@pytest.mark.parametrize(
    "condition,choice,kind,expected",
    [
        (condition, choice, kind, expectations[index])
        for condition, choice, expectations in MISSING_CASES
        for index, kind in enumerate(KINDS)
    ],
)
def test_writes_on_a_missing_item(
    items: tenure.Container,
    condition: Optional[str],
    choice: Optional[str],
    kind: str,
    expected: Optional[str],
) -> None:
    key = fresh_key()
    choices = single(condition or "", choice or "")
    arguments = write_arguments(OTHER_ETAG, 1, **choices)
    if choice == "nomatch" and condition == "if_match":
        arguments["if_match"] = OTHER_ETAG
    calls: Dict[str, Callable[[], object]] = {
        "put": lambda: items.put(key, b"new", **arguments),
        "create": lambda: items.create(key, b"new", **arguments),
        "replace": lambda: items.replace(key, b"new", **arguments),
        "delete": lambda: items.delete(key, **arguments),
        "set_metadata": lambda: items.set_metadata(key, {"a": "b"}, **arguments),
    }
    if expected is None:
        calls[kind]()
        assert items.get(key).value == b"new"
    else:
        with pytest.raises(tenure.TenureError) as refused:
            calls[kind]()
        assert refused.value.code == expected
        with pytest.raises(tenure.NotFound):
            items.get(key)


def test_create_on_an_existing_item_is_already_exists(items: tenure.Container) -> None:
    key = fresh_key()
    etag = items.put(key, b"first")
    with pytest.raises(tenure.AlreadyExists) as refused:
        items.create(key, b"second")
    assert refused.value.status == 409
    assert refused.value.etag == etag
    assert items.get(key).value == b"first"


def test_etag_arguments(items: tenure.Container) -> None:
    key = fresh_key()
    etag = items.put(key, b"value")
    unquoted = etag.strip('"')
    assert items.get(key, if_match=unquoted).etag == etag  # one pair of quotes is optional
    assert items.get(key, if_match=[OTHER_ETAG, etag]).etag == etag  # any of a list
    assert items.get(key, if_match=(OTHER_ETAG, etag)).etag == etag
    with pytest.raises(tenure.ConditionNotMet):
        items.get(key, if_match=etag.lower())  # compared byte for byte
    with pytest.raises(tenure.ConditionNotMet):
        items.get(key, if_match="some-foreign-etag")
    with pytest.raises(tenure.NotModified):
        items.get(key, if_none_match=[OTHER_ETAG, etag])  # differs from all of the list


def test_etag_changes_on_every_write_and_not_on_reads(items: tenure.Container) -> None:
    key = fresh_key()
    first = items.put(key, b"value")
    assert items.get(key).etag == first
    second = items.put(key, b"value")
    third = items.set_metadata(key, {"a": "b"})
    assert len({first, second, third}) == 3
    assert items.get(key).etag == third


def test_dates_are_compared_at_microsecond_resolution(
    store: tenure.Store, clock: tenure.ManualClock
) -> None:
    items = store.create_container("dates")
    clock.advance(0.000_250)
    items.put("key", b"value")
    written = items.get("key").last_modified
    assert written == START + datetime.timedelta(microseconds=250)
    assert written.tzinfo is not None
    with pytest.raises(tenure.NotModified):
        items.get("key", if_modified_since=written)
    items.get("key", if_modified_since=written - datetime.timedelta(microseconds=1))
    # Epoch seconds work as well as datetimes; a naive datetime is UTC.
    items.get("key", if_unmodified_since=written.timestamp())
    items.get("key", if_unmodified_since=written.replace(tzinfo=None))


def test_update_retries_a_lost_race_and_gives_up_after_max_attempts(
    items: tenure.Container,
) -> None:
    key = fresh_key()
    items.put(key, b"0")
    calls = []

    def interfering(current: bytes) -> bytes:
        calls.append(current)
        items.put(key, str(len(calls)).encode())  # another writer moves the item every time
        return b"mine"

    with pytest.raises(tenure.ConditionNotMet):
        items.update(key, interfering, max_attempts=3)
    assert len(calls) == 3
    assert items.get(key).value == b"3"
    # Once nobody interferes, it succeeds at once.
    result = items.update(key, lambda current: current + b"!")
    assert result.value == b"3!"
    assert result.etag == items.get(key).etag


def test_update_keeps_content_type_and_metadata(items: tenure.Container) -> None:
    key = fresh_key()
    items.put(key, b"1", content_type="text/plain", metadata={"owner": "ada"})
    updated = items.update(key, lambda current: current + b"1")
    assert (updated.value, updated.content_type, updated.metadata) == (
        b"11",
        "text/plain",
        {"owner": "ada"},
    )
    assert updated.last_modified == items.get(key).last_modified


def test_update_of_a_missing_item(items: tenure.Container) -> None:
    key = fresh_key()
    with pytest.raises(tenure.NotFound):
        items.update(key, lambda current: current)
    created = items.update(key, lambda current: current + b"+1", create_default=b"0")
    assert created.value == b"0+1"
    assert items.get(key).value == b"0+1"


def test_update_callback_errors_write_nothing(items: tenure.Container) -> None:
    key = fresh_key()
    etag = items.put(key, b"1")

    def broken(current: bytes) -> bytes:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        items.update(key, broken)
    with pytest.raises(TypeError):
        items.update(key, lambda current: 42)  # type: ignore[arg-type,return-value]
    assert items.get(key).etag == etag


def test_get_if_newer(items: tenure.Container) -> None:
    key = fresh_key()
    items.put(key, b"1")
    version = items.get(key).version
    assert items.get_if_newer(key, version) is None
    items.put(key, b"2")
    newer = items.get_if_newer(key, version)
    assert newer is not None and newer.value == b"2"
    with pytest.raises(tenure.NotFound):
        items.get_if_newer(fresh_key(), 1)


def test_set_metadata_keeps_or_sets_the_content_type(items: tenure.Container) -> None:
    key = fresh_key()
    items.put(key, b"value", content_type="text/plain", metadata={"a": "1"})
    items.set_metadata(key, {"b": "2"}, if_match="*")
    item = items.get(key)
    assert (item.value, item.content_type, item.metadata) == (b"value", "text/plain", {"b": "2"})
    items.set_metadata(key, {}, content_type="application/json", if_match=item.etag)
    item = items.get(key)
    assert (item.value, item.content_type, item.metadata) == (b"value", "application/json", {})
