"""Catalogs: the top level under a warehouse. Iceberg REST's ``warehouse``/``prefix`` names one."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from arco.catalog.model import CatalogEntry
from arco.catalog.names import check_name, slug
from arco.catalog.state import CatalogState, Operation, catalog_entry_of
from arco.catalog.store import CatalogStore

DEFAULT_CATALOG = "main"


# Decides a creator's storage_root against the state the catalog is created in: (the root, the managed location).
PlaceUnder = Callable[[CatalogState, str], tuple[str, str]]


def create_catalog(store: CatalogStore, name: str, *, owner: str, comment: str | None = None,
                   properties: dict[str, str] | None = None, metastore_id: str | None = None,
                   under: str | None = None, storage_root: PlaceUnder | None = None) -> CatalogEntry:
    """A new catalog of a metastore (None: the primary), stored under ``under`` (default: the warehouse root), or,
    with ``storage_root``, where that decides (given the state and the new catalog's id)."""
    check_name("catalog", name)
    catalog_id = str(uuid.uuid4())
    folder = f"{slug(name)}_{catalog_id[:8]}"
    default_root = f"{under.rstrip('/')}/{folder}" if under else store.storage.location_of(folder)

    def build(state: CatalogState) -> Operation:
        requested, root = storage_root(state, catalog_id) if storage_root is not None else (None, default_root)
        return {"op": "create_catalog", "id": catalog_id, "name": name, "storage_root": root, "owner": owner,
                "comment": comment, "properties": dict(properties or {}), "metastore_id": metastore_id,
                **({"requested_root": requested} if requested else {})}

    op = store.execute(build, principal=owner)
    with store.read_cached() as state:
        return state.catalogs.get(catalog_id) or catalog_entry_of(op)


def ensure_default_catalog(store: CatalogStore, owner: str) -> bool:
    """A new warehouse starts with one catalog named ``main``, as a Databricks workspace does; whether this call
    made it (the warehouse was new).

    Only an empty catalog log gets it: a warehouse whose ``main`` was dropped on purpose keeps it dropped.
    """

    def build(state: CatalogState) -> Operation:
        if state.seq > 0:
            raise _AlreadyBootstrapped
        return {
            "op": "create_catalog", "id": str(uuid.uuid4()), "name": DEFAULT_CATALOG,
            "storage_root": store.storage.location_of(DEFAULT_CATALOG), "owner": owner,
            "comment": "The default catalog.", "properties": {},
        }

    try:
        store.execute(build, principal=owner)
    except _AlreadyBootstrapped:
        return False  # this or another server did it before
    return True


class _AlreadyBootstrapped(Exception):
    pass
