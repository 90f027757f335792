"""Scan planning with PyIceberg's own machinery: manifests pruned by partition summaries, entries by partition
and column metrics, position deletes matched by PyIceberg's ``DeleteFileIndex`` and residuals by its residual
evaluators, so the served file set is the one ``table.scan(...).plan_files()`` gives. Equality deletes, which
PyIceberg refuses to plan, are matched here by the table spec's rule (a delete applies to data files of smaller
data sequence number, in the same partition unless the delete file's spec is unpartitioned).

:func:`prepare` checks a request against the table (snapshots, filter, field names: 400 when wrong) cheaply;
:func:`plan` then reads the manifests, and runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain
from typing import Any

from pyiceberg.io import FileIO, load_file_io
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.schema import Schema
from pyiceberg.table import INITIAL_SEQUENCE_NUMBER, ManifestGroupPlanner, Operation
from pyiceberg.table.delete_file_index import DeleteFileIndex
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot, ancestors_between_ids

from arco.iceberg.errors import BadRequest, Forbidden
from arco.iceberg.planning import ScanRequest, bind_filter, field_ids
from arco.iceberg.scan_tasks import PlannedTask
from arco.storage.urls import file_under

Cancelled = Callable[[], bool]


@dataclass(frozen=True)
class PreparedScan:
    """A request checked against one table version: what to plan, with which schema."""

    request: ScanRequest
    metadata: TableMetadata  # with the schema the scan binds to as its current schema
    schema: Schema
    snapshot: Snapshot | None  # the point-in-time snapshot, or the incremental scan's end
    start_snapshot_id: int | None
    stats_ids: tuple[int, ...] | None


def prepare(metadata: TableMetadata, request: ScanRequest) -> PreparedScan:
    """Check ``request`` against ``metadata``: snapshots that exist (and an incremental range along one line of
    ancestry), a filter, ``select`` and ``stats-fields`` that name fields of the scan's schema."""
    if request.incremental:
        end = _snapshot(metadata, request.end_snapshot_id, "end-snapshot-id") if request.end_snapshot_id \
            is not None else metadata.current_snapshot()
        start = request.start_snapshot_id
        if start is not None:
            _snapshot(metadata, start, "start-snapshot-id")
            if end is None or not _is_ancestor(metadata, start, end.snapshot_id):
                raise BadRequest(f"start-snapshot-id {start} is not an ancestor of end-snapshot-id "
                                 f"{end.snapshot_id if end else None}")
        snapshot = end
    elif request.snapshot_id is not None:
        snapshot = _snapshot(metadata, request.snapshot_id, "snapshot-id")
    else:
        snapshot = metadata.current_snapshot()
    schema = metadata.schema()
    if request.use_snapshot_schema and snapshot is not None and snapshot.schema_id is not None:
        schema = next((s for s in metadata.schemas if s.schema_id == snapshot.schema_id), schema)
        metadata = metadata.model_copy(update={"current_schema_id": schema.schema_id})
    bind_filter(request.filter, schema, request.case_sensitive)
    if request.select is not None:
        field_ids(schema, request.select, request.case_sensitive, "select")
    stats = None
    if request.stats_fields is not None:
        stats = tuple(field_ids(schema, request.stats_fields, request.case_sensitive, "stats-fields"))
    return PreparedScan(request, metadata, schema, snapshot, request.start_snapshot_id, stats)


def _snapshot(metadata: TableMetadata, snapshot_id: int, what: str) -> Snapshot:
    snapshot = metadata.snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise BadRequest(f"{what}: the table has no snapshot {snapshot_id}")
    return snapshot


def _is_ancestor(metadata: TableMetadata, ancestor: int, of: int) -> bool:
    current = metadata.snapshot_by_id(of)
    while current is not None:
        if current.snapshot_id == ancestor:
            return True
        current = metadata.snapshot_by_id(current.parent_snapshot_id) if current.parent_snapshot_id else None
    return False


_io_lock = threading.Lock()
_io_cache: dict[tuple[str, tuple[tuple[str, str], ...]], FileIO] = {}


def file_io(location: str, options: dict[str, str]) -> FileIO:
    """The server's own FileIO for a table (its storage options): one per scheme and options, reused."""
    scheme = location.split("://", 1)[0] if "://" in location else "file"
    key = (scheme, tuple(sorted(options.items())))
    with _io_lock:
        io = _io_cache.get(key)
        if io is None:
            io = _io_cache[key] = load_file_io(dict(options), location)
        return io


