"""A table's page: schema (nested types), partition spec, properties, snapshots and refs, versions with their
sources, charts, lineage and grants. Read as the signed-in principal, through the checks the APIs make.

An Iceberg table is read as loadTable reads it (the Iceberg guard's ``read`` check, then the pointer and the
cached metadata); any other table (Delta, a view) as UC's getTable reads it. Grants come from the Permissions
API's service: all of them for the owner or an admin, else the caller's own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pyiceberg import types as t
from pyiceberg.table.metadata import TableMetadata
from starlette.datastructures import State

from arco.auth.principals import Principal
from arco.auth.subjects import may_look_up_tables
from arco.catalog.model import TableEntry
from arco.lru import Lru
from arco.pipeline.lineage import NO_SNAPSHOT_OPERATIONS
from arco.ui import charts, history
from arco.ui.lineage import Lineage, lineage_of
from arco.ui.pages import SERVICE_ERRORS, PageError, page_error, table_metadata
from arco.ui.view_page import ViewFacts, ViewVersionRow, view_facts
from arco.unity.common import usable_catalog
from arco.unity.effective import EffectivePermissions
from arco.unity.lineage import may_read_table, name_now

VERSIONS_PER_PAGE = 50
SNAPSHOTS_SHOWN = 100


@dataclass(frozen=True)
class Column:
    depth: int
    name: str
    type: str
    required: bool
    field_id: int | None
    doc: str | None


@dataclass
class TablePage:
    full_name: str
    catalog: str
    schema: str
    name: str
    info: dict[str, Any]  # UC's TableInfo-like facts: type, format, owner, comment, location
    columns: list[Column] = field(default_factory=list)
    partition_fields: list[dict[str, Any]] = field(default_factory=list)
    earlier_specs: list[dict[str, Any]] = field(default_factory=list)  # partition specs before the current one
    sort_fields: list[dict[str, Any]] = field(default_factory=list)
    properties: list[tuple[str, str]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    snapshot_count: int = 0
    refs: list[dict[str, Any]] = field(default_factory=list)
    versions: list[history.Version] = field(default_factory=list)
    version_count: int = 0
    version_page: int = 1
    version_pages: int = 1
    history_compacted: bool = False
    line_charts: list[charts.LineChart] = field(default_factory=list)
    activity: charts.BarChart | None = None
    lineage: Lineage | None = None
    grants: list[dict[str, Any]] = field(default_factory=list)
    grants_note: str = ""
    iceberg: bool = False
    format_version: int | None = None
    view_versions: list[ViewVersionRow] = field(default_factory=list)  # an Iceberg view's, newest first

    @property
    def kind_word(self) -> str:
        """How the page names what it shows."""
        return "view" if self.info.get("table_type") == "VIEW" else "table"


def when(ms: int | None) -> str:
    if not ms:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):  # a writer's timestamp outside the years a date holds
        return f"{ms} ms since 1970"


def type_text(field_type: t.IcebergType) -> str:
    if isinstance(field_type, t.StructType):
        return "struct"
    if isinstance(field_type, t.ListType):
        return "list"
    if isinstance(field_type, t.MapType):
        return "map"
    return str(field_type)


def schema_rows(fields: Any, depth: int = 0) -> list[Column]:
    """Fields as indented rows; a list's element and a map's key and value appear as children named so."""
    rows: list[Column] = []

    def visit(name: str, field_id: int | None, field_type: t.IcebergType, required: bool, doc: str | None,
              level: int) -> None:
        rows.append(Column(level, name, type_text(field_type), required, field_id, doc))
        if isinstance(field_type, t.StructType):
            for f in field_type.fields:
                visit(f.name, f.field_id, f.field_type, f.required, f.doc, level + 1)
        elif isinstance(field_type, t.ListType):
            visit("element", field_type.element_id, field_type.element_type, field_type.element_required, None,
                  level + 1)
        elif isinstance(field_type, t.MapType):
            visit("key", field_type.key_id, field_type.key_type, True, None, level + 1)
            visit("value", field_type.value_id, field_type.value_type, field_type.value_required, None, level + 1)

    for f in fields:
        visit(f.name, f.field_id, f.field_type, f.required, f.doc, depth)
    return rows


def _summary(snapshot: Any) -> dict[str, Any]:
    summary = snapshot.summary
    return {"operation": summary.operation.value, **summary.additional_properties} if summary is not None else {}


@dataclass(frozen=True)
class IcebergFacts:
    """Everything the page shows that follows from one metadata file alone: computed once per location (a metadata
    file never changes), so a table with 1,000 snapshots costs its summaries' walk once, not on every view."""

    columns: list[Column]
    partition_fields: list[dict[str, Any]]
    earlier_specs: list[dict[str, Any]]
    sort_fields: list[dict[str, Any]]
    properties: list[tuple[str, str]]
    format_version: int
    line_charts: list[charts.LineChart]
    snapshots: list[dict[str, Any]]
    snapshot_count: int
    refs: list[dict[str, Any]]
    versions: list[history.Version]  # sources not attached: those come per view (receipts arrive later)


