"""Declared and verified lineage from commits and scan reports (pure): a decision table, then the row readers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from arco.pipeline.lineage import (
    DECLARED,
    VERIFIED,
    WINDOW_MS,
    Commit,
    Scan,
    TableRef,
    commits_of,
    edges,
    report_row,
    walk,
)

T1 = TableRef("u1", "main", ("raw",), "t1")
T2 = TableRef("u2", "main", ("raw",), "t2")
T3 = TableRef("u3", "main", ("raw",), "t3")
MIN = 60_000


def commit(table: TableRef = T2, at: int = 100 * MIN, app: str | None = "app-1", kind: str = "iceberg_rest",
           snapshot: int | None = 20, parent: int | None = 19, operation: str = "append",
           engine: str | None = "spark", key: str = "k") -> Commit:
    return Commit(key, table, snapshot, parent, at, operation, kind, app, engine,
                  "run-1" if kind == "pipeline" else None)


def scan(table: TableRef = T1, at: int = 99 * MIN, app: str | None = "app-1", snapshot: int = 10,
         engine: str | None = "spark") -> Scan:
    return Scan(table, snapshot, at, app, engine)


def pairs(found: list[dict]) -> list[tuple]:
    return [(e["source_uuid"], e["source_snapshot_id"], e["target_uuid"], e["target_snapshot_id"], e["confidence"])
            for e in found]


CASES = [
    # (why, commit, other commits of the same app, scans, expected edges)
    ("a scan of the same app just before the commit", commit(), [], [scan()], [("u1", 10, "u2", 20, DECLARED)]),
    ("another app's scan is not this commit's input", commit(), [], [scan(app="app-2")], []),
    ("a scan after the commit belongs to a later one", commit(), [], [scan(at=101 * MIN)], []),
    ("a scan older than the window", commit(), [], [scan(at=100 * MIN - WINDOW_MS - 1)], []),
    ("a scan before the app's previous commit to the target fed that one", commit(),
     [commit(at=98 * MIN, key="k0", snapshot=19)], [scan(at=97 * MIN)], []),
    ("... but one after it feeds this one", commit(), [commit(at=98 * MIN, key="k0", snapshot=19)],
     [scan(at=99 * MIN)], [("u1", 10, "u2", 20, DECLARED)]),
    ("a previous commit to another table does not bound the window", commit(),
     [commit(table=T3, at=98 * MIN, key="k0")], [scan(at=97 * MIN)], [("u1", 10, "u2", 20, DECLARED)]),
    ("two tables read, and one read twice: one edge per table and snapshot", commit(), [],
     [scan(), scan(at=99 * MIN + 1), scan(table=T3, snapshot=30)],
     [("u1", 10, "u2", 20, DECLARED), ("u3", 30, "u2", 20, DECLARED)]),
    ("a scan of the target itself is no edge", commit(), [], [scan(table=T2)], []),
    ("a different engine with the same app id", commit(), [], [scan(engine="trino")], []),
    ("an engine that does not name itself still matches", commit(), [], [scan(engine=None)],
     [("u1", 10, "u2", 20, DECLARED)]),
    ("a commit without an application id", commit(app=None), [], [scan(app=None)], []),
    ("an admin change has none", commit(kind="admin_api"), [], [scan()], []),
    ("a schema change adds no snapshot", commit(operation="update-metadata"), [], [scan()], []),
    ("a table created empty", commit(operation="create", snapshot=None), [], [scan()], []),
    ("a CTAS creates with a snapshot", commit(operation="create", parent=None), [], [scan()],
     [("u1", 10, "u2", 20, DECLARED)]),
    ("Arco's maintenance rewrote the table from itself", commit(kind="pipeline", app=None, operation="replace"), [],
     [], [("u2", 19, "u2", 20, VERIFIED)]),
    ("the pipeline's appends (the system tables) have no table as input",
     commit(kind="pipeline", app=None, operation="append"), [], [], []),
    ("... and its scans are not declared lineage", commit(kind="pipeline", operation="replace", parent=None), [],
     [scan()], []),
]


@pytest.mark.parametrize(("why", "new", "others", "scans", "expected"), CASES, ids=[c[0] for c in CASES])
def test_edges(why: str, new: Commit, others: list[Commit], scans: list[Scan], expected: list[tuple]) -> None:
    assert pairs(edges([new], [new, *others], scans)) == expected


def test_an_edge_names_both_ends_and_the_application() -> None:
    (edge,) = edges([commit()], [commit()], [scan()])
    assert edge["source_catalog"] == "main" and edge["source_namespace"] == ["raw"] and edge["source_table"] == "t1"
    assert edge["target_table"] == "t2" and edge["app_id"] == "app-1" and edge["engine"] == "spark"
    assert edge["observed_at"] == datetime.fromtimestamp(100 * 60, UTC) and edge["receipt_key"] == "k"


def test_the_app_id_comes_from_the_summary_or_else_the_commit_report_and_the_parent_from_the_previous_row() -> None:
    at = datetime.fromtimestamp(1000, UTC)
    base = {"catalog": "main", "namespace": ["raw"], "table_name": "t2", "table_uuid": "u2", "operation": "append",
            "source_kind": "iceberg_rest", "source_details": "{}", "committed_at": at}
    rows = [{**base, "receipt_key": "a", "metadata_location": "m1", "previous_metadata_location": None,
             "snapshot_id": 1, "summary": [("app-id", "local-1"), ("engine-name", "spark")]},
            {**base, "receipt_key": "b", "metadata_location": "m2", "previous_metadata_location": "m1",
             "snapshot_id": 2, "summary": None}]
    report = report_row("r", {"kind": "metrics_report", "table_uuid": "u2", "catalog": "main", "namespace": ["raw"],
                              "table": "t2", "received_at_ms": 1_000_000, "source": {"principal": "ann"},
                              "report": {"report-type": "commit-report", "snapshot-id": 2, "sequence-number": 2,
                                         "operation": "append", "metrics": {},
                                         "metadata": {"app-id": "local-2", "engine-name": "spark"}}})
    first, second = commits_of(rows, [report])
    assert (first.app_id, first.engine, first.parent_snapshot_id) == ("local-1", "spark", None)
    assert (second.app_id, second.parent_snapshot_id) == ("local-2", 1)
    assert report["principal"] == "ann" and report["snapshot_id"] == 2


def test_a_stored_report_of_another_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        report_row("r", {"kind": "something"})


def edge_row(source: str, target: str, at: int) -> dict:
    return {"source_uuid": source, "target_uuid": target, "source_snapshot_id": 1, "target_snapshot_id": 2,
            "observed_at": datetime.fromtimestamp(at, UTC)}


GRAPH = [edge_row("a", "b", 1), edge_row("b", "c", 2), edge_row("c", "d", 3), edge_row("x", "c", 4)]


@pytest.mark.parametrize(("start", "direction", "depth", "hops"), [
    ("c", "upstream", 1, {"c": 0, "b": 1, "x": 1}),
    ("c", "upstream", 2, {"c": 0, "b": 1, "x": 1, "a": 2}),
    ("c", "downstream", 10, {"c": 0, "d": 1}),
    ("b", "both", 2, {"b": 0, "a": 1, "c": 1, "d": 2, "x": 2}),
])
def test_walk(start: str, direction: str, depth: int, hops: dict) -> None:
    found, edges_found = walk(GRAPH, start, direction, depth)
    assert found == hops
    assert {(e["source_uuid"], e["target_uuid"]) for e in edges_found} == {
        (e["source_uuid"], e["target_uuid"]) for e in GRAPH
        if e["source_uuid"] in hops and e["target_uuid"] in hops and (hops[e["source_uuid"]] < depth or
                                                                       hops[e["target_uuid"]] < depth)}


def test_a_table_the_caller_may_not_see_is_reached_but_not_walked_through() -> None:
    found, edges_found = walk(GRAPH, "c", "upstream", 5, may_see=lambda uuid: uuid != "b")
    assert found == {"c": 0, "b": 1, "x": 1}  # a, behind b, stays unknown
    assert {(e["source_uuid"], e["target_uuid"]) for e in edges_found} == {("b", "c"), ("x", "c")}


def test_a_batch_s_edges_need_only_the_window_and_the_replaced_versions_of_the_history() -> None:
    """compact's lineage reads, of the history, the scans and commits within the window before the batch's earliest
    commit and the versions its commits replaced (a parent far older than the window still names its snapshot)."""
    from arco.pipeline import rows
    from arco.pipeline.checkpoint import CompactState
    from arco.pipeline.compact import lineage_edges
    from arco.pipeline.parquet_io import write_rows
    from arco.storage.memory import MemoryBackend

    now = 10 * WINDOW_MS
    at = lambda ms: datetime.fromtimestamp(ms / 1000, UTC)  # noqa: E731

    def row(key: str, table: TableRef, snapshot: int, ms: int, location: str, previous: str | None = None,
            kind: str = "iceberg_rest", operation: str = "append") -> dict:
        return {"receipt_key": key, "table_uuid": table.uuid, "catalog": "main", "namespace": ["raw"],
                "table_name": table.name, "metadata_location": location, "previous_metadata_location": previous,
                "snapshot_id": snapshot, "operation": operation, "source_kind": kind,
                "source_details": '{"run_id": "r1"}', "committed_at": at(ms),
                "summary": [("app-id", "app-1"), ("engine-name", "spark")] if kind == "iceberg_rest" else []}

    def scan_report(key: str, table: TableRef, snapshot: int, ms: int) -> dict:
        return report_row(key, {"kind": "metrics_report", "table_uuid": table.uuid, "catalog": "main",
                                "namespace": ["raw"], "table": table.name, "received_at_ms": ms, "source": {},
                                "report": {"report-type": "scan-report", "snapshot-id": snapshot, "metrics": {},
                                           "metadata": {"app-id": "app-1", "engine-name": "spark"}}})

    t4 = TableRef("u4", "main", ("raw",), "t4")
    storage = MemoryBackend()
    write_rows(storage, "old/timeline.parquet", [row("p", t4, 5, now - 3 * WINDOW_MS, "m0")], rows.TIMELINE)
    write_rows(storage, "old/reports.parquet", [scan_report("in", T1, 10, now - 10 * MIN),
                                                scan_report("out", T3, 30, now - 2 * WINDOW_MS)],
               rows.SCHEMAS_BY_KIND["reports"])
    write_rows(storage, "new/timeline.parquet", [
        row("n", T2, 20, now, "m9"),
        row("r", t4, 21, now + MIN, "m1", previous="m0", kind="pipeline", operation="replace")], rows.TIMELINE)
    state = CompactState([{"files": {"timeline": ["old/timeline.parquet"], "reports": ["old/reports.parquet"]}}])
    found = lineage_edges(storage, state, ["new/timeline.parquet"], [])
    assert sorted(pairs(found)) == [("u1", 10, "u2", 20, DECLARED), ("u4", 5, "u4", 21, VERIFIED)]
