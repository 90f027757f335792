"""How an Iceberg table version looks to a Delta reader: its schema as Delta's schema string, its partition
columns, and each Parquet data file as a Delta file action with Delta stats, or the reason a Delta reader would not
read it correctly (:class:`UnsharableTable`). Which snapshots are versions, and which files each has, is
:mod:`arco.sharing.iceberg_source`'s part.

Partitions
    Delta partition columns are plain columns whose values live in the file action; Iceberg partitions are
    transforms of columns. A column is a Delta partition column when every partition spec of the table has an
    identity field on it (so every file, whichever spec wrote it, carries its value), and its type has an exact
    Delta partition value encoding (not binary, float or double). Values are Delta's strings: ``true``/``false``,
    decimal numbers, ``YYYY-MM-DD`` dates, ``YYYY-MM-DD HH:MM:SS[.ffffff]`` timestamps without zone, ISO 8601 UTC
    (``...Z``) timestamps with zone, null as None. Other partition fields (bucket, day, truncate, ...) are not
    partition columns for the recipient: Iceberg writes the source column into the data files, so it is read from
    there, with its stats for skipping. So is a column identity-partitioned only since a partition spec change (or
    in a spec that never wrote a file): the rule is the same for every version and every file of the table.

Schemas
    Iceberg types map to Delta's: int -> integer, long, float, double, decimal(p,s), boolean, string, binary,
    date, timestamptz -> timestamp, timestamp (without zone) -> timestamp_ntz. A timestamp_ntz column needs
    Delta's ``timestampNtz`` reader feature, so such a version has ``min_reader_version`` 3 (the only reader
    feature this source ever needs); otherwise 1. uuid, fixed, time, nanosecond timestamps and the v3 types
    (unknown, variant, geometry, geography) have no Delta type that reads the Parquet data correctly and are
    refused. Required fields are non-nullable; a field's doc becomes its ``comment`` metadata, as Delta keeps it.

    Delta readers match Parquet columns by name, Iceberg by field id. A data file written before a column was
    renamed carries the old name, and a Delta reader would read it as nulls. Which schema wrote a file is not
    recorded, so a table any of whose schemas names a field of the shared schema differently is refused, naming
    the column. Added and dropped columns are fine (absent columns read as nulls, extra ones are ignored).

Stats
    Delta stats JSON from the data file's metrics: ``numRecords``, and for top-level primitive columns that are
    not partition columns, ``nullCount`` and, where Iceberg has bounds, ``minValues``/``maxValues`` for numbers,
    dates, timestamps and strings. Iceberg bounds are bounds (a truncated string's upper bound is incremented),
    which is what Delta readers use them for. Timestamps are written as Delta writes them, to the millisecond
    (Delta readers allow for the truncated maximum). Decimal, boolean and binary bounds are left out.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from pyiceberg.conversions import from_bytes
from pyiceberg.manifest import DataFile, FileFormat
from pyiceberg.schema import Schema, index_by_id
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
)

from arco.sharing.actions import SharedFile

_EPOCH = datetime(1970, 1, 1)

# Types with one Delta name; decimals (parameterised) and nested types are handled apart.
_PRIMITIVES: dict[type[IcebergType], str] = {
    BooleanType: "boolean",
    IntegerType: "integer",
    LongType: "long",
    FloatType: "float",
    DoubleType: "double",
    DateType: "date",
    StringType: "string",
    BinaryType: "binary",
    TimestampType: "timestamp_ntz",
    TimestamptzType: "timestamp",
}


class UnsharableTable(ValueError):
    """The table (or the requested version) cannot be read correctly by a Delta reader; the message says why and
    what the table's owner can do about it. A ValueError, as an unknown version is: both are a bad request."""


def delta_schema_string(schema: Schema) -> str:
    """The schema as Delta's schema JSON (``schemaString``); UnsharableTable for a type Delta cannot read."""
    return json.dumps(_delta_struct(schema.as_struct(), ""), separators=(",", ":"))


def _delta_struct(struct: StructType, prefix: str) -> dict[str, Any]:
    return {"type": "struct", "fields": [_delta_field(field, prefix) for field in struct.fields]}


def _delta_field(field: NestedField, prefix: str) -> dict[str, Any]:
    path = f"{prefix}{field.name}"
    return {
        "name": field.name,
        "type": _delta_type(field.field_type, path),
        "nullable": not field.required,
        # Delta keeps a column's comment in its field metadata.
        "metadata": {"comment": field.doc} if field.doc else {},
    }


