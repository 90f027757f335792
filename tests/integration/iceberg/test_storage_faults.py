"""Storage faults (not crashes) at every named step of a keyed mutation: the server survives them, so it settles the
Idempotency-Key marker at once by where the change is.

* a fault before the commit point: the answer is 503 and the retry with the same key proceeds at once (no wait for
  the in-progress timeout), applying the change exactly once; also while the store stays down, as nothing of the
  attempt can land without its compare-and-swap;
* a fault at or after the commit point whose outcome can be read back: the request is answered with its success;
* a fault whose outcome cannot be checked (storage still unavailable): CommitStateUnknownException on commit
  routes, and the marker stays for the retry, which resolves it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from uuid6 import uuid7

from arco.catalog.log import CORE
from arco.events import after_answer
from arco.iceberg.errors import CommitStateUnknown, ServiceUnavailable
from arco.iceberg.idempotency import Outcome
from arco.iceberg.pointer import POINTERS
from arco.storage.base import StorageError
from arco.storage.faults import FaultRule
from support.fault_requests import LONG_TIMEOUT, body, caller, history
from support.iceberg_harness import SCHEMA, Harness


def fail(op: str, key: str, when: str, nth: int = 1) -> FaultRule:
    return FaultRule(op=op, key=key, when=when, action="fail", nth=nth)  # type: ignore[arg-type]


MARKERS = "_catalog/iceberg_idempotency/*"
# step -> (rule, whether the commit has landed when the fault is raised)
COMMIT_FAULTS: dict[str, tuple[FaultRule, bool]] = {
    "at-marker-claim": (fail("put", MARKERS, "before"), False),
    "after-marker-claim": (fail("put", MARKERS, "after"), False),
    "at-metadata-write": (fail("put", "*.metadata.json", "before"), False),
    "after-metadata-write": (fail("put", "*.metadata.json", "after"), False),
    "at-pending-receipt": (fail("put", "_catalog/events/*/iceberg/pending/*", "before"), False),
    "at-pointer-cas": (fail("put", f"{POINTERS}/*", "before"), False),
    "after-pointer-cas": (fail("put", f"{POINTERS}/*", "after"), True),
    "at-committed-receipt": (fail("put", "_catalog/events/*/iceberg/committed/*", "before"), True),
    "at-marker-finalization": (fail("put", MARKERS, "before", nth=2), True),
    "after-marker-finalization": (fail("put", MARKERS, "after", nth=2), True),
}


@pytest.fixture
def table(harness: Harness) -> Harness:
    harness.create_table("t")
    return harness


@pytest.mark.parametrize("step", list(COMMIT_FAULTS))
def test_a_storage_fault_in_a_commit_is_settled_at_once(table: Harness, step: str) -> None:
    rule, landed = COMMIT_FAULTS[step]
    key = str(uuid7())
    server = table.mutations(LONG_TIMEOUT)
    table.storage.inject(replace(rule))
    first: Outcome | None = None
    try:
        first = server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    except (ServiceUnavailable, StorageError) as exc:
        assert not landed, f"a landed commit was answered {exc!r}"
        if isinstance(exc, ServiceUnavailable):
            assert exc.status == 503 and exc.headers["Retry-After"]
    else:
        # A fault in a best-effort step, or after the commit point: the client is told of its success.
        assert landed or step == "at-pending-receipt", step
    table.storage.clear()

    # Another server, with a long in-progress timeout: the retry proceeds at once.
    other = table.reopen()
    retried = other.mutations(LONG_TIMEOUT).commit_table(other.catalog, ("db",), "t", body(), caller(key))
    if first is not None:
        assert retried == first
    versions = history(other)
    assert len(versions) == 2, "exactly one application of the commit"
    assert retried.metadata_location == versions[0]
    assert other.tables.files.read(versions[0]).properties["counter"] == "1"


def test_an_outcome_that_cannot_be_checked_is_commit_state_unknown(table: Harness) -> None:
    key = str(uuid7())
    server = table.mutations(LONG_TIMEOUT)
    # The pointer CAS lands but its reply is lost, and the pointer cannot be read back to check.
    table.storage.inject(fail("put", f"{POINTERS}/*", "after"))
    table.storage.inject(FaultRule(op="get", key=f"{POINTERS}/*", action="fail", times=1000))
    with pytest.raises(CommitStateUnknown) as unknown:
        server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert unknown.value.error_type == "CommitStateUnknownException" and unknown.value.status in (500, 502, 504)
    table.storage.clear()
    # The retry learns the outcome from the marker's recovery: the commit had landed, once.
    retried = server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert history(table)[0] == retried.metadata_location and len(history(table)) == 2


@pytest.mark.parametrize("keyed", [True, False])
def test_an_unanswered_compare_and_swap_is_checked_again_through_a_blip(table: Harness, keyed: bool) -> None:
    """The CAS lands but its answer is lost, and the store fails the first two checks (a restart, say): the server
    checks again a few times before calling the outcome unknown, so the client gets its success."""
    key = str(uuid7()) if keyed else None
    server = table.mutations(LONG_TIMEOUT)
    table.storage.inject(fail("put", f"{POINTERS}/*", "after"))
    table.storage.inject(FaultRule(op="get", key=f"{POINTERS}/*", action="fail", times=2))
    answered = server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert answered.status == 200 and answered.metadata_location == history(table)[0]
    assert len(history(table)) == 2
    if keyed:
        assert server.commit_table(table.catalog, ("db",), "t", body(), caller(key)) == answered


def test_a_refused_compare_and_swap_that_cannot_be_checked_is_not_called_unlanded(table: Harness) -> None:
    """Another server committed, so this server's CAS from its stale copy of the pointer is refused; then the store
    goes down as the pointer is read back. The seed checks a refused CAS against the pointer (a race with ourselves
    may have landed it), so until that check is made the outcome is unknown, not a 503 "did not take effect"."""
    key = str(uuid7())
    server = table.mutations(LONG_TIMEOUT)
    server.commit_table(table.catalog, ("db",), "t", body("0"), caller(str(uuid7())))  # this server's copy, warm
    other = table.reopen()
    other.mutations(LONG_TIMEOUT).commit_table(other.catalog, ("db",), "t", body("other"), caller(str(uuid7())))
    table.storage.inject(FaultRule(op="get", key=f"{POINTERS}/*", action="fail", times=10**6))
    with pytest.raises(CommitStateUnknown):
        server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    table.storage.clear()
    retried = server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert history(table)[0] == retried.metadata_location and len(history(table)) == 4


def test_an_unknown_outcome_that_did_not_land_lets_this_server_retry_at_once(table: Harness) -> None:
    key = str(uuid7())
    server = table.mutations(LONG_TIMEOUT)
    # Every write and every read of the pointer fails: nothing lands, and nothing can be checked or released.
    table.storage.inject(FaultRule(op="put", key=f"{POINTERS}/*", action="fail", times=1000))
    table.storage.inject(FaultRule(op="put", key=MARKERS, action="fail", nth=2, times=1000))
    # The commit starts from this server's copy of the pointer (it created the table): every read is recovery's.
    table.storage.inject(FaultRule(op="get", key=f"{POINTERS}/*", action="fail", times=1000))
    with pytest.raises(CommitStateUnknown):
        server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    table.storage.clear()
    # Another server cannot know that the attempt ended: in flight until the timeout.
    with pytest.raises(ServiceUnavailable):
        table.reopen().mutations(LONG_TIMEOUT).commit_table(table.catalog, ("db",), "t", body(), caller(key))
    # This server knows: the retry checks that nothing landed and proceeds.
    retried = server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert len(history(table)) == 2 and history(table)[0] == retried.metadata_location


@pytest.mark.parametrize("keyed", [True, False])
def test_a_fault_before_the_commit_point_is_503_even_while_the_store_stays_down(table: Harness, keyed: bool) -> None:
    """The store goes down as the metadata file is written (after the key's claim): no check of where the commit
    landed is possible, nor needed, since the CAS was never sent. The answer is the 503 that may be retried, not
    CommitStateUnknownException."""
    key = str(uuid7()) if keyed else None
    server = table.mutations(LONG_TIMEOUT)
    table.storage.inject(fail("put", "*.metadata.json", "before"))
    for op in ("get", "head"):
        table.storage.inject(FaultRule(op=op, key="*", action="fail", times=10**6))  # type: ignore[arg-type]
    table.storage.inject(FaultRule(op="put", key=MARKERS, action="fail", nth=2, times=10**6))  # no release
    with pytest.raises(ServiceUnavailable) as unavailable:
        server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert unavailable.value.status == 503 and unavailable.value.headers["Retry-After"]
    assert "did not take effect" in unavailable.value.message
    table.storage.clear()
    # The marker's release could not be written: this server knows the attempt ended, and retries at once.
    retried = server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert history(table)[0] == retried.metadata_location and len(history(table)) == 2


def test_a_compare_and_swap_that_could_not_be_sent_is_503_even_while_the_store_stays_down(table: Harness) -> None:
    """No connection could be made for the CAS: it was never sent, so the commit did not land, and the answer is the
    503 that may be retried, not CommitStateUnknownException (one sent and unanswered is
    test_an_outcome_that_cannot_be_checked_is_commit_state_unknown's case)."""
    key = str(uuid7())
    server = table.mutations(LONG_TIMEOUT)
    table.storage.inject(FaultRule(op="put", key=f"{POINTERS}/*", action="unreachable"))
    # The pointer cannot be read back either (the commit started from this server's copy of it, which it wrote).
    table.storage.inject(FaultRule(op="get", key=f"{POINTERS}/*", action="fail", times=10**6))
    table.storage.inject(FaultRule(op="put", key=MARKERS, action="fail", nth=2, times=10**6))  # no release
    with pytest.raises(ServiceUnavailable) as unavailable:
        server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert "did not take effect" in unavailable.value.message
    table.storage.clear()
    retried = server.commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert history(table)[0] == retried.metadata_location and len(history(table)) == 2


TIER1_FAULTS: dict[str, tuple[FaultRule, bool]] = {
    "at-marker-claim": (fail("put", MARKERS, "before"), False),
    "after-marker-claim": (fail("put", MARKERS, "after"), False),
    "at-tier1-append": (fail("put", f"{CORE}/log/*", "before"), False),
    "after-tier1-append": (fail("put", f"{CORE}/log/*", "after"), True),
    "at-marker-finalization": (fail("put", MARKERS, "before", nth=2), True),
}


@pytest.mark.parametrize("step", list(TIER1_FAULTS))
def test_a_storage_fault_in_a_catalog_change_is_settled_at_once(harness: Harness, step: str) -> None:
    rule, landed = TIER1_FAULTS[step]
    key = str(uuid7())
    request = {"namespace": ["ns"], "properties": {"a": "1"}}
    harness.storage.inject(replace(rule))
    try:
        harness.mutations(LONG_TIMEOUT).create_namespace(harness.catalog, request, caller(key))
    except (ServiceUnavailable, StorageError):
        assert not landed
    else:
        assert landed
    harness.storage.clear()
    other = harness.reopen()
    again = other.mutations(LONG_TIMEOUT).create_namespace(other.catalog, request, caller(key))
    assert again.body == {"namespace": ["ns"], "properties": {"a": "1"}}
    other.store.ensure_fresh()
    tagged = [op for _, op in other.store.log.operations(1, other.store.seq)]
    assert sum(1 for e in tagged if e and e.get("op") == "create_namespace" and e.get("path") == ["ns"]) == 1


def test_a_transaction_that_fails_before_its_commit_point_frees_its_tables_at_once(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    from arco.iceberg import transactions

    monkeypatch.setattr(transactions, "TXN_DEADLINE_S", 600.0)  # waiting for the deadline would time the test out
    harness.create_table("a")
    harness.create_table("b")
    request = {"table-changes": [
        {"identifier": {"namespace": ["db"], "name": n}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"txn": "1"}}]} for n in ("a", "b")]}
    key = str(uuid7())
    # The second pointer's mark fails: the first is marked, the record PENDING.
    harness.storage.inject(fail("put", f"{POINTERS}/*", "before", nth=2))
    with pytest.raises((ServiceUnavailable, StorageError)):
        harness.mutations(LONG_TIMEOUT).commit_transaction(harness.catalog, request, caller(key))
    harness.storage.clear()
    other = harness.reopen()
    assert other.mutations(LONG_TIMEOUT).commit_transaction(other.catalog, request, caller(key)).status == 204
    for name in ("a", "b"):
        assert len(history(other, name)) == 2
        assert other.tables.load(other.catalog, ("db",), name).metadata.properties["txn"] == "1"


