"""A Hypothesis stateful test: tenure against a plain Python dict, with conditional writes,
batches, update(), snapshots, listing, bad input, and close/reopen steps."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import tenure
from conftest import SEGMENT

Key = Union[str, bytes]
KEYS = st.sampled_from(["a", "b", "c", "dé", b"\xff\x00", "long-" + "x" * 100])
VALUES = st.binary(max_size=24)
CONTAINERS = st.sampled_from(["left", "right"])


def normal(key: Key) -> bytes:
    return key.encode() if isinstance(key, str) else key


class StoreAgainstDict(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="tenure-model-"))
        self.store = self._open()
        for name in ("left", "right"):
            self.store.create_container(name)
        # (container, key bytes) → (value, etag)
        self.model: Dict[Tuple[str, bytes], Tuple[bytes, str]] = {}
        self.old_etags: List[str] = ['"0x0000000000000001"']

    def _open(self) -> tenure.Store:
        return tenure.open(
            self.directory / "store",
            durability="buffered",
            segment_size_bytes=SEGMENT,
            background_compaction_interval=None,
        )

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def remember(self, container: str, key: Key, value: bytes, etag: str) -> None:
        previous = self.model.get((container, normal(key)))
        if previous is not None:
            self.old_etags.append(previous[1])
        self.model[(container, normal(key))] = (value, etag)

    def forget(self, container: str, key: Key) -> None:
        previous = self.model.pop((container, normal(key)))
        self.old_etags.append(previous[1])

    def current_etag(self, container: str, key: Key) -> Optional[str]:
        entry = self.model.get((container, normal(key)))
        return None if entry is None else entry[1]

    @rule(container=CONTAINERS, key=KEYS, value=VALUES)
    def put(self, container: str, key: Key, value: bytes) -> None:
        etag = self.store.container(container).put(key, value)
        assert all(etag > old for old in self.old_etags)
        self.remember(container, key, value, etag)

    @rule(container=CONTAINERS, key=KEYS, value=VALUES)
    def create(self, container: str, key: Key, value: bytes) -> None:
        current = self.current_etag(container, key)
        try:
            etag = self.store.container(container).create(key, value)
        except tenure.AlreadyExists as refused:
            assert current is not None and refused.etag == current
        else:
            assert current is None
            self.remember(container, key, value, etag)

    @rule(container=CONTAINERS, key=KEYS, value=VALUES)
    def replace(self, container: str, key: Key, value: bytes) -> None:
        current = self.current_etag(container, key)
        try:
            etag = self.store.container(container).replace(key, value)
        except tenure.NotFound:
            assert current is None
        else:
            assert current is not None
            self.remember(container, key, value, etag)

    @rule(
        container=CONTAINERS,
        key=KEYS,
        value=VALUES,
        which=st.sampled_from(["current", "stale", "star"]),
        data=st.data(),
    )
    def put_if_match(
        self, container: str, key: Key, value: bytes, which: str, data: st.DataObject
    ) -> None:
        current = self.current_etag(container, key)
        if which == "current" and current is not None:
            condition = current
        elif which == "star":
            condition = "*"
        else:
            condition = data.draw(st.sampled_from(self.old_etags))
        holds = current is not None and condition in ("*", current)
        try:
            etag = self.store.container(container).put(key, value, if_match=condition)
        except tenure.ConditionNotMet as refused:
            assert not holds
            assert refused.etag == current
        else:
            assert holds
            self.remember(container, key, value, etag)

    @rule(container=CONTAINERS, key=KEYS, use_etag=st.booleans())
    def delete(self, container: str, key: Key, use_etag: bool) -> None:
        current = self.current_etag(container, key)
        condition = current if use_etag else None
        try:
            self.store.container(container).delete(key, if_match=condition)
        except tenure.NotFound:
            assert current is None
        else:
            self.forget(container, key)

    @rule(container=CONTAINERS, key=KEYS, suffix=VALUES)
    def update(self, container: str, key: Key, suffix: bytes) -> None:
        current = self.model.get((container, normal(key)))
        item = self.store.container(container).update(
            key, lambda value: value + suffix, create_default=b"new:"
        )
        expected = (current[0] if current else b"new:") + suffix
        assert item.value == expected
        self.remember(container, key, expected, item.etag)

    @rule(
        operations=st.lists(
            st.tuples(st.sampled_from(["put", "create", "delete"]), CONTAINERS, KEYS, VALUES),
            min_size=1,
            max_size=5,
        )
    )
    def batch(self, operations: List[Tuple[str, str, Key, bytes]]) -> None:
        # The expected result: apply in order to a copy; the first failure fails everything.
        staged = dict(self.model)
        failing: Optional[Tuple[int, str]] = None
        for index, (kind, container, key, value) in enumerate(operations):
            target = (container, normal(key))
            if kind == "create" and target in staged:
                failing = (index, "AlreadyExists")
                break
            if kind == "delete" and target not in staged:
                failing = (index, "NotFound")
                break
            if kind == "delete":
                del staged[target]
            else:
                staged[target] = (value, "")
        batch = self.store.batch()
        for kind, container, key, value in operations:
            if kind == "put":
                batch.put(container, key, value)
            elif kind == "create":
                batch.create(container, key, value)
            else:
                batch.delete(container, key)
        try:
            version = batch.commit()
        except tenure.FailedDependency as refused:
            assert failing is not None
            assert refused.index == failing[0]
            assert refused.cause is not None and refused.cause.code == failing[1]
            return
        assert failing is None
        etag = f'"0x{version:016X}"'
        written = {(c, normal(k)) for kind, c, k, _ in operations if kind != "delete"}
        for target in list(self.model):
            if target not in staged:
                self.forget(*target)
        for target in written & set(staged):
            self.remember(target[0], target[1], staged[target][0], etag)

    @rule(container=CONTAINERS, key=KEYS, value=VALUES)
    def snapshot_is_repeatable(self, container: str, key: Key, value: bytes) -> None:
        with self.store.snapshot() as snapshot:
            before = self.listing(snapshot=snapshot)
            self.put(container, key, value)
            assert self.listing(snapshot=snapshot) == before

    @rule(container=CONTAINERS, bad=st.sampled_from(["", "x" * 1025]), value=VALUES)
    def bad_key_changes_nothing(self, container: str, bad: str, value: bytes) -> None:
        try:
            self.store.container(container).put(bad, value)
        except tenure.InvalidArgument as refused:
            assert refused.argument == "key"
        else:
            raise AssertionError("a bad key was accepted")

    @precondition(lambda self: len(self.model) > 0)
    @rule()
    def close_and_reopen(self) -> None:
        self.store.close()
        with pytest.raises(tenure.Closed):
            self.store.list_containers()
        self.store = self._open()

    def listing(
        self, snapshot: Optional[tenure.Snapshot] = None
    ) -> Dict[Tuple[str, bytes], Tuple[Optional[bytes], str]]:
        seen: Dict[Tuple[str, bytes], Tuple[Optional[bytes], str]] = {}
        for name in ("left", "right"):
            items = (
                snapshot.iterate(name, include_values=True)
                if snapshot is not None
                else self.store.container(name).iterate(include_values=True)
            )
            for item in items:
                seen[(name, item.key_bytes)] = (item.value, item.etag)
        return seen

    @invariant()
    def store_equals_model(self) -> None:
        listed = self.listing()
        assert listed == {target: (value, etag) for target, (value, etag) in self.model.items()}
        keys = [key for (name, key) in listed if name == "left"]
        assert keys == sorted(keys)  # key order


TestStoreAgainstDict = StoreAgainstDict.TestCase
TestStoreAgainstDict.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
