"""Exactly-once mutations: Idempotency-Key replay, and a crash at every named step followed by a keyed retry.

After each crash the retry must give the answer one application gives, the catalog must hold exactly one
application, the reconciler must leave no committed receipt missing, and whatever the crash left behind must be
identifiable by garbage collection (an unreferenced metadata file or pointer, never a half-visible change).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import orjson
import pytest
from uuid6 import uuid7

from arco.events import after_answer
from arco.events.receipts import catalog_receipt_key, iceberg_receipt_key
from arco.events.reconcile import reconcile_catalog_log, reconcile_table, table_history
from arco.iceberg import transactions
from arco.iceberg.errors import BadRequest, CommitFailed, IcebergError, ServiceUnavailable
from arco.iceberg.file_names import carries_tag
from arco.iceberg.idempotency import (
    IdempotencyMarkers,
    Keyed,
    KeyInFlight,
    Marker,
    Outcome,
    check_key,
    marker_key,
    request_hash,
)
from arco.iceberg.mutations import Caller
from arco.iceberg.pointer import POINTERS, TablePointer
from arco.storage.base import DoesNotExist
from arco.storage.faults import FaultRule, SimulatedCrash
from support.held_puts import HeldPuts, race_a_retry
from support.iceberg_harness import SCHEMA, Harness

TIMEOUT = 0.4  # the in-progress timeout of these tests' "servers"
SOURCE = {"kind": "iceberg_rest", "client_info": "test", "principal": "admin"}


def caller(key: str | None = None) -> Caller:
    return Caller("admin", SOURCE, key if key is not None else str(uuid7()))


def set_property(value: str, requirements: list | None = None) -> dict:
    return {"requirements": requirements or [],
            "updates": [{"action": "set-properties", "updates": {"counter": value}}]}


def history(h: Harness, name: str = "t", namespace: tuple[str, ...] = ("db",)) -> list[str]:
    loaded = h.tables.load(h.catalog, namespace, name)
    return [location for location, _ in table_history(h.tables.files, loaded.pointer.pointer.current_metadata_location)]


def commit(h: Harness, body: dict, key: str, timeout: float = 60.0) -> Outcome:
    return h.mutations(timeout).commit_table(h.catalog, ("db",), "t", body, caller(key))


@pytest.fixture
def table(harness: Harness) -> Harness:
    harness.create_table("t")
    return harness


# -- replay and conflicts ----------------------------------------------------------------------------------------


def test_a_retry_with_the_same_key_is_applied_once(table: Harness) -> None:
    key = str(uuid7())
    first = commit(table, set_property("1"), key)
    again = commit(table.reopen(), set_property("1"), key)
    assert again == first
    assert len(history(table)) == 2  # the create and one commit


def test_a_retry_before_the_markers_finalization_gets_the_same_answer(table: Harness) -> None:
    """The marker is finalized just after the answer: a retry that comes first (on another server, say) finds it in
    progress, and recovery finds the change landed."""
    key = str(uuid7())
    with after_answer.holding() as held:  # the answer is given; the writes after it wait
        first = commit(table, set_property("1"), key)
        marker = next(m.key for m in table.storage.list("_catalog/iceberg_idempotency/"))
        assert orjson.loads(table.storage.get(marker).data)["status"] == "IN_PROGRESS"
        assert commit(table.reopen(), set_property("1"), key) == first
    after_answer.run_now(held)
    assert len(history(table)) == 2  # the create and one commit
    assert orjson.loads(table.storage.get(marker).data)["status"] == "COMMITTED"
    assert commit(table.reopen(), set_property("1"), key) == first


def test_the_same_key_with_another_body_is_a_conflict_and_changes_nothing(table: Harness) -> None:
    key = str(uuid7())
    commit(table, set_property("1"), key)
    with pytest.raises(CommitFailed, match="different request payload"):
        commit(table, set_property("2"), key)
    assert table.tables.load(table.catalog, ("db",), "t").metadata.properties["counter"] == "1"


def test_a_deterministic_failure_is_replayed_even_once_it_would_pass(table: Harness) -> None:
    key = str(uuid7())
    stale = set_property("1", [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}])
    with pytest.raises(CommitFailed) as first:
        commit(table, stale, key)
    with pytest.raises(IcebergError) as again:
        commit(table.reopen(), stale, key)
    assert (again.value.status, again.value.error_type, again.value.message) == (409, "CommitFailedException",
                                                                                  first.value.message)
    assert len(history(table)) == 1


def test_the_same_key_on_another_route_is_a_conflict(table: Harness) -> None:
    key = str(uuid7())
    table.mutations().create_namespace(table.catalog, {"namespace": ["other"]}, caller(key))
    with pytest.raises(CommitFailed, match="different request payload"):
        table.mutations().create_namespace(table.catalog, {"namespace": ["other2"]}, caller(key))


def test_a_key_still_in_flight_after_the_wait_is_answered_503_with_the_time_left_until_takeover(
        table: Harness) -> None:
    key = str(uuid7())
    table.storage.inject(FaultRule(op="put", key="*.metadata.json", when="after"))
    with pytest.raises(SimulatedCrash):  # its server "died": the marker stays in progress
        commit(table, set_property("1"), key)
    table.storage.clear()
    with pytest.raises(ServiceUnavailable) as busy:
        commit(table.reopen(), set_property("1"), key, timeout=60)
    # The retry waited (IN_FLIGHT_WAIT_S) for the marker to change first; the time left is under the timeout.
    assert busy.value.status == 503 and 1 <= int(busy.value.headers["Retry-After"]) < 60
    assert history(table.reopen()) == history(table)[:1] and len(history(table)) == 1


def test_a_retry_while_the_first_request_is_in_flight_waits_for_it_and_gets_its_answer(harness: Harness) -> None:
    """A client's timeout or a proxy's retry sends the request again while the first is still being served: the
    retry (here on another server) waits for the first to end and answers as it did, not 503. A create claims
    its marker before any work (run_once); the first request is held at its Tier 1 write."""
    key = str(uuid7())
    held = HeldPuts(harness.storage.inner, "_catalog/core/log/*")
    harness.storage.inner = held  # type: ignore[assignment]
    body = {"namespace": ["sales"], "properties": {"owner": "ops"}}
    answers: dict[str, Outcome] = {}

    def send(h: Harness, name: str) -> None:
        answers[name] = h.mutations().create_namespace(h.catalog, body, caller(key))

    other = harness.reopen()
    race_a_retry(held, lambda: send(harness, "first"), lambda: send(other, "retry"))  # held: the marker is claimed
    assert answers["retry"] == answers["first"] and answers["first"].body["namespace"] == ["sales"]
    assert harness.reopen().namespaces.load(harness.catalog, ("sales",)) is not None


def test_keyed_creates_that_shared_a_tier1_entry_landing_as_the_process_died_are_each_answered_once(
        harness: Harness) -> None:
    """Creates queued behind a held Tier 1 append share the next entry (group commit); the process "dies" once
    that entry is written. Each create's retry, with its key, on a new server, finds its own operation inside the
    shared entry and answers as created, once."""
    held = HeldPuts(harness.storage.inner, "_catalog/core/log/*")
    harness.storage.inner = held  # type: ignore[assignment]
    answers: dict[str, Outcome | BaseException] = {}
    keys = {name: str(uuid7()) for name in ("first", "a", "b", "c")}

    def create(name: str) -> None:
        try:
            answers[name] = harness.mutations(TIMEOUT).create_table(
                harness.catalog, ("db",), {"name": name, "schema": SCHEMA}, caller(keys[name]))
        except BaseException as exc:  # noqa: BLE001 - the simulated crash is the outcome looked at
            answers[name] = exc

    threads = [threading.Thread(target=create, args=("first",))]
    threads[0].start()
    assert held.reached.wait(10)
    # The entry after the held one "crashes" once written; the held one itself goes through.
    harness.storage.inject(FaultRule(op="put", key="_catalog/core/log/*", when="after", nth=2))
    for name in "abc":
        threads.append(threading.Thread(target=create, args=(name,)))
        threads[-1].start()
    deadline = time.monotonic() + 10
    while len(harness.store._queue) < 4:
        assert time.monotonic() < deadline, "the creates never queued behind the held append"
        time.sleep(0.005)
    held.release()
    for thread in threads:
        thread.join(30)
    assert answers["first"].status == 200  # type: ignore[union-attr]
    assert all(isinstance(answers[name], SimulatedCrash) for name in "abc")
    shared = [ops for ops in (harness.store.log.read_ops(s) for s in range(1, harness.store.seq + 4)) if ops]
    assert sorted(op["name"] for op in shared[-1]) == ["a", "b", "c"]  # one entry, written before the "crash"
    harness.storage.clear()

    retried = {name: retry_until_done(lambda name=name: harness.reopen().mutations(TIMEOUT).create_table(
        harness.catalog, ("db",), {"name": name, "schema": SCHEMA}, caller(keys[name]))) for name in "abc"}
    after = harness.reopen()
    assert _tables(after) == ["a", "b", "c", "first"]
    for name in "abc":
        assert retried[name].status == 200 and history(after, name) == [retried[name].metadata_location]
        assert after.mutations(TIMEOUT).create_table(
            after.catalog, ("db",), {"name": name, "schema": SCHEMA}, caller(keys[name])) == retried[name]


@pytest.mark.parametrize("raw", ["", "not-a-uuid", "{01936f8e-7c2a-7b3d-9f4e-5a6b7c8d9e0f}",
                                 "01936f8e7c2a7b3d9f4e5a6b7c8d9e0f", "550e8400-e29b-41d4-a716-446655440000",
                                 "01936f8e-7c2a-7b3d-1f4e-5a6b7c8d9e0f", "01936f8e-7c2a-7b3d-9f4e-5a6b7c8d9e0f0",
                                 "x" * 10_000])
def test_malformed_keys_are_refused_and_change_nothing(table: Harness, raw: str) -> None:
    with pytest.raises(BadRequest):
        commit(table, set_property("1"), raw)
    with pytest.raises(BadRequest):
        check_key(raw)
    assert len(history(table)) == 1


@pytest.mark.parametrize("body", [{"n": float("nan")}, {"n": float("inf")}])
def test_bodies_without_a_canonical_form_are_refused(body: dict) -> None:
    with pytest.raises(BadRequest, match="canonicalized"):
        request_hash("updateTable", "db\x1ft", body)
    # Integers past a double's exact range (snapshot ids) have one: tests/unit/iceberg/test_request_hash.py.
    assert request_hash("updateTable", "db\x1ft", {"n": 2**64}) != request_hash("updateTable", "db\x1ft",
                                                                                  {"n": 2**64 + 1})


# -- the crash matrix of a table commit ----------------------------------------------------------------------

COMMIT_STEPS: dict[str, FaultRule] = {
    "after-marker-claim": FaultRule(op="put", key="_catalog/iceberg_idempotency/*", when="after", nth=1),
    "after-metadata-write": FaultRule(op="put", key="*.metadata.json", when="after"),
    "after-pending-receipt": FaultRule(op="put", key="_catalog/events/*/iceberg/pending/*", when="after"),
    "after-pointer-cas": FaultRule(op="put", key=f"{POINTERS}/*", when="after"),
    # The marker's finalization and the committed receipt are written after the answer (arco.events.after_answer):
    # a crash there or while they are written comes after the client has its answer, and leaves the marker in
    # progress (recovery finds the change) and at most the receipt for the reconciler.
    "after-marker-finalization": FaultRule(op="put", key="_catalog/iceberg_idempotency/*", when="after", nth=2),
    "before-committed-receipt": FaultRule(op="put", key="_catalog/events/*/iceberg/committed/*", when="before"),
    "after-committed-receipt": FaultRule(op="put", key="_catalog/events/*/iceberg/committed/*", when="after"),
}
LANDED_AFTER = ("after-pointer-cas", "after-marker-finalization", "before-committed-receipt",
                "after-committed-receipt")
ANSWERED_BEFORE = ("after-marker-finalization", "before-committed-receipt", "after-committed-receipt")


def retry_until_done(run: Callable[[], Outcome]) -> Outcome:
    """A client's retry loop: 503 means in flight, so wait (here: past the short in-progress timeout)."""
    for _ in range(3):
        try:
            return run()
        except ServiceUnavailable:
            time.sleep(TIMEOUT + 0.1)
    raise AssertionError("the retry never completed")


