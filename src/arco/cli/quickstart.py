"""``arco quickstart``: a warehouse with something in it, a user who may read it, and the commands to query it.

The sample tables are written through the catalog itself (an Arco server inside this process, on a loopback port
of its own, and PyIceberg), so they are ordinary Iceberg tables any engine reads. Running it again changes
nothing that is there already; only the demo user's token is replaced (tokens are shown once, so the previous one
is revoked and a new one printed).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date

import click

from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.cli.banner import arco_command, client_base, literal_token
from arco.cli.common import open_warehouse, warehouse_options
from arco.storage.base import StorageBackend

DEMO_USER = "demo@example.com"
SCHEMA = "demo"
TOKEN_COMMENT = "arco quickstart"


def sample_tables() -> dict[str, object]:
    import pyarrow as pa

    return {
        "cities": pa.table({
            "city": ["Lisbon", "Oslo", "Nairobi", "Lima", "Osaka"],
            "country": ["PT", "NO", "KE", "PE", "JP"],
            "population": pa.array([545_923, 709_037, 4_397_073, 10_092_000, 2_752_412], pa.int64()),
        }),
        "orders": pa.table({
            "order_id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "city": ["Lisbon", "Oslo", "Lisbon", "Osaka", "Lima", "Oslo"],
            "amount": pa.array([12.5, 40.0, 7.25, 19.99, 5.0, 61.1], pa.float64()),
            "ordered_on": pa.array([date(2024, 5, d) for d in (1, 1, 2, 3, 3, 4)], pa.date32()),
        }),
        "products": pa.table({
            "sku": ["A-100", "B-200", "C-300"],
            "name": ["kettle", "lamp", "chair"],
            "price": pa.array([29.0, 45.5, 89.0], pa.float64()),
        }),
    }


@contextmanager
def _in_process_server(storage: StorageBackend, token: str) -> Iterator[str]:
    """An Arco server on a free loopback port inside this process; yields its Iceberg REST URI."""
    from arco.api.embedded import EmbeddedServerFailed, in_process_server

    try:
        with in_process_server(storage, {token: BOOTSTRAP_ADMIN}, "arco-quickstart-server") as base:
            yield f"{base}/iceberg"
    except EmbeddedServerFailed:
        raise click.ClickException("could not start an Arco server inside this process") from None


def write_samples(uri: str, token: str) -> list[str]:
    """Create demo and its tables where missing (an existing table with data is left alone); the tables' names."""
    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog("quickstart", uri=uri, warehouse="main", token=token)
    catalog.create_namespace_if_not_exists(SCHEMA)
    for name, data in sample_tables().items():
        table = catalog.create_table_if_not_exists(f"{SCHEMA}.{name}", schema=data.schema)  # type: ignore[attr-defined]
        if table.current_snapshot() is None:
            table.append(data)
    return list(sample_tables())


def grant_reader(store: object, tables: list[str]) -> None:
    """The demo user may read demo: USE_CATALOG on main, USE_SCHEMA on main.demo, SELECT on each table."""
    from arco.unity.permissions import PermissionsService

    permissions = PermissionsService(store)  # type: ignore[arg-type]
    wanted = [("catalog", "main", "USE_CATALOG"), ("schema", f"main.{SCHEMA}", "USE_SCHEMA")]
    wanted += [("table", f"main.{SCHEMA}.{t}", "SELECT") for t in tables]
    for kind, name, privilege in wanted:
        permissions.update(kind, name, {"changes": [{"principal": DEMO_USER, "add": [privilege]}]}, BOOTSTRAP_ADMIN)


def ensure_demo_user(store: object) -> None:
    from arco.auth.identity import create_principal

    with store.read() as state:  # type: ignore[attr-defined]
        exists = DEMO_USER.casefold() in state.principals
    if not exists:
        create_principal(store, "user", DEMO_USER, by=BOOTSTRAP_ADMIN.name)  # type: ignore[arg-type]


def demo_token(store: object) -> str:
    """A new token for the demo user; the ones earlier quickstarts made are revoked (only one stays active)."""
    from arco.auth.identity import create_token, revoke_token

    with store.read() as state:  # type: ignore[attr-defined]
        earlier = [t.id for t in state.tokens.values()
                   if t.principal.casefold() == DEMO_USER and t.comment == TOKEN_COMMENT and not t.revoked]
    for token_id in earlier:
        revoke_token(store, token_id, by=BOOTSTRAP_ADMIN.name)  # type: ignore[arg-type]
    return create_token(store, DEMO_USER, by=BOOTSTRAP_ADMIN.name, comment=TOKEN_COMMENT).token  # type: ignore


def query_recipes(warehouse: str, base: str, token: str) -> str:
    import sys

    arco = arco_command()
    quoted = literal_token(token)
    pyiceberg = (f"from pyiceberg.catalog.rest import RestCatalog; c = RestCatalog('arco', uri='{base}/iceberg', "
                 f"warehouse='main', token='{token}'); print(c.load_table('{SCHEMA}.cities').scan().to_arrow())")
    return f"""
Start the server (leave it running):
    {arco} serve --warehouse {warehouse} --port {base.rsplit(':', 1)[1]}

Then, as {DEMO_USER} (may read main.{SCHEMA}: {", ".join(sample_tables())}):

PyIceberg:
    {sys.executable} -c "{pyiceberg}"

DuckDB (1.5, extensions iceberg, avro, httpfs):
    CREATE SECRET arco (TYPE iceberg, TOKEN {quoted.sql});
    ATTACH 'main' AS arco (TYPE iceberg, SECRET arco, ENDPOINT '{base}/iceberg');
    SELECT o.city, sum(o.amount) FROM arco.{SCHEMA}.orders o GROUP BY ALL;

Spark SQL:
    ARCO_TOKEN={token} {arco} spark-sql --uri {base}/iceberg -e "SELECT * FROM {SCHEMA}.cities ORDER BY population DESC"

curl (Iceberg REST loadTable):
    curl -H "Authorization: Bearer {token}" {base}/iceberg/v1/main/namespaces/{SCHEMA}/tables/cities
"""


@click.command("quickstart")
@warehouse_options
@click.option("--host", default="127.0.0.1", show_default=True, help="The host `arco serve` will listen on (only "
              "used in the printed commands).")
@click.option("--port", default=8181, show_default=True, type=click.IntRange(1, 65535),
              help="The port `arco serve` will listen on (only used in the printed commands).")
def quickstart(warehouse: str, storage_options: tuple[str, ...], host: str, port: int) -> None:
    """Set up a warehouse to try Arco with: schema main.demo with three small Iceberg tables, a user
    demo@example.com who may read them, a token for that user, and the commands to query them.

    Safe to run again on the same warehouse: nothing is duplicated, and the demo user gets a new token (the
    previous one is revoked).

    \b
    Example:
      arco quickstart --warehouse ./warehouse
      arco serve --warehouse ./warehouse
    """
    done = open_warehouse(warehouse, storage_options)
    admin = secrets.token_urlsafe(32)  # admits this process's own server only; never stored
    with _in_process_server(done.store.storage, admin) as uri:
        tables = write_samples(uri, admin)
    ensure_demo_user(done.store)
    grant_reader(done.store, tables)
    token = demo_token(done.store)
    click.echo(f"main.{SCHEMA} is ready in {done.store.storage.url}: " + ", ".join(tables), err=True)
    click.echo(f"{DEMO_USER} token (shown only this once): {token}")
    click.echo(query_recipes(warehouse, client_base(host, port), token))