def _delta_type(field_type: IcebergType, path: str) -> str | dict[str, Any]:
    if isinstance(field_type, StructType):
        return _delta_struct(field_type, f"{path}.")
    if isinstance(field_type, ListType):
        return {"type": "array", "elementType": _delta_type(field_type.element_type, f"{path}.element"),
                "containsNull": not field_type.element_required}
    if isinstance(field_type, MapType):
        return {"type": "map", "keyType": _delta_type(field_type.key_type, f"{path}.key"),
                "valueType": _delta_type(field_type.value_type, f"{path}.value"),
                "valueContainsNull": not field_type.value_required}
    if isinstance(field_type, DecimalType):
        return f"decimal({field_type.precision},{field_type.scale})"
    name = _PRIMITIVES.get(type(field_type))
    if name is None:
        raise UnsharableTable(f"column '{path}' has the Iceberg type {field_type}, which no Delta type reads "
                              f"correctly; share a view of the table without it, or cast it to a supported type")
    return name


def _check_renames(metadata: TableMetadata, schema: Schema) -> None:
    names = {field_id: field.name for field_id, field in index_by_id(schema).items()}
    for other in metadata.schemas:
        for field_id, field in index_by_id(other).items():
            if field_id in names and names[field_id] != field.name:
                column = schema.find_column_name(field_id) or names[field_id]
                raise UnsharableTable(
                    f"column '{column}' was renamed (it is '{field.name}' in the table's schema {other.schema_id}); "
                    "Delta readers find Parquet columns by name, so data files written under the old name would "
                    "read as nulls. Rewrite the table's data files and remove its older schemas, or rename the "
                    "column back, to share it")


@dataclass(frozen=True)
class _PartitionColumn:
    source_id: int
    name: str
    field_type: IcebergType


@dataclass(frozen=True)
class DeltaShape:
    """What turns the data files of a table into Delta file actions under one schema: partition columns and stats
    columns. Built once per answer; checking the schema here makes every answer refuse the same tables."""

    metadata: TableMetadata
    schema: Schema
    schema_string: str
    partition_columns: list[_PartitionColumn]

    @staticmethod
    def of(metadata: TableMetadata, schema: Schema) -> DeltaShape:
        schema_string = delta_schema_string(schema)
        _check_renames(metadata, schema)
        return DeltaShape(metadata, schema, schema_string, _partition_columns(metadata, schema))

    @property
    def min_reader_version(self) -> int:
        # timestamp_ntz needs Delta's timestampNtz reader feature, which needs reader version 3.
        needs_ntz = any(isinstance(field.field_type, TimestampType) for field in index_by_id(self.schema).values())
        return 3 if needs_ntz else 1

    def delta_metadata(self) -> dict[str, Any]:
        return {
            "id": str(self.metadata.table_uuid),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": self.schema_string,
            "partitionColumns": [column.name for column in self.partition_columns],
            "configuration": {},
        }

    def file(self, data_file: DataFile, *, version: int | None = None, timestamp_ms: int | None = None) -> SharedFile:
        if data_file.file_format != FileFormat.PARQUET:
            raise UnsharableTable(f"data file {data_file.file_path} is {data_file.file_format.name}; Delta readers "
                                  "read Parquet only. Rewrite the table's data files as Parquet to share it")
        return SharedFile(
            url=_url(data_file.file_path),
            id=hashlib.sha1(data_file.file_path.encode()).hexdigest(),
            partition_values=self._partition_values(data_file),
            size=data_file.file_size_in_bytes,
            stats=self._stats(data_file),
            version=version,
            timestamp_ms=timestamp_ms,
        )

    def _partition_values(self, data_file: DataFile) -> dict[str, str | None]:
        spec = self.metadata.specs()[data_file.spec_id]
        values: dict[str, str | None] = {}
        for column in self.partition_columns:
            position = next(position for position, field in enumerate(spec.fields)
                            if field.source_id == column.source_id and isinstance(field.transform, IdentityTransform))
            values[column.name] = _partition_value(data_file.partition[position], column.field_type)
        return values

    def _stats(self, data_file: DataFile) -> str:
        partition_ids = {column.source_id for column in self.partition_columns}
        lower_bounds = data_file.lower_bounds or {}
        upper_bounds = data_file.upper_bounds or {}
        null_counts = data_file.null_value_counts or {}
        minimums: dict[str, Any] = {}
        maximums: dict[str, Any] = {}
        nulls: dict[str, int] = {}
        # Delta keeps no stats for partition columns (their value is in the file action) and these are top-level
        # columns only: nested stats would need Delta's nested layout and add little for skipping.
        for field in self.schema.fields:
            if not isinstance(field.field_type, PrimitiveType) or field.field_id in partition_ids:
                continue
            if field.field_id in null_counts:
                nulls[field.name] = null_counts[field.field_id]
            low = _stat_value(lower_bounds.get(field.field_id), field.field_type)
            if low is not None:
                minimums[field.name] = low
            high = _stat_value(upper_bounds.get(field.field_id), field.field_type)
            if high is not None:
                maximums[field.name] = high
        return json.dumps({"numRecords": data_file.record_count, "minValues": minimums, "maxValues": maximums,
                           "nullCount": nulls}, separators=(",", ":"))


