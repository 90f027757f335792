"""``arco pipeline gc``: keep the warehouse's catalog files bounded (rules in :mod:`arco.pipeline.gc_rules`).

Per table, in Spark tasks: metadata files outside the table's history (orphans of lost or crashed commits, and
versions expired from the log of tables that ask for ``write.metadata.delete-after-commit.enabled``). In the
driver: idempotency markers, receipts, transaction records, group commit records, stale compaction files,
Tier 1's superseded snapshot files and covered log entries,
expired server-side scan plans, temporary files of interrupted writes, Delta Sharing's saved change data of
gone tables or expired versions, and the records of its expired asynchronous queries. ``--dry-run`` decides the
same way and deletes nothing. Users' data files are not touched here (orphan data files are ``maintain``'s).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import orjson

from arco.catalog import log as catalog_log
from arco.catalog import snapshots
from arco.catalog.locations import tables_sharing_storage
from arco.catalog.log import CatalogLog
from arco.catalog.model import TableEntry
from arco.catalog.store import CatalogStore
from arco.events.receipts import EVENTS
from arco.events.reconcile import iceberg_tables
from arco.iceberg.commit import landed_location
from arco.iceberg.file_names import metadata_folder, metadata_sequence
from arco.iceberg.group_commit import GROUPS, GroupRecord
from arco.iceberg.idempotency import Marker
from arco.iceberg.plan_store import PLANS, PlanRecord
from arco.iceberg.pointer import PointerStore
from arco.iceberg.tables import TableService
from arco.iceberg.transactions import TxnRecords
from arco.iceberg.views import view_landed_location
from arco.pipeline import gc_rules
from arco.pipeline.checkpoint import ALL_KINDS, HISTORY, compacted_receipt_keys, load_state
from arco.pipeline.gc_rules import Deletion, GcPolicy
from arco.pipeline.parquet_io import read_many
from arco.pipeline.rows import SCHEMAS_BY_KIND
from arco.pipeline.runs import RUNS_PREFIX, Run
from arco.pipeline.storage_spec import StorageSpec
from arco.sharing.async_queries import QUERIES
from arco.storage.base import MatchesVersion, StorageBackend

MARKERS = "_catalog/iceberg_idempotency/"
TXNS = "_catalog/iceberg_txns/"


def table_deletions(spec: StorageSpec, known_commit_keys: set[str], policy: GcPolicy, now: float,
                    tables: Iterator[dict[str, Any]]) -> Iterator[dict[str, str]]:
    """One Spark task: the metadata files of its tables that may go."""
    storage = spec.open()
    service = TableService(CatalogStore(storage), storage)
    for raw in tables:
        entry = TableEntry(**{**raw, "namespace": tuple(raw["namespace"])})
        pointer = service.resolver.for_read(entry.id)
        if pointer is None or pointer.pointer.dropped:
            continue  # a dropped table's files are its owner's (or the purge's) to remove
        current = pointer.pointer.current_metadata_location
        try:
            metadata = service.files.read(current)
        except Exception:  # noqa: BLE001 - without a readable current file nothing of this table is judged
            continue
        in_history = {service.files.key_of(current)}
        for log_entry in metadata.metadata_log:
            try:
                in_history.add(service.files.key_of(log_entry.metadata_file))
            except Exception:  # noqa: BLE001 - a registered table's old files may live elsewhere
                continue
        # The default folder, and write.metadata.path's if it is set (files written before it was set stay behind).
        folders = {metadata_folder(entry.location, {}), metadata_folder(entry.location, metadata.properties)}
        files = {m.key: now - m.modified_at for folder in sorted(folders)
                 for m in storage.list(service.files.key_of(folder) + "/") if m.key.endswith(".metadata.json")}
        known = {key for key in files if _commit_key(storage.location_of(key)) in known_commit_keys}
        delete_after = metadata.properties.get("write.metadata.delete-after-commit.enabled", "false") == "true"
        for deletion in gc_rules.table_metadata(files, in_history, known, delete_after, policy,
                                                metadata_sequence(current)):
            if _written_for(storage, deletion.key, str(metadata.table_uuid)):
                yield asdict(deletion)


def _written_for(storage: StorageBackend, key: str, table_uuid: str) -> bool:
    """Whether a metadata file in a table's folder is that table's: a table dropped without purge may have left its
    files where a new one was made (an external location used again); those are not the new table's to delete.
    An unreadable file is no table's, and stays: a person looks at it."""
    found = storage.get_or_none(key)
    if found is None:
        return False
    try:
        return str(orjson.loads(found.data).get("table-uuid")) == table_uuid
    except (orjson.JSONDecodeError, AttributeError):
        return False


def _commit_key(location: str) -> str:
    return hashlib.sha256(location.encode()).hexdigest()