def assert_receipts_complete_after_reconcile(h: Harness, name: str = "t", namespace: tuple[str, ...] = ("db",)) -> None:
    loaded = h.tables.load(h.catalog, namespace, name)
    reconcile_table(h.storage, h.tables.files, h.tables.resolver, loaded.entry, {"name": name})
    for location, updated_ms in table_history(h.tables.files, loaded.pointer.pointer.current_metadata_location):
        assert h.storage.head(iceberg_receipt_key("committed", location, updated_ms)) is not None, location


def orphan_metadata_files(h: Harness, name: str = "t") -> list[str]:
    loaded = h.tables.load(h.catalog, ("db",), name)
    kept = {h.tables.files.key_of(location) for location in history(h, name)}
    prefix = h.tables.files.key_of(loaded.entry.location.rstrip("/") + "/metadata/")
    return [m.key for m in h.storage.list(prefix) if m.key.endswith(".metadata.json") and m.key not in kept]


@pytest.mark.parametrize("step", list(COMMIT_STEPS))
def test_commit_crash_matrix(table: Harness, step: str) -> None:
    key = str(uuid7())
    rule = table.storage.inject(replace(COMMIT_STEPS[step]))  # a fresh rule: rules count the calls they see
    if step in ANSWERED_BEFORE:
        answered = commit(table, set_property("1"), key, timeout=TIMEOUT)
        assert after_answer.drain(10) and rule.fired == 1  # the process "died" once the client had its answer
        assert answered.metadata_location == history(table.reopen())[0]
    else:
        with pytest.raises(SimulatedCrash):
            commit(table, set_property("1"), key, timeout=TIMEOUT)
    table.storage.clear()

    retried = retry_until_done(lambda: commit(table.reopen(), set_property("1"), key, timeout=TIMEOUT))

    after = table.reopen()
    versions = history(after)
    assert len(versions) == 2, "exactly one application of the commit"
    assert retried.metadata_location == versions[0]
    assert after.tables.files.read(versions[0]).properties["counter"] == "1"
    assert commit(after, set_property("1"), key) == retried  # and from now on the same answer
    assert_receipts_complete_after_reconcile(after)
    orphans = orphan_metadata_files(after)
    # A commit that did not land before the crash leaves its metadata file (written beside the marker's claim, so a
    # crash right after the claim may leave it too), named with the key's tag, outside the table's history: garbage
    # collection finds it by comparing the metadata directory with the history.
    assert len(orphans) <= (0 if step in LANDED_AFTER else 1)
    assert all(carries_tag(o, key_tag(key)) for o in orphans)


