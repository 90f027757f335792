"""Every operation of the Iceberg REST and Unity Catalog 2.1 specs, fuzzed from their own schemas: no server error.

schemathesis generates requests from each operation's schema (the spec's examples, the edges of every constraint,
then random and schema-violating data: wrong types, hostile strings, missing fields) and a stateful phase that
chains operations through the spec's links. The one check is that the server never answers 5xx: a malformed
request is the client's mistake and gets a 4xx in the API's error shape.

This is a broad guard, kept small for CI (about 18,000 requests, fixed seed, so a run is repeatable). Longer runs
(the same command with ``--max-time 400`` and no ``-n``) found schemas whose types PyIceberg's own validators
refuse, commits whose requirements were not a list, and share updates that were not objects, all answered 500;
random generation meets such inputs rarely, so each has a deterministic test of its own (test_iceberg_bad_input.py,
test_delta_sharing.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, ONE_COLUMN_SCHEMA, RunningServer

pytestmark = pytest.mark.timeout(300)

SPECS = Path(__file__).resolve().parents[2] / "specs"
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
SEED = "20261126"


def fuzz(spec: str, base_url: str, workdir: Path, config: str) -> subprocess.CompletedProcess[str]:
    (workdir / "schemathesis.toml").write_text(config)
    return subprocess.run(
        [str(SCHEMATHESIS), "--config-file", str(workdir / "schemathesis.toml"), "run", str(SPECS / spec),
         "--url", base_url, "-H", f"Authorization: Bearer {ARCO_TOKEN}", "--checks", "not_a_server_error",
         "-n", "20", "--seed", SEED, "--generation-database", "none", "--suppress-health-check", "all",
         "-w", "1", "--no-color", "--exclude-path-regex", "oauth"],
        capture_output=True, text=True, timeout=280, cwd=workdir)


def assert_no_server_error(run: subprocess.CompletedProcess[str], server: RunningServer) -> None:
    summary = run.stdout[-6000:]
    assert run.returncode == 0, summary
    assert "passed" in summary and " 0 passed" not in summary, summary
    assert "unexpected" not in server.log_path.read_text(errors="replace"), "the server logged an unexpected error"


def test_the_iceberg_rest_spec_fuzzed_gets_no_server_error(server: RunningServer, client: httpx.Client,
                                                           tmp_path: Path) -> None:
    # Fixed path parameters, so generated bodies reach an existing namespace, table and view, where the commit
    # and view paths parse them (random names mostly end at a 404 or a name check).
    client.post("/namespaces/db/views", json={
        "name": "v", "schema": ONE_COLUMN_SCHEMA, "view-version": {
            "version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["db"],
            "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}}).raise_for_status()
    config = '[parameters]\n"path.prefix" = "main"\n"path.namespace" = "db"\n"path.table" = "t"\n"path.view" = "v"\n'
    assert_no_server_error(fuzz("iceberg-rest-catalog-open-api.yaml", server.iceberg_uri, tmp_path, config), server)


def test_the_unity_catalog_spec_fuzzed_gets_no_server_error(server: RunningServer, tmp_path: Path) -> None:
    assert_no_server_error(fuzz("unitycatalog-oss-api-2.1.yaml", f"{server.base_url}/api/2.1/unity-catalog",
                                tmp_path, ""), server)
