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
from arco.pipeline.maintain import failure_reason, policy_of, run_maintain
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
    with pytest.raises(ValueError, match="history.expire.min-snapshots-to-keep is 'x'"):
        policy_of({"history.expire.min-snapshots-to-keep": "x"})
    # Iceberg's gc.enabled, read as Java reads a boolean: anything but "true" turns it off.
    assert policy_of({})["gc"] and policy_of({"gc.enabled": "TRUE"})["gc"]
    assert not policy_of({"gc.enabled": "false"})["gc"] and not policy_of({"gc.enabled": "yes"})["gc"]


def test_a_failure_is_told_by_the_java_exception_not_py4j_s_wrapper() -> None:
    wrapped = RuntimeError("An error occurred while calling o49.sql.\n: org.apache.iceberg.exceptions."
                           "ValidationException: Cannot expire snapshots: GC is disabled\n\tat org.apache...")
    assert failure_reason(wrapped) == ("org.apache.iceberg.exceptions.ValidationException: Cannot expire snapshots: "
                                       "GC is disabled")
    assert failure_reason(ValueError("table property x is 'y'\nmore")) == "table property x is 'y'"
    assert failure_reason(KeyError()) == "KeyError"


def test_maintain_compacts_small_files_and_keeps_the_rows(spark: SparkSession, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN) as server:
        py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
        py.create_namespace("m")
        small = py.create_table("m.small", SCHEMA, properties={"maintenance.rewrite.min-input-files": "2"})
        skipped = py.create_table("m.skipped", SCHEMA, properties={"maintenance.enabled": "false"})
        # A name is the user's, never SQL: this one would have run the procedures on m.skipped.
        injecting = py.create_table("m.skipped')--", SCHEMA)
        quoted = py.create_table("m.it's", SCHEMA, properties={"history.expire.max-snapshot-age-ms": str(2**63 - 1)})
        py.create_table("m.misconfigured", SCHEMA, properties={"maintenance.rewrite.min-input-files": "five"})
        # Iceberg's snapshot procedure makes such tables: they do not own their files, which expiry would delete.
        borrowed = py.create_table("m.borrowed", SCHEMA, properties={"gc.enabled": "false"})
        for i in range(6):
            batch = pa.table({"id": pa.array([i], pa.int64()), "s": pa.array([f"v{i}"])})
            small.append(batch)
            skipped.append(batch)
        injecting.append(pa.table({"id": pa.array([1], pa.int64()), "s": pa.array(["x"])}))
        for i in range(3):
            borrowed.append(pa.table({"id": pa.array([i], pa.int64()), "s": pa.array(["x"])}))
        borrowed_appends = {snapshot.snapshot_id for snapshot in borrowed.refresh().metadata.snapshots}
        for _ in range(2):
            quoted.append(pa.table({"id": pa.array([1], pa.int64()), "s": pa.array(["x"])}))
        appended = {snapshot.snapshot_id for snapshot in quoted.refresh().metadata.snapshots}
        before_rows = sorted(py.load_table("m.small").scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        before_files = len(py.load_table("m.small").inspect.files())

        run = Run("maintain")
        run_maintain(spark, StorageSpec(LocalBackend(warehouse).url), run, now_ms=time.time() * 1000 + 10 * 86400e3)

        after = py.load_table("m.small")
        assert sorted(after.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == before_rows
        assert len(after.inspect.files()) < before_files == 6
        # One table's bad setting is that table's failure, named; the others are maintained.
        assert run.errors == ["main.m.misconfigured: table property maintenance.rewrite.min-input-files is 'five', "
                              "not a whole number"]
        assert run.counts["tables_maintained"] == 4 and run.counts["tables_skipped_by_property"] == 1
        assert run.counts["tables_kept_whole_gc_disabled"] == 1
        borrowed_kept = {snapshot.snapshot_id for snapshot in py.load_table("m.borrowed").metadata.snapshots}
        assert borrowed_appends <= borrowed_kept  # none expired, though all are old
        assert run.counts["tables_failed"] == 1 and run.counts["data_files_rewritten"] == 6
        assert len(py.load_table("m.skipped").inspect.files()) == 6
        kept = {snapshot.snapshot_id for snapshot in py.load_table("m.it's").metadata.snapshots}
        assert appended <= kept  # its age says never expire
        assert len(after.metadata.snapshots) == 1  # expired down to min-snapshots-to-keep

        storage = LocalBackend(warehouse)
        sources = [orjson.loads(storage.get(m.key).data)["source"] for m in storage.list(f"{EVENTS}/")
                   if "/iceberg/committed/" in m.key]
        by_pipeline = [s for s in sources if s.get("kind") == "pipeline"]
        assert by_pipeline and all(s["run_id"] == run.run_id and s["task_id"] for s in by_pipeline)


def test_a_table_that_is_not_there_is_said_so_and_names_match_ignoring_case(tmp_path: Path) -> None:
    from arco.catalog.bootstrap import initialise_warehouse
    from arco.pipeline.maintain import NoSuchTable

    storage = LocalBackend(tmp_path / "wh")
    initialise_warehouse(storage)
    with pytest.raises(NoSuchTable, match="main.nope.t"):  # before any Spark work: no session is needed
        run_maintain(None, StorageSpec(storage.url), Run("maintain"), "main.nope.t")


def test_progress_off_a_terminal_is_a_line_per_step() -> None:
    import io

    from arco.pipeline.session import LineProgress

    out = io.StringIO()
    with LineProgress(out) as progress:
        task = progress.add_task("maintaining tables", total=3)
        for name in ("a", "b", "c"):
            progress.update(task, description=f"maintaining main.db.{name}")
            progress.update(task, advance=1)
    lines = [line.split("s ", 1)[1] for line in out.getvalue().splitlines()]
    assert lines == ["maintaining tables [0/3]", "maintaining main.db.a [0/3]", "maintaining main.db.b [1/3]",
                     "maintaining main.db.c [2/3]", "maintaining main.db.c [3/3]"]
