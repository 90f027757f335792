"""What ``arco serve`` prints at start-up: where it serves, and copy-paste recipes for each client (the same
recipes as the README's "Clients", with this server's address and token filled in)."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from arco.settings import ServerSettings


@dataclass(frozen=True)
class TokenText:
    """One token as each language spells it: a literal, or a reference to where it is."""

    shell: str
    python: str
    sql: str


def literal_token(token: str) -> TokenText:
    return TokenText(token, f'"{token}"', f"'{token}'")


ENV_TOKEN = TokenText("$ARCO_ADMIN_TOKEN", 'os.environ["ARCO_ADMIN_TOKEN"]', "'<the value of ARCO_ADMIN_TOKEN>'")
UNKNOWN_TOKEN = TokenText("<admin token>", '"<admin token>"', "'<admin token>'")


def arco_command() -> str:
    """How to run this ``arco`` from here: ``arco`` if it is the one on PATH, else its path."""
    mine = Path(sys.executable).parent / "arco"
    on_path = shutil.which("arco")
    if on_path and mine.exists() and Path(on_path).resolve() == mine.resolve():
        return "arco"
    if not mine.exists():
        return "arco"
    try:
        return str(mine.relative_to(Path.cwd()))
    except ValueError:
        return str(mine)


def client_base(host: str, port: int) -> str:
    """The URL clients on this machine use (a wildcard address is reached on loopback)."""
    shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host, f"[{host}]" if ":" in host else host)
    return f"http://{shown}:{port}"


def client_recipes(base: str, token: TokenText, catalog: str = "main", arco: str = "arco") -> str:
    """PyIceberg, Spark (``arco pyspark``), DuckDB, the Databricks SDK and curl, ready to paste."""
    py_import = "import os\n    " if token.python.startswith("os.") else ""
    return f"""PyIceberg:
    {py_import}from pyiceberg.catalog.rest import RestCatalog
    catalog = RestCatalog("arco", uri="{base}/iceberg", warehouse="{catalog}", token={token.python})
    print(catalog.list_namespaces())

Spark (PySpark shell with the Iceberg runtime and this catalog as `arco`; `{arco} spark-sql` for SQL):
    ARCO_TOKEN={token.shell} {arco} pyspark --uri {base}/iceberg --catalog {catalog}
    >>> spark.sql("SHOW NAMESPACES IN arco").show()

DuckDB (1.5, extensions iceberg, avro, httpfs):
    CREATE SECRET arco (TYPE iceberg, TOKEN {token.sql});
    ATTACH '{catalog}' AS arco (TYPE iceberg, SECRET arco, ENDPOINT '{base}/iceberg');
    SHOW ALL TABLES;

Databricks SDK (Unity Catalog API):
    {py_import}from databricks.sdk import WorkspaceClient
    w = WorkspaceClient(host="{base}", token={token.python})
    print([c.name for c in w.catalogs.list()])

curl:
    curl -H "Authorization: Bearer {token.shell}" "{base}/iceberg/v1/config?warehouse={catalog}"
"""


def startup_banner(settings: ServerSettings, generated_token: str | None, env_token_set: bool) -> str:
    base = client_base(settings.host, settings.port)
    if generated_token:
        token_line = (
            f"Admin token (shown only this once; only its hash is stored in the warehouse):\n\n    {generated_token}\n"
        )
        token = literal_token(generated_token)
    elif env_token_set:
        token_line = "Admin token: the value of ARCO_ADMIN_TOKEN.\n"
        token = ENV_TOKEN
    else:
        token_line = (
            "Admin token: printed when this warehouse was first served. Lost it? Run\n"
            f"`{arco_command()} admin-token --rotate --warehouse {settings.warehouse}` to make a new one, or set "
            "ARCO_ADMIN_TOKEN.\n"
        )
        token = UNKNOWN_TOKEN
    listen = f"http://{settings.host}:{settings.port}"
    return f"""
Arco is serving the warehouse {settings.warehouse_display()} on {listen}
  Iceberg REST   {base}/iceberg   (warehouse = catalog name, e.g. main)
  Unity Catalog  {base}/api/2.1/unity-catalog
  health         {base}/health

{token_line}
{client_recipes(base, token, arco=arco_command())}"""

