"""Tables as Unity Catalog sees them: an Iceberg table shows with ``data_source_format`` ICEBERG and the columns
of its current Iceberg schema (an Iceberg view as a ``VIEW`` with its SQL); a table made through UC (Delta,
Parquet, ... or a view) keeps its columns in Tier 1. Managed tables get an Arco-allocated location (a staging
table's, for a CTAS), external ones a location the caller may create tables in (:mod:`arco.catalog.locations`).
"""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import may_look_up_tables, securable, subject_of
from arco.catalog import locations
from arco.catalog.errors import TableNotFound
from arco.catalog.landing import on_landing
from arco.catalog.model import CatalogEntry, TableEntry
from arco.catalog.paging import names_hold, page
from arco.catalog.state import CatalogState, refuse_taken_name
from arco.catalog.store import CatalogStore
from arco.catalog.table_index import new_table, rename_with_changes
from arco.iceberg.metadata_files import MissingMetadataFile
from arco.iceberg.purge import DroppedTable, purge_later
from arco.iceberg.tables import TableService
from arco.unity import infos
from arco.unity.common import (
    catalog_in,
    changes_owner_only,
    check_table,
    comment_of,
    common_updates,
    denied,
    looked_up,
    new_name_in,
    page_size,
    properties_of,
    refuse_relocation,
    split_full_name,
    staging_table_is_callers,
    text_of,
    uc_name,
    usable_catalog,
)
from arco.unity.errors import invalid

TABLE_TYPES = {"MANAGED", "EXTERNAL", "VIEW"}
UC_FORMATS = {"DELTA", "CSV", "JSON", "AVRO", "PARQUET", "ORC", "TEXT"}