def key_tag(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode()).hexdigest()


def test_the_named_commit_steps_cover_every_write_of_a_commit(table: Harness) -> None:
    table.storage.calls.clear()
    commit(table, set_property("1"), str(uuid7()))
    puts = [c.key for c in table.storage.calls if c.op == "put"]
    uncovered = [k for k in puts if not any(rule.matches("put", k) for rule in COMMIT_STEPS.values())]
    assert puts and not uncovered


# -- the crash matrix of the other mutations ------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    setup: Callable[[Harness], None]
    run: Callable[[Harness, Caller], Outcome]
    check: Callable[[Harness, Outcome], None]
    steps: dict[str, FaultRule]


MARKER_CLAIM = FaultRule(op="put", key="_catalog/iceberg_idempotency/*", when="after", nth=1)
TIER1_APPEND = FaultRule(op="put", key="_catalog/core/log/*", when="after")
CATALOG_RECEIPT = FaultRule(op="put", key="_catalog/events/*/catalog/*", when="after")
MARKER_FINAL = FaultRule(op="put", key="_catalog/iceberg_idempotency/*", when="after", nth=2)
TIER1_STEPS = {"after-marker-claim": MARKER_CLAIM, "after-tier1-append": TIER1_APPEND,
               "after-catalog-receipt": CATALOG_RECEIPT, "after-marker-finalization": MARKER_FINAL}
