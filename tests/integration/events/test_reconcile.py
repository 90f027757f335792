"""The reconciler: restores deleted receipts from the metadata log and the catalog log, counts what it skips."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from arco.events import after_answer
from arco.events.receipts import EVENTS, catalog_receipt_key, iceberg_receipt_key
from arco.events.reconcile import reconcile_catalog_log, reconcile_table, table_history
from arco.iceberg import commit, transaction_commit
from support.iceberg_harness import Harness


def commit_n(h: Harness, n: int, name: str = "t") -> None:
    for i in range(n):
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"i": str(i)}}]}
        commit.commit_table(h.tables, h.catalog, ("db",), name, body, "admin", {"kind": "test"})


def receipts(h: Harness, kind: str) -> list[str]:
    assert after_answer.drain(10)  # committed receipts are written after the commits' answers, on another thread
    return sorted(m.key for m in h.storage.list(f"{EVENTS}/") if f"/{kind}/" in m.key)


def loaded(h: Harness, name: str = "t"):  # type: ignore[no-untyped-def]
    return h.tables.load(h.catalog, ("db",), name)


def test_commits_leave_one_committed_receipt_per_version(harness: Harness) -> None:
    harness.create_table("t")
    commit_n(harness, 3)
    versions = table_history(harness.tables.files, loaded(harness).pointer.pointer.current_metadata_location)
    assert len(versions) == 4
    expected = sorted(iceberg_receipt_key("committed", loc, ms) for loc, ms in versions)
    assert [k for k in receipts(harness, "committed") if "/iceberg/" in k] == expected
    assert len([k for k in receipts(harness, "pending") if "/iceberg/" in k]) == 4


def test_history_follows_the_log_when_time_goes_back(harness: Harness) -> None:
    """An append keeps the writer's snapshot timestamp, which may be older than the version before it: the
    history (and each backfilled receipt's previous version) still follows the metadata log."""
    harness.create_table("t")
    commit_n(harness, 1)
    before = loaded(harness).metadata
    location = before.location
    body = {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": 7, "sequence-number": 1, "timestamp-ms": before.last_updated_ms - 500,
            "manifest-list": f"{location}/metadata/snap-7.avro", "summary": {"operation": "append"},
            "schema-id": 0}},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 7}]}
    commit.commit_table(harness.tables, harness.catalog, ("db",), "t", body, "admin", {"kind": "test"})
    commit_n(harness, 1)
    table = loaded(harness)
    chain = [table.pointer.pointer.current_metadata_location,
             *reversed([entry.metadata_file for entry in table.metadata.metadata_log])]
    versions = table_history(harness.tables.files, chain[0])
    assert [location for location, _ in versions] == chain
    assert [ms for _, ms in versions] != sorted((ms for _, ms in versions), reverse=True)  # time went back

    for key in receipts(harness, "committed"):
        harness.storage.delete(key)
    counts = reconcile_table(harness.storage, harness.tables.files, harness.tables.resolver, table.entry, {})
    assert counts.backfilled == 4
    previous = {}
    for key in receipts(harness, "committed"):
        if "/iceberg/" in key:
            event = json.loads(harness.storage.get(key).data)
            previous[event["metadata_location"]] = event.get("previous_metadata_location")
    assert [previous[location] for location in chain] == [*chain[1:], None]


def test_deleted_receipts_are_backfilled_exactly(harness: Harness) -> None:
    harness.create_table("t")
    commit_n(harness, 5)
    table = loaded(harness)
    before = {k: harness.storage.get(k).data for k in receipts(harness, "committed")}
    deleted = [k for k in before if "/iceberg/" in k][:3] + [k for k in before if "/catalog/" in k][:1]
    for key in deleted:
        harness.storage.delete(key)

    counts = reconcile_table(harness.storage, harness.tables.files, harness.tables.resolver, table.entry,
                             {"catalog": "main", "namespace": ["db"], "name": "t"})
    log_counts = reconcile_catalog_log(harness.storage, harness.store.log)

    assert (counts.versions, counts.backfilled, counts.present, counts.unreadable) == (6, 3, 3, 0)
    assert log_counts.catalog_backfilled == 1
    assert sorted(receipts(harness, "committed")) == sorted(before)
    again = reconcile_table(harness.storage, harness.tables.files, harness.tables.resolver, table.entry, {})
    assert again.backfilled == 0 and again.present == 6  # a second run writes nothing


def test_unreadable_metadata_is_counted_and_skipped_and_depth_is_capped(harness: Harness) -> None:
    harness.create_table("t")
    commit_n(harness, 4)
    table = loaded(harness)
    versions = table_history(harness.tables.files, table.pointer.pointer.current_metadata_location)
    for key in receipts(harness, "committed"):
        harness.storage.delete(key)
    broken = versions[2][0]
    harness.storage.put(harness.tables.files.key_of(broken), b"{ not metadata")
    fresh = harness.reopen()  # no cached copy of the file

    counts = reconcile_table(fresh.storage, fresh.tables.files, fresh.tables.resolver, table.entry, {}, max_depth=4)

    assert (counts.versions, counts.backfilled, counts.unreadable, counts.truncated) == (4, 3, 1, 1)
    assert fresh.storage.head(iceberg_receipt_key("committed", broken, versions[2][1])) is None