_facts: Lru[str, IcebergFacts] = Lru(64)


def iceberg_facts(location: str, metadata: TableMetadata) -> IcebergFacts:
    return _facts.get_or_load(location, lambda: _compute_facts(location, metadata))  # type: ignore[return-value]


def _compute_facts(location: str, metadata: TableMetadata) -> IcebergFacts:
    schema = metadata.schema()
    names = {f.field_id: f.name for f in schema.fields}
    order = metadata.sort_order_by_id(metadata.default_sort_order_id) if metadata.sort_orders else None
    summaries = {s.snapshot_id: _summary(s) for s in metadata.snapshots}
    # Newest first in the order they were added (the metadata keeps that order), not by the writers' clocks; the
    # current snapshot is always among those shown.
    newest = list(reversed(metadata.snapshots))
    shown = newest[:SNAPSHOTS_SHOWN]
    current = metadata.snapshot_by_id(metadata.current_snapshot_id) if metadata.current_snapshot_id else None
    if current is not None and current not in shown:
        shown.append(current)
    snapshots = []
    for s in shown:
        summary = summaries[s.snapshot_id]
        size = charts.number(summary, "total-files-size")
        snapshots.append({
            "id": s.snapshot_id, "parent": s.parent_snapshot_id, "at": when(s.timestamp_ms),
            "operation": summary.get("operation"), "sequence": s.sequence_number,
            "added_records": summary.get("added-records"), "total_records": summary.get("total-records"),
            "total_files": summary.get("total-data-files"),
            "total_bytes": charts.human(size, "bytes") if size is not None else None,
            "engine": history.engine_of(summary),
            "current": s.snapshot_id == metadata.current_snapshot_id})
    def spec_fields(spec: Any) -> list[dict[str, Any]]:
        return [{"name": f.name, "transform": str(f.transform), "field_id": f.field_id,
                 "source": names.get(f.source_id, f"field {f.source_id}")} for f in spec.fields]

    current_spec = metadata.spec()
    return IcebergFacts(
        columns=schema_rows(schema.fields),
        partition_fields=spec_fields(current_spec),
        earlier_specs=[{"spec_id": spec.spec_id, "fields": spec_fields(spec)}
                       for spec in sorted(metadata.partition_specs, key=lambda p: p.spec_id, reverse=True)
                       if spec.spec_id != current_spec.spec_id],
        sort_fields=[{"source": names.get(f.source_id, f"field {f.source_id}"), "transform": str(f.transform),
                      "direction": f.direction.value, "nulls": f.null_order.value}
                     for f in (order.fields if order else [])],
        properties=sorted(metadata.properties.items()),
        format_version=metadata.format_version,
        line_charts=charts.line_charts([summaries[s.snapshot_id] for s in main_ancestry(metadata)]),
        snapshots=snapshots,
        snapshot_count=len(newest),
        refs=sorted(({"name": name, "type": ref.snapshot_ref_type.value, "snapshot_id": ref.snapshot_id,
                      "max_ref_age_ms": ref.max_ref_age_ms, "max_snapshot_age_ms": ref.max_snapshot_age_ms,
                      "min_snapshots_to_keep": ref.min_snapshots_to_keep} for name, ref in metadata.refs.items()),
                    key=lambda r: (r["name"] != "main", r["name"])),
        versions=history.versions_of(metadata, location),
    )