def known_commit_keys(storage: StorageBackend) -> set[str]:
    """Commit keys of every metadata file that was ever a table version: committed receipts and the timeline."""
    # A group commit's members after the first have receipts named {commit_key}-{member}.json.
    keys = {m.key.rsplit("/", 1)[-1][:-5].split("-", 1)[0] for m in storage.list(f"{EVENTS}/")
            if "/iceberg/committed/" in m.key}
    state = load_state(storage)
    timeline = read_many(storage, state.files("timeline"), SCHEMAS_BY_KIND["timeline"], columns=["commit_key"])
    keys.update(timeline.column("commit_key").to_pylist())
    return keys


def marker_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    service = TableService(CatalogStore(storage), storage)
    chosen = []
    for meta in storage.list(MARKERS):
        if not gc_rules.marker_may_be_due(now - meta.modified_at, policy):
            continue
        found = storage.get_or_none(meta.key)
        if found is None:
            continue
        try:
            marker = Marker.from_bytes(found.data)
        except Exception:  # noqa: BLE001 - an unreadable marker is left for a person to look at
            continue
        if marker.status != "IN_PROGRESS":
            decision = gc_rules.finished_marker(meta.key, now - (marker.finished_at_ms or 0) / 1000, policy)
        else:
            age = now - marker.started_at_ms / 1000
            if age <= policy.in_progress_timeout_s + policy.grace_s:
                continue
            decision = gc_rules.stale_in_progress_marker(meta.key, age, _landed(service, meta.key, marker), policy)
        if decision is not None:
            chosen.append(decision)
    return chosen


def _landed(service: TableService, key: str, marker: Marker) -> bool:
    scope = key[len(MARKERS):].split("/", 1)[0]
    if marker.subject is not None:  # a commit's (or a view replace's): its change lands in that object's history
        if marker.operation == "replaceView":
            return view_landed_location(service.pointers, marker.subject, marker.hashed_key) is not None
        return landed_location(service, marker.subject, marker.hashed_key) is not None
    if scope.startswith("catalog-"):
        return service.store.find_request(marker.tier1_seq or 0, marker.hashed_key) is not None
    return landed_location(service, scope, marker.hashed_key) is not None


def receipt_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    state = load_state(storage)
    compacted = compacted_receipt_keys(storage, state)
    chosen = []
    for meta in storage.list(f"{EVENTS}/"):
        parts = meta.key.split("/")
        kind = parts[4] if len(parts) == 6 else None
        if kind in ("pending", "committed"):
            decision = gc_rules.receipt(meta.key, kind, now - meta.modified_at, meta.key in compacted, policy)
        elif len(parts) == 5 and parts[3] == "metrics" and meta.key.endswith(".json"):
            decision = gc_rules.compacted_record(meta.key, "engine metrics report", now - meta.modified_at,
                                                 meta.key in compacted, policy.compacted_report_age_s)
        else:
            decision = None
        if decision is not None:
            chosen.append(decision)
    for meta in storage.list(RUNS_PREFIX):
        decision = gc_rules.compacted_record(meta.key, "pipeline run record", now - meta.modified_at,
                                             meta.key in compacted, policy.committed_receipt_age_s)
        if decision is not None:
            chosen.append(decision)
    committed_files = {f for kind in ALL_KINDS for f in state.files(kind)}
    for meta in storage.list(f"{HISTORY}/"):
        if meta.key not in committed_files and now - meta.modified_at > policy.orphan_metadata_age_s:
            chosen.append(Deletion(meta.key, "compaction output of a run that never committed"))
    return chosen


def group_record_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    """Group records (:mod:`arco.iceberg.group_commit`) whose metadata file is not in its table's history."""
    service = TableService(CatalogStore(storage), storage)
    histories: dict[str, set[str] | None] = {}
    chosen = []
    for meta in storage.list(f"{GROUPS}/"):
        age = now - meta.modified_at
        if age <= policy.orphan_metadata_age_s:
            continue
        table_uuid = meta.key[len(GROUPS) + 1:].split("/", 1)[0]
        if table_uuid not in histories:
            histories[table_uuid] = _history_of(service, table_uuid)
        history = histories[table_uuid]
        if history is None:
            continue  # unreadable: judged on a later run
        found = storage.get_or_none(meta.key)
        if found is None:
            continue
        try:
            location = GroupRecord.from_bytes(found.data).metadata_location
        except Exception:  # noqa: BLE001 - an unreadable record is left for a person to look at
            continue
        decision = gc_rules.group_record(meta.key, age, location in history, policy)
        if decision is not None:
            chosen.append(decision)
    return chosen


