"""``arco serve`` as a user runs it: a real process, a real port, a local warehouse directory."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest

from arco.auth.bootstrap import BOOTSTRAP_ADMIN_KEY
from arco.auth.tokens import hash_token
from support.arco_server import arco_server, get_json

pytestmark = pytest.mark.timeout(120)


def test_generated_admin_token_is_printed_once_and_stored_only_as_a_hash(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    with arco_server(warehouse, tmp_path, admin_token=None) as server:
        match = re.search(r"^\s+(arco_[A-Za-z0-9_\-]{40,})\s*$", server.log(), re.MULTILINE)
        assert match, server.log()
        token = match.group(1)
        assert get_json(f"{server.iceberg_uri}/v1/config", token).status_code == 200
        assert get_json(f"{server.iceberg_uri}/v1/config", token + "x").status_code == 401
    stored = (warehouse / BOOTSTRAP_ADMIN_KEY).read_text()
    assert token not in stored
    assert orjson.loads(stored)["token_sha256"] == hash_token(token)
    assert not any(token in p.read_text(errors="ignore") for p in warehouse.rglob("*") if p.is_file())

    with arco_server(warehouse, tmp_path, admin_token=None) as again:
        assert token not in again.log()
        assert "arco_" not in again.log().split("PyIceberg")[0]  # no new secret printed on a later start
        assert get_json(f"{again.iceberg_uri}/v1/config", token).status_code == 200


def test_env_admin_token_and_the_error_shape_of_401(tmp_path: Path) -> None:
    with arco_server(tmp_path / "wh", tmp_path, admin_token="s3cret-token") as server:
        assert get_json(f"{server.base_url}/health", None).json() == {"status": "ok"}
        ok = get_json(f"{server.iceberg_uri}/v1/config", "s3cret-token")
        assert ok.status_code == 200 and "GET /v1/{prefix}/namespaces" in ok.json()["endpoints"]
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic czNjcmV0"},
                        {"Authorization": "Bearer"}):
            r = httpx.get(f"{server.iceberg_uri}/v1/config", headers=headers, timeout=10)
            assert r.status_code == 401
            error = r.json()["error"]
            assert error["code"] == 401 and error["type"] == "NotAuthorizedException" and error["message"]
            assert r.headers["www-authenticate"].startswith("Bearer")
        uc = httpx.get(f"{server.base_url}/api/2.1/unity-catalog/catalogs", timeout=10)
        assert uc.status_code == 401 and uc.json()["error_code"] == "UNAUTHENTICATED"
        missing = get_json(f"{server.iceberg_uri}/v1/no-such-route", "s3cret-token")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == 404


def test_several_workers_serve_one_warehouse(tmp_path: Path) -> None:
    with arco_server(tmp_path / "wh", tmp_path, extra_args=("--workers", "3")) as server:
        with httpx.Client(timeout=10) as client:
            statuses = {
                client.get(f"{server.iceberg_uri}/v1/config",
                           headers={"Authorization": "Bearer test-admin-token"}).status_code
                for _ in range(30)
            }
        assert statuses == {200}
        children = _child_pids(server.process.pid)
        assert len(children) >= 3, children


def _child_pids(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_refuses_a_warehouse_it_cannot_use(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the warehouse directory should be")
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "arco.cli.main", "serve", "--warehouse", str(blocker), "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    assert "cannot" in result.stderr and str(blocker) in result.stderr


def test_a_catalog_created_from_the_cli_is_served_at_once(tmp_path: Path) -> None:
    from pyiceberg.catalog.rest import RestCatalog

    warehouse = tmp_path / "wh"
    with arco_server(warehouse, tmp_path, admin_token="t") as server:
        created = subprocess.run([sys.executable, "-m", "arco.cli.main", "catalog", "create", "sales",
                                  "--warehouse", str(warehouse), "--comment", "Sales"],
                                 capture_output=True, text=True, timeout=60)
        assert created.returncode == 0, created.stderr
        sales = RestCatalog("sales", uri=server.iceberg_uri, warehouse="sales", token="t")
        sales.create_namespace("orders")
        assert sales.list_namespaces() == [("orders",)]
        main = RestCatalog("main", uri=server.iceberg_uri, warehouse="main", token="t")
        assert ("orders",) not in main.list_namespaces()
        again = subprocess.run([sys.executable, "-m", "arco.cli.main", "catalog", "create", "sales",
                                "--warehouse", str(warehouse)], capture_output=True, text=True, timeout=60)
        assert again.returncode != 0 and "already exists" in again.stderr
        listed = subprocess.run([sys.executable, "-m", "arco.cli.main", "catalog", "list", "--warehouse",
                                 str(warehouse)], capture_output=True, text=True, timeout=60)
        assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["main", "sales"]
