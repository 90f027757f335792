"""The command line a catalog admin uses, as real ``arco`` processes next to a real ``arco serve``: grants, catalog
drop, initialising a warehouse from any command, the busy-port check, the banner's recipes and help everywhere."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from support.arco_server import ARCO_TOKEN, arco_server, get_json, run_cli

pytestmark = pytest.mark.timeout(300)
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def arco(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``arco <args>`` in a subprocess, whatever its exit code."""
    return subprocess.run([sys.executable, "-m", "arco.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("cli")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        run_cli(warehouse, "user", "create", "ann@x.com")
        token = run_cli(warehouse, "token", "create", "ann@x.com").strip()
        admin = RestCatalog("admin", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
        admin.create_namespace("sales")
        admin.create_table("sales.orders", SCHEMA)
        yield {"server": server, "warehouse": warehouse, "ann": token}


def uc(world: dict, path: str, token: str = ARCO_TOKEN) -> httpx.Response:
    return httpx.get(f"{world['server'].base_url}/api/2.1/unity-catalog{path}",
                     headers={"Authorization": f"Bearer {token}"}, timeout=30)


def shown(world: dict, *target: str) -> list[str]:
    return run_cli(world["warehouse"], "grants", "show", *target).splitlines()


def test_grant_and_revoke_are_the_permission_apis_operation(world: dict) -> None:
    wh = world["warehouse"]
    load = f"{world['server'].iceberg_uri}/v1/main/namespaces/sales/tables/orders"
    assert get_json(load, world["ann"]).status_code == 403
    # Both spellings, several privileges at once, and the words as SQL has them.
    out = run_cli(wh, "grant", "USE", "CATALOG", "on", "catalog", "main", "to", "ann@x.com")
    assert "granted USE_CATALOG on catalog main to ann@x.com" in out
    ann = RestCatalog("ann", uri=world["server"].iceberg_uri, warehouse="main", token=world["ann"])
    run_cli(wh, "grant", "use_schema,", "create", "table", "on", "schema", "main.sales", "to", "ann@x.com")
    run_cli(wh, "grant", "SELECT", "on", "table", "main.sales.orders", "to", "ann@x.com")
    assert ann.load_table("sales.orders").schema() == SCHEMA
    assert shown(world, "schema", "main.sales") == ["ann@x.com\tCREATE_TABLE, USE_SCHEMA"]
    api = uc(world, "/permissions/schema/main.sales").json()["privilege_assignments"]
    assert api == [{"principal": "ann@x.com", "privileges": ["CREATE TABLE", "USE SCHEMA"]}]  # the 2.1 enum

    out = run_cli(wh, "revoke", "SELECT", "on", "table", "main.sales.orders", "from", "ann@x.com")
    assert "ann@x.com now holds: nothing" in out
    with pytest.raises(ForbiddenError):
        ann.load_table("sales.orders")
    assert shown(world, "table", "main.sales.orders") == []


def test_metastore_and_named_securables(world: dict) -> None:
    wh = world["warehouse"]
    metastore_id = uc(world, "/metastore_summary").json()["metastore_id"]
    run_cli(wh, "grant", "CREATE_CATALOG", "on", "metastore", "to", "account", "users")
    assert shown(world, "metastore") == ["account users\tCREATE_CATALOG"] == shown(world, "metastore", metastore_id)
    made = httpx.post(f"{world['server'].base_url}/api/2.1/unity-catalog/storage-credentials",
                      headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30,
                      json={"name": "lake", "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/lake"}})
    assert made.status_code == 200, made.text
    run_cli(wh, "grant", "READ FILES", "on", "storage_credential", "lake", "to", "ann@x.com")
    assert shown(world, "credential", "lake", "--principal", "ann@x.com") == ["ann@x.com\tREAD_FILES"]
    run_cli(wh, "revoke", "CREATE_CATALOG", "on", "metastore", "from", "account users")
    assert shown(world, "metastore") == []


@pytest.mark.parametrize("words, message", [
    (["SELECT", "on", "table", "main.sales.orders", "to", "nobody@x.com"], "principal 'nobody@x.com' does not exist"),
    (["SELECT", "on", "table", "main.sales.nope", "to", "ann@x.com"], "does not exist"),
    (["USE_CATALOG", "on", "catalog", "nope", "to", "ann@x.com"], "does not exist"),
    (["SELECT", "on", "catalog", "main", "to", "ann@x.com"], "does not apply to a catalog"),
    (["SELECT", "on", "galaxy", "main.sales.v", "to", "ann@x.com"], "unknown securable type"),
    (["SELECT", "on", "volume", "main.sales.v", "to", "ann@x.com"], "does not apply to a volume"),
    (["CREATE_CATALOG", "on", "metastore", "not-the-id", "to", "ann@x.com"], "is not the metastore"),
    (["SELECT", "table", "main.sales.orders", "ann@x.com"], "expected PRIVILEGE"),
])
def test_a_bad_grant_is_one_clear_error_and_changes_nothing(world: dict, words: list[str], message: str) -> None:
    before = shown(world, "table", "main.sales.orders")
    seq_before = len(list((Path(world["warehouse"]) / "_catalog").rglob("*")))
    done = arco("grant", *words, "--warehouse", str(world["warehouse"]))
    assert done.returncode in (1, 2) and message in done.stderr, done.stderr
    assert done.returncode == 1 or "Usage" in done.stderr
    assert "Traceback" not in done.stderr
    assert shown(world, "table", "main.sales.orders") == before
    assert len(list((Path(world["warehouse"]) / "_catalog").rglob("*"))) == seq_before


def test_catalog_drop_refuses_a_catalog_that_is_not_empty(world: dict) -> None:
    wh, server = world["warehouse"], world["server"]
    run_cli(wh, "catalog", "create", "scratch")
    RestCatalog("a", uri=server.iceberg_uri, warehouse="scratch", token=ARCO_TOKEN).create_namespace("db")
    refused = arco("catalog", "drop", "scratch", "--warehouse", str(wh))
    assert refused.returncode == 1 and "not empty" in refused.stderr and "--force" in refused.stderr
    assert get_json(f"{server.iceberg_uri}/v1/config?warehouse=scratch", ARCO_TOKEN).status_code == 200
    assert "dropped catalog scratch" in run_cli(wh, "catalog", "drop", "scratch", "--force")
    assert get_json(f"{server.iceberg_uri}/v1/config?warehouse=scratch", ARCO_TOKEN).status_code == 404
    missing = arco("catalog", "drop", "scratch", "--warehouse", str(wh))
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    run_cli(wh, "catalog", "create", "empty")
    run_cli(wh, "catalog", "drop", "empty")
    assert [line.split("\t")[0] for line in run_cli(wh, "catalog", "list").splitlines()] == ["main"]


def test_a_cli_command_on_a_new_warehouse_initialises_it_as_serve_does(tmp_path: Path) -> None:
    warehouse = tmp_path / "fresh"
    made = arco("user", "create", "ann@x.com", "--warehouse", str(warehouse), env=_without_admin_token())
    assert made.returncode == 0, made.stderr
    printed = re.search(r"^\s+(arco_[A-Za-z0-9_\-]{40,})\s*$", made.stderr, re.MULTILINE)
    assert printed, made.stderr  # the bootstrap admin token, printed once, as serve would have
    with arco_server(warehouse, tmp_path, admin_token=None) as server:
        assert "arco_" not in server.log().split("PyIceberg")[0]  # no second admin token
        config = get_json(f"{server.iceberg_uri}/v1/config?warehouse=main", printed.group(1))
        assert config.status_code == 200, config.text
        metastore = get_json(f"{server.base_url}/api/2.1/unity-catalog/metastore_summary", printed.group(1))
        assert metastore.status_code == 200 and metastore.json()["metastore_id"]
    again = arco("catalog", "list", "--warehouse", str(warehouse), env=_without_admin_token())
    assert again.returncode == 0 and "arco_" not in again.stderr


def _without_admin_token() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "ARCO_ADMIN_TOKEN"}


@pytest.mark.parametrize("job", ["compact", "reconcile", "gc", "maintain"])
def test_a_pipeline_job_on_a_mistyped_local_warehouse_says_so_and_makes_nothing(tmp_path: Path, job: str) -> None:
    missing = tmp_path / "no-such" / "warehouse"
    for spelled in (str(missing), missing.as_uri()):
        result = arco("pipeline", job, "--warehouse", spelled)
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"there is no warehouse at {spelled}" in result.stderr and "arco serve --warehouse" in result.stderr
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "no-such").exists()  # was made, with an empty catalog, and the job "succeeded"


