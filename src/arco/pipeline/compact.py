"""``arco pipeline compact``: committed receipts and run records into Parquet history, plus the schema projection.

    _catalog/history/timeline/batch=<id>/part-<n>.parquet   one row per committed Iceberg metadata version
    _catalog/history/audit/batch=<id>/part-<n>.parquet      one row per Tier 1 catalog mutation
    _catalog/history/runs/batch=<id>/part-<n>.parquet       one row per pipeline run (two for an amended one)
    _catalog/history/reports/batch=<id>/part-<n>.parquet    one row per engine scan/commit report (metrics)
    _catalog/history/lineage/batch=<id>/part-lineage.parquet  lineage edges into the batch's commits
    _catalog/core/snapshots/columns.parquet                 one row per column of each table's current schema
    _catalog/core/snapshots/tables.parquet                  one row per table (with its format tag)

(schemas: :mod:`arco.pipeline.rows`, :mod:`arco.pipeline.lineage`). Lineage is derived in the driver once the tasks
are done: the edges into the commits of this batch, from every report compacted so far (a scan is reported before
the commit that used it, so its report is in this batch or an earlier one). Incremental and idempotent: a receipt is
consumed once its key is in the ``receipt_key`` column of a committed batch (:mod:`arco.pipeline.checkpoint`), so a
re-run with nothing new writes nothing, and a run that crashes before committing its batch leaves files no reader
sees, which the next run removes. Spark spreads the receipts over tasks; each task reads its receipts and writes its
part files through the storage backend, so nothing assumes a disk shared between driver and executors. Only
committed receipts are read (section 4.4); pending ones are not listed. Once a batch is committed, the history is
published as the ``system`` catalog's Iceberg tables (:mod:`arco.pipeline.system_tables`); a failure there is
reported in the run and made good by the next run. A compact run's own row goes into its batch before it publishes,
so a run whose publication then failed writes its record as an amendment (:func:`arco.pipeline.runs.amended_run_key`),
which the next run compacts: the history then holds the run's row as written with its batch and, later, its final
one (same ``run_id``, later ``ended_at``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from uuid6 import uuid7

from arco.catalog.store import CatalogStore
from arco.events.receipts import EVENTS
from arco.iceberg.metadata_files import MetadataFiles
from arco.iceberg.pointer import PointerStore
from arco.pipeline import lineage, rows, system_tables
from arco.pipeline.checkpoint import (
    ALL_KINDS,
    HISTORY,
    CompactState,
    batch_prefix,
    commit_batch,
    compacted_receipt_keys,
    load_state,
)
from arco.pipeline.parquet_io import read_many, read_parquet, write_rows
from arco.pipeline.runs import RUNS_PREFIX, Run, run_key
from arco.pipeline.storage_spec import StorageSpec
from arco.storage.base import StorageBackend

PROJECTION = "_catalog/core/snapshots"
RECEIPTS_PER_TASK = 5_000
DAY_MS = 24 * 3600 * 1000
SCHEMAS = rows.SCHEMAS_BY_KIND


@dataclass
class Plan:
    new: list[str]  # receipt keys not yet consumed, in a stable order
    # Part files no committed batch lists: a crashed run's, or those of a run still going (its commit point is
    # ahead). Never deleted here: gc deletes them once they are days old (gc_rules' orphan age), when no run can
    # still be writing them.
    uncommitted_files: list[str] = field(default_factory=list)


def kind_of(key: str) -> str | None:
    """Which history a listed key feeds, or None (pending receipts and anything else are not compacted)."""
    if key.startswith(RUNS_PREFIX) and key.endswith(".json"):
        return "runs"
    parts = key.split("/")
    if len(parts) == 5 and key.startswith(f"{EVENTS}/") and parts[3] == "metrics" and key.endswith(".json"):
        return "reports"  # written once when received (arco.iceberg.routes): nothing pending about them
    if len(parts) == 6 and key.startswith(f"{EVENTS}/") and parts[4] == "committed" and key.endswith(".json"):
        return {"iceberg": "timeline", "catalog": "audit", "sharing": "audit"}.get(parts[3])
    return None


def plan(storage: StorageBackend, state: CompactState) -> Plan:
    consumed = compacted_receipt_keys(storage, state)
    listed = [m.key for m in storage.list(f"{EVENTS}/")] + [m.key for m in storage.list(RUNS_PREFIX)]
    new = sorted(k for k in listed if kind_of(k) and k not in consumed)
    committed_files = {f for kind in ALL_KINDS for f in state.files(kind)}
    uncommitted = [m.key for m in storage.list(f"{HISTORY}/") if m.key not in committed_files]
    return Plan(new, uncommitted)


def _receipt_day_ms(key: str) -> int | None:
    try:
        day = datetime.strptime(key.split("/")[2], "%Y-%m-%d").replace(tzinfo=UTC)
    except (IndexError, ValueError):
        return None
    return int(day.timestamp() * 1000)


def clock_skewed(happened_ms: int, day_ms: int, now_ms: float) -> bool:
    """More than half a day outside the day its folder names, or more than a day in the future."""
    outside_its_day = not day_ms - DAY_MS / 2 <= happened_ms <= day_ms + DAY_MS + DAY_MS / 2
    return outside_its_day or happened_ms > now_ms + DAY_MS


def compact_partition(spec: StorageSpec, batch_id: str, live_tables: set[str], index: int,
                      keys: Iterator[str]) -> Iterator[dict[str, Any]]:
    """One Spark task: read receipts, build rows, write one part file per history kind. Returns a summary."""
    storage = spec.open()
    built: dict[str, list[dict[str, Any]]] = {kind: [] for kind in ALL_KINDS if kind != "lineage"}
    bad: list[str] = []
    skewed = dropped = 0
    now_ms = time.time() * 1000
    for key in keys:
        kind = kind_of(key)
        try:
            event = rows.parse_json(storage.get(key).data)
            if kind == "timeline":
                row = rows.timeline_row(key, event, live_tables)
                dropped += row["table_dropped"]
                happened_ms = event.get("last_updated_ms")
            elif kind == "audit" and event.get("event_type") == rows.SHARING_READ:
                row = rows.sharing_read_row(key, event)
                happened_ms = event.get("at_ms")
            elif kind == "audit":
                row = rows.audit_row(key, event)
                happened_ms = event.get("at_ms")
            elif kind == "reports":
                try:
                    row = lineage.report_row(key, event)
                except (KeyError, TypeError, ValueError, OverflowError) as exc:
                    raise rows.BadReceipt(f"incomplete metrics report ({exc!r})") from None
                happened_ms = event.get("received_at_ms")
            else:
                row = rows.run_row(key, event)
                happened_ms = None
        except rows.BadReceipt as exc:
            bad.append(f"{key}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - one unreadable receipt never fails the run
            bad.append(f"{key}: unreadable ({exc})")
            continue
        day_ms = _receipt_day_ms(key) if kind != "runs" else None
        if happened_ms is not None and day_ms is not None and clock_skewed(int(happened_ms), day_ms, now_ms):
            skewed += 1  # the clock of whoever wrote it disagrees with its day folder; kept, and reported
        built[kind].append(row)  # type: ignore[index]
    files: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for kind, kind_rows in built.items():
        if kind_rows:
            key = f"{batch_prefix(kind, batch_id)}part-{index:05d}.parquet"
            counts[kind] = write_rows(storage, key, kind_rows, SCHEMAS[kind])
            files[kind] = [key]
    yield {"files": files, "counts": counts, "bad": bad, "skewed": skewed, "dropped": dropped}


def projection(storage: StorageBackend) -> tuple[int, int, int]:
    """Rewrite ``columns.parquet`` and ``tables.parquet`` from the current pointers (whole: they are small).

    Returns the rows written to each, and how many tables were left out because their metadata is unreadable."""
    store = CatalogStore(storage)
    files, pointers = MetadataFiles(storage), PointerStore(storage)
    column_rows: list[dict[str, Any]] = []
    table_rows: list[dict[str, Any]] = []
    unreadable = 0
    with store.read() as state:
        entries = [(t, state.catalogs[t.catalog_id].name) for t in state.tables.values()]
    for entry, catalog in sorted(entries, key=lambda item: item[0].id):
        identifier = {"catalog": catalog, "namespace": list(entry.namespace), "name": entry.name}
        table_rows.append({"table_uuid": entry.id, "catalog": catalog, "namespace": list(entry.namespace),
                           "table_name": entry.name, "kind": entry.kind, "format": entry.format,
                           "location": entry.location, "owner": entry.owner})
        if entry.format != "ICEBERG" or entry.kind == "VIEW":  # a view's metadata has no table schema history
            continue
        pointer = pointers.load(entry.id)
        if pointer is None or pointer.pointer.dropped:
            continue
        location = pointer.pointer.current_metadata_location
        try:
            metadata = files.read(location)
        except Exception:  # noqa: BLE001 - an unreadable table has no projection until it is readable again
            unreadable += 1
            continue
        column_rows += rows.column_rows(entry.id, identifier, location, metadata.schema())
    write_rows(storage, f"{PROJECTION}/columns.parquet", column_rows, rows.COLUMNS)
    write_rows(storage, f"{PROJECTION}/tables.parquet", table_rows, rows.TABLES)
    return len(column_rows), len(table_rows), unreadable


def live_table_ids(storage: StorageBackend) -> set[str]:
    with CatalogStore(storage).read() as state:
        return set(state.tables)


def run_compact(spark: Any, spec: StorageSpec, run: Run, progress: Any | None = None,
                publish: bool = True) -> dict[str, int]:
    """The job: plan, compact new receipts in Spark tasks, commit the batch, refresh the projection."""
    from arco.pipeline.session import spark_progress

    storage = spec.open()
    state = load_state(storage)
    work = plan(storage, state)
    run.count("uncommitted_files", len(work.uncommitted_files))
    run.count("receipts_new", len(work.new))
    if not work.new:
        if publish and state.batches:
            publish_system_tables(storage, state, run)  # completes a publication a failure left undone
        return run.counts
    batch_id = str(uuid7())
    slices = max(1, min(len(work.new) // RECEIPTS_PER_TASK + 1, spark.sparkContext.defaultParallelism * 4))
    live = spark.sparkContext.broadcast(live_table_ids(storage))
    rdd = spark.sparkContext.parallelize(work.new, slices)
    task = _Task(spec, batch_id, live)
    if progress is not None:
        with spark_progress(spark, progress, f"compacting {len(work.new):,} receipts in {slices} tasks"):
            summaries = rdd.mapPartitionsWithIndex(task).collect()
    else:
        summaries = rdd.mapPartitionsWithIndex(task).collect()
    files: dict[str, list[str]] = {kind: [] for kind in ALL_KINDS}
    for summary in summaries:
        for kind, keys in summary["files"].items():
            files[kind] += keys
        for kind, n in summary["counts"].items():
            run.count(f"{kind}_rows", n)
        run.errors += summary["bad"]
        run.count("receipts_skipped", len(summary["bad"]))
        run.count("clock_skewed", summary["skewed"])
        run.count("for_dropped_tables", summary["dropped"])
    if files["timeline"]:
        edges = lineage_edges(storage, state, files["timeline"], files["reports"])
        if edges:
            key = f"{batch_prefix('lineage', batch_id)}part-lineage.parquet"
            run.count("lineage_rows", write_rows(storage, key, edges, rows.SCHEMAS_BY_KIND["lineage"]))
            files["lineage"].append(key)
    if any(files.values()):
        # The run's own record goes into its batch, so the next run has nothing new to find in it.
        own = f"{batch_prefix('runs', batch_id)}part-self.parquet"
        write_rows(storage, own, [rows.run_row(run_key(run.run_id), run.record("succeeded"))], rows.RUNS)
        files["runs"].append(own)
        # The projection first: it is a picture of the current pointers, right whether or not the commit lands.
        columns, tables, unreadable = projection(storage)
        run.count("projection_columns", columns)
        run.count("projection_tables", tables)
        if unreadable:
            run.count("tables_with_unreadable_metadata", unreadable)
            run.errors.append(f"{unreadable} table(s) left out of the column projection: metadata unreadable")
        own = system_tables.system_only(
            read_many(storage, files["timeline"], rows.TIMELINE, columns=["catalog"]).to_pylist(),
            read_many(storage, files["audit"], rows.AUDIT, columns=["principal"]).to_pylist(),
            read_many(storage, files["runs"], rows.RUNS, columns=["job"]).to_pylist(),
            sum(summary["counts"].get("reports", 0) for summary in summaries), len(files["lineage"]))
        state = commit_batch(storage, state, {"batch_id": batch_id, "run_id": run.run_id, "system_only": own,
                                              "files": {k: sorted(v) for k, v in files.items() if v}})
        if publish:
            publish_system_tables(storage, state, run)
    elif publish and state.batches:
        publish_system_tables(storage, state, run)  # nothing compacted (only bad receipts): as with nothing new
    return run.counts


def publish_system_tables(storage: StorageBackend, state: CompactState, run: Run) -> None:
    """After the commit point: a failure leaves the history compacted, and the next run publishes it."""
    try:
        system_tables.publish(storage, state, run)
    except Exception as exc:  # noqa: BLE001 - reported in the run record; the compaction itself succeeded
        run.count("system_tables_failed")
        run.errors.append(f"system tables not published (the next run tries again): {str(exc)[:500]}")


_COMMIT_COLUMNS = ["receipt_key", "table_uuid", "catalog", "namespace", "table_name", "metadata_location",
                   "previous_metadata_location", "snapshot_id", "operation", "summary", "source_kind",
                   "source_details", "committed_at"]


def lineage_edges(storage: StorageBackend, state: CompactState, new_timeline: list[str],
                  new_reports: list[str]) -> list[dict[str, Any]]:
    """The edges into the commits in ``new_timeline`` (this batch's timeline files), from the reports and commits
    compacted so far and in this batch that can bear on them (:mod:`arco.pipeline.lineage`): those within the
    window before the earliest new commit, and the versions the new commits replaced (their parent snapshots). The
    rest of the history is read a file at a time and dropped, so a run's memory follows its batch and the window,
    not the history (the whole history held as Python rows cost ~3.7 KB a past commit)."""
    new_rows = read_many(storage, new_timeline, rows.TIMELINE, columns=_COMMIT_COLUMNS).to_pylist()
    if not new_rows:
        return []
    earliest = min(r["committed_at"] for r in new_rows)
    since = pa.scalar(earliest - timedelta(milliseconds=lineage.WINDOW_MS + 1), pa.timestamp("ms", tz="UTC"))
    parents = pa.array(sorted({r["previous_metadata_location"] for r in new_rows if r["previous_metadata_location"]}),
                       pa.string())
    old_rows = _rows_where(storage, state.files("timeline"), _COMMIT_COLUMNS, lambda t: pc.or_(
        pc.greater_equal(t["committed_at"], since), pc.is_in(t["metadata_location"], value_set=parents)))
    reports = [*_rows_where(storage, state.files("reports"), None,
                            lambda t: pc.greater_equal(t["received_at"], since)),
               *read_many(storage, new_reports, rows.SCHEMAS_BY_KIND["reports"]).to_pylist()]
    commits = lineage.commits_of([*old_rows, *new_rows], reports)
    new_keys = {r["receipt_key"] for r in new_rows}
    return lineage.edges([c for c in commits if c.receipt_key in new_keys], commits, lineage.scans_of(reports))


def _rows_where(storage: StorageBackend, keys: list[str], columns: list[str] | None,
                keep: Callable[[pa.Table], pa.Array]) -> list[dict[str, Any]]:
    """The rows ``keep`` chooses from each Parquet file, one file in memory at a time."""
    kept: list[dict[str, Any]] = []
    for key in keys:
        table = read_parquet(storage, key, columns)
        kept.extend(table.filter(keep(table)).to_pylist())
    return kept


class _Task:
    """The per-partition function, as a picklable object (Spark ships it to executors)."""

    def __init__(self, spec: StorageSpec, batch_id: str, live: Any) -> None:
        self.spec, self.batch_id, self.live = spec, batch_id, live

    def __call__(self, index: int, keys: Iterator[str]) -> Iterator[dict[str, Any]]:
        return compact_partition(self.spec, self.batch_id, self.live.value, index, keys)