CREATE_STEPS = {"after-marker-claim": MARKER_CLAIM,
                "after-metadata-write": FaultRule(op="put", key="*.metadata.json", when="after"),
                "after-pending-receipt": FaultRule(op="put", key="_catalog/events/*/iceberg/pending/*", when="after"),
                "after-pointer-create": FaultRule(op="put", key=f"{POINTERS}/*", when="after"),
                "after-tier1-append": TIER1_APPEND, "after-catalog-receipt": CATALOG_RECEIPT,
                "after-committed-receipt": FaultRule(op="put", key="_catalog/events/*/iceberg/committed/*",
                                                     when="after"),
                "after-marker-finalization": MARKER_FINAL}
DROP_STEPS = {**TIER1_STEPS, "after-tombstone": FaultRule(op="put", key=f"{POINTERS}/*", when="after")}
TXN_STEPS = {"after-marker-claim": MARKER_CLAIM,
             "after-metadata-write": FaultRule(op="put", key="*.metadata.json", when="after", nth=2),
             "after-pending-receipt": FaultRule(op="put", key="_catalog/events/*/iceberg/pending/*", when="after",
                                                nth=2),
             "after-record-created": FaultRule(op="put", key="_catalog/iceberg_txns/*", when="after", nth=1),
             "after-pointers-marked": FaultRule(op="put", key=f"{POINTERS}/*", when="after", nth=2),
             "after-record-committed": FaultRule(op="put", key="_catalog/iceberg_txns/*", when="after", nth=2),
             "after-roll-forward": FaultRule(op="put", key=f"{POINTERS}/*", when="after", nth=4),
             "after-committed-receipts": FaultRule(op="put", key="_catalog/events/*/iceberg/committed/*",
                                                   when="after", nth=2),
             "after-marker-finalization": MARKER_FINAL}


