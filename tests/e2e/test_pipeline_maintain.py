"""``arco pipeline maintain``: fewer files, the same rows, and commits recorded as the pipeline's."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from pyspark.sql import SparkSession

from arco.events.receipts import EVENTS
from arco.pipeline.maintain import policy_of, run_maintain
from arco.pipeline.runs import Run
from arco.pipeline.storage_spec import StorageSpec
from arco.storage.local import LocalBackend
from support.arco_server import ARCO_TOKEN, arco_server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "s", StringType(), required=False))


def test_policy_comes_from_table_properties() -> None:
    assert policy_of({})["enabled"] and policy_of({})["min_input_files"] == 5
    custom = policy_of({"maintenance.enabled": "false", "history.expire.min-snapshots-to-keep": "3"})
    assert not custom["enabled"] and custom["min_snapshots_to_keep"] == 3


def test_maintain_compacts_small_files_and_keeps_the_rows(spark: SparkSession, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN) as server:
        py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
        py.create_namespace("m")
        small = py.create_table("m.small", SCHEMA, properties={"maintenance.rewrite.min-input-files": "2"})
        skipped = py.create_table("m.skipped", SCHEMA, properties={"maintenance.enabled": "false"})
        for i in range(6):
            batch = pa.table({"id": pa.array([i], pa.int64()), "s": pa.array([f"v{i}"])})
            small.append(batch)
            skipped.append(batch)
        before_rows = sorted(py.load_table("m.small").scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        before_files = len(py.load_table("m.small").inspect.files())

        run = Run("maintain")
        run_maintain(spark, StorageSpec(LocalBackend(warehouse).url), run, now_ms=time.time() * 1000 + 10 * 86400e3)

        after = py.load_table("m.small")
        assert sorted(after.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == before_rows
        assert len(after.inspect.files()) < before_files == 6
        assert not run.errors, run.errors
        assert run.counts["tables_maintained"] == 1 and run.counts["tables_skipped_by_property"] == 1
        assert run.counts["data_files_rewritten"] == 6 and not run.errors
        assert len(py.load_table("m.skipped").inspect.files()) == 6
        assert len(after.metadata.snapshots) == 1  # expired down to min-snapshots-to-keep

        storage = LocalBackend(warehouse)
        sources = [orjson.loads(storage.get(m.key).data)["source"] for m in storage.list(f"{EVENTS}/")
                   if "/iceberg/committed/" in m.key]
        by_pipeline = [s for s in sources if s.get("kind") == "pipeline"]
        assert by_pipeline and all(s["run_id"] == run.run_id and s["task_id"] for s in by_pipeline)