def unkeyed_commit(h: Harness) -> Outcome:
    return h.mutations().commit_table(h.catalog, ("db",), "t", body(), caller(None))


def test_a_commit_without_a_key_that_did_not_land_is_503(table: Harness) -> None:
    table.storage.inject(fail("put", "*.metadata.json", "before"))
    with pytest.raises(ServiceUnavailable):
        unkeyed_commit(table)
    table.storage.clear()
    assert len(history(table)) == 1


def test_a_commit_without_a_key_that_landed_despite_the_fault_is_answered_200(table: Harness) -> None:
    table.storage.inject(fail("put", f"{POINTERS}/*", "after"))
    outcome = unkeyed_commit(table)
    table.storage.clear()
    assert history(table)[0] == outcome.metadata_location and len(history(table)) == 2


def test_a_commit_without_a_key_whose_outcome_cannot_be_read_is_commit_state_unknown(table: Harness) -> None:
    table.storage.inject(fail("put", f"{POINTERS}/*", "after"))
    # The commit reads no pointer (it starts from this server's copy): the first read is recovery's, and fails.
    table.storage.inject(FaultRule(op="get", key=f"{POINTERS}/*", action="fail", times=1000))
    with pytest.raises(CommitStateUnknown):
        unkeyed_commit(table)
    table.storage.clear()
    assert len(history(table)) == 2  # it had landed: only the server could not tell


