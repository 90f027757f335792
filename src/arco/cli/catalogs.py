"""``arco catalog create|list|drop``: the catalogs of a warehouse (Iceberg's ``warehouse``, Unity Catalog's
catalogs)."""

from __future__ import annotations

import click

from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.catalog.catalogs import create_catalog
from arco.catalog.errors import CatalogError, NotEmptyError
from arco.catalog.state import CatalogState, Operation
from arco.catalog.store import CatalogStore
from arco.cli.common import open_warehouse, warehouse_options


@click.group()
def catalog() -> None:
    """Create, list and drop the catalogs of a warehouse (a new warehouse has one, named main).

    Iceberg clients name a catalog as their `warehouse`; running servers see changes at once.
    """


@catalog.command("create")
@warehouse_options
@click.argument("name")
@click.option("--comment", default=None, help="A description shown in listings.")
def catalog_create(warehouse: str, storage_options: tuple[str, ...], name: str, comment: str | None) -> None:
    """Create catalog NAME; Iceberg clients then use warehouse=NAME. Servers see it at once.

    \b
    Example:
      arco catalog create sales --comment "Sales data" --warehouse ./warehouse
    """
    store = open_warehouse(warehouse, storage_options).store
    try:
        entry = create_catalog(store, name, owner=BOOTSTRAP_ADMIN.name, comment=comment)
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"created catalog {entry.name} (storage root {entry.storage_root}); Iceberg clients use "
               f"warehouse={entry.name}")


@catalog.command("list")
@warehouse_options
def catalog_list(warehouse: str, storage_options: tuple[str, ...]) -> None:
    """List the catalogs: name, storage root, comment (tab-separated)."""
    for line in listing(open_warehouse(warehouse, storage_options).store):
        click.echo(line)


@catalog.command("drop")
@warehouse_options
@click.argument("name")
@click.option("--force", is_flag=True,
              help="Drop the catalog even if it still has schemas or tables, and everything in it with it.")
def catalog_drop(warehouse: str, storage_options: tuple[str, ...], name: str, force: bool) -> None:
    """Drop catalog NAME (of the primary metastore). A catalog that is not empty is refused without --force,
    as Unity Catalog refuses it. Data files are left where they are.

    \b
    Example:
      arco catalog drop sales --force --warehouse ./warehouse
    """
    store = open_warehouse(warehouse, storage_options).store
    try:
        drop(store, name, force)
    except NotEmptyError as exc:
        raise click.ClickException(f"{exc}; drop them first, or run again with --force to drop the catalog "
                                   f"with everything in it") from exc
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"dropped catalog {name}")


def drop(store: CatalogStore, name: str, force: bool) -> None:
    def build(state: CatalogState) -> Operation:
        return {"op": "drop_catalog", "id": state.catalog(name).id,
                "force": force}

    store.execute(build, principal=BOOTSTRAP_ADMIN.name)


def listing(store: CatalogStore) -> list[str]:
    with store.read() as state:
        return [f"{c.name}\t{c.storage_root}\t{c.comment or ''}" for c in sorted(state.catalogs.values(),
                                                                          key=lambda c: c.name.casefold())]
