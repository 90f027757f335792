"""What every ``arco`` command that opens a warehouse shares: the options, and opening (and, on a new warehouse,
initialising) it exactly as ``arco serve`` does."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from arco.settings import DEFAULT_WAREHOUSE

WAREHOUSE_HELP = (
    "Where the catalog lives: a directory (created if missing), or s3://bucket/prefix, gs://bucket/prefix, "
    "az://container/prefix. Defaults to $ARCO_WAREHOUSE, else ./warehouse."
)
ADMIN_TOKEN_ENV = "ARCO_ADMIN_TOKEN"


def warehouse_option() -> Callable[[Any], Any]:
    return click.option(
        "--warehouse",
        default=lambda: os.environ.get("ARCO_WAREHOUSE", DEFAULT_WAREHOUSE),
        show_default="./warehouse",
        help=WAREHOUSE_HELP,
    )


def storage_options_option() -> Callable[[Any], Any]:
    return click.option(
        "--storage-option",
        "storage_options",
        multiple=True,
        metavar="KEY=VALUE",
        help="A storage setting such as s3.endpoint=http://127.0.0.1:8333 (repeatable).",
    )


def warehouse_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--warehouse`` and ``--storage-option``."""
    return warehouse_option()(storage_options_option()(fn))


def parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--storage-option")
        options[key] = value
    return options


def open_warehouse(warehouse: str, storage_options: tuple[str, ...], *, admin_token: bool = True) -> Any:
    """The warehouse's storage, initialised as ``arco serve`` initialises it (:mod:`arco.catalog.bootstrap`).

    Returns :class:`arco.catalog.bootstrap.Initialised`. A bootstrap admin token made here (for a warehouse found
    new) is printed once, on stderr, as ``serve`` prints it in its banner.
    """
    from arco.catalog.bootstrap import initialise_warehouse
    from arco.storage.base import StorageError
    from arco.storage.factory import open_storage

    try:
        storage = open_storage(warehouse, parse_options(storage_options))
        done = initialise_warehouse(storage, env_token=os.environ.get(ADMIN_TOKEN_ENV) or None,
                                    admin_token=admin_token, admin_token_if_new=True)
    except StorageError as exc:
        raise click.ClickException(f"cannot open the warehouse {warehouse}: {exc}") from exc
    if done.generated_admin_token:
        click.echo(f"Initialised a new warehouse at {storage.url}.\nAdmin token (shown only this once; only its "
                   f"hash is stored in the warehouse):\n\n    {done.generated_admin_token}\n", err=True)
    return done
