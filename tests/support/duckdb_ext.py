"""DuckDB with the iceberg, avro and httpfs extensions loaded from their PyPI packages (no download)."""

from __future__ import annotations

import importlib
from pathlib import Path

import duckdb

# Load order matters: iceberg needs avro (manifests) and httpfs (REST calls) already loaded, since autoloading
# from the extension repository is switched off.
EXTENSIONS = ("httpfs", "avro", "iceberg")


def extension_file(name: str) -> Path:
    """The ``.duckdb_extension`` file shipped by the ``duckdb-extension-<name>`` wheel."""
    package = importlib.import_module(f"duckdb_extension_{name}")
    found = sorted(Path(package.__path__[0]).rglob(f"{name}.duckdb_extension"))
    if not found:
        raise FileNotFoundError(f"duckdb-extension-{name} holds no {name}.duckdb_extension; reinstall it")
    return found[-1]


def connect_with(extensions: tuple[str, ...]) -> duckdb.DuckDBPyConnection:
    """A connection with these extensions loaded from their wheels, in order; nothing is fetched or autoloaded."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for name in extensions:
        con.execute(f"LOAD '{extension_file(name)}'")
    return con


def connect_with_iceberg() -> duckdb.DuckDBPyConnection:
    return connect_with(EXTENSIONS)


def attach_arco(con: duckdb.DuckDBPyConnection, iceberg_uri: str, token: str, catalog: str = "main",
                alias: str = "arco") -> str:
    con.execute(f"CREATE OR REPLACE SECRET {alias}_secret (TYPE iceberg, TOKEN '{token}')")
    con.execute(f"ATTACH '{catalog}' AS {alias} (TYPE iceberg, SECRET {alias}_secret, ENDPOINT '{iceberg_uri}')")
    return alias
