"""Writes at a commit point that get no answer yet reach the store later (a store may apply a request its client
gave up on): the server's answer must stay true when they arrive.

Each commit point has its fence, taken before the server says a change did not land, after which the late write
can only be refused: the table pointer is rewritten at the version the late compare-and-swap expects, the catalog
log position the late append tries is taken by a fence entry, and a transaction's record is aborted from the
version its late commit expects. Without the fence, each test's late write lands after a 503 "did not take
effect" (``assert not late.release().ok`` fails).
"""

from __future__ import annotations

import pytest
from uuid6 import uuid7

from arco.api.faults import answer_for
from arco.catalog.log import CORE, is_fence
from arco.iceberg.errors import ServiceUnavailable
from arco.iceberg.pointer import POINTERS
from arco.iceberg.transactions import txn_key
from arco.storage.base import CommitPointUnanswered, StorageError
from arco.storage.faults import FaultRule
from support.fault_requests import LONG_TIMEOUT, body, caller, history
from support.held_puts import LatePuts
from support.iceberg_harness import Harness, make_harness

LOG = f"{CORE}/log/*"
NAMESPACE = {"namespace": ["ns"], "properties": {"a": "1"}}


def logged(h: Harness) -> list[dict]:
    h.store.ensure_fresh()
    return [op for _, op in h.store.log.operations(1, h.store.seq)]


def namespace_creations(h: Harness) -> int:
    return sum(1 for op in logged(h) if op.get("op") == "create_namespace" and op.get("path") == ["ns"])


@pytest.fixture
def table(harness: Harness) -> Harness:
    harness.create_table("t")
    return harness


@pytest.mark.parametrize("keyed", [True, False])
def test_a_compare_and_swap_still_on_its_way_cannot_land_after_the_answer(table: Harness, keyed: bool) -> None:
    """The pointer's CAS gets no answer, yet reaches the store later. The table's history does not have the change
    when the server checks, which is not yet "did not land": the server fences the pointer first, so the 503 "did
    not take effect" stays true when the late write arrives, and the retry applies the change once."""
    late = LatePuts(table.storage.inner, f"{POINTERS}/*")
    server = make_harness(late)  # a server whose next pointer write is late
    key = str(uuid7()) if keyed else None
    with pytest.raises(ServiceUnavailable) as unavailable:
        server.mutations(LONG_TIMEOUT).commit_table(server.catalog, ("db",), "t", body(), caller(key))
    assert "did not take effect" in unavailable.value.message
    assert not late.release().ok  # the late compare-and-swap arrives, and is refused
    fresh = table.reopen()
    assert len(history(fresh)) == 1
    assert "counter" not in fresh.tables.load(fresh.catalog, ("db",), "t").metadata.properties
    retried = server.mutations(LONG_TIMEOUT).commit_table(server.catalog, ("db",), "t", body(), caller(key))
    assert history(fresh)[0] == retried.metadata_location and len(history(fresh)) == 2


@pytest.mark.parametrize("keyed", [True, False])
def test_a_catalog_append_still_on_its_way_cannot_land_after_the_answer(harness: Harness, keyed: bool) -> None:
    """A catalog change's log append (its commit point) gets no answer, yet reaches the store later: the server
    finds the position free, takes it with a fence, and only then answers that the change did not take effect."""
    late = LatePuts(harness.storage.inner, LOG)
    server = make_harness(late)  # the default catalog exists: the next log write is the namespace's
    key = str(uuid7()) if keyed else None
    with pytest.raises((ServiceUnavailable, StorageError)) as unavailable:
        server.mutations(LONG_TIMEOUT).create_namespace(server.catalog, NAMESPACE, caller(key))
    assert "did not take effect" in str(unavailable.value)
    assert not late.release().ok  # the late append arrives at a position the fence holds
    fresh = harness.reopen()
    assert namespace_creations(fresh) == 0 and sum(1 for op in logged(fresh) if is_fence(op)) == 1
    assert server.mutations(LONG_TIMEOUT).create_namespace(server.catalog, NAMESPACE, caller(key)).body == NAMESPACE
    assert namespace_creations(fresh) == 1
    assert [list(ns) for ns in fresh.namespaces.list(fresh.catalog, [], None, None)[0]] == [["db"], ["ns"]]