class UnityTables:
    """The table operations of the Unity Catalog API, over the Tier 1 catalog (``store``) and Iceberg's tables."""

    def __init__(self, store: CatalogStore, tables: TableService) -> None:
        self.store = store
        self.tables = tables

    def _table(self, state: CatalogState, caller: Principal, full_name: str) -> TableEntry:
        """The table by full name, once the caller may reach the tables of its schema (403 otherwise, whether
        the table exists or not: see :func:`arco.auth.decisions.can_reach_tables`)."""
        catalog_name, schema_name, name = split_full_name(full_name, 3)
        catalog = usable_catalog(state, caller, catalog_name)
        if not may_look_up_tables(state, caller, catalog, (schema_name,)):
            raise denied(caller, f"use schema {catalog.name}.{schema_name} (needs USE_SCHEMA)")
        return state.table(catalog.id, (schema_name,), name)

    def table_info(self, entry: TableEntry, state: CatalogState) -> dict[str, Any]:
        if entry.format != "ICEBERG":
            return infos.table_info(entry, state, entry.columns)
        if entry.kind == "VIEW":
            return self._iceberg_view_info(entry, state)
        columns, properties, changed = self._iceberg_view(entry)
        # An Iceberg table's properties live in its metadata; Tier 1's (set through UC) are kept beside them.
        return infos.table_info(entry, state, columns, {**properties, **entry.properties}, changed)

    def _iceberg_view_info(self, entry: TableEntry, state: CatalogState) -> dict[str, Any]:
        """An Iceberg REST view: ``VIEW`` with the SQL of its ``spark`` representation (else the first) and the
        columns of its schema, from its current metadata."""
        from arco.iceberg.views import uc_view_of
        from arco.unity.columns import column_infos

        sql, schema, properties = uc_view_of(self.tables, entry)
        info = infos.table_info(entry, state, column_infos(schema) if schema is not None else [],
                                {**properties, **entry.properties})
        if sql is not None:
            info["view_definition"] = sql
        return info

    def _iceberg_view(self, entry: TableEntry) -> tuple[list[dict[str, Any]], dict[str, str],
                                                        tuple[int | None, str | None] | None]:
        """Columns and properties of an Iceberg table's current metadata, and when (``last-updated-ms``) and by
        whom (the pointer's committer) that metadata was made: Iceberg commits change no Tier 1 entry, so this
        is the only place that knows (:func:`arco.unity.infos.last_change`)."""
        from arco.unity.columns import column_infos

        pointer = self.tables.resolver.for_read(entry.id)
        if pointer is None or pointer.pointer.dropped:
            return [], {}, None
        try:
            metadata = self.tables.files.read(pointer.pointer.current_metadata_location)
        except MissingMetadataFile:  # a table whose metadata was deleted outside the catalog shows, without columns
            return [], {}, None
        partition_sources = [f.source_id for f in metadata.spec().fields]
        committer = pointer.pointer.updated_by.get("principal")
        return (column_infos(metadata.schema(), partition_sources), dict(metadata.properties),
                (metadata.last_updated_ms, committer if isinstance(committer, str) else None))

    def get_table(self, full_name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            entry = self._table(state, caller, full_name)
            check_table(state, caller, entry, can.can_read_table, "read table", "USE_CATALOG, USE_SCHEMA and SELECT")
            return self.table_info(entry, state)

    def list_tables(self, catalog_name: str | None, schema_name: str | None, max_results: Any,
                    token: str | None, caller: Principal, omit_columns: bool = False,
                    name_contains: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        if not catalog_name or not schema_name:
            raise invalid("catalog_name and schema_name are both required")
        with self.store.read() as state:
            catalog = usable_catalog(state, caller, catalog_name)  # 403 alike for every schema name, as Iceberg's
            schema = state.namespace(catalog.id, (looked_up("schema", schema_name),))
            who = subject_of(state, caller)
            parent, container = securable(state, "catalog", catalog), securable(state, "schema", schema)
            entries = [t for t in state.tables_of(catalog.id, (schema_name,)) if names_hold(t.name, name_contains)
                       and can.can_read_table(who, parent, container, securable(state, "table", t))]
            chunk, next_token = page(entries, lambda t: t.name.casefold(), token, page_size(max_results),
                                     plain=str.casefold)
            if omit_columns:
                return [infos.table_info(t, state, None) for t in chunk], next_token
            return [self.table_info(t, state) for t in chunk], next_token

    def create_table(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        principal = caller.name
        name = uc_name("table", body.get("name"))
        catalog_name = uc_name("catalog", body.get("catalog_name"))
        schema_name = uc_name("schema", body.get("schema_name"))
        table_type = str(body.get("table_type") or "").upper()
        if table_type not in TABLE_TYPES:
            raise invalid(f"table_type must be one of {sorted(TABLE_TYPES)}, got {body.get('table_type')!r}")
        columns = infos.check_columns(body.get("columns"))
        fmt = str(body.get("data_source_format") or "").upper() or None
        view_definition = text_of(body, "view_definition")
        view_dependencies = infos.check_view_dependencies(body.get("view_dependencies"))
        location = text_of(body, "storage_location")
        if table_type == "VIEW":
            if not view_definition:
                raise invalid("view_definition is required for a VIEW")
            fmt, location = fmt or "UNITY_CATALOG", None
        else:
            if fmt == "ICEBERG":
                raise invalid("create Iceberg tables through the Iceberg REST API (/iceberg); they show here too")
            if fmt not in UC_FORMATS:
                raise invalid(f"data_source_format must be one of {sorted(UC_FORMATS)}, got {fmt!r}")
            if table_type == "EXTERNAL" and not location:
                raise invalid("storage_location is required for an EXTERNAL table")
        ids = {"table": str(uuid.uuid4())}

        def build(state: CatalogState) -> dict[str, Any]:
            catalog = _catalog_to_create_in(state, caller, catalog_name, schema_name, "create tables")
            where = location
            promotes = None
            if table_type == "MANAGED" and location:  # promoting a staging table: its id and location
                staged = self._staged(state, caller, catalog, schema_name, name, location)
                ids["table"], where, promotes = staged.name, location, staged.name
            elif table_type == "MANAGED":
                where = locations.allocate_table_location(state, catalog, (schema_name,), name, ids["table"])
            elif table_type == "EXTERNAL":
                # Storage governance (arco.catalog.locations): inside an external location the caller may create
                # tables in, clear of every other table, managed storage and Arco's own files.
                where = locations.check_external_table_location(
                    state, subject_of(state, caller), location, self.tables.storage.url, catalog.metastore_id,
                    must_be_writable=False, inside_warehouse=False)
            return {"op": "create_table", "id": ids["table"], "catalog_id": catalog.id, "namespace": [schema_name],
                    "name": name, "kind": "VIEW" if table_type == "VIEW" else "TABLE", "format": fmt,
                    "location": where or "", "owner": principal, "managed": table_type == "MANAGED",
                    "comment": comment_of(body), "properties": properties_of(body.get("properties")),
                    "columns": columns, "view_definition": view_definition,
                    **({"view_dependencies": view_dependencies} if view_dependencies is not None else {}),
                    "storage_credential_name": text_of(body, "storage_credential_name"),
                    **({"promotes": promotes} if promotes else {})}

        op = self.store.execute(build, principal=principal)
        with self.store.read() as state:  # dropped by another server meanwhile: answered as created
            return self.table_info(state.tables.get(ids["table"]) or new_table(op, tuple(op["namespace"])), state)

    @staticmethod
    def _staged(state: CatalogState, caller: Principal, catalog: CatalogEntry, schema: str, name: str,
                location: str) -> Any:
        """The staging table a managed table's create promotes: the one at ``location`` for the same catalog,
        schema and name, which the caller created (its data is the caller's writing). The promotion removes it
        (``promotes`` in the operation): from then on the storage is the table's, reached through its grants."""
        for staged in state.securables_of("staging_table"):
            f = staged.fields
            if f["location"] == location and f["catalog_id"] == catalog.id and \
                    f["schema"].casefold() == schema.casefold() and f["name"].casefold() == name.casefold():
                if not staging_table_is_callers(state, caller, staged):
                    raise denied(caller, f"create a table from staging table {staged.name} (only its creator may)")
                return staged
        raise invalid("a managed table's storage_location must be empty, or the staging_location of a staging "
                      "table created for the same catalog, schema and name")

    def create_staging_table(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        """Storage for a managed table whose data is written before the table exists (CTAS); see
        :meth:`create_table` for the promotion.

        Not for the name of an existing table or view (409 TABLE_ALREADY_EXISTS): that promotion could only fail,
        after the data was written. Another staging table of the same name is no conflict: the spec has each call
        create "a new staging table instance" with storage of its own, and a promotion names its staging table by
        location, so a CTAS retried after a failed attempt (whose staging table nothing deletes) stages again, as
        the reference server lets it."""
        name = uc_name("table", body.get("name"))
        catalog_name = uc_name("catalog", body.get("catalog_name"))
        schema_name = uc_name("schema", body.get("schema_name"))
        staging_id = str(uuid.uuid4())
        found: dict[str, str] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            catalog = _catalog_to_create_in(state, caller, catalog_name, schema_name, "stage tables")
            refuse_taken_name(state, catalog.id, (schema_name,), name)
            found["location"] = locations.allocate_table_location(state, catalog, (schema_name,), name, staging_id)
            return {"op": "create_securable", "id": staging_id, "type": "staging_table", "name": staging_id,
                    "owner": caller.name, "fields": {"catalog_id": catalog.id, "schema": schema_name, "name": name,
                                                     "location": found["location"]}}

        self.store.execute(build, principal=caller.name)
        return {"id": staging_id, "name": name, "catalog_name": catalog_name, "schema_name": schema_name,
                "staging_location": found["location"]}

    def update_table(self, full_name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        new_name = new_name_in(body, split_full_name(full_name, 3)[2])
        principal = caller.name

        def build(state: CatalogState) -> dict[str, Any]:
            entry = self._table(state, caller, full_name)
            needs = ("ownership of the table, USE_CATALOG, USE_SCHEMA and CREATE_TABLE on its schema" if new_name
                     else "ownership")  # a rename makes a table in the schema, as Iceberg's renameTable says
            check_table(state, caller, entry, can.can_update_table, "rename table" if new_name else "update table",
                        needs, owner_only=changes_owner_only(body), renames=bool(new_name))
            op: dict[str, Any] = {"op": "update_table", "id": entry.id}
            common_updates(state, op, entry, body)
            _refuse_moves(entry, body)
            if "columns" in body and entry.format != "ICEBERG":
                op["columns"] = infos.check_columns(body["columns"])
            elif "columns" in body and body["columns"] is not None:
                raise invalid("an Iceberg table's columns are the schema in its metadata: change them through the "
                              "Iceberg REST API (an engine's ALTER TABLE), not updateTable")
            if body.get("view_definition") is not None and entry.kind == "VIEW" and entry.format != "ICEBERG":
                definition = text_of(body, "view_definition")
                if not definition:
                    raise invalid("view_definition cannot be empty")
                op["view_definition"] = definition
            if new_name:
                # One operation, built on the state it lands on: the rename carries the other changes, so a refused
                # rename changes nothing else, and no other rename of the table can land between the two.
                return rename_with_changes(op, list(entry.namespace), uc_name("table", new_name))
            return op

        op = self.store.execute(build, principal=principal)
        with self.store.read() as state:
            entry = state.tables.get(op["id"])
            if entry is None:  # dropped since the change landed
                raise TableNotFound(full_name)
            return self.table_info(entry, state)

    def delete_table(self, full_name: str, caller: Principal) -> None:
        principal = caller.name

        def allowed(state: CatalogState) -> TableEntry:
            entry = self._table(state, caller, full_name)
            check_table(state, caller, entry, can.can_delete_table, "delete table", "ownership")
            return entry

        with self.store.read() as state:
            entry = allowed(state)
            catalog = state.catalogs[entry.catalog_id]

        def still_allowed(state: CatalogState) -> None:
            # The drop lands on a later state: the name must still name this table, and the caller may still drop
            # it (another table given the name meanwhile is not this one; a revoke meanwhile is seen).
            if allowed(state).id != entry.id:
                raise TableNotFound(full_name)

        with on_landing(still_allowed):
            if entry.format == "ICEBERG" and entry.kind == "TABLE":
                self.tables.drop(catalog, entry.namespace, entry.name, principal)  # also tombstones its pointer
            else:
                self.store.execute(lambda state: {"op": "drop_table", "id": entry.id, "location": entry.location},
                                   principal=principal)
        if entry.format == "ICEBERG" and entry.kind != "TABLE":  # an Iceberg view: its pointer is marked dropped
            self.tables.tombstone(entry.id)
        if entry.managed and entry.kind == "TABLE":
            # Unity Catalog's rule: dropping a managed table removes its data (Iceberg REST's dropTable keeps the
            # files unless purgeRequested). Only the prefix Arco allocated to it, if still its alone.
            purge_later(self.tables, DroppedTable(entry.id, entry.catalog_id, entry.location, managed=True))

    def table_summaries(self, catalog_name: str | None, schema_pattern: str | None, table_pattern: str | None,
                        max_results: Any, token: str | None,
                        caller: Principal) -> tuple[list[dict[str, Any]], str | None]:
        if not catalog_name:
            raise invalid("catalog_name is required")
        schema_match = infos.like(schema_pattern)
        table_match = infos.like(table_pattern)
        with self.store.read() as state:
            catalog = catalog_in(state, caller, catalog_name)
            who, parent = subject_of(state, caller), securable(state, "catalog", catalog)
            rows = []
            for schema in state.child_namespaces(catalog.id, ()):
                if not schema_match(schema.path[-1]):
                    continue
                container = securable(state, "schema", schema)
                for table in state.tables_of(catalog.id, schema.path):
                    if table_match(table.name) and can.can_read_table(who, parent, container,
                                                                      securable(state, "table", table)):
                        rows.append((f"{catalog.name}.{schema.path[-1]}.{table.name}", infos.table_type(table)))
        rows.sort(key=lambda r: r[0].casefold())
        chunk, next_token = page(rows, lambda r: r[0].casefold(), token, page_size(max_results))
        return [{"full_name": n, "table_type": t} for n, t in chunk], next_token


def _catalog_to_create_in(state: CatalogState, caller: Principal, catalog_name: str, schema_name: str,
                          what: str) -> CatalogEntry:
    """The catalog whose schema the caller makes a table in, once the grants say it may."""
    catalog = usable_catalog(state, caller, catalog_name)  # 403 alike for every schema name in it
    schema = state.namespace(catalog.id, (schema_name,))
    if not can.can_create_table(subject_of(state, caller), securable(state, "catalog", catalog),
                                securable(state, "schema", schema)):
        raise denied(caller, f"{what} in {catalog.name}.{schema_name} (needs USE_CATALOG, USE_SCHEMA and "
                             "CREATE_TABLE)")
    return catalog


def _refuse_moves(entry: TableEntry, body: dict[str, Any]) -> None:
    """An update that would move a table's data or change how it is read is refused, not ignored."""
    refuse_relocation(body, "storage_location", entry.location)
    fmt = body.get("data_source_format")
    if entry.kind != "VIEW" and fmt not in (None, "") and str(fmt).upper() != entry.format:
        raise invalid(f"data_source_format cannot be changed by updateTable (the table is {entry.format})")
