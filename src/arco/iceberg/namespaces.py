"""Iceberg namespaces over the Tier 1 catalog (a namespace is a UC schema; nesting is allowed here)."""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth.principals import Principal
from arco.auth.subjects import subject_of
from arco.catalog import locations
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.names import check_namespace
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.iceberg.commit_rules import check_reserved_properties
from arco.iceberg.errors import BadRequest, UnprocessableEntity
from arco.iceberg.paging import page

LOCATION = "location"


class NamespaceService:
    def __init__(self, store: CatalogStore) -> None:
        self.store = store

    def list(self, catalog: CatalogEntry, parent: NamespacePath, token: str | None,
             size: int | None) -> tuple[list[NamespacePath], str | None]:
        with self.store.read() as state:
            if parent:
                state.namespace(catalog.id, parent)  # 404 for a missing parent
            children = [n.path for n in state.child_namespaces(catalog.id, parent)]
        return page(children, lambda p: p[-1].casefold(), token, size)

    def create(self, catalog: CatalogEntry, namespace: Any, properties: Any, principal: str,
               source: dict[str, Any] | None = None, tag: str | None = None,
               who: Principal | None = None) -> dict[str, Any]:
        """A new namespace. A ``location`` property (Spark's ``CREATE NAMESPACE ... LOCATION``) is where its tables
        go: a top-level namespace's storage root, governed as a Unity Catalog schema's ``storage_root``
        (:func:`arco.catalog.locations.check_managed_storage_root`: inside an external location the caller may
        create managed storage in), its managed storage a folder of its own under it."""
        path = check_namespace(namespace)
        props = _check_properties(properties)
        check_reserved_properties(list(props))
        chosen = props.get(LOCATION)
        if chosen is not None and (len(path) > 1 or who is None):
            raise BadRequest("a location can be given to a top-level namespace only (the namespaces under it keep "
                             "their tables in it); omit it to let Arco place the tables")
        ns_id = str(uuid.uuid4())

        def build(state: CatalogState) -> dict[str, Any]:
            op = {"op": "create_namespace", "id": ns_id, "catalog_id": catalog.id, "path": list(path),
                  "owner": principal, "properties": props, "comment": props.get("comment")}
            if chosen is not None and who is not None:
                op["requested_root"], op["storage_location"] = locations.check_managed_storage_root(
                    state, subject_of(state, who), chosen, self.store.storage.url, catalog.metastore_id, "schemas",
                    ns_id)
            return op

        self.store.execute(build, principal=principal, request=tag, source=source)
        return {"namespace": list(path), "properties": props}

    def load(self, catalog: CatalogEntry, path: NamespacePath) -> dict[str, Any]:
        """Its properties, with the ``location`` its new tables are placed under when none was given (as Hive's
        and Hadoop's catalogs report it: Spark's DESCRIBE NAMESPACE shows it)."""
        with self.store.read() as state:
            entry = state.namespace(catalog.id, path)
            properties = dict(entry.properties)
            properties.setdefault(LOCATION, locations.namespace_location(state, catalog, entry.path))
            return {"namespace": list(entry.path), "properties": properties}

    def exists(self, catalog: CatalogEntry, path: NamespacePath) -> None:
        with self.store.read() as state:
            state.namespace(catalog.id, path)

    def drop(self, catalog: CatalogEntry, path: NamespacePath, principal: str, source: dict[str, Any] | None = None,
             tag: str | None = None) -> None:
        self.store.execute(lambda state: {"op": "drop_namespace", "id": state.namespace(catalog.id, path).id},
                           principal=principal, request=tag, source=source)

    def update_properties(self, catalog: CatalogEntry, path: NamespacePath, body: Any, principal: str,
                          source: dict[str, Any] | None = None, tag: str | None = None) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        removals = [] if body.get("removals") is None else body["removals"]
        updates = _check_properties(body.get("updates"))
        if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
            raise BadRequest("'removals' must be a list of strings")
        both = sorted(set(removals) & set(updates))
        if both:
            # The spec's 422, in the reference's words.
            raise UnprocessableEntity(f"Invalid namespace update, cannot simultaneously set and remove keys: "
                                      f"{', '.join(both)}")
        check_reserved_properties([*updates, *removals])

        def build(state: CatalogState) -> dict[str, Any]:
            entry = state.namespace(catalog.id, path)
            if (LOCATION in updates and updates[LOCATION] != entry.properties.get(LOCATION)) or \
                    (LOCATION in removals and entry.storage_location):
                raise BadRequest(f"a namespace's location is chosen when it is created (it is "
                                 f"{entry.properties.get(LOCATION) or 'where Arco places it'}); its tables stay there")
            # The reply is part of the operation, so a retry after a crash can answer it again.
            summary = {"updated": sorted(updates), "removed": sorted(k for k in removals if k in entry.properties),
                       "missing": sorted(k for k in removals if k not in entry.properties)}
            return {"op": "update_namespace", "id": entry.id, "updates": updates, "removals": removals,
                    "summary": summary}

        return properties_answer(self.store.execute(build, principal=principal, request=tag, source=source)["summary"])


def properties_answer(summary: dict[str, Any]) -> dict[str, Any]:
    """An UpdateNamespacePropertiesResponse from an operation's summary. ``missing`` is always a list, empty when
    nothing was missing: the spec lets it be null or absent, but PyIceberg's model requires a list (summaries logged
    before this was so have null)."""
    return {**summary, "missing": summary.get("missing") or []}


def _check_properties(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise BadRequest("properties must be an object of string keys and string values")
    return dict(raw)