def test_serve_on_a_busy_port_says_so_in_one_line_before_any_banner(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = arco("serve", "--warehouse", str(tmp_path / "wh"), "--port", str(port), env=_without_admin_token())
    assert done.returncode == 1
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and str(port) in lines[0] and "already in use" in lines[0] and "--port" in lines[0]
    assert not (tmp_path / "wh" / "_catalog").exists()  # nothing written: no admin token generated and lost


def test_the_banner_prints_every_clients_recipe_with_this_servers_address_and_token(tmp_path: Path) -> None:
    with arco_server(tmp_path / "wh", tmp_path, admin_token=None) as server:
        log = server.log()
        token = re.search(r"^\s+(arco_[A-Za-z0-9_\-]{40,})\s*$", log, re.MULTILINE).group(1)  # type: ignore
        base = server.base_url
        for expected in (f'RestCatalog("arco", uri="{base}/iceberg", warehouse="main", token="{token}")',
                         f"ARCO_TOKEN={token} ", f"pyspark --uri {base}/iceberg --catalog main",
                         f"CREATE SECRET arco (TYPE iceberg, TOKEN '{token}');",
                         f"ATTACH 'main' AS arco (TYPE iceberg, SECRET arco, ENDPOINT '{base}/iceberg');",
                         f'WorkspaceClient(host="{base}", token="{token}")',
                         f'curl -H "Authorization: Bearer {token}" "{base}/iceberg/v1/config?warehouse=main"'):
            assert expected in log, expected
        # The Python recipes run as printed.
        for block in ("PyIceberg:", "Databricks SDK (Unity Catalog API):"):
            code = _indented_block(log, block)
            ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
            assert ran.returncode == 0 and ran.stdout.strip() in ("[]", "['main']"), ran.stderr
        curl = httpx.get(f"{base}/iceberg/v1/config?warehouse=main", headers={"Authorization": f"Bearer {token}"})
        assert curl.status_code == 200


def _indented_block(text: str, title: str) -> str:
    lines = text.split(title + "\n", 1)[1].splitlines()
    block = []
    for line in lines:
        if not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block)