def _history_of(service: TableService, table_uuid: str) -> set[str] | None:
    """The metadata locations of a table's history (empty for a missing or dropped table), None if unreadable."""
    pointer = service.resolver.for_read(table_uuid)
    if pointer is None or pointer.pointer.dropped:
        return set()
    current = pointer.pointer.current_metadata_location
    try:
        metadata = service.files.read(current)
    except Exception:  # noqa: BLE001 - without a readable current file nothing of this table is judged
        return None
    return {current, *(entry.metadata_file for entry in metadata.metadata_log)}


def txn_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    records, pointers = TxnRecords(storage), PointerStore(storage)
    chosen = []
    for meta in storage.list(TXNS):
        if not gc_rules.txn_record_may_be_due(now - meta.modified_at, policy):
            continue  # not read: no rule deletes a record this young
        record = records.load(meta.key[len(TXNS):-len(".json")])
        if record is None:
            continue
        referenced = any((p := pointers.load(t)) is not None and p.pointer.pending_txn == record.txn_id
                         for t in record.tables)
        decision = gc_rules.txn_record(meta.key, record.state, now - meta.modified_at, referenced, policy)
        if decision is not None:
            chosen.append(decision)
    return chosen


def plan_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    """Server-side scan plans past their expiry, and task files no plan record names."""
    plans: dict[str, dict[str, float]] = {}
    for meta in storage.list(PLANS):
        plan_id = meta.key[len(PLANS):].split("/", 1)[0]
        plans.setdefault(plan_id, {})[meta.key] = now - meta.modified_at
    chosen = []
    for plan_id, objects in plans.items():
        record_key = f"{PLANS}{plan_id}/plan.json"
        expires_at_ms = None
        if record_key in objects:
            found = storage.get_or_none(record_key)
            if found is None:
                continue  # deleted meanwhile (a fetch found it expired)
            try:
                expires_at_ms = PlanRecord.from_bytes(found.data).expires_at_ms
            except Exception:  # noqa: BLE001 - an unreadable record is left for a person to look at
                expires_at_ms = None
        chosen += gc_rules.scan_plan(objects, record_key in objects, expires_at_ms, now, policy)
    return chosen


SHARING_CDF = "_catalog/sharing/cdf/"


def sharing_cdf_deletions(storage: StorageBackend, options: dict[str, str], policy: GcPolicy,
                          now: float) -> list[Deletion]:
    """Delta Sharing's saved change data (``_catalog/sharing/cdf/<table id>/<version>.parquet``) of tables that
    are gone or of versions the table's log no longer has."""
    files: dict[str, list[tuple[str, int, float]]] = {}
    for meta in storage.list(SHARING_CDF):
        table_id, _, name = meta.key[len(SHARING_CDF):].partition("/")
        try:
            version = int(name.removesuffix(".parquet"))
        except ValueError:
            continue  # not a file the server wrote: leave it to a person
        files.setdefault(table_id, []).append((meta.key, version, now - meta.modified_at))
    if not files:
        return []
    with CatalogStore(storage).read() as state:
        tables = {table_id: state.tables.get(table_id) for table_id in files}
    chosen = []
    for table_id, found in files.items():
        entry = tables[table_id]
        oldest = _oldest_delta_version(entry.location, options) if entry is not None else None
        for key, version, age_s in found:
            decision = gc_rules.sharing_cdf(key, age_s, version, entry is not None, oldest, policy)
            if decision is not None:
                chosen.append(decision)
    return chosen


def sharing_query_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    """Records of asynchronous Delta Sharing queries past their lifetime (``_catalog/sharing/queries/``)."""
    return [d for meta in storage.list(QUERIES)
            if (d := gc_rules.sharing_query(meta.key, now - meta.modified_at, policy)) is not None]


def _oldest_delta_version(location: str, options: dict[str, str]) -> int | None:
    """The oldest version still in a Delta table's log; None if it cannot be read (then nothing is deleted)."""
    from arco.sharing import delta_source

    try:
        versions = delta_source.commit_timestamps(delta_source.open_table(location, options))
    except delta_source.DeltaReadError:
        return None
    return min(versions) if versions else None


def tier1_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    """Tier 1's superseded snapshot roots, chunk and id-bucket files, and covered log entries
    (:func:`arco.pipeline.gc_rules.tier1_files`)."""
    log = CatalogLog(storage)
    newest = log.read_manifest().snapshot_seq
    if newest == 0:
        return []
    roots = _positions(storage, f"{catalog_log.CORE}/snapshots/", now)
    kept = gc_rules.tier1_kept_roots(roots, newest, policy)
    referenced: set[str] = set()
    for seq in kept:
        root = log.read_snapshot(seq)
        referenced |= {chunk["key"] for chunk in root.get("chunks", {}).values()}
        referenced |= set(root.get("ids", {}).get("buckets", {}).values())
    files = {meta.key: now - meta.modified_at
             for prefix in (snapshots.CHUNKS, snapshots.IDS) for meta in storage.list(f"{prefix}/")}
    entries = _positions(storage, f"{catalog_log.CORE}/log/", now)
    return gc_rules.tier1_files(kept, roots, referenced, files, entries, policy)


