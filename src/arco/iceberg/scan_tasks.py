"""File scan tasks in the REST spec's JSON: ``ContentFile`` for data and delete files, ``FileScanTask`` with its
``delete-file-references`` (indexes into the ``delete-files`` of the same response) and ``residual-filter``.

Pure: PyIceberg's ``DataFile`` objects in, JSON-ready dicts out. Column statistics are sent only for the fields
a request names in ``stats-fields`` (none without it, as Iceberg Java's scans drop them unless asked), so a
response carries what the client will use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import PrimitiveType

from arco.iceberg.planning import expression_json, single_value_json

CONTENT = {DataFileContent.DATA: "data", DataFileContent.POSITION_DELETES: "position-deletes",
           DataFileContent.EQUALITY_DELETES: "equality-deletes"}
FORMATS = {f: f.name.lower() for f in FileFormat}
# Format v3 fields of a manifest's data_file struct, by position: PyIceberg 0.12 has no properties for them (a
# file-scoped delete's referenced-data-file, a deletion vector's offset and size, a data file's first row id).
# The planner reads a v3 table's manifests with the v3 schema so that they are there (planner.read_entries).
V3_FIELDS = ((16, "first-row-id"), (17, "referenced-data-file"), (18, "content-offset"),
             (19, "content-size-in-bytes"))
V3_POSITIONS = {key: position for position, key in V3_FIELDS}


def v3_field(data_file: DataFile, key: str) -> Any:
    """One of :data:`V3_FIELDS` by its JSON name, or None where the file's record does not hold it."""
    position, raw = V3_POSITIONS[key], data_file._data
    return raw[position] if len(raw) > position else None


def referenced_data_file(delete_file: DataFile) -> str | None:
    """The one data file a v3 position delete file (a deletion vector) applies to, if it names one."""
    return v3_field(delete_file, "referenced-data-file")


def delete_file_identity(delete_file: DataFile) -> tuple[str, int]:
    """A delete file's identity in a plan: its path, and for a deletion vector its offset in that file (one Puffin
    file holds the vectors of many data files; PyIceberg's ``DataFile`` equality is the path alone)."""
    offset = v3_field(delete_file, "content-offset")
    return delete_file.file_path, -1 if offset is None else offset


@dataclass(frozen=True)
class PlannedTask:
    """One data file to read, the delete files that apply to it, and what of the filter is left to evaluate."""

    data_file: DataFile
    delete_files: tuple[DataFile, ...] = ()
    residual: BooleanExpression = field(default_factory=AlwaysTrue)


class TaskWriter:
    """Serializes tasks of one table version; caches per-spec partition types and per-residual JSON."""

    def __init__(self, schema: Schema, specs: dict[int, PartitionSpec], stats_ids: Iterable[int] | None) -> None:
        self.schema = schema
        self.specs = specs
        self.stats_ids = frozenset(stats_ids) if stats_ids is not None else frozenset()
        self._partition_types: dict[int, list[Any]] = {}
        self._residuals: dict[int, Any] = {}

    def chunk(self, tasks: list[PlannedTask]) -> dict[str, Any]:
        """A ScanTasks object for ``tasks``: their file scan tasks and every delete file they refer to, once."""
        delete_files: list[dict[str, Any]] = []
        index: dict[tuple[str, int], int] = {}
        out = []
        for task in tasks:
            refs = []
            for identity, delete in sorted(((delete_file_identity(d), d) for d in task.delete_files),
                                           key=lambda pair: pair[0]):
                position = index.get(identity)
                if position is None:
                    position = index[identity] = len(delete_files)
                    delete_files.append(self.content_file(delete))
                refs.append(position)
            item: dict[str, Any] = {"data-file": self.content_file(task.data_file),
                                    "residual-filter": self.residual(task.residual)}
            if refs:
                item["delete-file-references"] = refs
            out.append(item)
        body: dict[str, Any] = {"file-scan-tasks": out}
        if delete_files:  # clients refuse delete files without tasks that refer to them
            body["delete-files"] = delete_files
        return body

    def residual(self, expression: BooleanExpression) -> Any:
        if isinstance(expression, AlwaysTrue):
            return True
        key = id(expression)
        cached = self._residuals.get(key)
        if cached is None or cached[0] is not expression:
            cached = self._residuals[key] = (expression, expression_json(expression, self.schema))
        return cached[1]

    def content_file(self, data_file: DataFile) -> dict[str, Any]:
        # Called once per file of a plan (100,000 for a big table): plain property reads, no exceptions.
        spec_id = data_file.spec_id or 0
        content = data_file.content
        out: dict[str, Any] = {
            "spec-id": spec_id,
            "content": CONTENT[content],
            "file-path": data_file.file_path,
            "file-format": FORMATS[data_file.file_format],
            "partition": self.partition(spec_id, data_file.partition),
            "file-size-in-bytes": data_file.file_size_in_bytes,
            "record-count": data_file.record_count,
        }
        if data_file.key_metadata:
            out["key-metadata"] = bytes(data_file.key_metadata).hex().upper()
        if data_file.split_offsets:
            out["split-offsets"] = list(data_file.split_offsets)
        if data_file.sort_order_id is not None:
            out["sort-order-id"] = data_file.sort_order_id
        if content == DataFileContent.EQUALITY_DELETES and data_file.equality_ids:
            out["equality-ids"] = list(data_file.equality_ids)
        raw = data_file._data  # see V3_FIELDS
        if len(raw) > V3_FIELDS[0][0]:
            for position, key in V3_FIELDS:
                if position < len(raw) and raw[position] is not None:
                    out[key] = raw[position]
        if self.stats_ids and content == DataFileContent.DATA:
            self._stats(data_file, out)
        return out

    def partition(self, spec_id: int, partition: Any) -> list[Any]:
        """The partition's values in the order of the spec's fields, each in single-value serialization."""
        types = self._partition_types.get(spec_id)
        if types is None:
            spec = self.specs.get(spec_id)
            types = [] if spec is None else [f.field_type for f in spec.partition_type(self.schema).fields]
            self._partition_types[spec_id] = types
        if not types:
            return []
        return [single_value_json(t, partition[i]) for i, t in enumerate(types)]

    def _stats(self, data_file: DataFile, out: dict[str, Any]) -> None:
        for name, key in (("column_sizes", "column-sizes"), ("value_counts", "value-counts"),
                          ("null_value_counts", "null-value-counts"), ("nan_value_counts", "nan-value-counts")):
            counts = getattr(data_file, name) or {}
            kept = sorted(k for k in counts if k in self.stats_ids)
            if kept:
                out[key] = {"keys": kept, "values": [counts[k] for k in kept]}
        for name, key in (("lower_bounds", "lower-bounds"), ("upper_bounds", "upper-bounds")):
            bounds = getattr(data_file, name) or {}
            keys, values = [], []
            for field_id in sorted(k for k in bounds if k in self.stats_ids):
                value = self._bound(field_id, bounds[field_id])
                if value is not None:
                    keys.append(field_id)
                    values.append(value)
            if keys:
                out[key] = {"keys": keys, "values": values}

    def _bound(self, field_id: int, raw: bytes) -> Any:
        try:
            field_type = self.schema.find_type(field_id)
        except ValueError:
            return None  # a column dropped since the file was written: nothing to name it by
        if not isinstance(field_type, PrimitiveType):
            return None
        return single_value_json(field_type, from_bytes(field_type, raw))