def test_every_command_and_option_has_help() -> None:
    from arco.cli.main import register_commands

    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        yield path, command
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])

    commands = list(walk(register_commands(), []))
    assert {"grant", "revoke", "grants", "quickstart", "pyspark", "spark-sql"} <= {p[0] for p, _ in commands if p}
    for path, command in commands:
        assert (command.help or "").strip(), f"arco {' '.join(path)} has no help"
        for param in command.params:
            if isinstance(param, click.Option) and param.name not in ("help", "version"):
                assert (param.help or "").strip(), f"arco {' '.join(path)} {param.opts} has no help"
    for path in (["grant"], ["catalog", "drop"], ["quickstart"], ["spark-sql"], ["grants", "show"]):
        done = arco(*path, "--help")
        assert done.returncode == 0 and "Example" in done.stdout, path


def test_a_warehouse_in_a_newer_catalog_format_is_refused_by_every_command(tmp_path: Path) -> None:
    """What an older installation does on a warehouse a newer Arco has written: it says so and touches nothing."""
    warehouse = tmp_path / "newer"
    run_cli(warehouse, "user", "create", "ann@x.com")
    record = warehouse / "_catalog" / "format.json"
    record.write_text(json.dumps({"format": 999, "written_by": "arco 99.0"}))
    before = sorted(p for p in warehouse.rglob("*"))
    for args in (["user", "create", "bob@x.com"], ["token", "create", "ann@x.com"], ["serve", "--port", "0"],
                 ["pipeline", "gc", "--dry-run"]):
        refused = arco(*args, "--warehouse", str(warehouse))
        assert refused.returncode != 0 and "catalog format 999" in refused.stderr and "arco 99.0" in refused.stderr, (
            args, refused.stderr)
        assert "Traceback" not in refused.stderr
    assert sorted(p for p in warehouse.rglob("*")) == before
