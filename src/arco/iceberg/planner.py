"""Scan planning with PyIceberg's own machinery: manifests pruned by partition summaries, entries by partition
and column metrics, position deletes matched by the rules of its ``DeleteFileIndex`` (:class:`PositionDeletes`,
which keeps a Puffin file's deletion vectors apart) and residuals by its residual evaluators, so the served file
set is the one ``table.scan(...).plan_files()`` gives (a v3 table's manifests read whole). Equality deletes, which
PyIceberg refuses to plan, are matched here by the table spec's rule (a delete applies to data files of smaller
data sequence number, in the same partition unless the delete file's spec is unpartitioned).

:func:`prepare` checks a request against the table (snapshots, filter, field names: 400 when wrong) cheaply;
:func:`plan` then reads the manifests, and runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

from pyiceberg.avro.file import AvroFile
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.manifest import (
    MANIFEST_ENTRY_SCHEMAS,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
    _inherit_from_manifest,
)
from pyiceberg.schema import Schema
from pyiceberg.table import INITIAL_SEQUENCE_NUMBER, ManifestGroupPlanner, Operation, _min_sequence_number
from pyiceberg.table.delete_file_index import _applies_to_data_file, _partition_key, _referenced_data_file_path
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot, ancestors_between_ids
from pyiceberg.typedef import KeyDefaultDict
from pyiceberg.utils.concurrent import ExecutorFactory

from arco.iceberg.errors import BadRequest, Forbidden
from arco.iceberg.planning import ScanRequest, bind_filter, field_ids
from arco.iceberg.scan_tasks import V3_POSITIONS, PlannedTask, referenced_data_file
from arco.lru import Lru
from arco.storage.base import StorageBackend
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
            # A parent ancestor, as in the reference implementation: the start is exclusive, so start = end
            # would name no snapshot at all.
            if end is None or start == end.snapshot_id or not _is_ancestor(metadata, start, end.snapshot_id):
                raise BadRequest(f"start-snapshot-id {start} is not a parent ancestor of end-snapshot-id "
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


def server_io_options(storage: StorageBackend, options: dict[str, str]) -> dict[str, str]:
    """The FileIO properties of the server's own reads: what reaches its storage with its own credentials
    (:meth:`StorageBackend.fileio_properties`), under the storage options the operator gave."""
    return {**storage.fileio_properties(), **options}


def file_io(location: str, options: dict[str, str]) -> FileIO:
    """The server's own FileIO for a table (:func:`server_io_options`): one per scheme and options, reused."""
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
    found = read_manifest_list(io, snapshot, scan.metadata.format_version)
    if not all(file_under(m.manifest_path, scan.metadata.location) for m in found):
        raise Forbidden(f"snapshot {snapshot.snapshot_id} names a manifest outside the table's location: it is not "
                        "planned")
    return found


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


# A v3 manifest list's manifests by the list's path (a manifest list is never rewritten); weighed at about 2 KB a
# manifest (its partition summaries included), so a table of very many manifests cannot hold the memory.
_v3_manifest_lists: Lru[str, tuple[ManifestFile, ...]] = Lru(128, budget=32 << 20,
                                                            weigh=lambda manifests: 2048 * len(manifests))
# Where field 520 (first_row_id) lies in a v3 manifest list's records.
_MANIFEST_FIRST_ROW_ID = [f.field_id for f in MANIFEST_LIST_FILE_SCHEMAS[3].fields].index(520)
_FILE_FIRST_ROW_ID = V3_POSITIONS["first-row-id"]


def read_manifest_list(io: FileIO, snapshot: Snapshot, format_version: int) -> list[ManifestFile]:
    """A snapshot's manifests; a v3 table's read with v3's schema, as PyIceberg 0.12 reads every manifest list
    with v2's, which drops a manifest's ``first_row_id`` (the start of the row ids its data files inherit)."""
    if format_version < 3:
        return list(snapshot.manifests(io))

    def load() -> tuple[ManifestFile, ...]:
        with AvroFile[ManifestFile](io.new_input(snapshot.manifest_list), MANIFEST_LIST_FILE_SCHEMAS[3],
                                    read_types={-1: ManifestFile, 508: PartitionFieldSummary},
                                    read_enums={517: ManifestContent}) as reader:
            return tuple(reader)

    found = _v3_manifest_lists.get_or_load(snapshot.manifest_list, load)
    assert found is not None
    return list(found)


def read_entries(io: FileIO, manifest: ManifestFile, format_version: int) -> list[ManifestEntry]:
    """A manifest's live entries, read with the table's format version's schema: PyIceberg 0.12 reads every
    manifest with v2's, which drops v3's fields (a deletion vector's data file, offset and size, a data file's
    first row id). Data files of a v3 data manifest inherit their first row ids (:func:`inherit_first_row_id`)."""
    inherits = format_version >= 3 and manifest.content == ManifestContent.DATA
    raw = manifest._data
    next_row_id = raw[_MANIFEST_FIRST_ROW_ID] if inherits and len(raw) > _MANIFEST_FIRST_ROW_ID else None
    live = []
    with AvroFile[ManifestEntry](io.new_input(manifest.manifest_path), MANIFEST_ENTRY_SCHEMAS[format_version],
                                 read_types={-1: ManifestEntry, 2: DataFile},
                                 read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent}) as reader:
        for entry in reader:
            if entry.status == ManifestEntryStatus.DELETED:
                continue
            if inherits:
                next_row_id = inherit_first_row_id(entry.data_file, next_row_id)
            live.append(_inherit_from_manifest(entry, manifest))
    return live