def main_ancestry(metadata: TableMetadata) -> list[Any]:
    """The main branch's snapshots, oldest first: its current snapshot and its parents (what the table's counts
    were, version by version; another branch's snapshots are not main's history)."""
    by_id = {s.snapshot_id: s for s in metadata.snapshots}
    chain, at = [], by_id.get(metadata.current_snapshot_id) if metadata.current_snapshot_id else None
    while at is not None and len(chain) < len(by_id):  # the bound: a parent cycle in a hand-made file
        chain.append(at)
        at = by_id.get(at.parent_snapshot_id) if at.parent_snapshot_id is not None else None
    chain.reverse()
    return chain


def _iceberg_facts(page: TablePage, facts: IcebergFacts) -> None:
    page.columns, page.partition_fields, page.sort_fields = facts.columns, facts.partition_fields, facts.sort_fields
    page.earlier_specs = facts.earlier_specs
    page.properties, page.format_version = facts.properties, facts.format_version
    page.line_charts = facts.line_charts
    page.snapshots, page.snapshot_count, page.refs = facts.snapshots, facts.snapshot_count, facts.refs


def _versions(app: State, page: TablePage, table_uuid: str, facts: IcebergFacts, version_page: int,
              created_ms: int) -> None:
    storage = app.services.storage
    compacted = history.compacted_sources(storage, table_uuid)
    page.history_compacted = bool(compacted)
    every = history.with_older(facts.versions, compacted)
    page.version_count = len(every)
    # Counted from the versions the list shows (the compacted history's too, not only the metadata log's latest).
    page.activity = charts.activity_chart([v.at_ms for v in every], int(time.time() * 1000), created_ms)
    page.version_pages = max(1, -(-len(every) // VERSIONS_PER_PAGE))
    page.version_page = min(max(1, version_page), page.version_pages)
    start = (page.version_page - 1) * VERSIONS_PER_PAGE
    page.versions = [replace(v) for v in every[start:start + VERSIONS_PER_PAGE]]  # copies: sources go on them
    history.attach_sources(storage, page.versions, compacted)  # only the shown page's receipts are read


def _grants(app: State, page: TablePage, caller: Principal) -> None:
    try:
        page.grants = app.permissions.get("table", page.full_name, None, caller)["privilege_assignments"]
        page.grants_note = (f"Privileges granted on this {page.kind_word} (inherited ones are granted on its schema "
                            "or catalog).")
    except SERVICE_ERRORS:
        # Only owners and admins read everyone's grants: the others see what reaches them, their groups' too.
        effective = EffectivePermissions(app.iceberg.store).get("table", page.full_name, caller.name, None, None,
                                                                caller)["privilege_assignments"]
        page.grants = [{"principal": a["principal"], "privileges": [p["privilege"] for p in a["privileges"]]}
                       for a in effective]
        page.grants_note = (f"Your privileges on this {page.kind_word}, granted to you or to a group you are in (its "
                            "owner and admins see everyone's).")


def _iceberg_view(page: TablePage, facts: ViewFacts, entry: TableEntry) -> None:
    metadata = facts.metadata
    page.info = {"table_type": "VIEW", "data_source_format": "ICEBERG", "owner": entry.owner,
                 "storage_location": metadata.location, "table_id": entry.id,
                 "comment": entry.comment or metadata.properties.get("comment")}
    page.format_version = metadata.format_version
    current = next((v for v in metadata.versions if v.version_id == metadata.current_version_id), None)
    schema = next((s for s in metadata.schemas if current is not None and s.schema_id == current.schema_id), None)
    page.columns = schema_rows(schema.fields) if schema is not None else []
    page.properties = sorted({**metadata.properties, **entry.properties}.items())
    page.view_versions = facts.versions


def table_name_parts(full_name: str) -> tuple[str, tuple[str, ...], str]:
    """``catalog.schema.table``; an Iceberg table in a nested namespace is ``catalog.a.b.table`` (names hold no
    period, so the dotted form is unambiguous)."""
    names = full_name.split(".")
    if len(names) < 3 or not all(names):
        raise PageError(404, f"'{full_name}' is not a full name of the form <catalog>.<schema>.<table>")
    return names[0], tuple(names[1:-1]), names[-1]


def table_page(app: State, caller: Principal, full_name: str, version_page: int = 1) -> TablePage:
    catalog_name, namespace, name = table_name_parts(full_name)
    try:
        # As loadTable checks: a caller who may not use the catalog is refused alike for every name in it, and one
        # who may not use the schema for every name in that (in one wording, whether the name is an Iceberg table,
        # a view, a Delta table or nothing: a 404 or another wording would tell it exists); one who may is told a
        # missing table is missing, and an existing one they may not read is refused.
        with app.iceberg.store.read() as state:
            catalog = usable_catalog(state, caller, catalog_name)
            if not may_look_up_tables(state, caller, catalog, namespace):
                app.iceberg.guard.decide(state, caller, "table", catalog, namespace, name, "read")
            entry = state.table(catalog.id, namespace, name)
        real_name = ".".join((catalog.name, *entry.namespace, entry.name))
        page = TablePage(real_name, catalog.name, ".".join(entry.namespace), entry.name, {})
        if entry.format == "ICEBERG" and entry.kind == "TABLE":
            app.iceberg.guard.table(caller, catalog, entry.namespace, entry.name, "read")  # as loadTable checks
            location, metadata = table_metadata(app, catalog, entry.namespace, entry.name)
            page.iceberg = True
            page.info = {"table_type": "MANAGED" if entry.managed else "EXTERNAL", "data_source_format": "ICEBERG",
                         "owner": entry.owner, "storage_location": entry.location,
                         # Spark's COMMENT is the metadata property "comment"; one set through UC is Tier 1's.
                         "comment": entry.comment or metadata.properties.get("comment"),
                         "table_id": entry.id}
            facts = iceberg_facts(location, metadata)
            _iceberg_facts(page, facts)
            page.properties = sorted({**dict(page.properties), **entry.properties}.items())
            _versions(app, page, entry.id, facts, version_page, entry.created_at_ms)
        elif entry.format == "ICEBERG" and entry.kind == "VIEW":
            _iceberg_view(page, view_facts(app, caller, catalog, entry), entry)
        else:
            info = app.unity.get_table(real_name, caller)
            page.info = info
            page.columns = [Column(0, c.get("name", ""), str(c.get("type_text", "")), not c.get("nullable", True),
                                   None, c.get("comment")) for c in info.get("columns", [])]
            page.properties = sorted((info.get("properties") or {}).items())
        def may_see(uuid: str) -> bool:  # asked of the neighbours only
            with app.iceberg.store.read() as state:
                return may_read_table(state, caller, uuid)

        def named_now(uuid: str) -> str | None:
            with app.iceberg.store.read() as state:
                return name_now(state, uuid)

        page.lineage = lineage_of(app.services.storage, entry.id, real_name, may_see, named_now)
        for version in page.versions:  # the tables each version's own commit read (none for a schema change)
            if version.operation not in NO_SNAPSHOT_OPERATIONS and version.snapshot_id is not None:
                version.upstream = tuple(page.lineage.by_snapshot.get(version.snapshot_id, ()))
        if len(entry.namespace) == 1:
            _grants(app, page, caller)
        else:
            page.grants_note = "Grants on tables in nested namespaces are not shown here."
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    return page


__all__ = ["PageError", "TablePage", "table_page", "when"]