def test_create_table_fault_before_tier1_is_retried_once(harness: Harness) -> None:
    key = str(uuid7())
    request = {"name": "t", "schema": SCHEMA}
    harness.storage.inject(fail("put", f"{CORE}/log/*", "before"))
    with pytest.raises(ServiceUnavailable):
        harness.mutations(LONG_TIMEOUT).create_table(harness.catalog, ("db",), request, caller(key))
    harness.storage.clear()
    other = harness.reopen()
    created = other.mutations(LONG_TIMEOUT).create_table(other.catalog, ("db",), request, caller(key))
    assert [t.name for t in other.tables.list(other.catalog, ("db",), None, None)[0]] == ["t"]
    assert history(other)[0] == created.metadata_location


def test_a_transaction_without_a_key_whose_commit_point_landed_is_answered_204(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    harness.create_table("a")
    harness.create_table("b")
    request = {"table-changes": [
        {"identifier": {"namespace": ["db"], "name": n}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"txn": "1"}}]} for n in ("a", "b")]}
    # The record's move to COMMITTED lands but its reply is lost, and every later write fails too.
    harness.storage.inject(fail("put", "_catalog/iceberg_txns/*", "after", nth=2))
    harness.storage.inject(FaultRule(op="put", key="_catalog/iceberg_txns/*", action="fail", nth=3, times=1000))
    harness.storage.inject(FaultRule(op="put", key=f"{POINTERS}/*", action="fail", nth=3, times=1000))
    outcome = harness.mutations().commit_transaction(harness.catalog, request, caller(None))
    assert outcome.status == 204
    # Reads see the committed transaction while its roll-forward still cannot be written.
    assert harness.tables.load(harness.catalog, ("db",), "b").metadata.properties["txn"] == "1"
    harness.storage.clear()
    for name in ("a", "b"):
        assert harness.reopen().tables.load(harness.catalog, ("db",), name).metadata.properties["txn"] == "1"


def test_a_retry_that_finds_the_change_landed_answers_it_even_while_writes_fail(table: Harness) -> None:
    key = str(uuid7())
    rule = table.storage.inject(FaultRule(op="put", key=MARKERS, action="crash", when="before", nth=2))
    # The server "died" before finalizing the marker, just after its answer
    table.mutations(LONG_TIMEOUT).commit_table(table.catalog, ("db",), "t", body(), caller(key))
    assert after_answer.drain(10) and rule.fired == 1
    table.storage.clear()
    other = table.reopen()  # another server, on which every write fails
    other.storage.inject(FaultRule(op="put", action="fail", times=1000))
    retried = other.mutations(LONG_TIMEOUT).commit_table(other.catalog, ("db",), "t", body(), caller(key))
    assert retried.metadata_location == history(other)[0] and len(history(other)) == 2