def _props(h: Harness, path: tuple[str, ...]) -> dict[str, str]:
    """The properties stored (a load also reports the namespace's location, which is no property of its own)."""
    return {k: v for k, v in h.namespaces.load(h.catalog, path)["properties"].items() if k != "location"}


def _has_namespace(h: Harness, path: tuple[str, ...]) -> bool:
    with h.store.read() as state:
        return state.has_namespace(h.catalog.id, path)


def _tables(h: Harness) -> list[str]:
    return [t.name for t in h.tables.list(h.catalog, ("db",), None, None)[0]]


def _two_tables(h: Harness) -> None:
    h.create_table("a")
    h.create_table("b")


def _transaction(h: Harness, c: Caller) -> Outcome:
    body = {"table-changes": [
        {"identifier": {"namespace": ["db"], "name": n}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"txn": "1"}}]} for n in ("a", "b")]}
    return h.mutations(TIMEOUT).commit_transaction(h.catalog, body, c)


def _check_transaction(h: Harness, outcome: Outcome) -> None:
    assert outcome.status == 204
    for name in ("a", "b"):
        assert len(history(h, name)) == 2
        assert h.tables.load(h.catalog, ("db",), name).metadata.properties["txn"] == "1"


CASES: dict[str, Case] = {
    "create-namespace": Case(
        lambda h: None,
        lambda h, c: h.mutations(TIMEOUT).create_namespace(h.catalog, {"namespace": ["ns"], "properties": {"a": "1"}},
                                                            c),
        lambda h, o: (o.body == {"namespace": ["ns"], "properties": {"a": "1"}}
                      and _props(h, ("ns",)) == {"a": "1"}) or pytest.fail(f"{o}"),
        TIER1_STEPS),
    "update-namespace-properties": Case(
        lambda h: h.namespaces.update_properties(h.catalog, ("db",), {"updates": {"x": "1"}}, "admin"),
        lambda h, c: h.mutations(TIMEOUT).update_namespace_properties(
            h.catalog, ("db",), {"updates": {"y": "2"}, "removals": ["x", "gone"]}, c),
        lambda h, o: (o.body == {"updated": ["y"], "removed": ["x"], "missing": ["gone"]}
                      and _props(h, ("db",)) == {"y": "2"}) or pytest.fail(f"{o}"),
        TIER1_STEPS),
    "drop-namespace": Case(
        lambda h: h.namespaces.create(h.catalog, ["empty"], {}, "admin"),
        lambda h, c: h.mutations(TIMEOUT).drop_namespace(h.catalog, ("empty",), c),
        lambda h, o: (o.status == 204 and not _has_namespace(h, ("empty",))) or pytest.fail(f"{o}"),
        TIER1_STEPS),
    "create-table": Case(
        lambda h: None,
        lambda h, c: h.mutations(TIMEOUT).create_table(h.catalog, ("db",), {"name": "t", "schema": SCHEMA}, c),
        lambda h, o: (_tables(h) == ["t"] and history(h) == [o.metadata_location]) or pytest.fail(f"{o}"),
        CREATE_STEPS),
    "drop-table": Case(
        lambda h: h.create_table("t"),
        lambda h, c: h.mutations(TIMEOUT).drop_table(h.catalog, ("db",), "t", False, c),
        lambda h, o: (o.status == 204 and _tables(h) == []) or pytest.fail(f"{o}"),
        DROP_STEPS),
    "rename-table": Case(
        lambda h: h.create_table("t"),
        lambda h, c: h.mutations(TIMEOUT).rename_table(
            h.catalog, {"source": {"namespace": ["db"], "name": "t"},
                        "destination": {"namespace": ["db"], "name": "u"}},
            (("db",), "t"), (("db",), "u"), c),
        lambda h, o: (o.status == 204 and _tables(h) == ["u"]) or pytest.fail(f"{o}"),
        TIER1_STEPS),
    "transaction": Case(_two_tables, _transaction, _check_transaction, TXN_STEPS),
}
MATRIX = [(name, step) for name, case in CASES.items() for step in case.steps]