def test_a_catalog_append_whose_look_fails_too_is_fenced_by_the_check_of_a_keyed_retry(harness: Harness) -> None:
    """The append gets no answer and the look at its position fails too: the outcome is unknown, so the fence moves
    to the check of where the change landed (with a key, at once): it takes the position before it reads."""
    late = LatePuts(harness.storage.inner, LOG)
    server = make_harness(late)
    late.on_unanswered = lambda: server.storage.inject(FaultRule(op="get", key=LOG, action="fail"))  # the look
    key = str(uuid7())
    with pytest.raises(ServiceUnavailable) as unavailable:
        server.mutations(LONG_TIMEOUT).create_namespace(server.catalog, NAMESPACE, caller(key))
    assert "did not take effect" in unavailable.value.message
    assert not late.release().ok
    assert server.mutations(LONG_TIMEOUT).create_namespace(server.catalog, NAMESPACE, caller(key)).body == NAMESPACE
    assert namespace_creations(harness.reopen()) == 1


def test_an_unkeyed_catalog_change_whose_outcome_cannot_be_known_says_so(harness: Harness) -> None:
    """Without a key nothing checks later: the append's outcome is unknown, and the answer says so, where a
    "may be retried" would make a client apply the change twice should the late append land."""
    late = LatePuts(harness.storage.inner, LOG)
    server = make_harness(late)
    late.on_unanswered = lambda: server.storage.inject(FaultRule(op="get", key=LOG, action="fail"))
    with pytest.raises(CommitPointUnanswered) as unanswered:
        server.mutations(LONG_TIMEOUT).create_namespace(server.catalog, NAMESPACE, caller(None))
    answer = answer_for(unanswered.value)
    assert answer.status == 503 and "unknown" in answer.message and "may be retried" not in answer.message
    assert late.release().ok  # it did land, later: the answer did not say otherwise
    assert namespace_creations(harness.reopen()) == 1


@pytest.mark.parametrize("abort", ["answered", "unanswered"])
@pytest.mark.parametrize("keyed", [True, False])
def test_a_transaction_commit_still_on_its_way_cannot_land_after_the_answer(harness: Harness, keyed: bool,
                                                                            abort: str) -> None:
    """The record's move to COMMITTED gets no answer, yet reaches the store later. The server aborts the record,
    which fences it; when that abort gets no answer either, the check of where the transaction landed aborts it
    first. Either way the 503 "did not take effect" stays true, and the retry commits once."""
    harness.create_table("a")
    harness.create_table("b")
    request = {"table-changes": [
        {"identifier": {"namespace": ["db"], "name": n}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"txn": "1"}}]} for n in ("a", "b")]}
    late = LatePuts(harness.storage.inner, txn_key("*"), nth=2)  # 1: the PENDING record, 2: its commit
    server = make_harness(late)
    if abort == "unanswered":
        server.storage.inject(FaultRule(op="put", key=txn_key("*"), action="fail", nth=3))
    key = str(uuid7()) if keyed else None
    with pytest.raises(ServiceUnavailable) as unavailable:
        server.mutations(LONG_TIMEOUT).commit_transaction(server.catalog, request, caller(key))
    assert "did not take effect" in unavailable.value.message
    assert not late.release().ok  # the record has moved on from the version the late commit expects
    fresh = harness.reopen()
    for name in ("a", "b"):
        assert "txn" not in fresh.tables.load(fresh.catalog, ("db",), name).metadata.properties
    assert server.mutations(LONG_TIMEOUT).commit_transaction(server.catalog, request, caller(key)).status == 204
    for name in ("a", "b"):
        assert len(history(fresh, name)) == 2
        assert fresh.tables.load(fresh.catalog, ("db",), name).metadata.properties["txn"] == "1"
