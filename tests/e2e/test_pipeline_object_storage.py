"""The pipeline on an object-storage warehouse (SeaweedFS's S3): compact publishes the system tables with the job's
own storage credentials (the embedded server vends none), and maintain, whose Spark has no Iceberg FileIO for
S3 here, refuses up front and changes nothing."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

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
