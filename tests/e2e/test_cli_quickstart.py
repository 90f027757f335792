"""``arco quickstart`` makes real Iceberg tables and a reader who may query them; ``arco spark-sql`` runs Spark's
shell against Arco from a bare environment; a rotated admin token stops working at once on every server."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from support.arco_server import arco_server, get_json, run_cli
from support.duckdb_ext import attach_arco, connect_with_iceberg

pytestmark = pytest.mark.timeout(600)
ROWS = {"cities": 5, "orders": 6, "products": 3}


def quickstart(warehouse: Path, port: int) -> tuple[str, str]:
    """Run ``arco quickstart``; its stdout and the demo user's token."""
    done = subprocess.run([sys.executable, "-m", "arco.cli.main", "quickstart", "--warehouse", str(warehouse),
                           "--port", str(port)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    token = re.search(r"demo@example.com token \(shown only this once\): (\S+)", done.stdout)
    assert token, done.stdout
    return done.stdout, token.group(1)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    from support.net import free_port

    workdir = tmp_path_factory.mktemp("quickstart")
    warehouse, port = workdir / "warehouse", free_port()
    _, first = quickstart(warehouse, port)
    printed, token = quickstart(warehouse, port)  # a second run: nothing fails, nothing is duplicated
    with arco_server(warehouse, workdir, admin_token="qs-admin", port=port) as server:
        yield {"server": server, "printed": printed, "token": token, "first": first, "warehouse": warehouse}


def test_quickstart_tables_are_real_iceberg_tables_the_demo_user_may_read(demo: dict) -> None:
    server = demo["server"]
    reader = RestCatalog("demo", uri=server.iceberg_uri, warehouse="main", token=demo["token"])
    assert reader.list_namespaces() == [("demo",)]
    assert sorted(t for _, t in reader.list_tables("demo")) == sorted(ROWS)
    for name, rows in ROWS.items():
        table = reader.load_table(f"demo.{name}")
        assert len(table.snapshots()) == 1, name  # the second run appended nothing
        assert table.scan().to_arrow().num_rows == rows
    # Read, not write: the demo user holds SELECT only.
    assert get_json(f"{server.iceberg_uri}/v1/main/namespaces/demo/tables/cities", demo["token"]).status_code == 200
    drop = httpx.delete(f"{server.iceberg_uri}/v1/main/namespaces/demo/tables/cities",
                        headers={"Authorization": f"Bearer {demo['token']}"}, timeout=30)
    assert drop.status_code == 403
    # One active quickstart token: the first run's was revoked when the second made a new one.
    assert get_json(f"{server.iceberg_uri}/v1/config?warehouse=main", demo["first"]).status_code == 401
    tokens = run_cli(demo["warehouse"], "token", "list").splitlines()
    assert [t.split("\t")[2] for t in tokens if "demo@example.com" in t] == ["revoked", "active"]
    assert run_cli(demo["warehouse"], "user", "list").count("demo@example.com") == 1


def test_the_printed_commands_work(demo: dict) -> None:
    printed, token = demo["printed"], demo["token"]
    assert printed.count(token) >= 4
    python_line = next(line.strip() for line in printed.splitlines() if line.strip().startswith(sys.executable))
    ran = subprocess.run(shlex.split(python_line), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and "Nairobi" in ran.stdout, ran.stderr
    curl = next(line.strip() for line in printed.splitlines() if line.strip().startswith("curl -H"))
    url = curl.split()[-1]
    header = re.search(r'-H "([^"]+)"', curl).group(1)  # type: ignore[union-attr]
    loaded = httpx.get(url, headers=dict([header.split(": ", 1)]), timeout=30)
    assert loaded.status_code == 200 and loaded.json()["metadata"]["current-snapshot-id"]


@pytest.mark.duckdb
def test_duckdb_reads_the_quickstart_tables(demo: dict) -> None:
    con = connect_with_iceberg()
    try:
        attach_arco(con, demo["server"].iceberg_uri, demo["token"])
        rows = con.execute("SELECT city, sum(amount) FROM arco.demo.orders GROUP BY ALL ORDER BY city").fetchall()
        assert [r[0] for r in rows] == ["Lima", "Lisbon", "Osaka", "Oslo"]
    finally:
        con.close()


@pytest.mark.spark
def test_arco_spark_sql_runs_without_the_venv_on_path(demo: dict, tmp_path: Path) -> None:
    arco = str(Path(sys.executable).parent / "arco")
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin", "ARCO_TOKEN": demo["token"]}
    done = subprocess.run([arco, "spark-sql", "--uri", demo["server"].iceberg_uri, "-e",
                           "SHOW NAMESPACES; SELECT count(*) FROM demo.orders"],
                          capture_output=True, text=True, timeout=400, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["demo", "6"], done.stdout
    assert not list(tmp_path.iterdir())  # no metastore_db/, derby.log or spark-warehouse/ left behind


def test_rotating_the_admin_token_takes_effect_on_the_next_request_of_every_server(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    with arco_server(warehouse, tmp_path, admin_token=None) as one, \
            arco_server(warehouse, tmp_path, admin_token=None) as two:
        old = re.search(r"^\s+(arco_[A-Za-z0-9_\-]{40,})\s*$", one.log(), re.MULTILINE).group(1)  # type: ignore
        assert_token(old, [one, two], 200)
        new = run_cli(warehouse, "admin-token", "--rotate").strip()
        assert_token(old, [one, two], 401)  # at once: no waiting, no retries
        assert_token(new, [one, two], 200)
        newer = run_cli(warehouse, "admin-token", "--rotate").strip()
        assert_token(new, [one, two], 401)
        assert_token(newer, [one, two], 200)


def test_rotation_also_works_at_once_on_a_warehouse_whose_hash_is_only_in_the_file(tmp_path: Path) -> None:
    """A warehouse initialised before Tier 1 recorded the admin token: the first rotation moves it there."""
    import orjson

    from arco.auth.bootstrap import BOOTSTRAP_ADMIN_KEY
    from arco.auth.tokens import hash_token

    warehouse = tmp_path / "wh"
    (warehouse / BOOTSTRAP_ADMIN_KEY).parent.mkdir(parents=True)
    (warehouse / BOOTSTRAP_ADMIN_KEY).write_bytes(orjson.dumps({"token_sha256": hash_token("old-style"),
                                                                "created_at_ms": 0}))
    with arco_server(warehouse, tmp_path, admin_token=None) as one, \
            arco_server(warehouse, tmp_path, admin_token=None) as two:
        assert_token("old-style", [one, two], 200)
        new = run_cli(warehouse, "admin-token", "--rotate").strip()
        assert_token("old-style", [one, two], 401)
        assert_token(new, [one, two], 200)


def assert_token(token: str, servers: list, status: int) -> None:
    for server in servers:
        for path in ("/iceberg/v1/config?warehouse=main", "/api/2.1/unity-catalog/catalogs"):
            assert get_json(f"{server.base_url}{path}", token).status_code == status, (server.base_url, path)
