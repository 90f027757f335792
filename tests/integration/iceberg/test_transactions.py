"""Multi-table transactions: all tables change or none, whatever step the server dies at."""

from __future__ import annotations

import pytest

from arco.iceberg import commit, transaction_commit
from arco.iceberg import transactions as txn
from arco.iceberg.errors import BadRequest, CommitFailed
from arco.storage.faults import FaultRule, SimulatedCrash
from support.iceberg_harness import Harness


def change(name: str, value: str, requirements: list | None = None) -> dict:
    return {"identifier": {"namespace": ["db"], "name": name}, "requirements": requirements or [],
            "updates": [{"action": "set-properties", "updates": {"owner.note": value}}]}


def note(h: Harness, name: str) -> str | None:
    return h.tables.load(h.catalog, ("db",), name).metadata.properties.get("owner.note")


def run_txn(h: Harness, *changes: dict) -> None:
    body = {"table-changes": list(changes)}
    transaction_commit.commit_transaction(h.tables, h.catalog, body, "admin", {"kind": "test"})


@pytest.fixture
def two_tables(harness: Harness) -> Harness:
    harness.create_table("a")
    harness.create_table("b")
    return harness


def test_both_tables_change(two_tables: Harness) -> None:
    run_txn(two_tables, change("a", "1"), change("b", "1"))
    assert (note(two_tables, "a"), note(two_tables, "b")) == ("1", "1")
    fresh = two_tables.reopen()
    assert (note(fresh, "a"), note(fresh, "b")) == ("1", "1")
    assert not any(fresh.tables.pointers.load(e).pointer.pending_txn for e in _uuids(fresh))


def test_a_failed_requirement_changes_nothing(two_tables: Harness) -> None:
    bad = [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}]
    with pytest.raises(CommitFailed):
        run_txn(two_tables, change("a", "1"), change("b", "1", bad))
    assert (note(two_tables, "a"), note(two_tables, "b")) == (None, None)


def test_the_same_table_twice_is_refused(two_tables: Harness) -> None:
    with pytest.raises(BadRequest):
        run_txn(two_tables, change("a", "1"), change("A", "2"))


def _uuids(h: Harness) -> list[str]:
    with h.store.read() as state:
        return sorted(state.tables)


# Each crash point of the protocol, as the storage operation the crash happens before or after.
CRASH_POINTS = {
    "before the record": FaultRule(op="put", key="_catalog/iceberg_txns/*", when="before"),
    "after the record": FaultRule(op="put", key="_catalog/iceberg_txns/*", when="after"),
    "after the first mark": FaultRule(op="put", key="_catalog/iceberg_pointers/*", when="after"),
    "after both marks": FaultRule(op="put", key="_catalog/iceberg_pointers/*", when="after", nth=2),
    "before the commit point": FaultRule(op="put", key="_catalog/iceberg_txns/*", when="before", nth=2),
    "after the commit point": FaultRule(op="put", key="_catalog/iceberg_txns/*", when="after", nth=2),
    "after the first roll-forward": FaultRule(op="put", key="_catalog/iceberg_pointers/*", when="after", nth=3),
}
COMMITTED_POINTS = {"after the commit point", "after the first roll-forward"}


@pytest.mark.parametrize("point", sorted(CRASH_POINTS))
def test_a_crash_at_any_step_leaves_all_or_nothing(two_tables: Harness, point: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(txn, "TXN_DEADLINE_S", 0.3)
    two_tables.storage.inject(CRASH_POINTS[point])
    with pytest.raises(SimulatedCrash):
        run_txn(two_tables, change("a", "1"), change("b", "1"))
    two_tables.storage.clear()

    reader = two_tables.reopen()
    expected = ("1", "1") if point in COMMITTED_POINTS else (None, None)
    assert (note(reader, "a"), note(reader, "b")) == expected

    # A later single-table commit resolves any leftover mark (waiting out the deadline) and lands on top.
    writer = two_tables.reopen()
    commit.commit_table(writer.tables, writer.catalog, ("db",), "b", change("b", "2"), "admin", {"kind": "test"})
    after = two_tables.reopen()
    assert (note(after, "a"), note(after, "b")) == (expected[0], "2")
    run_txn(after, change("a", "3"), change("b", "3"))
    final = two_tables.reopen()
    assert (note(final, "a"), note(final, "b")) == ("3", "3")
    assert not any(final.tables.pointers.load(e).pointer.pending_txn for e in _uuids(final))
