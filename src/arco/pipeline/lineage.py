"""Table lineage from what engines report and what Arco's own jobs did (pure: rows in, edge rows out).

An edge says: ``source table@snapshot -> target table@snapshot``, with how far it can be trusted (seed section
8.1):

``DeclaredUnverified``  an engine's commit to the target (through Iceberg REST) and the scans the *same
                        application* (same app id, and same engine name when both name one) reported before it.
                        Spark's Iceberg runtime posts a scan report after planning every scan and stamps its
                        commits with its application id, so ``INSERT INTO t2 SELECT * FROM t1`` gives
                        ``t1@s1 -> t2@s2``. Which scans count: those of the commit's application received after
                        the application's previous commit to the same target and at most :data:`WINDOW_MS` before
                        this commit (a long-lived application, a notebook, scans many tables for many commits; the
                        previous commit bounds what this one could have used, the window bounds an application
                        that commits rarely). Scans of the target itself are left out: a table's own history
                        already links its snapshots. The engine says what it read; Arco did not see the data flow.
``Verified``            a rewrite (``replace``) committed by Arco's own pipeline (``arco pipeline maintain``): the
                        job knows it rewrote the table from itself, so the edge is ``table@parent -> table@new``.
no edge                 admin changes, commits without an application id, and commits that added no snapshot
                        (schema or property changes, rollbacks).

Times: a scan's is when Arco received its report; a commit's is its metadata's ``last-updated-ms``, which for a
commit that adds a snapshot is the engine's snapshot timestamp. The two clocks are compared, so a skew between
the engine and the server shifts the window by that much.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from arco.events.timestamps import utc_datetime

WINDOW_MS = 60 * 60 * 1000  # one hour: longer than the planning-to-commit time of a batch job
VERIFIED = "Verified"
DECLARED = "DeclaredUnverified"
NO_SNAPSHOT_OPERATIONS = ("update-metadata", "set-current-snapshot")

REPORTS = pa.schema([
    ("receipt_key", pa.string()), ("report_type", pa.string()), ("table_uuid", pa.string()),
    ("catalog", pa.string()), ("namespace", pa.list_(pa.string())), ("table_name", pa.string()),
    ("snapshot_id", pa.int64()), ("sequence_number", pa.int64()), ("operation", pa.string()),
    ("app_id", pa.string()), ("engine_name", pa.string()), ("engine_version", pa.string()),
    ("principal", pa.string()), ("received_at", pa.timestamp("ms", tz="UTC")),
])

LINEAGE = pa.schema([
    ("receipt_key", pa.string()),  # the target commit's receipt: one commit's edges are made once
    ("source_catalog", pa.string()), ("source_namespace", pa.list_(pa.string())), ("source_table", pa.string()),
    ("source_uuid", pa.string()), ("source_snapshot_id", pa.int64()),
    ("target_catalog", pa.string()), ("target_namespace", pa.list_(pa.string())), ("target_table", pa.string()),
    ("target_uuid", pa.string()), ("target_snapshot_id", pa.int64()),
    ("confidence", pa.string()), ("app_id", pa.string()), ("engine", pa.string()), ("run_id", pa.string()),
    ("observed_at", pa.timestamp("ms", tz="UTC")),
])


@dataclass(frozen=True)
class TableRef:
    uuid: str
    catalog: str | None
    namespace: tuple[str, ...]
    name: str | None

    @property
    def full_name(self) -> str:
        return ".".join(str(p) for p in (self.catalog, *self.namespace, self.name))


@dataclass(frozen=True)
class Commit:
    receipt_key: str
    table: TableRef
    snapshot_id: int | None
    parent_snapshot_id: int | None  # the snapshot current before this commit, if known
    at_ms: int
    operation: str | None
    source_kind: str  # iceberg_rest, pipeline, admin_api
    app_id: str | None = None
    engine: str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Scan:
    table: TableRef
    snapshot_id: int
    at_ms: int
    app_id: str | None
    engine: str | None


def _same_engine(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a.casefold() == b.casefold()


def _edge(commit: Commit, source: TableRef, source_snapshot: int | None, confidence: str) -> dict[str, Any]:
    return {
        "receipt_key": commit.receipt_key,
        "source_catalog": source.catalog, "source_namespace": list(source.namespace), "source_table": source.name,
        "source_uuid": source.uuid, "source_snapshot_id": source_snapshot,
        "target_catalog": commit.table.catalog, "target_namespace": list(commit.table.namespace),
        "target_table": commit.table.name, "target_uuid": commit.table.uuid, "target_snapshot_id": commit.snapshot_id,
        "confidence": confidence, "app_id": commit.app_id, "engine": commit.engine, "run_id": commit.run_id,
        "observed_at": utc_datetime(commit.at_ms),
    }


def edges(new_commits: Iterable[Commit], all_commits: Iterable[Commit], scans: Iterable[Scan],
          window_ms: int = WINDOW_MS) -> list[dict[str, Any]]:
    """The edges into each of ``new_commits`` (rows of :data:`LINEAGE`), in a stable order.

    ``all_commits`` (which include the new ones) give each application's previous commit to a table; ``scans``
    are every scan report known."""
    by_app: dict[str, list[Scan]] = {}
    for scan in scans:
        if scan.app_id:
            by_app.setdefault(scan.app_id, []).append(scan)
    previous_at: dict[tuple[str, str], list[int]] = {}
    for c in all_commits:
        if c.app_id:
            previous_at.setdefault((c.app_id, c.table.uuid), []).append(c.at_ms)
    out: list[dict[str, Any]] = []
    for commit in new_commits:
        if commit.snapshot_id is None or commit.operation in NO_SNAPSHOT_OPERATIONS:
            continue
        if commit.source_kind == "pipeline":
            # Only a rewrite (maintain's rewrite_data_files) has the table as its one input; the pipeline's
            # appends (the system tables) come from receipts, not from tables.
            if (commit.operation == "replace" and commit.parent_snapshot_id is not None
                    and commit.parent_snapshot_id != commit.snapshot_id):
                out.append(_edge(commit, commit.table, commit.parent_snapshot_id, VERIFIED))
            continue
        if commit.source_kind != "iceberg_rest" or not commit.app_id:
            continue
        earlier = [t for t in previous_at.get((commit.app_id, commit.table.uuid), []) if t < commit.at_ms]
        lower = max([commit.at_ms - window_ms, *earlier])
        seen: set[tuple[str, int]] = set()
        for scan in sorted(by_app.get(commit.app_id, []), key=lambda s: (s.at_ms, s.table.uuid, s.snapshot_id)):
            key = (scan.table.uuid, scan.snapshot_id)
            if (scan.table.uuid == commit.table.uuid or key in seen or not lower < scan.at_ms <= commit.at_ms
                    or not _same_engine(scan.engine, commit.engine)):
                continue
            seen.add(key)
            out.append(_edge(commit, scan.table, scan.snapshot_id, DECLARED))
    return out


# -- from stored rows and reports to the values above -----------------------------------------------------------


def _epoch_ms(value: Any) -> int:
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def report_row(receipt_key: str, event: dict[str, Any]) -> dict[str, Any]:
    """A stored metrics report (:mod:`arco.iceberg.metrics`, as the report route keeps it) as a :data:`REPORTS`
    row; KeyError/TypeError/ValueError if it is not one."""
    if event.get("kind") != "metrics_report":
        raise ValueError(f"expected a metrics_report, found {event.get('kind')!r}")
    report = event["report"]
    metadata = report.get("metadata") or {}
    source = event.get("source") or {}
    return {
        "receipt_key": receipt_key, "report_type": str(report["report-type"]), "table_uuid": str(event["table_uuid"]),
        "catalog": event.get("catalog"), "namespace": [str(p) for p in event.get("namespace") or []],
        "table_name": event.get("table"), "snapshot_id": int(report["snapshot-id"]),
        "sequence_number": report.get("sequence-number"), "operation": report.get("operation"),
        "app_id": metadata.get("app-id"), "engine_name": metadata.get("engine-name"),
        "engine_version": metadata.get("engine-version"), "principal": source.get("principal"),
        "received_at": utc_datetime(int(event["received_at_ms"])),
    }


def scans_of(report_rows: Iterable[dict[str, Any]]) -> list[Scan]:
    return [Scan(TableRef(r["table_uuid"], r["catalog"], tuple(r["namespace"] or ()), r["table_name"]),
                 int(r["snapshot_id"]), _epoch_ms(r["received_at"]), r["app_id"], r["engine_name"])
            for r in report_rows if r["report_type"] == "scan-report" and r["snapshot_id"] is not None]


def _summary(row: dict[str, Any]) -> dict[str, str]:
    summary = row.get("summary") or {}
    return dict(summary) if not isinstance(summary, dict) else summary


def commits_of(timeline_rows: Iterable[dict[str, Any]],
               report_rows: Iterable[dict[str, Any]] = ()) -> list[Commit]:
    """Timeline rows as commits. The application id is the snapshot summary's (Spark writes ``app-id``, and
    ``spark.app.id``), else the commit report's for the same table and snapshot; the parent snapshot is the one
    of the row whose metadata file this commit replaced."""
    import orjson

    rows = list(timeline_rows)
    reported: dict[tuple[str, int], dict[str, Any]] = {
        (r["table_uuid"], int(r["snapshot_id"])): r for r in report_rows
        if r["report_type"] == "commit-report" and r["snapshot_id"] is not None}
    snapshot_at = {r["metadata_location"]: r["snapshot_id"] for r in rows}
    commits = []
    for row in rows:
        summary = _summary(row)
        report = reported.get((row["table_uuid"], row["snapshot_id"])) if row["snapshot_id"] is not None else None
        app_id = summary.get("app-id") or summary.get("spark.app.id") or (report or {}).get("app_id")
        engine = summary.get("engine-name") or (report or {}).get("engine_name")
        try:
            details = orjson.loads(row.get("source_details") or "{}")
        except orjson.JSONDecodeError:
            details = {}
        commits.append(Commit(
            receipt_key=row["receipt_key"],
            table=TableRef(row["table_uuid"], row["catalog"], tuple(row["namespace"] or ()), row["table_name"]),
            snapshot_id=row["snapshot_id"], parent_snapshot_id=snapshot_at.get(row["previous_metadata_location"]),
            at_ms=_epoch_ms(row["committed_at"]), operation=row["operation"],
            source_kind=str(row["source_kind"] or "iceberg_rest"), app_id=app_id, engine=engine,
            run_id=details.get("run_id") if isinstance(details, dict) else None))
    return commits


# -- walking the graph (for the lineage endpoint) ---------------------------------------------------------------

MAX_DEPTH = 10
DIRECTIONS = ("upstream", "downstream", "both")


def walk(edge_rows: Iterable[dict[str, Any]], start: str, direction: str, depth: int,
         may_see: Any = lambda uuid: True) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """The tables within ``depth`` edges of ``start`` (by uuid) in ``direction``, and the edges between them.

    Returns ``({uuid: hops}, edges)``. A table ``may_see(uuid)`` refuses is reached but not walked through: what
    lies beyond a table the caller cannot see is not theirs to learn from its lineage."""
    upstream: dict[str, list[dict[str, Any]]] = {}
    downstream: dict[str, list[dict[str, Any]]] = {}
    for edge in edge_rows:
        upstream.setdefault(edge["target_uuid"], []).append(edge)
        downstream.setdefault(edge["source_uuid"], []).append(edge)
    hops = {start: 0}
    found: dict[int, dict[str, Any]] = {}
    frontier = [start]
    for level in range(1, depth + 1):
        following: list[str] = []
        for uuid in frontier:
            steps = []
            if direction in ("upstream", "both"):
                steps += [(e, e["source_uuid"]) for e in upstream.get(uuid, [])]
            if direction in ("downstream", "both"):
                steps += [(e, e["target_uuid"]) for e in downstream.get(uuid, [])]
            for edge, other in steps:
                found[id(edge)] = edge
                if other not in hops:
                    hops[other] = level
                    if may_see(other):
                        following.append(other)
        frontier = following
    ordered = sorted(found.values(), key=lambda e: (e["observed_at"], e["source_uuid"], e["target_uuid"],
                                                     e["source_snapshot_id"] or 0, e["target_snapshot_id"] or 0))
    return hops, ordered
