"""The storage timer: every call observed under its operation and outcome, and the call's result unchanged."""

from __future__ import annotations

import pytest

from arco.metrics import REGISTRY
from arco.optimistic import StaleView, optimistic_view, unconfirmed_writes_allowed
from arco.storage.base import DoesNotExist, MatchesVersion, NotFound
from arco.storage.factory import open_storage
from arco.storage.memory import MemoryBackend
from arco.storage.timed import TimedBackend, timed


def count(operation: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("arco_storage_operation_duration_seconds_count",
                                     {"operation": operation, "outcome": outcome}) or 0.0


def test_each_call_is_timed_by_operation_and_outcome() -> None:
    storage = timed(MemoryBackend("timed-test"))
    before = {(op, out): count(op, out) for op in ("get", "head", "put", "put_if_absent", "put_if_match", "delete",
                                                    "delete_if_match", "list")
              for out in ("ok", "not_found", "precondition_failed", "error")}

    def moved(operation: str, outcome: str) -> float:
        return count(operation, outcome) - before[(operation, outcome)]

    first = storage.put("a/k", b"1", DoesNotExist())
    assert first.ok and not storage.put("a/k", b"2", DoesNotExist()).ok
    assert storage.put("a/k", b"3", MatchesVersion(first.version)).ok  # type: ignore[union-attr]
    assert not storage.put("a/k", b"4", MatchesVersion("stale")).ok
    storage.put("a/j", b"x")
    assert storage.get("a/k").data == b"3"
    with pytest.raises(NotFound):
        storage.get("a/missing")
    assert storage.get_or_none("a/missing") is None
    assert storage.head("a/missing") is None
    assert [m.key for m in storage.list("a/")] == ["a/j", "a/k"]
    storage.delete("a/j")

    assert (moved("put_if_absent", "ok"), moved("put_if_absent", "precondition_failed")) == (1, 1)
    assert (moved("put_if_match", "ok"), moved("put_if_match", "precondition_failed")) == (1, 1)
    assert moved("put", "ok") == 1
    assert (moved("get", "ok"), moved("get", "not_found")) == (1, 2)
    assert moved("head", "not_found") == 1 and moved("list", "ok") == 1 and moved("delete", "ok") == 1


def test_the_factory_times_what_it_opens_once_and_passes_a_backends_own_attributes_through(tmp_path) -> None:
    opened = open_storage(tmp_path / "wh")
    assert isinstance(opened, TimedBackend) and timed(opened) is opened
    assert opened.url == opened.inner.url and opened.root == opened.inner.root  # LocalBackend's own attribute


def test_no_write_is_made_under_a_catalog_view_that_was_not_confirmed() -> None:
    storage = TimedBackend(MemoryBackend())
    with optimistic_view(arrived=0.0) as view:
        with pytest.raises(StaleView):
            storage.put("k", b"1")
        with pytest.raises(StaleView):
            storage.delete("k")
        assert storage.head("k") is None  # reads go ahead
        with unconfirmed_writes_allowed():  # a marker claim: released if the view turns out stale
            assert storage.put("k", b"1").ok
        view.confirmed = True
        assert storage.put("k", b"2").ok
    assert storage.get("k").data == b"2"