def _partition_columns(metadata: TableMetadata, schema: Schema) -> list[_PartitionColumn]:
    specs = metadata.partition_specs or [metadata.spec()]

    def identity_sources(spec_index: int) -> list[int]:
        return [field.source_id for field in specs[spec_index].fields if isinstance(field.transform, IdentityTransform)]

    common = set(identity_sources(0)).intersection(*(identity_sources(index) for index in range(1, len(specs))))
    top_level = {field.field_id: field for field in schema.fields}
    columns: list[_PartitionColumn] = []
    # In the default spec's order, which is the order the table's writers use now.
    for field in metadata.spec().fields:
        if field.source_id not in common or any(column.source_id == field.source_id for column in columns):
            continue
        source = top_level.get(field.source_id)
        # Binary has no Delta partition value encoding. Floating-point values do, but their text is lossy in places,
        # and PyIceberg 0.12 records double identity partition values through a 32-bit float (0.1 becomes
        # 0.10000000149011612 in the manifest, while the data file holds 0.1): from the data file they read right.
        if source is None or isinstance(source.field_type, (BinaryType, FloatType, DoubleType)):
            continue
        columns.append(_PartitionColumn(field.source_id, source.name, source.field_type))
    return columns


def _partition_value(value: Any, field_type: IcebergType) -> str | None:
    """An identity partition value in Delta's partition value encoding."""
    if value is None:
        return None
    if isinstance(field_type, BooleanType):
        return "true" if value else "false"
    if isinstance(field_type, DecimalType):
        return format(Decimal(value), "f")
    if isinstance(field_type, DateType):
        return _as_date(value).isoformat()
    if isinstance(field_type, TimestampType):
        return _as_datetime(value).isoformat(sep=" ")
    if isinstance(field_type, TimestamptzType):
        # Delta's unambiguous form for an instant: ISO 8601 in UTC.
        return _as_datetime(value).isoformat() + "Z"
    return str(value)


def _as_date(value: Any) -> date:
    # Manifests keep dates as days since the epoch.
    return value if isinstance(value, date) else (_EPOCH + timedelta(days=value)).date()


def _as_datetime(value: Any) -> datetime:
    # Manifests keep timestamps as microseconds since the epoch; the result is naive, in UTC for timestamptz.
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    return _EPOCH + timedelta(microseconds=value)


def _stat_value(raw: bytes | None, field_type: IcebergType) -> Any:
    """A bound decoded and written as Delta writes stats, or None when it is absent or left out."""
    if raw is None:
        return None
    if isinstance(field_type, (IntegerType, LongType)):
        # A column promoted from int to long keeps 4-byte bounds in its older files.
        return from_bytes(IntegerType() if len(raw) == 4 else LongType(), raw)
    if isinstance(field_type, (FloatType, DoubleType)):
        # Likewise float promoted to double.
        number = from_bytes(FloatType() if len(raw) == 4 else DoubleType(), raw)
        return number if math.isfinite(number) else None
    if isinstance(field_type, DateType):
        return _as_date(from_bytes(DateType(), raw)).isoformat()
    if isinstance(field_type, (TimestampType, TimestamptzType)):
        # Delta writes timestamp stats to the millisecond; a max truncated so is what Delta readers expect.
        moment = _as_datetime(from_bytes(field_type, raw))
        text = moment.replace(microsecond=moment.microsecond // 1000 * 1000).isoformat(timespec="milliseconds")
        return text + "Z" if isinstance(field_type, TimestamptzType) else text
    if isinstance(field_type, StringType):
        return from_bytes(StringType(), raw)
    return None


def _url(path: str) -> str:
    return f"file://{path}" if path.startswith("/") else path