_POSITION_NAME = re.compile(r"(\d{20})\.json")  # a snapshot root or a log entry (not the Parquet projections)


def _positions(storage: StorageBackend, prefix: str, now: float) -> dict[int, float]:
    """The log positions named by the files directly under ``prefix``, with their ages."""
    found = {}
    for meta in storage.list(prefix):
        name = _POSITION_NAME.fullmatch(meta.key[len(prefix):])
        if name is not None:
            found[int(name.group(1))] = now - meta.modified_at
    return found


def temp_file_deletions(storage: StorageBackend, policy: GcPolicy, now: float) -> list[Deletion]:
    """Temporary files of interrupted writes (only a local warehouse has them: object stores write atomically)."""
    listing = getattr(storage, "temp_files", None)
    if listing is None:
        return []
    chosen = []
    for meta in listing():
        decision = gc_rules.temp_file(meta.key, now - meta.modified_at, policy)
        if decision is not None:
            chosen.append(decision)
    return chosen


def remove_temp_files(storage: StorageBackend, deletions: list[Deletion], policy: GcPolicy, now: float) -> int:
    """Remove the chosen temporary files that are still as old as when they were judged; how many went."""
    remove = getattr(storage, "remove_temp_file", None)
    if remove is None:
        return 0
    wanted = {d.key for d in deletions}
    removed = 0
    for meta in storage.temp_files():  # type: ignore[attr-defined]
        if meta.key in wanted and gc_rules.temp_file(meta.key, now - meta.modified_at, policy) is not None:
            removed += bool(remove(meta.key, meta.version))
    return removed


def run_gc(spark: Any, spec: StorageSpec, run: Run, policy: GcPolicy, *, dry_run: bool, now: float | None = None,
           progress: Any | None = None) -> list[Deletion]:
    from arco.pipeline.session import spark_progress

    now = time.time() if now is None else now
    storage = spec.open()
    entries = [entry for entry, _ in iceberg_tables(CatalogStore(storage))]
    shared = tables_sharing_storage(entries)
    for _ in shared:
        run.count("skipped: tables whose location overlaps another table's")
    tables = [asdict(entry) for entry in entries if entry.id not in shared]
    chosen: list[Deletion] = []
    if tables:
        known = spark.sparkContext.broadcast(known_commit_keys(storage))
        slices = max(1, min(len(tables), spark.sparkContext.defaultParallelism * 4))
        rdd = spark.sparkContext.parallelize(tables, slices).mapPartitions(_Task(spec, known, policy, now))
        if progress is not None:
            with spark_progress(spark, progress, f"checking the metadata of {len(tables):,} tables"):
                found = rdd.collect()
        else:
            found = rdd.collect()
        chosen += [Deletion(**d) for d in found]
    chosen += marker_deletions(storage, policy, now)
    chosen += receipt_deletions(storage, policy, now)
    chosen += txn_deletions(storage, policy, now)
    chosen += plan_deletions(storage, policy, now)
    chosen += group_record_deletions(storage, policy, now)
    chosen += sharing_cdf_deletions(storage, spec.options, policy, now)
    chosen += sharing_query_deletions(storage, policy, now)
    chosen += tier1_deletions(storage, policy, now)
    temp = temp_file_deletions(storage, policy, now)
    for deletion in chosen + temp:
        run.count(("would delete: " if dry_run else "deleted: ") + deletion.reason.split(" (")[0])
    if not dry_run:
        for deletion in chosen:
            _delete(storage, deletion.key)
        remove_temp_files(storage, temp, policy, now)
    return chosen + temp


def _delete(storage: StorageBackend, key: str) -> None:
    found = storage.head(key)
    if found is not None:
        storage.delete(key, MatchesVersion(found.version))  # not if it was rewritten since it was judged


class _Task:
    def __init__(self, spec: StorageSpec, known: Any, policy: GcPolicy, now: float) -> None:
        self.spec, self.known, self.policy, self.now = spec, known, policy, now

    def __call__(self, tables: Iterator[dict[str, Any]]) -> Iterator[dict[str, str]]:
        return table_deletions(self.spec, self.known.value, self.policy, self.now, tables)


def describe(deletions: list[Deletion]) -> list[str]:
    return [f"{d.key}\t{d.reason}" for d in sorted(deletions, key=lambda d: (d.reason, d.key))]
