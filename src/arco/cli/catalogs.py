"""``arco catalog create|list``: the catalogs of a warehouse (Iceberg's ``warehouse``, Unity Catalog's catalogs)."""

from __future__ import annotations

import click

from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.catalog.catalogs import create_catalog, ensure_default_catalog
from arco.catalog.errors import CatalogError
from arco.catalog.store import CatalogStore
from arco.storage.base import StorageBackend


def create(storage: StorageBackend, name: str, comment: str | None) -> str:
    store = CatalogStore(storage)
    ensure_default_catalog(store, owner=BOOTSTRAP_ADMIN.name)
    try:
        entry = create_catalog(store, name, owner=BOOTSTRAP_ADMIN.name, comment=comment)
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from exc
    return f"created catalog {entry.name} (storage root {entry.storage_root}); Iceberg clients use warehouse={entry.name}"


def listing(storage: StorageBackend) -> list[str]:
    store = CatalogStore(storage)
    with store.read() as state:
        return [f"{c.name}\t{c.storage_root}\t{c.comment or ''}" for c in sorted(state.catalogs.values(),
                                                                          key=lambda c: c.name.casefold())]
