"""An Iceberg view's part of its page: read as loadView reads it (the Iceberg guard's ``read`` check, then the
view's pointer and metadata file), with every version the metadata keeps, newest first, and when each was made
current (the version log)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyiceberg.view.metadata import ViewMetadata, ViewVersion
from starlette.datastructures import State

from arco.auth.principals import Principal
from arco.catalog.model import CatalogEntry, TableEntry
from arco.iceberg.views import ViewService


@dataclass(frozen=True)
class ViewVersionRow:
    version_id: int
    timestamp_ms: int
    current: bool
    schema_id: int
    columns: tuple[str, ...]  # the version's schema, top-level names
    engine: str  # the summary's engine-name and engine-version, as the writer named them
    operation: str
    default_namespace: str
    representations: tuple[tuple[str, str], ...]  # (dialect, SQL)
    made_current_ms: tuple[int, ...]  # from the version log: a version may be made current more than once


@dataclass(frozen=True)
class ViewFacts:
    location: str
    metadata: ViewMetadata
    versions: list[ViewVersionRow]


def view_facts(app: State, caller: Principal, catalog: CatalogEntry, entry: TableEntry) -> ViewFacts:
    """Raises what loadView would for the caller: a refusal, or NoSuchView for one dropped meanwhile."""
    app.iceberg.guard.table(caller, catalog, entry.namespace, entry.name, "read")
    loaded = ViewService(app.iceberg.store, app.services.storage, app.iceberg.tables).load(
        catalog, entry.namespace, entry.name)
    return ViewFacts(loaded.location, loaded.metadata, version_rows(loaded.metadata))


def version_rows(metadata: ViewMetadata) -> list[ViewVersionRow]:
    """Every version the metadata keeps, newest first (by version id: ids only grow)."""
    made_current: dict[int, list[int]] = {}
    for logged in metadata.version_log:
        made_current.setdefault(logged.version_id, []).append(logged.timestamp_ms)
    schemas = {schema.schema_id: schema for schema in metadata.schemas}
    rows = []
    for version in sorted(metadata.versions, key=lambda v: v.version_id, reverse=True):
        schema = schemas.get(version.schema_id)
        rows.append(ViewVersionRow(
            version.version_id, version.timestamp_ms, version.version_id == metadata.current_version_id,
            version.schema_id, tuple(f.name for f in schema.fields) if schema is not None else (),
            _engine(version), str(_summary(version).get("operation", "")), ".".join(version.default_namespace),
            tuple(_sql(r) for r in version.representations),
            tuple(sorted(made_current.get(version.version_id, []), reverse=True))))
    return rows


def _sql(representation: Any) -> tuple[str, str]:
    """(dialect, SQL) of a representation (PyIceberg wraps each kind in a root model)."""
    inner = getattr(representation, "root", representation)
    return str(getattr(inner, "dialect", "") or ""), str(getattr(inner, "sql", "") or "")


def _summary(version: ViewVersion) -> dict[str, Any]:
    return dict(version.summary or {})


def _engine(version: ViewVersion) -> str:
    summary = _summary(version)
    return " ".join(str(summary[k]) for k in ("engine-name", "engine-version") if summary.get(k))
