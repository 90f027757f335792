"""Registered models and model versions (OSS 2.1 ``/models`` and ``/models/{full_name}/versions``).

A registered model is placed by Arco: its ``storage_location`` is a prefix allocated to its id under the
catalog's managed root (:func:`arco.catalog.locations.allocate_table_location`), and version ``n``'s files go to
``<model location>/versions/<n>``. A version starts PENDING_REGISTRATION (the client writes its artifacts), and
``finalize`` makes it READY. Version numbers count up per model and are never reused. Deleting a version deletes
its files; deleting a model (with ``force`` while it has versions) deletes the model's prefix.

Privileges: CREATE_MODEL on the schema to create a model; EXECUTE on the model to see it and its versions;
ownership of the model to change it, add, change, finalize or delete versions, or delete it.
"""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog import locations
from arco.catalog.paging import page
from arco.catalog.schema_objects import made_schema_object, objects_in_schema
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.iceberg.tables import TableService
from arco.unity import objects
from arco.unity.common import (
    SCHEMA_OBJECT_KEYS,
    catalog_in,
    changes_owner_only,
    comment_of,
    denied,
    owner_in,
    page_size,
    tenant_of,
    uc_name,
)
from arco.unity.errors import invalid
from arco.unity.volumes import purge

PENDING = "PENDING_REGISTRATION"  # a new version, its files being written
FINALIZED = "READY"


def model_info(state: CatalogState, entry: SecurableEntry) -> dict[str, Any]:
    return {**objects.common_info(state, entry, "id"), "storage_location": entry.fields["storage_location"]}


def version_info(state: CatalogState, model: SecurableEntry, version: dict[str, Any]) -> dict[str, Any]:
    catalog_name, schema_name, name = objects.full_name_of(state, model)
    return objects.drop_none({
        "model_name": name, "catalog_name": catalog_name, "schema_name": schema_name, "version": version["version"],
        "source": version.get("source"), "run_id": version.get("run_id"), "status": version["status"],
        "storage_location": version["storage_location"], "comment": version.get("comment") or None,
        "created_at": version["created_at"], "created_by": version.get("created_by"),
        "updated_at": version["updated_at"], "updated_by": version.get("updated_by"), "id": version["id"]})


def version_number(raw: Any) -> int:
    try:
        number = int(raw)
    except (TypeError, ValueError):
        raise invalid(f"version must be an integer, got {raw!r}") from None
    if number < 1 or isinstance(raw, bool):
        raise invalid(f"version must be a positive integer, got {raw!r}")
    return number


def _version_key(token: str) -> str:
    """A version number sent as a page token (the reference's tokens are the last version listed) as its key."""
    return f"{version_number(token):020d}"


