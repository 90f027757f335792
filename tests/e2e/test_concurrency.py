"""Many writers, two server processes, one warehouse: nothing lost, nothing doubled."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import httpx
import orjson
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from uuid6 import uuid7

from arco.events.receipts import EVENTS
from arco.iceberg.file_names import is_group_file
from arco.iceberg.metadata_files import MetadataFiles
from arco.storage.base import StorageBackend
from arco.storage.factory import open_storage
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server
from support.storage_targets import StorageTarget

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


@pytest.fixture(scope="module")
def two_servers_on_s3(tmp_path_factory: pytest.TempPathFactory,
                      s3_seaweedfs_bucket: StorageTarget) -> Iterator[tuple[RunningServer, RunningServer]]:
    """Two servers on one SeaweedFS warehouse: the commit point is S3's If-Match, not a local rename."""
    workdir = tmp_path_factory.mktemp("two-servers-s3")
    warehouse = f"{s3_seaweedfs_bucket.url}/concurrency-{uuid7().hex[:8]}"
    options = s3_seaweedfs_bucket.cli_options()
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN, extra_args=options) as a, \
            arco_server(warehouse, workdir, admin_token=ARCO_TOKEN, extra_args=options) as b:
        yield a, b


@pytest.fixture(params=["local", "s3-seaweedfs"])
def storm_servers(request: pytest.FixtureRequest) -> tuple[RunningServer, RunningServer]:
    return request.getfixturevalue("two_servers" if request.param == "local" else "two_servers_on_s3")


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
    got = sorted(zip(*[table.scan().to_arrow().column(c).to_pylist() for c in ("writer", "n")], strict=True))
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


STORM_WRITERS, STORM_COMMITS = 16, 10


def _storm_worker(uri: str, writer: int, barrier: object, results: object) -> None:
    """Keyed set-properties commits; a 5xx, or a connection lost before the answer, is retried with the same key,
    as a client's retry loop would (the key is what makes that safe: the checks below find each change once)."""
    headers = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    prefix = httpx.get(f"{uri}/v1/config?warehouse=main", headers=headers).json()["overrides"]["prefix"]
    url = f"{uri}/v1/{prefix}/namespaces/storm/tables/hot"
    answers: list[tuple[str, int, str | None]] = []
    with httpx.Client(timeout=120, headers=headers) as http:
        barrier.wait(60)  # type: ignore[attr-defined]
        for n in range(STORM_COMMITS):
            name = f"w{writer}-{n}"
            requirements = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 7}] if n == 9 and \
                writer % 4 == 0 else []  # a few requests fail their requirement on purpose
            body = {"requirements": requirements,
                    "updates": [{"action": "set-properties", "updates": {name: str(writer)}}]}
            key = str(uuid7())
            r = None
            for _ in range(20):
                try:
                    r = http.post(url, json=body, headers={"Idempotency-Key": key})
                except httpx.TransportError:
                    continue
                if r.status_code < 500:
                    break
            assert r is not None, f"{name}: no answer in 20 tries"
            location = r.json().get("metadata-location") if r.status_code == 200 else None
            answers.append((name, r.status_code, location))
    results.put(answers)  # type: ignore[attr-defined]


def _warehouse_of(server: RunningServer) -> StorageBackend:
    """The warehouse a server runs on, opened as the server opened it (its --warehouse and --storage-option)."""
    args = [str(arg) for arg in server.process.args]  # type: ignore[union-attr]
    options = dict(arg.removeprefix("--storage-option=").split("=", 1) for arg in args
                   if arg.startswith("--storage-option="))
    return open_storage(args[args.index("--warehouse") + 1], options)


def test_storm_of_keyed_commits_through_two_servers(storm_servers: tuple[RunningServer, RunningServer]) -> None:
    a, b = storm_servers
    catalog = RestCatalog("setup", uri=a.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_namespace("storm")
    catalog.create_table("storm.hot", SCHEMA, properties={"write.metadata.previous-versions-max": "1000"})
    barrier, results = _fork.Barrier(STORM_WRITERS), _fork.Queue()
    procs = [_fork.Process(target=_storm_worker, args=((a, b)[w % 2].iceberg_uri, w, barrier, results))
             for w in range(STORM_WRITERS)]
    for p in procs:
        p.start()
    answers = [answer for _ in procs for answer in results.get(timeout=500)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0

    planted = {f"w{w}-9" for w in range(0, STORM_WRITERS, 4)}
    acked = {name for name, status, _ in answers if status == 200}
    assert {name for name, status, _ in answers if status == 409} == planted, "409 only for planted requirements"
    assert acked == {f"w{w}-{n}" for w in range(STORM_WRITERS) for n in range(STORM_COMMITS)} - planted

    table = RestCatalog("check", uri=b.iceberg_uri, warehouse="main", token=ARCO_TOKEN).load_table("storm.hot")
    assert acked <= set(table.metadata.properties) and not planted & set(table.metadata.properties)
    # The metadata log is one chain from the create to the current file, and every answer names a version of it.
    versions = [e.metadata_file for e in table.metadata.metadata_log] + [table.metadata_location]
    storage = _warehouse_of(a)
    files = MetadataFiles(storage)
    for older, newer in pairwise(versions):
        assert files.read(newer).metadata_log[-1].metadata_file == older
    assert {location for _, status, location in answers if status == 200} <= set(versions)
    assert any(is_group_file(v) for v in versions), "sixteen writers on two servers always meet"
    # One committed receipt per acknowledged request (plus the create's), none twice.
    # They are written just after each answer (arco.events.after_answer): give the last ones a moment.
    uuid = str(table.metadata.table_uuid)
    deadline = time.monotonic() + 10
    while True:
        receipts = [orjson.loads(storage.get(m.key).data) for m in storage.list(f"{EVENTS}/")
                    if "/iceberg/committed/" in m.key]
        mine = [r for r in receipts if r["table_uuid"] == uuid]
        if len(mine) >= len(acked) + 1 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(mine) == len(acked) + 1
    # Lost races deleted their files: the metadata folder holds the history and nothing else.
    folder = files.key_of(table.metadata.location.rstrip("/") + "/metadata/")
    on_disk = {m.key for m in storage.list(folder) if m.key.endswith(".metadata.json")}
    assert on_disk == {files.key_of(v) for v in versions}
