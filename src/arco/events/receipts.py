"""Immutable event receipts (seed section 4): the durable record of every change, for the pipeline.

    _catalog/events/{YYYY-MM-DD}/iceberg/pending/{commit_key}.json     an Iceberg commit attempt, before the CAS
    _catalog/events/{YYYY-MM-DD}/iceberg/committed/{commit_key}.json   an Iceberg commit that landed
    _catalog/events/{YYYY-MM-DD}/iceberg/committed/{commit_key}-{i}.json   member i > 0 of a group commit
    _catalog/events/{YYYY-MM-DD}/catalog/committed/{seq:020d}.json     a Tier 1 change (namespaces, tables, ...)

``commit_key = SHA-256(metadata_location)``, and the day is the UTC day of the new metadata's
``last-updated-ms``: both are properties of the metadata file itself, so the reconciler computes the same path from
a table's metadata log without listing anything. A catalog receipt is keyed by its Tier 1 log position, which
the reconciler finds by reading the log. Every receipt is written create-only, so writing one twice (a retry, the
reconciler) leaves the first. Receipts are best effort at commit time: a failure to write one never fails the
commit, since the reconciler backfills committed receipts; pending receipts only serve observability (section
4.4: the compactor ignores them).

A group commit (:mod:`arco.iceberg.group_commit`) writes one metadata file for N requests: each request gets its
own committed receipt (its source and principal, the shared metadata location, its place in the group), the first
at the plain key; no pending receipts are written for a group, whose group record, written before the CAS, says
the same and more. The reconciler backfills every member's receipt from that record.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any, Literal

import orjson
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot
from uuid6 import uuid7

from arco.events.timestamps import utc_datetime
from arco.fault_log import FaultLog
from arco.storage.base import DoesNotExist, StorageBackend, StorageError

EVENTS = "_catalog/events"
SCHEMA_VERSION = 1
IcebergReceiptKind = Literal["pending", "committed"]
log = logging.getLogger(__name__)
# A store that is down fails every request's receipts: one line, then a count per interval.
RECEIPT_FAULTS = FaultLog(log)


def commit_key(metadata_location: str) -> str:
    return hashlib.sha256(metadata_location.encode()).hexdigest()


def day_of(timestamp_ms: int) -> str:
    return utc_datetime(timestamp_ms).date().isoformat()


def iceberg_receipt_key(kind: IcebergReceiptKind, metadata_location: str, last_updated_ms: int,
                        member: int = 0) -> str:
    """``member``: a request's position in a group commit (:mod:`arco.iceberg.group_commit`), whose members share
    one metadata file; the first member (and every ungrouped commit) has the plain key, member i adds ``-i``."""
    suffix = f"-{member}" if member else ""
    return f"{EVENTS}/{day_of(last_updated_ms)}/iceberg/{kind}/{commit_key(metadata_location)}{suffix}.json"


def catalog_receipt_key(seq: int, at_ms: int) -> str:
    return f"{EVENTS}/{day_of(at_ms)}/catalog/committed/{seq:020d}.json"


def iceberg_event(kind: IcebergReceiptKind, *, table_uuid: str, metadata_location: str, metadata: TableMetadata,
                  previous_metadata_location: str | None, source: dict[str, Any],
                  identifier: dict[str, Any] | None = None, recorded_by: str = "commit",
                  group: dict[str, Any] | None = None, base: TableMetadata | None = None) -> dict[str, Any]:
    """``IcebergCommitPending`` / ``IcebergCommitCommitted`` (section 4.3), with what the pipeline's history needs.

    ``operation`` is :func:`commit_operation`'s; ``summary`` is the summary of the snapshot the commit added, if it
    added one (a schema change leaves the current snapshot as it was, and its summary describes an older commit).
    ``group``: for a request committed in a group, its place in it (``index``, ``size``) and the update actions
    it applied, since the metadata file holds the changes of every member. ``base``: the version the commit was
    made on, where the writer has it (see :func:`commit_operation`)."""
    operation, added = commit_operation(metadata, previous_metadata_location, base)
    summary = added.summary.model_dump(by_alias=True) if added is not None and added.summary else None
    return {
        "event_type": "IcebergCommitPending" if kind == "pending" else "IcebergCommitCommitted",
        "schema_version": SCHEMA_VERSION,
        "event_id": str(uuid7()),
        "commit_key": commit_key(metadata_location),
        "table_uuid": table_uuid,
        "identifier": identifier,
        "metadata_location": metadata_location,
        ("base_metadata_location" if kind == "pending" else "previous_metadata_location"): previous_metadata_location,
        "format_version": metadata.format_version,
        "last_updated_ms": metadata.last_updated_ms,
        "sequence_number": getattr(metadata, "last_sequence_number", 0) or 0,
        # The snapshot the commit added (on whichever branch), else the current one.
        "snapshot_id": added.snapshot_id if added is not None else metadata.current_snapshot_id,
        "operation": operation,
        "summary": summary,
        "schema_id": metadata.current_schema_id,
        "source": source,
        "recorded_by": recorded_by,
        "recorded_at_ms": int(time.time() * 1000),
        **({"group": group} if group is not None else {}),
    }


CREATE = "create"
SET_CURRENT_SNAPSHOT = "set-current-snapshot"
UPDATE_METADATA = "update-metadata"


def commit_operation(metadata: TableMetadata, previous_metadata_location: str | None,
                     base: TableMetadata | None = None) -> tuple[str, Snapshot | None]:
    """What a commit did, from the metadata it wrote, and the snapshot it made current if it added that snapshot.

    ``create``                a table's first metadata version
    the snapshot's operation  the commit added a snapshot (``append``, ``overwrite``, ``delete``, ``replace``,
                              from its summary): the current one, or one on another branch (or staged)
    ``set-current-snapshot``  the main branch moved to a snapshot the table already had (a rollback)
    ``update-metadata``       anything else: schema, partition spec, sort order, properties, branches and tags,
                              statistics, expired snapshots, location

    With the ``base`` (the version the commit was made on: the commit path has it, and the reconciler when the
    previous file is still readable), "added" is exact: a snapshot the base does not have. Without it, "added" is
    judged from the new metadata alone, the way Iceberg's metadata builders (Java's, and PyIceberg's, which Arco
    applies commits with) stamp a version: adding a snapshot sets the version's ``last-updated-ms`` to the
    snapshot's ``timestamp-ms``, and moving the main branch appends a snapshot-log entry stamped with it; any other
    change stamps the version with the time of the commit. That reading takes a metadata-only commit stamped in
    the very millisecond of the current snapshot's (client-set) timestamp for the commit that added the snapshot.
    """
    if base is not None and previous_metadata_location is not None:
        return _operation_against(metadata, base)
    if previous_metadata_location is None and not metadata.metadata_log:
        current = metadata.snapshot_by_id(metadata.current_snapshot_id) if metadata.current_snapshot_id else None
        return CREATE, current if current is not None and current.timestamp_ms == metadata.last_updated_ms else None
    current = metadata.snapshot_by_id(metadata.current_snapshot_id) if metadata.current_snapshot_id else None
    if current is not None and current.timestamp_ms == metadata.last_updated_ms:
        return _operation_of(current), current
    last_move = metadata.snapshot_log[-1] if metadata.snapshot_log else None
    if (current is not None and last_move is not None and last_move.snapshot_id == current.snapshot_id
            and last_move.timestamp_ms == metadata.last_updated_ms):
        return SET_CURRENT_SNAPSHOT, None
    elsewhere = _added_off_main(metadata)
    if elsewhere is not None:
        return _operation_of(elsewhere), elsewhere
    return UPDATE_METADATA, None


def _operation_against(metadata: TableMetadata, base: TableMetadata) -> tuple[str, Snapshot | None]:
    known = {snapshot.snapshot_id for snapshot in base.snapshots}
    added = [snapshot for snapshot in metadata.snapshots if snapshot.snapshot_id not in known]
    current = metadata.snapshot_by_id(metadata.current_snapshot_id) if metadata.current_snapshot_id else None
    if current is not None and current.snapshot_id not in known:
        return _operation_of(current), current
    if current is not None and metadata.current_snapshot_id != base.current_snapshot_id:
        return SET_CURRENT_SNAPSHOT, None
    if added:  # on another branch, or staged
        newest = max(added, key=lambda s: s.sequence_number or 0)
        return _operation_of(newest), newest
    return UPDATE_METADATA, None


def _operation_of(snapshot: Snapshot) -> str:
    operation = snapshot.summary.operation.value if snapshot.summary is not None else None
    return operation or UPDATE_METADATA


def _added_off_main(metadata: TableMetadata) -> Snapshot | None:
    """A snapshot this version added that main does not point at (an append to another branch, a staged write):
    stamped with the version's time, as the current one would be; the newest of them, should several be."""
    stamped = [s for s in metadata.snapshots if s.timestamp_ms == metadata.last_updated_ms
               and s.snapshot_id != metadata.current_snapshot_id]
    return max(stamped, key=lambda s: s.sequence_number or 0) if stamped else None