def _snapshot_manifests(scan: PreparedScan, snapshot: Snapshot, io: FileIO) -> list[ManifestFile]:
    """The snapshot's manifests, if each lies inside the table's location. A commit checks that a snapshot's
    manifest list does; the manifests that list names are the writer's choice, and one of another table's would
    have this plan answer that table's file paths and column bounds (its values): refused before any is read."""
    found = snapshot.manifests(io)
    if not all(file_under(m.manifest_path, scan.metadata.location) for m in found):
        raise Forbidden(f"snapshot {snapshot.snapshot_id} names a manifest outside the table's location: it is not "
                        "planned")
    return list(found)


def manifests(scan: PreparedScan, io: FileIO) -> list[ManifestFile]:
    """The manifests the scan reads (how big the job is: the sync/async decision counts them)."""
    if scan.snapshot is None:
        return []
    if not scan.request.incremental:
        return _snapshot_manifests(scan, scan.snapshot, io)
    appends = _append_snapshot_ids(scan)
    return list({m for sid in appends for m in _snapshot_manifests(scan, _by_id(scan, sid), io)
                 if m.content == ManifestContent.DATA and m.added_snapshot_id in appends})


def _append_snapshot_ids(scan: PreparedScan) -> set[int]:
    assert scan.snapshot is not None
    return {s.snapshot_id for s in ancestors_between_ids(from_snapshot_id_exclusive=scan.start_snapshot_id,
                                                         to_snapshot_id_inclusive=scan.snapshot.snapshot_id,
                                                         table_metadata=scan.metadata)
            if s.summary is not None and s.summary.operation == Operation.APPEND}


def _by_id(scan: PreparedScan, snapshot_id: int) -> Snapshot:
    snapshot = scan.metadata.snapshot_by_id(snapshot_id)
    assert snapshot is not None
    return snapshot


class Planner(ManifestGroupPlanner):
    """PyIceberg's planner, with equality deletes assigned instead of refused."""

    def tasks(self, manifest_files: Iterable[ManifestFile],
              entry_filter: Callable[[ManifestEntry], bool] | None = None,
              cancelled: Cancelled | None = None) -> list[PlannedTask]:
        data_entries: list[ManifestEntry] = []
        positions = DeleteFileIndex()
        equality: list[tuple[int, DataFile]] = []
        for seen, entry in enumerate(chain.from_iterable(self.plan_manifest_entries(manifest_files))):
            if cancelled is not None and seen % 1024 == 0 and cancelled():
                return []
            if entry_filter is not None and not entry_filter(entry):
                continue
            content = entry.data_file.content
            if content == DataFileContent.DATA:
                data_entries.append(entry)
            elif content == DataFileContent.POSITION_DELETES:
                positions.add_delete_file(entry, partition_key=entry.data_file.partition)
            elif content == DataFileContent.EQUALITY_DELETES:
                equality.append((entry.sequence_number or INITIAL_SEQUENCE_NUMBER, entry.data_file))
        if cancelled is not None and cancelled():
            return []
        evaluators: dict[int, Any] = {}
        residuals: dict[tuple[int, Any], Any] = {}  # one object per partition: serialized once per response
        unpartitioned = {sid for sid, spec in self.table_metadata.specs().items() if spec.is_unpartitioned()}
        out = []
        for entry in data_entries:
            data_file = entry.data_file
            seq = entry.sequence_number or INITIAL_SEQUENCE_NUMBER
            deletes = set(positions.for_data_file(seq, data_file, partition_key=data_file.partition))
            for delete_seq, delete in equality:
                if delete_seq > seq and ((delete.spec_id or 0) in unpartitioned or (
                        delete.spec_id == data_file.spec_id and delete.partition == data_file.partition)):
                    deletes.add(delete)
            spec_id = data_file.spec_id or 0
            residual = residuals.get((spec_id, data_file.partition))
            if residual is None:
                evaluator = evaluators.get(spec_id)
                if evaluator is None:
                    evaluator = evaluators[spec_id] = self._build_residual_evaluator(spec_id)(data_file)
                residual = residuals[(spec_id, data_file.partition)] = evaluator.residual_for(data_file.partition)
            out.append(PlannedTask(data_file, tuple(deletes), residual))
        return out


def plan(scan: PreparedScan, io: FileIO, cancelled: Cancelled | None = None) -> list[PlannedTask]:
    """The file scan tasks of a prepared scan (appended files only, without deletes, for an incremental one, as
    Iceberg's incremental append scans)."""
    if scan.snapshot is None:
        return []
    planner = Planner(table_metadata=scan.metadata, io=io, row_filter=scan.request.filter,
                      case_sensitive=scan.request.case_sensitive)
    if not scan.request.incremental:
        return planner.tasks(_snapshot_manifests(scan, scan.snapshot, io), cancelled=cancelled)
    appends = _append_snapshot_ids(scan)
    return planner.tasks(manifests(scan, io), cancelled=cancelled,
                         entry_filter=lambda e: e.snapshot_id in appends and e.status == ManifestEntryStatus.ADDED)
