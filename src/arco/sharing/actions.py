"""What a shared table version is, independent of its format.

The Delta source (``delta_source``) and the Iceberg source (``iceberg_source``) both turn a table version into
these values; the service turns them into the protocol's NDJSON lines. Keeping them format-neutral is what lets
an Iceberg table be read by a Delta Sharing client.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any


def iceberg_protocol(min_reader_version: int) -> dict[str, Any]:
    """The Delta protocol an Iceberg table version is read with (reader version 2 where its shape needs it)."""
    return {"minReaderVersion": min_reader_version, "minWriterVersion": 2}


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
    # The partition values as the Delta log spells them, for the delta response format, whose reader parses them as
    # it parses the table's own log (None: ``partition_values`` is that spelling too).
    log_partition_values: dict[str, str | None] | None = None
    modification_time_ms: int | None = None  # the add action's modificationTime, where the log has one


@dataclass(frozen=True)
class SharedVersion:
    version: int
    timestamp_ms: int
    min_reader_version: int
    # Delta metaData: id, name?, format {"provider":"parquet"}, schemaString, partitionColumns, configuration,
    # createdTime?
    metadata: dict[str, Any]
    files: list[SharedFile]


@dataclass(frozen=True)
class TableChange:
    """A version after a change query's first that changed the table's Delta metadata or protocol: the
    historical ``metaData`` / ``protocol`` lines a streaming or change-feed reader checks its schema against."""

    version: int
    metadata: dict[str, Any] | None = None  # the version's Delta metaData, if it changed
    protocol: dict[str, Any] | None = None  # the version's Delta protocol, if it changed


def table_changes(states: list[tuple[int, dict[str, Any], dict[str, Any]]]) -> list[TableChange]:
    """The changes along ``(version, metadata, protocol)`` states in version order: each state that differs from
    the one before it in metadata or protocol (the first state is the query's own, never a change)."""
    out: list[TableChange] = []
    for (_, metadata_before, protocol_before), (version, metadata, protocol) in pairwise(states):
        new_metadata = metadata if metadata != metadata_before else None
        new_protocol = protocol if protocol != protocol_before else None
        if new_metadata is not None or new_protocol is not None:
            out.append(TableChange(version, new_metadata, new_protocol))
    return out