@pytest.mark.parametrize(("mutation", "step"), MATRIX, ids=[f"{m}-{s}" for m, s in MATRIX])
def test_mutation_crash_matrix(harness: Harness, mutation: str, step: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transactions, "TXN_DEADLINE_S", TIMEOUT)  # a stranded transaction expires quickly
    case = CASES[mutation]
    case.setup(harness)
    key = str(uuid7())
    rule = harness.storage.inject(replace(case.steps[step]))
    # Written after the answer (arco.events.after_answer): the process "dies" once the client has it. A create's
    # catalog receipt and marker finalization, and a transaction's finalization, are too: those mutations hold
    # their writes until the answer (in a server every request does; called directly, a drop's or a rename's are
    # written at once).
    if "committed-receipt" in step or (mutation == "create-table" and step == "after-catalog-receipt") or (
            mutation in ("create-table", "transaction") and step == "after-marker-finalization"):
        case.check(harness.reopen(), case.run(harness, caller(key)))
        assert after_answer.drain(10) and rule.fired == 1
    else:
        with pytest.raises(SimulatedCrash):
            case.run(harness, caller(key))
    harness.storage.clear()

    outcome = retry_until_done(lambda: case.run(harness.reopen(), caller(key)))

    after = harness.reopen()
    case.check(after, outcome)
    assert case.run(after, caller(key)) == outcome  # replayed from now on
    reconcile_catalog_log(after.storage, after.store.log)
    after.store.ensure_fresh()
    positions = list(after.store.log.operations(1, after.store.seq))
    assert [seq for seq, _ in positions] == list(range(1, after.store.seq + 1))
    for seq, entry in positions:
        assert after.storage.head(catalog_receipt_key(seq, entry["at_ms"])) is not None, seq
    for table in after.tables.list(after.catalog, ("db",), None, None)[0]:
        assert_receipts_complete_after_reconcile(after, table.name)
    # What a crash before the commit point leaves (a pointer for a table Tier 1 never named) is identifiable by
    # garbage collection: a pointer whose uuid no catalog entry has, and that is not a dropped table's tombstone.
    with after.store.read() as state:
        known = set(state.tables)
    stray = [m.key for m in after.storage.list(f"{POINTERS}/")
             if m.key.rsplit("/", 1)[-1][:-5] not in known
             and not TablePointer.from_bytes(after.storage.get(m.key).data).dropped]
    assert len(stray) <= (1 if mutation == "create-table" else 0), stray
    applied = [op for _, op in after.store.log.operations(1, after.store.seq)]
    tagged = [e for e in applied if e and e.get("request") == key_tag(key)]
    assert len(tagged) <= 1, "a tagged Tier 1 operation was applied twice"


