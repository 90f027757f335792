"""Many writers, two server processes, one warehouse: nothing lost, nothing doubled."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server

pytestmark = pytest.mark.timeout(600)

_fork = multiprocessing.get_context("fork")
SCHEMA = Schema(NestedField(1, "writer", LongType(), required=False), NestedField(2, "n", LongType(), required=False))
WRITERS, APPENDS = 8, 5


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, RunningServer]]:
    workdir = tmp_path_factory.mktemp("two-servers")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as a, \
            arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as b:
        yield a, b


def _append_worker(uri: str, writer: int, barrier: object, results: object) -> None:
    catalog = RestCatalog(f"w{writer}", uri=uri, warehouse="main", token=ARCO_TOKEN)
    barrier.wait(60)  # type: ignore[attr-defined]
    conflicts = 0
    for n in range(APPENDS):
        while True:
            table = catalog.load_table("conc.events")
            try:
                table.append(pa.table({"writer": pa.array([writer], pa.int64()), "n": pa.array([n], pa.int64())}))
                break
            except CommitFailedException:
                conflicts += 1  # PyIceberg gave up its own retries: reload and try again, as a job would
    results.put(conflicts)  # type: ignore[attr-defined]


def test_eight_processes_append_through_two_servers(two_servers: tuple[RunningServer, RunningServer]) -> None:
    a, b = two_servers
    catalog = RestCatalog("setup", uri=a.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace("conc")
    catalog.create_table("conc.events", SCHEMA)
    barrier, results = _fork.Barrier(WRITERS), _fork.Queue()
    procs = [_fork.Process(target=_append_worker, args=((a, b)[w % 2].iceberg_uri, w, barrier, results))
             for w in range(WRITERS)]
    for p in procs:
        p.start()
    [results.get(timeout=500) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0

    table = RestCatalog("check", uri=b.iceberg_uri, warehouse="main", token=ARCO_TOKEN).load_table("conc.events")
    got = sorted(zip(*[table.scan().to_arrow().column(c).to_pylist() for c in ("writer", "n")]))
    assert got == sorted((w, n) for w in range(WRITERS) for n in range(APPENDS))
    appends = [s for s in table.metadata.snapshots if s.summary and s.summary.operation.value == "append"]
    assert len(appends) == WRITERS * APPENDS
    assert len(table.metadata.snapshot_log) == WRITERS * APPENDS


def _create_worker(uri: str, barrier: object, results: object) -> None:
    body = {"name": "contested", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "x", "required": False, "type": "long"}]}}
    barrier.wait(60)  # type: ignore[attr-defined]
    r = httpx.post(f"{uri}/v1/main/namespaces/race/tables", json=body,
                   headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=60)
    results.put(r.status_code)  # type: ignore[attr-defined]


def test_concurrent_create_of_one_table_has_exactly_one_winner(
        two_servers: tuple[RunningServer, RunningServer]) -> None:
    a, b = two_servers
    RestCatalog("setup", uri=a.iceberg_uri, warehouse="main", token=ARCO_TOKEN).create_namespace("race")
    barrier, results = _fork.Barrier(8), _fork.Queue()
    procs = [_fork.Process(target=_create_worker, args=((a, b)[i % 2].iceberg_uri, barrier, results))
             for i in range(8)]
    for p in procs:
        p.start()
    statuses = sorted(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
    assert statuses == [200] + [409] * 7
    listed = RestCatalog("c", uri=b.iceberg_uri, warehouse="main", token=ARCO_TOKEN).list_tables("race")
    assert listed == [("race", "contested")]


def test_servers_see_each_others_writes_at_once(two_servers: tuple[RunningServer, RunningServer],
                                                 tmp_path: Path) -> None:
    a, b = two_servers
    ca = RestCatalog("a", uri=a.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    cb = RestCatalog("b", uri=b.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    ca.create_namespace("ryw")
    assert cb.namespace_exists("ryw")
    ca.create_table("ryw.t", SCHEMA)
    cb.rename_table("ryw.t", "ryw.u")
    assert not ca.table_exists("ryw.t") and ca.table_exists("ryw.u")
    ca.drop_table("ryw.u")
    assert not cb.table_exists("ryw.u")