def catalog_event(seq: int, op: dict[str, Any], *, recorded_by: str = "commit") -> dict[str, Any]:
    """``CatalogMutationCommitted``: one Tier 1 operation as it was appended at ``seq``."""
    return {
        "event_type": "CatalogMutationCommitted",
        "schema_version": SCHEMA_VERSION,
        "event_id": str(uuid7()),
        "seq": seq,
        "op": op.get("op"),
        "at_ms": op.get("at_ms"),
        "principal": op.get("principal"),
        "source": op.get("source") or {"kind": "admin_api", "user_id": op.get("principal")},
        "operation": op,
        "recorded_by": recorded_by,
        "recorded_at_ms": int(time.time() * 1000),
    }


def write_receipt(storage: StorageBackend, key: str, event: dict[str, Any]) -> bool:
    """Write a receipt create-only; True if this call wrote it. Never raises: the reconciler backfills."""
    try:
        return storage.put(key, orjson.dumps(event), DoesNotExist()).ok
    except (StorageError, OSError) as exc:
        RECEIPT_FAULTS.report("receipt not written (the reconciler backfills it)", key, exc)
        return False


def write_iceberg_receipt(storage: StorageBackend, kind: IcebergReceiptKind, *, table_uuid: str,
                          metadata_location: str, metadata: TableMetadata, previous_metadata_location: str | None,
                          source: dict[str, Any], identifier: dict[str, Any] | None = None, member: int = 0,
                          group: dict[str, Any] | None = None, base: TableMetadata | None = None) -> bool:
    return write_receipt(storage, *iceberg_receipt(
        kind, table_uuid=table_uuid, metadata_location=metadata_location, metadata=metadata,
        previous_metadata_location=previous_metadata_location, source=source, identifier=identifier, member=member,
        group=group, base=base))


def iceberg_receipt(kind: IcebergReceiptKind, *, table_uuid: str, metadata_location: str, metadata: TableMetadata,
                    previous_metadata_location: str | None, source: dict[str, Any],
                    identifier: dict[str, Any] | None = None, member: int = 0, group: dict[str, Any] | None = None,
                    base: TableMetadata | None = None) -> tuple[str, dict[str, Any]]:
    """An Iceberg receipt's key and event, for a caller that builds it apart from writing it."""
    event = iceberg_event(kind, table_uuid=table_uuid, metadata_location=metadata_location, metadata=metadata,
                          previous_metadata_location=previous_metadata_location, source=source,
                          identifier=identifier, group=group, base=base)
    return iceberg_receipt_key(kind, metadata_location, metadata.last_updated_ms, member), event
