"""Receipts to rows (pure): the Parquet schemas of Tier 2 and the functions that fill them.

``timeline``  one row per committed metadata version of an Iceberg table (from ``IcebergCommitCommitted``), and per
              request: a group commit's N requests share a version and have a receipt, so a row, each
``audit``     one row per Tier 1 catalog mutation (from ``CatalogMutationCommitted``)
``runs``      one row per pipeline run (from the run records)
``columns``   one row per column of each table's current schema (the schema projection)

Every timeline/audit/runs row carries ``receipt_key``, the storage key it came from: that column is how the
compactor knows what it has consumed (section 4.4: only committed receipts count).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa

# Seed section 8.1: how far a change's lineage and quality can be trusted, by who made it.
TRUST_BY_SOURCE = {
    "pipeline": ("Verified", "NotChecked"),  # Arco's own jobs: execution observed, data not checked by them
    "iceberg_rest": ("DeclaredUnverified", "NotChecked"),
    "admin_api": ("None", "NotChecked"),
}

TIMELINE = pa.schema([
    ("receipt_key", pa.string()), ("event_id", pa.string()), ("commit_key", pa.string()),
    ("table_uuid", pa.string()), ("catalog", pa.string()), ("namespace", pa.list_(pa.string())),
    ("table_name", pa.string()), ("metadata_location", pa.string()), ("previous_metadata_location", pa.string()),
    ("format_version", pa.int32()), ("sequence_number", pa.int64()), ("snapshot_id", pa.int64()),
    ("operation", pa.string()), ("summary", pa.map_(pa.string(), pa.string())), ("schema_id", pa.int32()),
    ("source_kind", pa.string()), ("source_details", pa.string()), ("principal", pa.string()),
    ("client_info", pa.string()), ("lineage_confidence", pa.string()), ("quality_status", pa.string()),
    ("committed_at", pa.timestamp("ms", tz="UTC")), ("recorded_by", pa.string()), ("table_dropped", pa.bool_()),
])

AUDIT = pa.schema([
    ("receipt_key", pa.string()), ("event_id", pa.string()), ("seq", pa.int64()), ("op", pa.string()),
    ("object_type", pa.string()), ("object_id", pa.string()), ("catalog_id", pa.string()),
    ("namespace", pa.list_(pa.string())), ("name", pa.string()), ("principal", pa.string()),
    ("source_kind", pa.string()), ("client_info", pa.string()), ("at", pa.timestamp("ms", tz="UTC")),
    ("details", pa.string()), ("recorded_by", pa.string()),
])

RUNS = pa.schema([
    ("receipt_key", pa.string()), ("run_id", pa.string()), ("job", pa.string()), ("status", pa.string()),
    ("started_at", pa.timestamp("ms", tz="UTC")), ("ended_at", pa.timestamp("ms", tz="UTC")),
    ("counts", pa.map_(pa.string(), pa.int64())), ("errors", pa.list_(pa.string())),
])

COLUMNS = pa.schema([
    ("table_uuid", pa.string()), ("catalog", pa.string()), ("namespace", pa.list_(pa.string())),
    ("table_name", pa.string()), ("schema_id", pa.int32()), ("position", pa.int32()), ("field_id", pa.int32()),
    ("column_path", pa.string()), ("type", pa.string()), ("required", pa.bool_()), ("doc", pa.string()),
    ("metadata_location", pa.string()),
])


TABLES = pa.schema([
    ("table_uuid", pa.string()), ("catalog", pa.string()), ("namespace", pa.list_(pa.string())),
    ("table_name", pa.string()), ("kind", pa.string()), ("format", pa.string()), ("location", pa.string()),
    ("owner", pa.string()),
])

SCHEMAS_BY_KIND = {"timeline": TIMELINE, "audit": AUDIT, "runs": RUNS}


class BadReceipt(ValueError):
    """A receipt that cannot become a row: counted, reported, skipped."""


def _ms(value: Any) -> datetime | None:
    return datetime.fromtimestamp(int(value) / 1000, UTC) if value is not None else None


def parse_json(data: bytes) -> dict[str, Any]:
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BadReceipt(f"not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise BadReceipt("not a JSON object")
    return parsed


def timeline_row(receipt_key: str, event: dict[str, Any], live_tables: set[str]) -> dict[str, Any]:
    if event.get("event_type") != "IcebergCommitCommitted":
        raise BadReceipt(f"expected IcebergCommitCommitted, found {event.get('event_type')!r}")
    try:
        source = event.get("source") or {}
        kind = str(source.get("kind") or "iceberg_rest")
        confidence, quality = TRUST_BY_SOURCE.get(kind, ("None", "NotChecked"))
        identifier = event.get("identifier") or {}
        summary = event.get("summary") or {}
        return {
            "receipt_key": receipt_key, "event_id": str(event["event_id"]), "commit_key": str(event["commit_key"]),
            "table_uuid": str(event["table_uuid"]), "catalog": identifier.get("catalog"),
            "namespace": [str(p) for p in identifier.get("namespace") or []], "table_name": identifier.get("name"),
            "metadata_location": str(event["metadata_location"]),
            "previous_metadata_location": event.get("previous_metadata_location"),
            "format_version": event.get("format_version"), "sequence_number": event.get("sequence_number"),
            "snapshot_id": event.get("snapshot_id"), "operation": event.get("operation"),
            "summary": [(str(k), str(v)) for k, v in summary.items()], "schema_id": event.get("schema_id"),
            "source_kind": kind, "source_details": orjson.dumps(source).decode(),
            "principal": source.get("principal"), "client_info": source.get("client_info"),
            "lineage_confidence": confidence, "quality_status": quality,
            "committed_at": _ms(event["last_updated_ms"]), "recorded_by": event.get("recorded_by"),
            "table_dropped": str(event["table_uuid"]) not in live_tables,
        }
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise BadReceipt(f"incomplete commit receipt ({exc!r})") from None


_OBJECT_TYPES = {"catalog": "catalog", "namespace": "namespace", "table": "table"}


def audit_row(receipt_key: str, event: dict[str, Any]) -> dict[str, Any]:
    if event.get("event_type") != "CatalogMutationCommitted":
        raise BadReceipt(f"expected CatalogMutationCommitted, found {event.get('event_type')!r}")
    try:
        op = event["operation"]
        name = str(op["op"])
        object_type = next((t for key, t in _OBJECT_TYPES.items() if name.endswith(key)), "other")
        source = event.get("source") or {}
        namespace = op.get("path") if object_type == "namespace" else op.get("namespace")
        return {
            "receipt_key": receipt_key, "event_id": str(event["event_id"]), "seq": int(event["seq"]), "op": name,
            "object_type": object_type, "object_id": op.get("id"), "catalog_id": op.get("catalog_id"),
            "namespace": [str(p) for p in namespace] if isinstance(namespace, list) else None,
            "name": op.get("name"), "principal": event.get("principal"),
            "source_kind": source.get("kind"), "client_info": source.get("client_info"),
            "at": _ms(event["at_ms"]), "details": orjson.dumps(op).decode(), "recorded_by": event.get("recorded_by"),
        }
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise BadReceipt(f"incomplete catalog receipt ({exc!r})") from None


def run_row(receipt_key: str, record: dict[str, Any]) -> dict[str, Any]:
    try:
        return {
            "receipt_key": receipt_key, "run_id": str(record["run_id"]), "job": str(record["job"]),
            "status": str(record["status"]), "started_at": _ms(record["started_at_ms"]),
            "ended_at": _ms(record.get("ended_at_ms")),
            "counts": [(str(k), int(v)) for k, v in (record.get("counts") or {}).items()],
            "errors": [str(e) for e in record.get("errors") or []],
        }
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise BadReceipt(f"incomplete run record ({exc!r})") from None


def column_rows(table_uuid: str, identifier: dict[str, Any], metadata_location: str,
                schema: Any) -> list[dict[str, Any]]:
    """One row per (nested) field of a PyIceberg schema, with dotted paths for nested fields."""
    rows: list[dict[str, Any]] = []

    def visit(fields: Any, prefix: str) -> None:
        for field in fields:
            path = f"{prefix}{field.name}"
            rows.append({
                "table_uuid": table_uuid, "catalog": identifier.get("catalog"),
                "namespace": list(identifier.get("namespace") or []), "table_name": identifier.get("name"),
                "schema_id": schema.schema_id, "position": len(rows), "field_id": field.field_id,
                "column_path": path, "type": str(field.field_type), "required": field.required, "doc": field.doc,
                "metadata_location": metadata_location,
            })
            if field.field_type.is_struct:
                visit(field.field_type.fields, f"{path}.")

    visit(schema.fields, "")
    return rows