@pytest.mark.parametrize("mutation", list(CASES))
def test_the_named_steps_cover_every_write_of_each_mutation(harness: Harness, mutation: str) -> None:
    case = CASES[mutation]
    case.setup(harness)
    harness.storage.calls.clear()
    case.run(harness, caller())
    puts = [c.key for c in harness.storage.calls if c.op == "put"]
    uncovered = [k for k in puts if not any(rule.matches("put", k) for rule in case.steps.values())]
    assert puts and not uncovered


def test_retry_after_for_a_marker_from_a_clock_ahead_is_at_most_the_in_progress_timeout(harness: Harness) -> None:
    """The marker's start is the claiming server's clock: one running an hour ahead must not make a retry wait
    an hour and more."""
    markers = IdempotencyMarkers(harness.storage, in_progress_timeout_s=30, in_flight_wait_s=0.05)
    body = {"namespace": ["ahead"]}
    keyed = Keyed(markers, "catalog-x", str(uuid7()), "createNamespace", request_hash("createNamespace", "", body))
    ahead = Marker("IN_PROGRESS", keyed.key, keyed.operation, keyed.request_hash, int(time.time() * 1000) + 3_600_000)
    harness.storage.put(marker_key(keyed.scope, keyed.tag), ahead.to_bytes(), DoesNotExist())
    with pytest.raises(KeyInFlight) as busy:
        markers.claim(keyed, lambda marker: None)
    assert 1 <= int(busy.value.headers["Retry-After"]) <= 30


# -- a paused holder resumes after its marker was taken over -------------------------------------------------------


def _paused_then_taken_over(harness: Harness, first: Callable[[Harness], object],
                            retry_then_later: Callable[[Harness], None]) -> object:
    """``first`` (its key's marker claimed, its files written) is held at its first pointer write, as a process
    stopped there would be, past the in-progress timeout; meanwhile ``retry_then_later`` runs on another server
    (the same key, taking the marker over, then another commit); then the first resumes. Its answer."""
    held = HeldPuts(harness.storage.inner, f"{POINTERS}/*")
    harness.storage.inner = held  # type: ignore[assignment]
    answer: dict[str, object] = {}

    def run() -> None:
        try:
            answer["first"] = first(harness)
        except BaseException as exc:  # noqa: BLE001 - looked at below
            answer["first"] = exc

    paused = threading.Thread(target=run)
    paused.start()
    assert held.reached.wait(10)
    time.sleep(TIMEOUT * 1.5)  # the marker is stale: a retry may take it over
    retry_then_later(harness.reopen())
    held.release()
    paused.join(30)
    return answer["first"]


