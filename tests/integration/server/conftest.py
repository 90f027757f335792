"""One ``arco serve`` per test module, with a namespace ``db`` and a table ``db.t`` in catalog ``main``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, ONE_COLUMN_SCHEMA, RunningServer, arco_server, iceberg_client

MAX_BODY_BYTES = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir: Path = tmp_path_factory.mktemp("server")
    with arco_server(workdir / "wh", workdir, admin_token=ARCO_TOKEN,
                     extra_args=("--max-body-bytes", str(MAX_BODY_BYTES))) as s:
        s.warehouse_dir = workdir / "wh"  # type: ignore[attr-defined]
        yield s


@pytest.fixture(scope="module")
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with iceberg_client(server) as c:
        c.post("/namespaces", json={"namespace": ["db"]}).raise_for_status()
        c.post("/namespaces/db/tables", json={"name": "t", "schema": ONE_COLUMN_SCHEMA}).raise_for_status()
        yield c
