"""A table's versions and who made each (seed section 8.3): the compacted timeline when the pipeline has run,
else the live commit receipts, else what the metadata itself says.

A version is a metadata file: the current one and those in the metadata log (and, from the compacted timeline,
older ones the log no longer lists). Its source comes from, in order of richness:

1. the compacted timeline row (``arco pipeline compact``): source, principal, client, lineage confidence and
   quality as the pipeline classified them;
2. the committed receipt written by the commit itself, found without listing (its key is a function of the
   metadata location and time, :func:`arco.events.receipts.iceberg_receipt_key`), classified here the same way;
3. nothing: "unknown", until the reconciler backfills the receipt.

Receipts and compacted Parquet files are immutable once written, so both are cached by key.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.table.metadata import TableMetadata

from arco.events.receipts import iceberg_receipt_key
from arco.iceberg.file_names import metadata_sequence
from arco.lru import Lru
from arco.pipeline import rows
from arco.pipeline.checkpoint import load_state
from arco.pipeline.parquet_io import read_parquet
from arco.storage.base import StorageBackend, StorageError

SOURCE_WORDS = {"iceberg_rest": "External (Iceberg REST)", "pipeline": "Pipeline", "admin_api": "Admin API"}
CONFIDENCE_WORDS = {"Verified": "verified", "DeclaredUnverified": "declared, unverified", "None": "none"}
QUALITY_WORDS = {"NotChecked": "not checked", "Passed": "passed", "Failed": "failed", "Checked": "checked"}
TIMELINE_COLUMNS = ["table_uuid", "metadata_location", "snapshot_id", "operation", "summary", "source_kind",
                    "source_details", "principal", "client_info", "lineage_confidence", "quality_status",
                    "committed_at"]


_receipts: Lru[Any, Any] = Lru(20_000)
# Part files of the compacted timeline as Arrow tables, bounded by their size: a batch of a busy day is large.
_parquet: Lru[Any, Any] = Lru(256, budget=64 << 20, weigh=lambda table: table.nbytes)
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="arco-ui-receipts")


@dataclass(frozen=True)
class Source:
    """Who or what made a version: seed section 8.2's UpdateSource, as shown."""

    kind: str  # iceberg_rest, pipeline, admin_api, unknown
    principal: str | None = None
    client: str | None = None  # the HTTP client (User-Agent)
    engine: str | None = None  # the engine that wrote the snapshot (Spark 3.5.1, from its summary)
    app_id: str | None = None
    run_id: str | None = None
    lineage_confidence: str = "None"
    quality_status: str = "NotChecked"
    from_history: bool = False  # the compacted timeline said so (else a live receipt, or nothing)

    @property
    def label(self) -> str:
        if self.kind == "pipeline" and self.run_id:
            return f"Pipeline run #{self.run_id}"
        return SOURCE_WORDS.get(self.kind, "Unknown (no receipt yet)")

    @property
    def confidence_label(self) -> str:
        return CONFIDENCE_WORDS.get(self.lineage_confidence, self.lineage_confidence)

    @property
    def quality_label(self) -> str:
        return QUALITY_WORDS.get(self.quality_status, self.quality_status)


UNKNOWN = Source("unknown")


@dataclass
class Version:
    number: int  # the metadata file's sequence (00005-... is v5)
    metadata_location: str
    at_ms: int
    current: bool
    snapshot_id: int | None = None
    operation: str | None = None
    source: Source = field(default=UNKNOWN)
    upstream: tuple[str, ...] = ()  # the tables this version's commit read, as lineage recorded them


def engine_of(summary: dict[str, Any]) -> str | None:
    """The engine a snapshot's summary names, as its writer wrote it (``PyIceberg 0.12``, ``spark 3.5.1``)."""
    return " ".join(str(summary[k]) for k in ("engine-name", "engine-version") if summary.get(k)) or None


def classify(source: dict[str, Any], summary: dict[str, Any] | None, from_history: bool = False,
             confidence: str | None = None, quality: str | None = None) -> Source:
    """A receipt's ``source`` (and its snapshot's summary, for the engine) as shown; trust as in section 8.1."""
    kind = str(source.get("kind") or "iceberg_rest")
    default_confidence, default_quality = rows.TRUST_BY_SOURCE.get(kind, ("None", "NotChecked"))
    summary = summary or {}
    app_id = summary.get("app-id")
    return Source(kind=kind, principal=source.get("principal") or source.get("user_id"),
                  client=source.get("client_info"), engine=engine_of(summary),
                  app_id=str(app_id) if app_id else None, run_id=source.get("run_id"),
                  lineage_confidence=confidence or default_confidence, quality_status=quality or default_quality,
                  from_history=from_history)