def test_a_commit_resumed_after_its_marker_was_taken_over_does_not_land_again(table: Harness) -> None:
    """The retry that took the marker over landed the change, and a later commit followed; the first request,
    resumed, finds its key's change in the base it would swap against and answers with it, instead of applying
    it a second time over the later commit."""
    key = str(uuid7())
    answers: dict[str, Outcome] = {}

    def retry_then_later(other: Harness) -> None:
        answers["retry"] = commit(other, set_property("from-retry"), key, timeout=TIMEOUT)
        answers["later"] = commit(other, set_property("later"), str(uuid7()), timeout=TIMEOUT)

    first = _paused_then_taken_over(table, lambda h: commit(h, set_property("from-retry"), key, timeout=TIMEOUT),
                                    retry_then_later)
    after = table.reopen()
    versions = history(after)
    assert [carries_tag(v, key_tag(key)) for v in versions] == [False, True, False]  # later, the key's, create
    assert after.tables.load(after.catalog, ("db",), "t").metadata.properties["counter"] == "later"
    assert isinstance(first, Outcome) and first.metadata_location == answers["retry"].metadata_location


def test_a_transaction_resumed_after_its_marker_was_taken_over_does_not_land_again(harness: Harness) -> None:
    _two_tables(harness)
    key = str(uuid7())
    answers: dict[str, Outcome] = {}

    def retry_then_later(other: Harness) -> None:
        answers["retry"] = _transaction(other, caller(key))
        for name in ("a", "b"):
            other.mutations(TIMEOUT).commit_table(other.catalog, ("db",), name, {
                "requirements": [], "updates": [{"action": "set-properties", "updates": {"txn": "later"}}]},
                caller())

    first = _paused_then_taken_over(harness, lambda h: _transaction(h, caller(key)), retry_then_later)
    after = harness.reopen()
    assert isinstance(first, Outcome) and first.status == answers["retry"].status == 204
    for name in ("a", "b"):
        versions = history(after, name)
        assert sum(carries_tag(v, key_tag(key)) for v in versions) == 1, versions
        assert after.tables.load(after.catalog, ("db",), name).metadata.properties["txn"] == "later"


def test_a_commit_s_key_names_one_request_in_the_catalog_whatever_its_table_is_now(table: Harness) -> None:
    """The retry of a commit whose table was renamed away (and the name given to a new table) is answered as the
    first request was, and changes neither table; the same key with another table's commit, or on another route,
    is a conflict."""
    key = str(uuid7())
    first = commit(table, set_property("1"), key)
    mutations = table.mutations()
    mutations.rename_table(table.catalog, {"source": {"namespace": ["db"], "name": "t"},
                                           "destination": {"namespace": ["db"], "name": "old"}},
                           (("db",), "t"), (("db",), "old"), caller())
    table.create_table("t")
    fresh = history(table)
    again = commit(table.reopen(), set_property("1"), key)
    assert again == first and history(table.reopen()) == fresh
    assert history(table, "old")[0] == first.metadata_location
    table.create_table("u")
    for elsewhere in (lambda: table.mutations().commit_table(table.catalog, ("db",), "u", set_property("2"),
                                                             caller(key)),
                      lambda: table.mutations().create_namespace(table.catalog, {"namespace": ["k"]}, caller(key))):
        with pytest.raises(CommitFailed):
            elsewhere()
    assert "counter" not in table.tables.load(table.catalog, ("db",), "u").metadata.properties
    assert not _has_namespace(table, ("k",))
