"""Volumes (OSS 2.1 ``/volumes``): MANAGED in a prefix Arco allocates, EXTERNAL inside an external location.

Storage is decided by :mod:`arco.catalog.locations` only: a managed volume gets ``<catalog root>/<schema>/<name>-
<uuid>`` (the shape of a managed table's prefix); an external volume's ``storage_location`` must lie inside an
external location on which the caller holds CREATE_EXTERNAL_VOLUME (or owns it, or is an admin) and be clear of
every table, volume, model, managed root and ``_catalog``. Deleting a managed volume deletes the files under its
allocated prefix only (if no one else lives in or around it); an external volume's files are never deleted.
Dropping its schema with force removes the volume from the catalog and leaves its files, as for tables.

Privileges: CREATE_VOLUME on the schema to create; READ_VOLUME to see one; ownership to change or delete it.
"""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog import locations
from arco.catalog.schema_objects import made_schema_object
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.iceberg.purge import delete_prefix
from arco.iceberg.tables import TableService
from arco.unity import objects
from arco.unity.common import (
    SCHEMA_OBJECT_KEYS,
    NothingToUpdate,
    changes_owner_only,
    check_changes,
    comment_of,
    denied,
    owner_in,
    refuse_relocation,
    uc_name,
)
from arco.unity.errors import invalid

VOLUME_TYPES = ("MANAGED", "EXTERNAL")


def volume_info(state: CatalogState, entry: SecurableEntry) -> dict[str, Any]:
    return {**objects.common_info(state, entry, "volume_id"), "volume_type": entry.fields["volume_type"],
            "storage_location": entry.fields["storage_location"]}


class VolumeService:
    def __init__(self, store: CatalogStore, tables: TableService) -> None:
        self.store = store
        self.tables = tables

    def create(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        name = uc_name("volume", body.get("name"))
        for key in ("catalog_name", "schema_name"):
            objects.text(body, key, required=True)
        volume_type = objects.choice(body, "volume_type", VOLUME_TYPES)
        comment = comment_of(body)
        location = objects.text(body, "storage_location")
        if volume_type == "MANAGED" and location:
            raise invalid("a MANAGED volume's storage_location is chosen by Arco: omit it")
        if volume_type == "EXTERNAL" and not location:
            raise invalid("storage_location is required for an EXTERNAL volume")
        volume_id = str(uuid.uuid4())

        def build(state: CatalogState) -> dict[str, Any]:
            where = objects.place(state, caller, body["catalog_name"], body["schema_name"])
            who = objects.check(state, caller, where,
                                lambda s, c, sc: can.can_create_in_schema(s, c, sc, "CREATE_VOLUME"),
                                "create volumes", "USE_CATALOG, USE_SCHEMA and CREATE_VOLUME")
            if volume_type == "MANAGED":
                where_to = locations.allocate_table_location(state, where.catalog, where.schema.path, name,
                                                             volume_id)
            else:
                where_to = locations.check_external_volume_location(state, who, location, self.tables.storage.url,
                                                                    where.catalog.metastore_id)
            return {"op": "create_schema_object", "type": "volume", "id": volume_id, "schema_id": where.schema.id,
                    "name": name, "owner": caller.name, "comment": comment,
                    "metastore_id": where.catalog.metastore_id,
                    "fields": {"volume_type": volume_type, "storage_location": where_to}}

        op = self.store.execute(build, principal=caller.name)
        with self.store.read() as state:
            return volume_info(state, made_schema_object(state, op))

    @staticmethod
    def _readable(state: CatalogState, caller: Principal, where: objects.Place, entry: SecurableEntry) -> bool:
        return objects.usable(state, caller, where, "volume", entry, "READ_VOLUME")

    def get(self, full_name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            where, entry = objects.find(state, caller, "volume", full_name)
            if not self._readable(state, caller, where, entry):
                raise denied(caller, f"read volume {full_name} (needs USE_CATALOG, USE_SCHEMA and READ_VOLUME)")
            return volume_info(state, entry)

    def list(self, catalog_name: Any, schema_name: Any, max_results: Any, token: str | None,
             caller: Principal) -> tuple[list[dict[str, Any]], str | None]:
        return objects.page_in_schema(self.store, caller, "volume", "READ_VOLUME", catalog_name, schema_name,
                                      max_results, token, volume_info)

    def update(self, full_name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        comment = comment_of(body)
        renamed: dict[str, str] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            where, entry = objects.find(state, caller, "volume", full_name)
            target = objects.new_name(body, "volume", entry.fields["name"])
            if not can.can_update_object(subject_of(state, caller), *where.parents(state),
                                         securable(state, "volume", entry), owner_only=changes_owner_only(body),
                                         renames=bool(target), create_privilege="CREATE_VOLUME"):
                raise denied(caller, f"update volume {full_name} (only its owner may)")
            refuse_relocation(body, "storage_location", entry.fields["storage_location"])
            op: dict[str, Any] = {"op": "update_schema_object", "type": "volume", "schema_id": where.schema.id,
                                  "name": entry.fields["name"], "metastore_id": entry.metastore_id}
            if target:
                op["new_name"] = renamed["name"] = target
            owner = owner_in(state, body)
            if owner:
                op["owner"] = owner
            if "comment" in body:
                op["comment"] = comment
            return check_changes(op, SCHEMA_OBJECT_KEYS)

        try:
            self.store.execute(build, principal=caller.name)
        except NothingToUpdate:
            pass
        catalog_name, schema_name, name = full_name.split(".")
        with self.store.read() as state:
            _, entry = objects.find(state, caller, "volume",
                                    f"{catalog_name}.{schema_name}.{renamed.get('name', name)}")
            return volume_info(state, entry)

    def delete(self, full_name: str, caller: Principal) -> None:
        found: dict[str, Any] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            where, entry = objects.find(state, caller, "volume", full_name)
            if not can.can_delete_object(subject_of(state, caller), *where.parents(state),
                                         securable(state, "volume", entry)):
                raise denied(caller, f"delete volume {full_name} (only its owner may)")
            found.update(entry=entry, catalog_id=where.catalog.id)
            return {"op": "drop_schema_object", "type": "volume", "schema_id": where.schema.id,
                    "name": entry.fields["name"], "metastore_id": entry.metastore_id}

        self.store.execute(build, principal=caller.name)
        entry = found["entry"]
        if entry.fields["volume_type"] == "MANAGED":
            purge(self.store, self.tables, entry.id, entry.fields["storage_location"], found["catalog_id"])


def purge(store: CatalogStore, tables: TableService, owner_id: str, location: str, catalog_id: str,
          prefix_of: Any = None) -> int:
    """Delete the files under a dropped managed object's allocated prefix, if it is that object's alone
    (:func:`arco.catalog.locations.owned_prefix`); ``prefix_of(state)`` may decide instead (model versions)."""
    with store.read() as state:
        if prefix_of is not None:
            prefix = prefix_of(state)
        else:
            prefix = locations.owned_prefix(state, owner_id, location, True, state.catalogs.get(catalog_id),
                                            tables.storage.url)
    return 0 if prefix is None else delete_prefix(tables, prefix)