def test_the_cli_reconciles_a_warehouse_with_a_summary(harness: Harness) -> None:
    harness.create_table("t")
    harness.create_table("u")
    commit_n(harness, 2)
    for key in receipts(harness, "committed"):
        harness.storage.delete(key)
    warehouse = harness.storage.inner.root  # type: ignore[attr-defined]

    run = subprocess.run([sys.executable, "-m", "arco.cli.main", "reconcile", "--warehouse", str(warehouse)],
                         capture_output=True, text=True, timeout=120)

    assert run.returncode == 0, run.stderr
    # t: its create and 2 commits; u: its create
    assert re.search(r"committed receipts backfilled\s*│\s*4\s*│", run.stdout), run.stdout
    assert len([k for k in receipts(harness, "committed") if "/iceberg/" in k]) == 4
    seq = harness.store.seq
    assert all(harness.storage.head(catalog_receipt_key(s, op["at_ms"]))
               for s, op in harness.store.log.operations(1, seq))

    one = subprocess.run([sys.executable, "-m", "arco.cli.main", "reconcile", "--warehouse", str(warehouse),
                          "--table", "db.nope"], capture_output=True, text=True, timeout=120)
    assert one.returncode != 0 and "no Iceberg table 'db.nope'" in one.stderr


def test_a_fence_in_the_catalog_log_is_stepped_over_and_gets_no_receipt(harness: Harness) -> None:
    """A fence (an unanswered append's position, taken so that the append cannot land late) changed nothing: the
    catalog goes on after it, and the reconciler writes no receipt for it."""
    harness.store.ensure_fresh()
    fenced_at = harness.store.seq + 1
    assert harness.store.log.fence(fenced_at) and not harness.store.log.fence(fenced_at)
    harness.create_table("t")  # appended after the fence, by a store that caught up over it
    ops = {position: op for position, op in harness.store.log.operations(1, harness.store.seq)}
    assert ops[fenced_at]["op"] == "fence" and ops[fenced_at + 1]["op"] == "create_table"
    before = [key for key in receipts(harness, "committed") if "/catalog/" in key]
    for key in before:
        harness.storage.delete(key)

    counts = reconcile_catalog_log(harness.storage, harness.store.log)

    after = [key for key in receipts(harness, "committed") if "/catalog/" in key]
    assert counts.catalog_ops == counts.catalog_backfilled == len(ops) - 1 == len(before)
    assert sorted(after) == sorted(before)
    assert not any(f"{fenced_at:020d}" in key for key in after)


@pytest.mark.parametrize("through", ["commit", "transaction"])
def test_receipts_say_what_a_commit_did_in_the_millisecond_of_its_snapshot(harness: Harness, monkeypatch,
                                                                           through: str) -> None:
    """A metadata-only commit the server stamps in the very millisecond of the current snapshot's (client-set)
    timestamp: its file alone reads like the commit that added the snapshot; its receipts, written by the commit
    and backfilled by the reconciler, compare it with the version it was made on, and say it only set properties."""
    harness.create_table("t")
    location = loaded(harness).metadata.location
    stamp = loaded(harness).metadata.last_updated_ms + 1_000
    snapshot = {"snapshot-id": 7, "sequence-number": 1, "timestamp-ms": stamp, "schema-id": 0,
                "manifest-list": f"{location}/metadata/snap-7.avro", "summary": {"operation": "append"}}
    commit.commit_table(harness.tables, harness.catalog, ("db",), "t", {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 7}]},
        "admin", {"kind": "test"})
    monkeypatch.setattr("arco.iceberg.commit_rules.datetime_to_millis", lambda _: stamp)
    if through == "commit":
        commit_n(harness, 1)
    else:
        harness.create_table("u")  # a transaction of one table is committed as a table commit
        transaction_commit.commit_transaction(harness.tables, harness.catalog, {"table-changes": [{
            "identifier": {"namespace": ["db"], "name": name}, "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"i": "0"}}]} for name in ("t", "u")]},
            "admin", {"kind": "test"})
    table = loaded(harness)
    assert table.metadata.last_updated_ms == stamp and table.metadata.current_snapshot_id == 7
    current = table.pointer.pointer.current_metadata_location

    def operations() -> dict[str, str]:
        found = {}
        for key in receipts(harness, "committed") + receipts(harness, "pending"):
            event = json.loads(harness.storage.get(key).data)
            if event.get("metadata_location") in (current, table.metadata.metadata_log[-1].metadata_file):
                found[f"{event['event_type']} {'current' if event['metadata_location'] == current else 'added'}"] = \
                    event["operation"]
        return found

    assert operations() == {"IcebergCommitPending added": "append", "IcebergCommitCommitted added": "append",
                            "IcebergCommitPending current": "update-metadata",
                            "IcebergCommitCommitted current": "update-metadata"}
    for key in receipts(harness, "committed"):
        harness.storage.delete(key)
    reconcile_table(harness.storage, harness.tables.files, harness.tables.resolver, harness.tables.entry(
        harness.catalog, ("db",), "t"), {"catalog": "main", "namespace": ["db"], "name": "t"})
    assert operations()["IcebergCommitCommitted current"] == "update-metadata"
    assert operations()["IcebergCommitCommitted added"] == "append"
