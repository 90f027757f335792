"""Catalogs, schemas and tables as Unity Catalog sees them, over the Tier 1 catalog Iceberg REST also uses.

A UC catalog is an Iceberg warehouse, a UC schema a top-level Iceberg namespace, and a table is the same entry
whichever API made it (:mod:`arco.unity.table_service` has the tables; :class:`UnityService` adds catalogs and
schemas to them, and is what the routes call). Names given to UC are lower-cased (the spec), and compared
case-insensitively everywhere.
"""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import metastore, securable, subject_of
from arco.catalog import locations
from arco.catalog.catalogs import create_catalog
from arco.catalog.errors import CatalogNotFound, NamespaceNotFound
from arco.catalog.model import NamespaceEntry
from arco.catalog.paging import names_hold, page
from arco.catalog.state import CatalogState, namespace_entry_of
from arco.unity import infos
from arco.unity.common import (
    catalog_in,
    changes_owner_only,
    comment_of,
    common_updates,
    denied,
    new_name_in,
    page_size,
    properties_of,
    refuse_relocation,
    split_full_name,
    tenant_of,
    uc_name,
    update_by_id,
    usable_catalog,
)
from arco.unity.errors import invalid
from arco.unity.table_service import UnityTables


class UnityService(UnityTables):
    """Catalogs and schemas; tables through its base, :class:`arco.unity.table_service.UnityTables`."""

    # -- catalogs --------------------------------------------------------------------------------------------

    def create_catalog(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            tenant = tenant_of(state, caller)
            if not can.can_create_catalog(subject_of(state, caller), metastore(state, tenant)):
                raise denied(caller, "create catalogs (needs CREATE_CATALOG on the metastore)")
        principal = caller.name
        name = uc_name("catalog", body.get("name"))
        if body.get("provider_name") or body.get("share_name"):
            raise invalid("catalogs of Delta Sharing providers are not supported by this server yet")
        chosen = body.get("storage_root")

        def place(state: CatalogState, catalog_id: str) -> tuple[str, str]:
            # Storage governance (arco.catalog.locations), against the state the catalog is made in.
            return locations.check_managed_storage_root(state, subject_of(state, caller), chosen,
                                                        self.tables.storage.url, tenant.scope, "catalogs",
                                                        catalog_id)

        entry = create_catalog(self.store, name, owner=principal, comment=comment_of(body),
                               properties=properties_of(body.get("properties")), metastore_id=tenant.scope,
                               under=tenant.entry.fields.get("storage_root") if tenant.scope else None,
                               storage_root=place if chosen not in (None, "") else None)
        with self.store.read() as state:  # dropped by another server meanwhile: answered as created
            return infos.catalog_info(state.catalogs.get(entry.id) or entry, state)

    def list_catalogs(self, max_results: Any, token: str | None, caller: Principal,
                      name_contains: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """``name_contains``: only names holding it, ignoring case (the web UI's search; page tokens still work)."""
        with self.store.read() as state:
            who, scope = subject_of(state, caller), tenant_of(state, caller).scope
            entries = sorted((c for c in state.catalogs.values() if c.metastore_id == scope
                              and names_hold(c.name, name_contains)
                              and can.can_use_catalog(who, securable(state, "catalog", c))),
                             key=lambda c: c.name.casefold())
            chunk, next_token = page(entries, lambda c: c.name.casefold(), token, page_size(max_results),
                                     plain=str.casefold)
            return [infos.catalog_info(c, state) for c in chunk], next_token

    def get_catalog(self, name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            entry = catalog_in(state, caller, name)
            if not can.can_use_catalog(subject_of(state, caller), securable(state, "catalog", entry)):
                raise denied(caller, f"use catalog {entry.name} (needs USE_CATALOG)")
            return infos.catalog_info(entry, state)

    def update_catalog(self, name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        new_name = new_name_in(body, name)
        principal = caller.name

        def build(state: CatalogState) -> dict[str, Any]:
            entry = catalog_in(state, caller, name)
            if not can.can_update_catalog(subject_of(state, caller), securable(state, "catalog", entry),
                                          owner_only=changes_owner_only(body), renames=bool(new_name)):
                raise denied(caller, f"update catalog {entry.name} (only its owner may)")
            refuse_relocation(body, "storage_root", entry.requested_root or entry.storage_root)
            op: dict[str, Any] = {"op": "update_catalog", "id": entry.id}
            if new_name:
                op["new_name"] = uc_name("catalog", new_name)
            common_updates(state, op, entry, body)
            return op

        updated = update_by_id(self.store, build, principal)
        with self.store.read() as state:
            entry = state.catalogs.get(updated)
            if entry is None:  # dropped since the change landed
                raise CatalogNotFound(name)
            return infos.catalog_info(entry, state)

    def delete_catalog(self, name: str, force: bool, caller: Principal) -> None:
        def build(state: CatalogState) -> dict[str, Any]:
            entry = catalog_in(state, caller, name)
            if not can.can_delete_catalog(subject_of(state, caller), securable(state, "catalog", entry)):
                raise denied(caller, f"delete catalog {entry.name} (only its owner may)")
            return {"op": "drop_catalog", "id": entry.id, "force": force}

        self.store.execute(build, principal=caller.name)

    # -- schemas ---------------------------------------------------------------------------------------------

    def create_schema(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        principal = caller.name
        name = uc_name("schema", body.get("name"))
        catalog_name = uc_name("catalog", body.get("catalog_name"))
        props = properties_of(body.get("properties"))
        chosen = body.get("storage_root")
        ns_id = str(uuid.uuid4())

        def build(state: CatalogState) -> dict[str, Any]:
            catalog = catalog_in(state, caller, catalog_name)
            who = subject_of(state, caller)
            if not can.can_create_schema(who, securable(state, "catalog", catalog)):
                raise denied(caller, f"create schemas in {catalog.name} (needs USE_CATALOG and CREATE_SCHEMA)")
            op = {"op": "create_namespace", "id": ns_id, "catalog_id": catalog.id, "path": [name],
                  "owner": principal, "properties": props, "comment": comment_of(body)}
            if chosen not in (None, ""):  # storage governance (arco.catalog.locations), as a catalog's
                op["requested_root"], op["storage_location"] = locations.check_managed_storage_root(
                    state, who, chosen, self.tables.storage.url, catalog.metastore_id, "schemas", ns_id)
            return op

        op = self.store.execute(build, principal=principal)
        with self.store.read() as state:  # dropped by another server meanwhile: answered as created
            return infos.schema_info(state.namespaces.get(ns_id) or namespace_entry_of(op), state)

    def list_schemas(self, catalog_name: str | None, max_results: Any, token: str | None, caller: Principal,
                     name_contains: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
        if not catalog_name:
            raise invalid("catalog_name is required")
        with self.store.read() as state:
            catalog = catalog_in(state, caller, catalog_name)
            who, parent = subject_of(state, caller), securable(state, "catalog", catalog)
            if not can.can_use_catalog(who, parent):
                raise denied(caller, f"use catalog {catalog.name} (needs USE_CATALOG)")
            entries = [n for n in state.child_namespaces(catalog.id, ())
                       if names_hold(n.path[-1], name_contains)
                       and can.can_see_schema(who, parent, securable(state, "schema", n))]
            chunk, next_token = page(entries, lambda n: n.path[-1].casefold(), token, page_size(max_results),
                                     plain=str.casefold)
            return [infos.schema_info(n, state) for n in chunk], next_token

    def _schema(self, state: CatalogState, caller: Principal, full_name: str) -> NamespaceEntry:
        catalog_name, schema_name = split_full_name(full_name, 2)
        return state.namespace(usable_catalog(state, caller, catalog_name).id, (schema_name,))

    def get_schema(self, full_name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            entry = self._schema(state, caller, full_name)
            self._check_schema(state, caller, entry, can.can_see_schema, "use schema", "USE_SCHEMA")
            return infos.schema_info(entry, state)

    def _check_schema(self, state: CatalogState, caller: Principal, entry: NamespaceEntry, rule: Any, what: str,
                      needs: str, **kwargs: Any) -> None:
        catalog = state.catalogs[entry.catalog_id]
        if not rule(subject_of(state, caller), securable(state, "catalog", catalog), securable(state, "schema", entry),
                    **kwargs):
            raise denied(caller, f"{what} {catalog.name}.{entry.path[-1]} (needs {needs})")

    def update_schema(self, full_name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        new_name = new_name_in(body, split_full_name(full_name, 2)[1])
        principal = caller.name

        def build(state: CatalogState) -> dict[str, Any]:
            entry = self._schema(state, caller, full_name)
            self._check_schema(state, caller, entry, can.can_update_schema, "update schema", "ownership",
                               owner_only=changes_owner_only(body), renames=bool(new_name))
            refuse_relocation(body, "storage_root", entry.requested_root)
            op: dict[str, Any] = {"op": "update_namespace", "id": entry.id}
            if new_name:
                op["new_name"] = uc_name("schema", new_name)
            common_updates(state, op, entry, body)
            return op

        updated = update_by_id(self.store, build, principal)
        with self.store.read() as state:
            entry = state.namespaces.get(updated)
            if entry is None:  # dropped since the change landed
                raise NamespaceNotFound(full_name)
            return infos.schema_info(entry, state)

    def delete_schema(self, full_name: str, force: bool, caller: Principal) -> None:
        def build(state: CatalogState) -> dict[str, Any]:
            entry = self._schema(state, caller, full_name)
            self._check_schema(state, caller, entry, can.can_delete_schema, "delete schema", "ownership")
            return {"op": "drop_namespace", "id": entry.id, "force": force}

        self.store.execute(build, principal=caller.name)