class ModelService:
    def __init__(self, store: CatalogStore, tables: TableService) -> None:
        self.store = store
        self.tables = tables

    # -- registered models -----------------------------------------------------------------------------------

    def create(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        name = uc_name("registered model", body.get("name"))
        for key in ("catalog_name", "schema_name"):
            objects.text(body, key, required=True)
        comment = comment_of(body)
        if body.get("storage_location"):
            raise invalid("a registered model's storage_location is chosen by Arco: omit it")
        model_id = str(uuid.uuid4())

        def build(state: CatalogState) -> dict[str, Any]:
            where = objects.place(state, caller, body["catalog_name"], body["schema_name"])
            objects.check(state, caller, where, lambda s, c, sc: can.can_create_in_schema(s, c, sc, "CREATE_MODEL"),
                          "create registered models", "USE_CATALOG, USE_SCHEMA and CREATE_MODEL")
            location = locations.allocate_table_location(state, where.catalog, where.schema.path, name, model_id)
            return {"op": "create_schema_object", "type": "registered_model", "id": model_id,
                    "schema_id": where.schema.id, "name": name, "owner": caller.name, "comment": comment,
                    "metastore_id": where.catalog.metastore_id, "fields": {"storage_location": location}}

        op = self.store.execute(build, principal=caller.name)
        with self.store.read() as state:
            return model_info(state, made_schema_object(state, op))

    def _readable(self, state: CatalogState, caller: Principal, where: objects.Place, entry: SecurableEntry) -> bool:
        return can.can_use_object(subject_of(state, caller), *where.parents(state),
                                  securable(state, "registered_model", entry), "EXECUTE")

    def _readable_model(self, state: CatalogState, caller: Principal,
                        full_name: str) -> tuple[objects.Place, SecurableEntry]:
        where, entry = objects.find(state, caller, "registered_model", full_name)
        if not self._readable(state, caller, where, entry):
            raise denied(caller, f"use registered model {full_name} (needs USE_CATALOG, USE_SCHEMA and EXECUTE)")
        return where, entry

    def get(self, full_name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            return model_info(state, self._readable_model(state, caller, full_name)[1])

    def list(self, catalog_name: Any, schema_name: Any, max_results: Any, token: str | None,
             caller: Principal) -> tuple[list[dict[str, Any]], str | None]:
        """In one schema, in one catalog, or (neither given) in every catalog of the caller's metastore."""
        if schema_name and not catalog_name:
            raise invalid("schema_name needs catalog_name")
        with self.store.read() as state:
            if catalog_name and schema_name:
                places = [objects.place(state, caller, catalog_name, schema_name)]
                objects.check(state, caller, places[0], can.can_list_in_schema, "list registered models",
                              "USE_CATALOG and USE_SCHEMA")
            else:
                scope = tenant_of(state, caller).scope
                catalogs = [catalog_in(state, caller, catalog_name)] if catalog_name else \
                    [c for c in state.catalogs.values() if c.metastore_id == scope]
                places = [objects.Place(c, n) for c in catalogs for n in state.child_namespaces(c.id, ())]
            rows = []
            for where in places:
                for entry in objects_in_schema(state, where.schema.id, "registered_model"):
                    if self._readable(state, caller, where, entry):
                        rows.append((f"{where.prefix()}.{entry.fields['name']}".casefold(), entry))
            rows.sort(key=lambda r: r[0])
            chunk, next_token = page(rows, lambda r: r[0], token, page_size(max_results), plain=str.casefold)
            return [model_info(state, e) for _, e in chunk], next_token

    def _owned(self, state: CatalogState, caller: Principal, full_name: str, body: dict[str, Any] | None = None,
               renames: bool = False) -> tuple[objects.Place, SecurableEntry]:
        where, entry = objects.find(state, caller, "registered_model", full_name)
        if not can.can_update_object(subject_of(state, caller), *where.parents(state),
                                     securable(state, "registered_model", entry),
                                     owner_only=body is not None and changes_owner_only(body), renames=renames,
                                     create_privilege="CREATE_MODEL"):
            raise denied(caller, f"change registered model {full_name} (only its owner may)")
        return where, entry

    def update(self, full_name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        comment = comment_of(body)
        renamed: dict[str, str] = {}
        changes = {k: body.get(k) for k in ("comment", "owner", "new_name")}

        def build(state: CatalogState) -> dict[str, Any]:
            found = objects.find(state, caller, "registered_model", full_name)[1]
            target = objects.new_name(body, "registered model", found.fields["name"])
            where, entry = self._owned(state, caller, full_name, changes, renames=bool(target))
            op: dict[str, Any] = {"op": "update_schema_object", "type": "registered_model",
                                  "schema_id": where.schema.id, "name": entry.fields["name"],
                                  "metastore_id": entry.metastore_id}
            if target:
                op["new_name"] = renamed["name"] = target
            owner = owner_in(state, body)
            if owner:
                op["owner"] = owner
            if "comment" in body:
                op["comment"] = comment
            if set(op) <= SCHEMA_OBJECT_KEYS:
                raise invalid("No updated fields defined.")  # the reference server's answer
            return op

        self.store.execute(build, principal=caller.name)
        catalog_name, schema_name, name = full_name.split(".")
        with self.store.read() as state:
            entry = objects.find(state, caller, "registered_model",
                                 f"{catalog_name}.{schema_name}.{renamed.get('name', name)}")[1]
            return model_info(state, entry)

    def delete(self, full_name: str, force: bool, caller: Principal) -> None:
        found: dict[str, Any] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            where, entry = objects.find(state, caller, "registered_model", full_name)
            if not can.can_delete_object(subject_of(state, caller), *where.parents(state),
                                         securable(state, "registered_model", entry)):
                raise denied(caller, f"delete registered model {full_name} (only its owner may)")
            found.update(entry=entry, catalog_id=where.catalog.id)
            return {"op": "drop_schema_object", "type": "registered_model", "schema_id": where.schema.id,
                    "name": entry.fields["name"], "metastore_id": entry.metastore_id, "force": force}

        self.store.execute(build, principal=caller.name)
        entry = found["entry"]
        purge(self.store, self.tables, entry.id, entry.fields["storage_location"], found["catalog_id"])

    # -- model versions --------------------------------------------------------------------------------------

    def create_version(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        for key in ("model_name", "catalog_name", "schema_name", "source"):
            objects.text(body, key, required=True)
        run_id, comment = objects.text(body, "run_id"), comment_of(body)
        full_name = f"{body['catalog_name']}.{body['schema_name']}.{uc_name('registered model', body['model_name'])}"
        version_id = str(uuid.uuid4())
        made: dict[str, Any] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            where, model = self._owned(state, caller, full_name)
            number = model.fields.get("max_version", 0) + 1
            made["version"] = number
            fields = objects.drop_none({
                "source": body["source"], "run_id": run_id, "comment": comment,
                "storage_location": locations.model_version_location(model.fields["storage_location"], number)})
            return {"op": "create_model_version", "schema_id": where.schema.id, "name": model.fields["name"],
                    "metastore_id": model.metastore_id, "version": number, "id": version_id, "fields": fields}

        self.store.execute(build, principal=caller.name)
        return self.get_version(full_name, made["version"], caller)

    def _version(self, state: CatalogState, model: SecurableEntry, full_name: str, version: Any) -> dict[str, Any]:
        found = model.fields.get("versions", {}).get(str(version_number(version)))
        if found is None:
            raise objects.not_found("model_version", f"{full_name}/{version}")
        return found

    def get_version(self, full_name: str, version: Any, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            _, model = self._readable_model(state, caller, full_name)
            return version_info(state, model, self._version(state, model, full_name, version))

    def list_versions(self, full_name: str, max_results: Any, token: str | None,
                      caller: Principal) -> tuple[list[dict[str, Any]], str | None]:
        with self.store.read() as state:
            _, model = self._readable_model(state, caller, full_name)
            versions = sorted(model.fields.get("versions", {}).values(), key=lambda v: v["version"])
            chunk, next_token = page(versions, lambda v: f"{v['version']:020d}", token, page_size(max_results),
                                     plain=_version_key)
            return [version_info(state, model, v) for v in chunk], next_token

    def _change_version(self, full_name: str, version: Any, caller: Principal, fields: dict[str, Any],
                        expect_status: str | None = None) -> dict[str, Any]:
        number = version_number(version)

        def build(state: CatalogState) -> dict[str, Any]:
            where, model = self._owned(state, caller, full_name)
            current = self._version(state, model, full_name, number)
            if expect_status and current["status"] != expect_status:
                raise invalid(f"model version {full_name}/{number} is {current['status']}; only a "
                              f"{expect_status} version can be finalized")
            op = {"op": "update_model_version", "schema_id": where.schema.id, "name": model.fields["name"],
                  "metastore_id": model.metastore_id, "version": number, "fields": fields}
            if expect_status:
                op["expect_status"] = expect_status
            return op

        self.store.execute(build, principal=caller.name)
        return self.get_version(full_name, number, caller)

    def update_version(self, full_name: str, version: Any, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        comment = comment_of(body)
        if "comment" not in body:
            raise invalid("No updated fields defined.")  # the reference server's answer
        return self._change_version(full_name, version, caller, {"comment": comment})

    def finalize_version(self, full_name: str, version: Any, body: dict[str, Any],
                         caller: Principal) -> dict[str, Any]:
        if body.get("full_name") is None or body.get("version") is None:
            raise invalid("full_name and version are required")
        if not isinstance(body["full_name"], str) or body["full_name"].casefold() != full_name.casefold() or \
                version_number(body["version"]) != version_number(version):
            raise invalid("the body's full_name and version must name the model version in the path")
        return self._change_version(full_name, version, caller, {"status": FINALIZED},
                                    expect_status=PENDING)

    def delete_version(self, full_name: str, version: Any, caller: Principal) -> None:
        number = version_number(version)
        found: dict[str, Any] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            where, model = self._owned(state, caller, full_name)
            self._version(state, model, full_name, number)
            found.update(model=model, catalog_id=where.catalog.id)
            return {"op": "drop_model_version", "schema_id": where.schema.id, "name": model.fields["name"],
                    "metastore_id": model.metastore_id, "version": number}

        self.store.execute(build, principal=caller.name)
        model = found["model"]
        purge(self.store, self.tables, model.id, "", found["catalog_id"],
              prefix_of=lambda state: locations.model_version_purge_prefix(
                  state, model, number, state.catalogs.get(found["catalog_id"])))
