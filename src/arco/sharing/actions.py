"""What a shared table version is, independent of its format.

The Delta source (``delta_source``) and the Iceberg source (``iceberg_source``) both turn a table version into
these values; the service turns them into the protocol's NDJSON lines. Keeping them format-neutral is what lets
an Iceberg table be read by a Delta Sharing client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SharedFile:
    url: str  # the file's absolute storage URL (file:///..., s3://...)
    id: str  # stable, unique per file within the table
    partition_values: dict[str, str | None]  # Delta's string-encoded partition values
    size: int
    stats: str | None  # Delta stats JSON: numRecords, minValues, maxValues, nullCount
    version: int | None = None  # the table version that added it (for startingVersion / changes)
    timestamp_ms: int | None = None
    change_type: str | None = None  # for CDF answers: "insert" / "delete" / ...


@dataclass(frozen=True)
class SharedVersion:
    version: int
    timestamp_ms: int
    min_reader_version: int
    # Delta metaData: id, name?, format {"provider":"parquet"}, schemaString, partitionColumns, configuration,
    # createdTime?
    metadata: dict[str, Any]
    files: list[SharedFile]
