"""The pipeline on an object-storage warehouse (SeaweedFS's S3): compact publishes the system tables with the job's
own storage credentials (the embedded server vends none), and maintain, whose Spark has no Iceberg FileIO for
S3 here, refuses up front and changes nothing. Compact and gc on GCS (fake-gcs-server) and Azure (Azurite) too."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from arco.storage.factory import open_storage
from arco.storage.s3 import create_bucket
from support import emulators
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("pipeline-s3")
    with emulators.seaweedfs(workdir) as s3:
        options = s3.options()
        bucket = f"pipe-{uuid.uuid4().hex[:8]}"
        create_bucket(bucket, options)
        warehouse = f"s3://{bucket}/wh"
        option_args = tuple(arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}"))
        with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN, extra_args=option_args) as server:
            yield {"server": server, "warehouse": warehouse, "options": options, "option_args": option_args}


def client(server: RunningServer, options: dict[str, str], warehouse: str = "main") -> RestCatalog:
    return RestCatalog(warehouse, uri=server.iceberg_uri, warehouse=warehouse, token=ARCO_TOKEN, **options)


def pipeline(world: dict, job: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "arco.cli.main", "pipeline", job, "--warehouse", world["warehouse"],
                           *world["option_args"], "--master", "local[2]"],
                          capture_output=True, text=True, timeout=600)


def test_compact_publishes_the_system_tables_on_s3(world: dict) -> None:
    py = client(world["server"], world["options"])
    py.create_namespace("raw")
    table = py.create_table("raw.events", SCHEMA)
    for start in (0, 10):
        table.append(pa.table({"id": pa.array(range(start, start + 10), pa.int64())}))
    storage = open_storage(world["warehouse"], world["options"])
    deadline = time.monotonic() + 10  # the committed receipts follow the answers
    while len(list(storage.list("_catalog/events/"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    compacted = pipeline(world, "compact")
    assert compacted.returncode == 0, compacted.stdout[-3000:] + compacted.stderr[-3000:]
    assert "failed" not in " ".join(compacted.stdout.split())
    system = client(world["server"], world["options"], "system")
    timeline = system.load_table("history.timeline").scan().to_arrow()
    mine = [loc for loc in timeline["metadata_location"].to_pylist() if "/events-" in loc]
    assert table.refresh().metadata_location in mine and len(mine) >= 3  # the create and both appends
    assert all(loc.startswith(world["warehouse"]) for loc in mine)


def test_maintain_refuses_up_front_without_an_s3_fileio_in_spark(world: dict) -> None:
    py = client(world["server"], world["options"])
    py.create_namespace("m")
    table = py.create_table("m.small", SCHEMA)
    for i in range(6):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
    before = table.refresh().metadata_location
    refused = pipeline(world, "maintain")
    assert refused.returncode == 1, refused.stdout[-3000:]
    said = " ".join(refused.stderr.split())
    assert "iceberg-aws-bundle" in said and "Nothing was changed" in said and "Traceback" not in refused.stderr
    assert py.load_table("m.small").metadata_location == before


@contextmanager
def other_store(kind: str, workdir: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A warehouse on fake-gcs-server (no auth) or Azurite, with its storage options."""
    name = f"pipe-{uuid.uuid4().hex[:8]}"
    if kind == "gcs":
        from arco.storage.gcs import create_bucket as create_gcs_bucket

        with emulators.fake_gcs(workdir) as gcs:
            create_gcs_bucket(name, gcs.options())
            yield f"gs://{name}/wh", gcs.options()
    else:
        from arco.storage.azure import create_container

        with emulators.azurite(workdir) as azure:
            create_container(name, azure.options())
            yield f"az://{name}/wh", azure.options()


@pytest.mark.parametrize("kind", ["gcs", "azure"])
def test_compact_and_gc_run_on_gcs_and_azure(kind: str, tmp_path: Path) -> None:
    """The jobs' own Iceberg writes (the system tables) go through the job's storage: on a GCS store without auth,
    PyIceberg's FileIO looked for Google credentials and retried for a quarter of an hour, so compact hung."""
    with other_store(kind, tmp_path) as (warehouse, options):
        option_args = tuple(arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}"))
        with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN, extra_args=option_args) as server:
            py = RestCatalog("main", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
            py.create_namespace("raw")
            table = py.create_table("raw.events", SCHEMA)
            for n in range(3):  # metadata-only commits: data files would need the client to reach the store
                with table.transaction() as tx:
                    tx.set_properties(n=str(n))
            storage = open_storage(warehouse, options)
            deadline = time.monotonic() + 10  # the committed receipts follow the answers
            while len(list(storage.list("_catalog/events/"))) < 5 and time.monotonic() < deadline:
                time.sleep(0.1)
            world = {"warehouse": warehouse, "option_args": option_args}
            for job in ("compact", "gc"):
                done = pipeline(world, job)
                assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
                assert "failed" not in " ".join(done.stdout.split())
            # The timeline now holds the table's versions: its system table's current snapshot counts them.
            loaded = httpx.get(f"{server.iceberg_uri}/v1/system/namespaces/history/tables/timeline",
                               headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30)
            assert loaded.status_code == 200, loaded.text
            metadata = loaded.json()["metadata"]
            current = next(s for s in metadata["snapshots"] if s["snapshot-id"] == metadata["current-snapshot-id"])
            assert int(current["summary"]["total-records"]) >= 4  # the create and the three commits
