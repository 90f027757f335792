"""Receipts to rows (pure): the Parquet schemas of Tier 2 and the functions that fill them.

``timeline``  one row per committed metadata version of an Iceberg table (from ``IcebergCommitCommitted``), and per
              request: a group commit's N requests share a version and have a receipt, so a row, each
``audit``     one row per Tier 1 catalog mutation (from ``CatalogMutationCommitted``) and per Delta Sharing
              recipient read (from ``DeltaSharingRead``: the recipient is the row's principal)
``runs``      one row per pipeline run (from the run records)
``columns``   one row per column of each table's current schema (the schema projection)

Every timeline/audit/runs row carries ``receipt_key``, the storage key it came from: that column is how the
compactor knows what it has consumed (section 4.4: only committed receipts count).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import pyarrow as pa

from arco.events.timestamps import utc_datetime
from arco.pipeline.lineage import LINEAGE, REPORTS

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
    ("source_kind", pa.string()), ("client_info", pa.string()), ("committed_at", pa.timestamp("ms", tz="UTC")),
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

SCHEMAS_BY_KIND = {"timeline": TIMELINE, "audit": AUDIT, "runs": RUNS, "reports": REPORTS, "lineage": LINEAGE}


class BadReceipt(ValueError):
    """A receipt that cannot become a row: counted, reported, skipped."""


def _ms(value: Any) -> datetime | None:
    return utc_datetime(int(value)) if value is not None else None


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


# What each operation is about, by the operation's name; the named-securable and schema-object operations say
# their type in the operation (``type``), and grants in ``securable_type``.
_OBJECT_TYPES = {
    "create_catalog": "catalog", "update_catalog": "catalog", "drop_catalog": "catalog",
    "create_namespace": "namespace", "update_namespace": "namespace", "drop_namespace": "namespace",
    "create_table": "table", "update_table": "table", "rename_table": "table", "drop_table": "table",
    "create_token": "token", "revoke_token": "token",
    "create_principal": "principal", "update_principal": "principal",
    "create_model_version": "model_version", "update_model_version": "model_version",
    "drop_model_version": "model_version", "drop_metastore": "metastore",
}
_TYPED_OPS = ("create_securable", "update_securable", "drop_securable", "create_schema_object",
              "update_schema_object", "drop_schema_object")


def object_type_of(op: dict[str, Any]) -> str:
    name = str(op.get("op"))
    if name in _OBJECT_TYPES:
        return _OBJECT_TYPES[name]
    if name in _TYPED_OPS and op.get("type"):
        return str(op["type"])
    if name == "update_grants":
        return "grants"
    return "other"


def _names_of(op: dict[str, Any]) -> dict[str, Any]:
    """The names the writer logged with the operation (:mod:`arco.catalog.audit`); for entries logged before it
    did, what the operation itself says (its id-only operations stay unnamed)."""
    logged = op.get("audit")
    if isinstance(logged, dict):
        return logged
    path = op.get("path") if op.get("op") == "create_namespace" else None
    return {"catalog_id": op.get("catalog_id"),
            "namespace": path if path is not None else op.get("namespace"),
            "name": ".".join(str(p) for p in path) if isinstance(path, list) else op.get("name")}


def _without_secrets(op: dict[str, Any]) -> dict[str, Any]:
    """The operation without token and client-secret hashes: they are lookup keys of credentials, and the audit
    table is read by more people than the catalog log."""
    return {k: v for k, v in op.items() if not k.endswith("_hash")}


def audit_row(receipt_key: str, event: dict[str, Any]) -> dict[str, Any]:
    if event.get("event_type") != "CatalogMutationCommitted":
        raise BadReceipt(f"expected CatalogMutationCommitted, found {event.get('event_type')!r}")
    try:
        op = event["operation"]
        names = _names_of(op)
        namespace = names.get("namespace")
        source = event.get("source") or {}
        return {
            "receipt_key": receipt_key, "event_id": str(event["event_id"]), "seq": int(event["seq"]),
            "op": str(op["op"]), "object_type": object_type_of(op),
            "object_id": op.get("id") or op.get("securable_id"),
            "catalog_id": names.get("catalog_id"),
            "namespace": [str(p) for p in namespace] if isinstance(namespace, list) else None,
            "name": names.get("name"), "principal": event.get("principal"),
            "source_kind": source.get("kind"), "client_info": source.get("client_info"),
            "committed_at": _ms(event["at_ms"]), "details": orjson.dumps(_without_secrets(op)).decode(),
            "recorded_by": event.get("recorded_by"),
        }
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise BadReceipt(f"incomplete catalog receipt ({exc!r})") from None


SHARING_READ = "DeltaSharingRead"


def sharing_read_row(receipt_key: str, event: dict[str, Any]) -> dict[str, Any]:
    """A recipient's read: op ``delta_sharing.<action>``, the recipient as principal, the share in ``namespace``."""
    if event.get("event_type") != SHARING_READ:
        raise BadReceipt(f"expected {SHARING_READ}, found {event.get('event_type')!r}")
    try:
        table = event.get("table")
        return {
            "receipt_key": receipt_key, "event_id": str(event["event_id"]), "seq": None,
            "op": f"delta_sharing.{event['action']}", "object_type": "table" if table else "share",
            "object_id": event.get("table_id"), "catalog_id": None,
            "namespace": [str(p) for p in (event.get("share"), event.get("schema")) if p is not None],
            "name": table or event.get("share"), "principal": f"recipient:{event['recipient']}",
            "source_kind": "delta_sharing", "client_info": event.get("client_info"),
            "committed_at": _ms(event["at_ms"]),
            "details": orjson.dumps({k: event.get(k) for k in ("version", "files", "client_ip", "details")}).decode(),
            "recorded_by": "sharing",
        }
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise BadReceipt(f"incomplete sharing receipt ({exc!r})") from None


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