def versions_of(metadata: TableMetadata, current_location: str) -> list[Version]:
    """Every version the metadata knows of, newest first, each with the snapshot that was current then."""
    log = [(e.metadata_file, e.timestamp_ms) for e in metadata.metadata_log]
    log.append((current_location, metadata.last_updated_ms))
    snapshot_log = sorted((e.timestamp_ms, e.snapshot_id) for e in metadata.snapshot_log)
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    found, i, current_snapshot = [], 0, None
    # In the log's order, which is the order the versions were written in: their times are the writers' clocks
    # (a snapshot's timestamp-ms becomes its version's), which may lie anywhere.
    for location, at_ms in log:
        while i < len(snapshot_log) and snapshot_log[i][0] <= at_ms:
            current_snapshot = snapshot_log[i][1]
            i += 1
        snapshot = by_id.get(current_snapshot) if current_snapshot is not None else None
        operation = snapshot.summary.operation.value if snapshot is not None and snapshot.summary else None
        found.append(Version(metadata_sequence(location), location, at_ms, location == current_location,
                             current_snapshot, operation))
    found.reverse()
    return found


class Compacted(NamedTuple):
    """What the compacted timeline says of one version (docs/pipeline.md: the timeline's columns)."""

    source: Source
    at_ms: int
    snapshot_id: int | None
    operation: str | None = None  # the commit's: create, append, ..., update-metadata (not the snapshot's)


def _timeline_file(storage: StorageBackend, key: str) -> pa.Table:
    return _parquet.get_or_load(("timeline", key), lambda: read_parquet(storage, key, TIMELINE_COLUMNS))


def compacted_sources(storage: StorageBackend, table_uuid: str) -> dict[str, Compacted]:
    """metadata location -> what the compacted timeline says of it (its source classified from the row's source
    and snapshot summary, as a live receipt's is); empty before the pipeline first runs."""
    found: dict[str, Compacted] = {}
    for key in load_state(storage).files("timeline"):
        try:
            table = _timeline_file(storage, key)
        except (StorageError, OSError, pa.ArrowException):
            continue  # a file gc removed under a newer state: the live receipts still answer
        mine = table.filter(pc.equal(table["table_uuid"], table_uuid))
        for row in mine.to_pylist():
            details = orjson.loads(row["source_details"]) if row["source_details"] else {}
            summary = dict(row["summary"] or [])  # Arrow gives a map as (key, value) pairs
            source = classify(details, summary, True, row["lineage_confidence"], row["quality_status"])
            at = row["committed_at"]
            found[row["metadata_location"]] = Compacted(source, int(at.timestamp() * 1000) if at else 0,
                                                        row["snapshot_id"], row["operation"])
    return found


def _receipt(storage: StorageBackend, key: str) -> dict[str, Any] | None:
    def load() -> dict[str, Any] | None:
        found = storage.get_or_none(key)
        return orjson.loads(found.data) if found is not None else None

    return _receipts.get_or_load(key, load)


def attach_sources(storage: StorageBackend, versions: list[Version], compacted: dict[str, Compacted]) -> None:
    """Give each version its source and operation: the compacted row's if there is one, else its live receipt's
    (read in parallel)."""
    missing = [v for v in versions if v.metadata_location not in compacted]
    for version in versions:
        row = compacted.get(version.metadata_location)
        if row is not None:
            version.source = row.source
            version.operation = row.operation or version.operation
            version.snapshot_id = row.snapshot_id if row.snapshot_id is not None else version.snapshot_id
    keys = [iceberg_receipt_key("committed", v.metadata_location, v.at_ms) for v in missing]
    receipts = _receipts.get_many(keys)
    unread = [i for i, found in enumerate(receipts) if found is None]
    if unread:  # first views, or receipts not written yet: read them in parallel (object stores are slow per get)
        for i, found in zip(unread, _pool.map(lambda i: _safe_receipt(storage, keys[i]), unread), strict=True):
            receipts[i] = found
    for version, receipt in zip(missing, receipts, strict=True):
        if receipt is not None:
            version.source = classify(receipt.get("source") or {}, receipt.get("summary"))
            version.operation = receipt.get("operation") or version.operation
            version.snapshot_id = receipt.get("snapshot_id", version.snapshot_id)


def _safe_receipt(storage: StorageBackend, key: str) -> dict[str, Any] | None:
    try:
        return _receipt(storage, key)
    except (StorageError, OSError, orjson.JSONDecodeError):
        return None


def with_older(versions: list[Version], compacted: dict[str, Compacted]) -> list[Version]:
    """Add the versions only the compacted timeline remembers (the metadata log keeps the latest ones only)."""
    known = {v.metadata_location for v in versions}
    older = [Version(metadata_sequence(location), location, row.at_ms, False, row.snapshot_id, row.operation,
                     row.source)
             for location, row in compacted.items() if location not in known]
    # Older than every version the log still holds; among themselves, by the file name's counter (which only grows),
    # not by the writers' clocks.
    return [*versions, *sorted(older, key=lambda v: (v.number, v.at_ms), reverse=True)]