def inherit_first_row_id(data_file: DataFile, next_row_id: int | None) -> int | None:
    """The spec's first row id inheritance, as Iceberg Java's manifest reader does it: a live data file without
    a first row id takes the next one of its manifest, which then moves on by the file's record count; in a
    manifest without a first row id (written before the table's upgrade to v3) no data file has one. Returns the
    manifest's next row id."""
    raw = data_file._data
    if next_row_id is None:
        raw[_FILE_FIRST_ROW_ID] = None
        return None
    if raw[_FILE_FIRST_ROW_ID] is None:
        raw[_FILE_FIRST_ROW_ID] = next_row_id
        return next_row_id + data_file.record_count
    return next_row_id


class PositionDeletes:
    """Position delete files by the data file they apply to (a deletion vector's referenced data file, or a
    delete file whose path bounds name one file), else by partition; a delete applies to data files of a data
    sequence number no greater than its own.

    In place of PyIceberg's ``DeleteFileIndex``, which keeps delete files in sets of ``DataFile``, whose equality
    is the path alone: the deletion vectors of one Puffin file (one for each data file) became one, applied to
    every data file of its partition."""

    def __init__(self) -> None:
        self._by_path: dict[str, list[tuple[int, DataFile]]] = {}
        self._by_partition: dict[tuple[int, Any], list[tuple[int, DataFile]]] = {}

    def add(self, entry: ManifestEntry) -> None:
        delete = entry.data_file
        seq = entry.sequence_number or INITIAL_SEQUENCE_NUMBER
        target = referenced_data_file(delete) or _referenced_data_file_path(delete)
        if target:
            self._by_path.setdefault(target, []).append((seq, delete))
        else:
            self._by_partition.setdefault(_partition_key(delete.spec_id or 0, delete.partition), []).append(
                (seq, delete))

    def for_data_file(self, seq: int, data_file: DataFile) -> list[DataFile]:
        found = [delete for delete_seq, delete in self._by_path.get(data_file.file_path, ()) if delete_seq >= seq]
        for delete_seq, delete in self._by_partition.get(_partition_key(data_file.spec_id or 0,
                                                                         data_file.partition), ()):
            if delete_seq >= seq and _applies_to_data_file(delete, data_file):
                found.append(delete)
        return found


class Planner(ManifestGroupPlanner):
    """PyIceberg's planner, with v3 manifests read whole, position deletes matched by :class:`PositionDeletes`,
    and equality deletes assigned instead of refused."""

    def plan_manifest_entries(self, manifests: Iterable[ManifestFile]) -> Iterator[list[ManifestEntry]]:
        """As PyIceberg's (manifests pruned by partition summaries, entries by partition and metrics), reading
        each manifest with the table's format version (:func:`read_entries`)."""
        version = self.table_metadata.format_version
        if version < 3:
            return super().plan_manifest_entries(manifests)
        manifest_evaluators: dict[int, Callable[[ManifestFile], bool]] = KeyDefaultDict(
            self._build_manifest_evaluator)
        partition_evaluators: dict[int, Callable[[DataFile], bool]] = KeyDefaultDict(
            self._build_partition_evaluator)
        metrics_evaluator = self._build_metrics_evaluator()
        kept = [m for m in manifests if manifest_evaluators[m.partition_spec_id](m)]
        least = _min_sequence_number(kept)
        jobs = [(m, partition_evaluators[m.partition_spec_id]) for m in kept if self._check_sequence_number(least, m)]

        def open_manifest(job: tuple[ManifestFile, Callable[[DataFile], bool]]) -> list[ManifestEntry]:
            manifest, in_partition = job
            return [entry for entry in read_entries(self.io, manifest, version)
                    if in_partition(entry.data_file) and metrics_evaluator(entry.data_file)]

        return ExecutorFactory.get_or_create().map(open_manifest, jobs)

    def tasks(self, manifest_files: Iterable[ManifestFile],
              entry_filter: Callable[[ManifestEntry], bool] | None = None,
              cancelled: Cancelled | None = None) -> list[PlannedTask]:
        data_entries: list[ManifestEntry] = []
        positions = PositionDeletes()
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
                positions.add(entry)
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
            deletes = positions.for_data_file(seq, data_file)
            for delete_seq, delete in equality:
                if delete_seq > seq and ((delete.spec_id or 0) in unpartitioned or (
                        delete.spec_id == data_file.spec_id and delete.partition == data_file.partition)):
                    deletes.append(delete)
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
