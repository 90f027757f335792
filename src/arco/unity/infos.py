"""Tier 1 entries as Unity Catalog ``CatalogInfo`` / ``SchemaInfo`` / ``TableInfo`` (pure), and input checks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import orjson

from arco.catalog.model import CatalogEntry, NamespaceEntry, TableEntry
from arco.catalog.state import CatalogState
from arco.unity.errors import invalid
from arco.unity.spark_types import spark_type_json

COLUMN_TYPES = {"BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ",
                "STRING", "BINARY", "DECIMAL", "INTERVAL", "ARRAY", "STRUCT", "MAP", "VARIANT", "CHAR", "NULL",
                "USER_DEFINED_TYPE", "TABLE_TYPE"}
TYPE_ALIASES = {"TINYINT": "BYTE", "SMALLINT": "SHORT", "INTEGER": "INT", "BIGINT": "LONG", "REAL": "FLOAT",
                "DEC": "DECIMAL", "NUMERIC": "DECIMAL"}
COLUMN_FIELDS = ("name", "type_name", "type_text", "type_json", "type_precision", "type_scale",
                 "type_interval_type", "position", "comment", "nullable", "partition_index")


# ``comment or None`` below: an empty comment is no comment (arco.unity.common.comment_of), also for one stored
# before that rule.


def drop_none(info: dict[str, Any]) -> dict[str, Any]:
    """The spec types these fields as strings (or numbers): an absent one is omitted, never sent as null."""
    return {k: v for k, v in info.items() if v is not None}


def metastore_id_of(catalog: CatalogEntry, state: CatalogState) -> str | None:
    return catalog.metastore_id or state.primary_metastore_id


def catalog_info(entry: CatalogEntry, state: CatalogState) -> dict[str, Any]:
    return drop_none({
        "name": entry.name, "comment": entry.comment or None, "properties": dict(entry.properties),
        "owner": entry.owner, "metastore_id": metastore_id_of(entry, state), "id": entry.id,
        "storage_root": entry.requested_root or entry.storage_root, "storage_location": entry.storage_root,
        "catalog_type": "MANAGED_CATALOG",
        "created_at": entry.created_at_ms, "created_by": entry.created_by or entry.owner,
        "updated_at": entry.updated_at_ms, "updated_by": entry.updated_by or entry.owner,
    })


def schema_info(entry: NamespaceEntry, state: CatalogState) -> dict[str, Any]:
    catalog = state.catalogs[entry.catalog_id]
    return drop_none({
        "name": entry.path[-1], "catalog_name": catalog.name, "comment": entry.comment or None,
        "properties": dict(entry.properties), "full_name": f"{catalog.name}.{'.'.join(entry.path)}",
        "owner": entry.owner, "metastore_id": metastore_id_of(catalog, state), "schema_id": entry.id,
        "created_at": entry.created_at_ms, "created_by": entry.created_by or entry.owner,
        "updated_at": entry.updated_at_ms, "updated_by": entry.updated_by or entry.owner,
        "storage_root": entry.requested_root, "storage_location": entry.storage_location,
    })


def table_type(entry: TableEntry) -> str:
    if entry.kind == "VIEW":
        return "VIEW"
    return "MANAGED" if entry.managed else "EXTERNAL"


def last_change(entry: TableEntry, elsewhere: tuple[int | None, str | None] | None) -> tuple[int, str | None]:
    """When a table last changed, and who changed it: Tier 1 records the changes made through UC (and the
    creation), but an Iceberg commit (schema, properties, data) changes only the table's metadata, whose
    ``last-updated-ms`` (and the committer, when known) ``elsewhere`` gives: the later of the two."""
    recorded = (entry.updated_at_ms, entry.updated_by or entry.owner)
    if elsewhere is None or elsewhere[0] is None or elsewhere[0] <= entry.updated_at_ms:
        return recorded
    return elsewhere[0], elsewhere[1] or recorded[1]


def table_info(entry: TableEntry, state: CatalogState, columns: list[dict[str, Any]] | None,
               properties: dict[str, str] | None = None,
               changed_elsewhere: tuple[int | None, str | None] | None = None) -> dict[str, Any]:
    catalog = state.catalogs[entry.catalog_id]
    schema = ".".join(entry.namespace)
    updated_at, updated_by = last_change(entry, changed_elsewhere)
    info = drop_none({
        "name": entry.name, "catalog_name": catalog.name, "schema_name": schema, "table_type": table_type(entry),
        "data_source_format": None if entry.kind == "VIEW" else entry.format,
        "storage_location": entry.location or None, "view_definition": entry.view_definition,
        "comment": entry.comment or None, "properties": dict(entry.properties if properties is None else properties),
        "owner": entry.owner, "full_name": f"{catalog.name}.{schema}.{entry.name}",
        "metastore_id": metastore_id_of(catalog, state), "table_id": entry.id,
        "storage_credential_name": entry.storage_credential_name, "view_dependencies": entry.view_dependencies,
        "created_at": entry.created_at_ms, "created_by": entry.created_by or entry.owner,
        "updated_at": updated_at, "updated_by": updated_by,
    })
    if columns is not None:
        info["columns"] = columns
    return info


def check_columns(raw: Any) -> list[dict[str, Any]]:
    """``ColumnInfo`` list as given on create (name, type_name, type_text, type_json and position REQ)."""
    if not isinstance(raw, list):
        raise invalid("columns is required: a list of ColumnInfo objects")
    columns = []
    for index, column in enumerate(raw):
        if not isinstance(column, dict):
            raise invalid(f"columns[{index}] must be an object")
        for required in ("name", "type_name"):
            if not isinstance(column.get(required), str) or not column[required]:
                raise invalid(f"columns[{index}].{required} is required")
        type_name = TYPE_ALIASES.get(column["type_name"].upper(), column["type_name"].upper())
        if type_name not in COLUMN_TYPES:
            raise invalid(f"columns[{index}].type_name {column['type_name']!r} is not a column type name")
        kept = {k: column[k] for k in COLUMN_FIELDS if column.get(k) is not None}
        _check_column_types(kept, index)
        kept["type_name"] = type_name
        kept.setdefault("position", index)
        kept.setdefault("type_text", type_name.lower())
        kept.setdefault("nullable", True)
        if "type_json" not in kept:
            derived = spark_type_json(type_name, kept.get("type_text"), kept.get("type_precision"),
                                      kept.get("type_scale"))
            if derived is not None:
                kept["type_json"] = orjson.dumps({"name": kept["name"], "type": derived,
                                                  "nullable": kept["nullable"], "metadata": {}}).decode()
        columns.append(kept)
    names = [c["name"].casefold() for c in columns]
    if len(set(names)) != len(names):
        raise invalid("column names must be unique")
    return columns


_COLUMN_STRINGS = ("name", "type_text", "type_json", "type_interval_type", "comment")
_COLUMN_COUNTS = ("position", "type_precision", "type_scale", "partition_index")  # int32, never negative


def _check_column_types(column: dict[str, Any], index: int) -> None:
    """Each ColumnInfo field of the spec's type, as stored and answered (a ``"yes"`` for nullable or ``"0"`` for
    position would be given back to every client that reads the table); ``type_json`` is JSON, as engines that
    read the table parse it."""
    for key in _COLUMN_STRINGS:
        if key in column and not isinstance(column[key], str):
            raise invalid(f"columns[{index}].{key} must be a string")
    for key in _COLUMN_COUNTS:
        value = column.get(key)
        if key in column and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31):
            raise invalid(f"columns[{index}].{key} must be an integer from 0 to {2**31 - 1}")
    if "nullable" in column and not isinstance(column["nullable"], bool):
        raise invalid(f"columns[{index}].nullable must be true or false")
    if column.get("type_json"):
        try:
            json.loads(column["type_json"])
        except ValueError:
            raise invalid(f"columns[{index}].type_json must be a JSON document (the column's type)") from None


MAX_DEPENDENCIES = 1000
_DEPENDENCY_KINDS = {"table": "table_full_name", "function": "function_full_name"}


def check_view_dependencies(raw: Any) -> dict[str, Any] | None:
    """A ``DependencyList`` as given on create: the tables and functions a view-like table reads, each named in
    full (``catalog.schema.name``). Kept as given, for clients that show lineage; nothing is resolved: a view may
    name what the caller cannot see, and what is dropped later."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"dependencies"}:
        raise invalid("view_dependencies must be an object with one field, dependencies")
    items = raw.get("dependencies", [])
    if not isinstance(items, list):
        raise invalid("view_dependencies.dependencies must be a list of Dependency objects")
    if len(items) > MAX_DEPENDENCIES:
        raise invalid(f"view_dependencies may name at most {MAX_DEPENDENCIES} dependencies")
    kept = []
    for index, item in enumerate(items):
        where = f"view_dependencies.dependencies[{index}]"
        if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in _DEPENDENCY_KINDS:
            raise invalid(f"{where} must be an object with exactly one of table or function")
        kind, named = next(iter(item.items()))
        field_name = _DEPENDENCY_KINDS[kind]
        full_name = named.get(field_name) if isinstance(named, dict) and len(named) == 1 else None
        if not isinstance(full_name, str) or not _full_name(full_name):
            raise invalid(f"{where}.{kind} must be {{\"{field_name}\": \"catalog.schema.name\"}}")
        kept.append({kind: {field_name: full_name}})
    return {"dependencies": kept}


def _full_name(name: str) -> bool:
    parts = name.split(".")
    return len(parts) == 3 and all(part and part.isprintable() and len(part) <= 255 for part in parts)


def like(pattern: str | None) -> Callable[[str], bool]:
    """SQL LIKE (``%`` any run, ``_`` one character), case-insensitive like every name; None matches all."""
    if not pattern:
        return lambda name: True
    regex = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    compiled = re.compile(f"^{regex}$", re.IGNORECASE | re.DOTALL)
    return lambda name: compiled.match(name) is not None
