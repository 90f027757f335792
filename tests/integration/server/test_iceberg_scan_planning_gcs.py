"""Server-side scan planning on a GCS warehouse without auth (fake-gcs-server): the server reads the manifests
through Arco's Arrow FileIO, which asks anonymously. PyIceberg's own Arrow FileIO cannot: it looked for Google
credentials and retried for a quarter of an hour, holding the request that long."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from arco.storage.factory import open_storage
from arco.storage.gcs import create_bucket
from support import emulators
from support.arco_server import ARCO_TOKEN, arco_server

pytestmark = pytest.mark.timeout(300)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def test_a_plan_on_an_anonymous_gcs_warehouse_lists_the_tables_files(tmp_path: Path) -> None:
    with emulators.fake_gcs(tmp_path) as gcs:
        bucket = f"plan-{uuid.uuid4().hex[:8]}"
        create_bucket(bucket, gcs.options())
        warehouse = f"gs://{bucket}/wh"
        args = tuple(arg for key, value in gcs.options().items() for arg in ("--storage-option", f"{key}={value}"))
        with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN, extra_args=args) as server:
            # The client writes its data files with the same FileIO (a client of a real bucket has credentials).
            client_io = open_storage(warehouse, gcs.options()).fileio_properties()
            catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN, **client_io)
            catalog.create_namespace("plan")
            table = catalog.create_table("plan.t", SCHEMA)
            for start in (0, 10, 20):
                table.append(pa.table({"id": pa.array(range(start, start + 10), pa.int64())}))
            expected = sorted(task.file.file_path for task in table.scan().plan_files())
            assert len(expected) == 3 and all(path.startswith(warehouse) for path in expected)

            answer = httpx.post(f"{server.iceberg_uri}/v1/main/namespaces/plan/tables/t/plan", json={},
                                headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=60)
            assert answer.status_code == 200, answer.text
            result = answer.json()
            assert result["status"] == "completed"
            assert sorted(t["data-file"]["file-path"] for t in result["file-scan-tasks"]) == expected
