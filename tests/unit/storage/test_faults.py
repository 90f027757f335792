from __future__ import annotations

import pytest

from arco.storage.base import DoesNotExist, StorageError
from arco.storage.faults import FaultRule, FaultyBackend, InjectedFailure, SimulatedCrash
from arco.storage.memory import MemoryBackend


def test_crash_before_a_put_leaves_nothing_written() -> None:
    storage = FaultyBackend(MemoryBackend(), [FaultRule(op="put", key="ptr/*", when="before", action="crash")])
    with pytest.raises(SimulatedCrash):
        storage.put("ptr/t1", b"x")
    assert storage.inner.head("ptr/t1") is None
    storage.put("ptr/t1", b"y")  # the rule fired once and is spent
    assert storage.get("ptr/t1").data == b"y"


def test_failure_after_a_put_leaves_the_write_in_place() -> None:
    storage = FaultyBackend(MemoryBackend(), [FaultRule(op="put", when="after", action="fail")])
    with pytest.raises(InjectedFailure):
        storage.put("k", b"written anyway", DoesNotExist())
    assert storage.inner.get("k").data == b"written anyway"


def test_simulated_crash_is_not_swallowed_by_except_exception() -> None:
    storage = FaultyBackend(MemoryBackend(), [FaultRule(op="get", action="crash")])
    storage.inner.put("k", b"v")

    def handler_that_catches_everything() -> str:
        try:
            return storage.get("k").data.decode()
        except Exception:  # noqa: BLE001 - this is what the test is about
            return "recovered"

    with pytest.raises(SimulatedCrash):
        handler_that_catches_everything()


def test_nth_and_times_select_calls_deterministically() -> None:
    storage = FaultyBackend(MemoryBackend(), [FaultRule(op="put", key="a*", nth=3, times=2, action="fail")])
    outcomes = []
    for i in range(6):
        try:
            storage.put(f"a{i}", b"")
            outcomes.append("ok")
        except StorageError:
            outcomes.append("fail")
    assert outcomes == ["ok", "ok", "fail", "fail", "ok", "ok"]
    storage.put("b", b"")  # does not match the pattern
    assert [c.outcome for c in storage.calls][-1] == "ok"


def test_calls_are_recorded_in_order_with_their_outcome() -> None:
    storage = FaultyBackend(MemoryBackend())
    storage.put("x", b"1", DoesNotExist())
    storage.put("x", b"2", DoesNotExist())
    storage.get("x")
    storage.delete("x")
    assert [(c.op, c.key, c.outcome) for c in storage.calls] == [
        ("put", "x", "ok"),
        ("put", "x", "precondition-failed"),
        ("get", "x", "ok"),
        ("delete", "x", "ok"),
    ]
