"""``arco pipeline gc`` removes exactly the eligible files, and every table still reads the same afterwards."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyspark.sql import SparkSession
from uuid6 import uuid7

from arco.iceberg.idempotency import marker_key
from arco.iceberg.plan_store import PlanStore
from arco.pipeline import compact, gc
from arco.pipeline.gc_rules import DAY, GcPolicy
from arco.pipeline.runs import Run
from arco.pipeline.storage_spec import StorageSpec
from arco.spark.session import rest_catalog_conf
from arco.storage.local import LocalBackend
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
HEADERS = {"Authorization": f"Bearer {ARCO_TOKEN}"}
METRICS_REPORT = {"report-type": "scan-report", "table-name": "main.g.plain", "snapshot-id": -1, "filter": True,
                  "schema-id": 0, "projected-field-ids": [1], "projected-field-names": ["id"],
                  "metrics": {"result-data-files": {"unit": "count", "value": 0}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("gc")
    with arco_server(workdir / "warehouse", workdir, admin_token=ARCO_TOKEN) as s:
        yield s


def rows(catalog: RestCatalog, name: str) -> list[int]:
    return sorted(catalog.load_table(name).scan().to_arrow().column("id").to_pylist())


def test_gc_removes_exactly_the_eligible_files(spark: SparkSession, server: RunningServer, tmp_path: Path) -> None:
    warehouse = Path(server.log_path).parent / "warehouse"
    storage = LocalBackend(warehouse)
    spec = StorageSpec(storage.url)
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    py.create_namespace("g")
    keep_few = py.create_table("g.short", SCHEMA, properties={
        "write.metadata.delete-after-commit.enabled": "true", "write.metadata.previous-versions-max": "2"})
    plain = py.create_table("g.plain", SCHEMA)
    for i in range(4):
        keep_few.append(pa.table({"id": pa.array([i], pa.int64())}))
        plain.append(pa.table({"id": pa.array([i], pa.int64())}))
    api = f"{server.iceberg_uri}/v1/main"
    keyed = httpx.post(f"{api}/namespaces/g/tables/plain", headers={**HEADERS, "Idempotency-Key": str(uuid7())},
                       json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    keyed.raise_for_status()
    txn = httpx.post(f"{api}/transactions/commit", headers=HEADERS, json={"table-changes": [
        {"identifier": {"namespace": ["g"], "name": n}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"t": "1"}}]} for n in ("short", "plain")]})
    assert txn.status_code == 204, txn.text
    plain_uuid = str(py.load_table("g.plain").metadata.table_uuid)

    # Planted: an orphan metadata file (a commit that lost its CAS), and a stale IN_PROGRESS marker of a commit
    # that never landed; plus one for a commit that did land, which must stay.
    plain_dir = py.load_table("g.plain").metadata.location.removeprefix("file://") + "/metadata/"
    orphan = Path(plain_dir) / "00007-lostrace.metadata.json"
    orphan.write_bytes(Path(py.load_table("g.plain").metadata_location.removeprefix("file://")).read_bytes())
    [landed_marker] = [m.key for m in storage.list("_catalog/iceberg_idempotency/")]  # the keyed commit's
    landed = orjson.loads(storage.get(landed_marker).data)
    assert landed["subject"] == plain_uuid and landed_marker.startswith("_catalog/iceberg_idempotency/catalog-")
    storage.put(landed_marker, orjson.dumps({**landed, "status": "IN_PROGRESS", "started_at_ms": 1}))
    stale_key = str(uuid7())
    stale = marker_key(landed_marker.split("/")[2], hashlib.sha256(stale_key.encode()).hexdigest())
    storage.put(stale, orjson.dumps({"status": "IN_PROGRESS", "idempotency_key": stale_key, "subject": plain_uuid,
                                     "operation": "updateTable", "request_hash": "x", "started_at_ms": 1}))
    legacy_key = str(uuid7())  # scoped by its table, as commits' markers were before they were the catalog's
    legacy = marker_key(plain_uuid, hashlib.sha256(legacy_key.encode()).hexdigest())
    storage.put(legacy, orjson.dumps({"status": "IN_PROGRESS", "idempotency_key": legacy_key,
                                     "operation": "updateTable", "request_hash": "x", "started_at_ms": 1}))

    # Server-side scan plans: one that has expired by then (record and task file go), one that has not.
    expired_plan, live_plan = PlanStore(storage, 3600).new_record(plain_uuid, "admin", "completed"), \
        PlanStore(storage, 100 * DAY).new_record(plain_uuid, "admin", "completed")
    for record in (expired_plan, live_plan):
        PlanStore(storage, 0).write_chunk(record.plan_id, 1, b"{}")
        PlanStore(storage, 0).create(record)

    # An engine's metrics report and a pipeline run's record: compacted, then collected (a week and 90 days on).
    reported = httpx.post(f"{api}/namespaces/g/tables/plain/metrics", headers=HEADERS, json=METRICS_REPORT)
    assert reported.status_code == 204, reported.text
    Run("reconcile").finish(storage)
    compact.run_compact(spark, spec, Run("compact"), publish=False)  # no system tables: receipts as listed here
    late = py.load_table("g.plain")
    late.append(pa.table({"id": pa.array([99], pa.int64())}))  # after compaction: its committed receipt stays

    late_receipt = hashlib.sha256(py.load_table("g.plain").metadata_location.encode()).hexdigest()
    late_committed = f"/iceberg/committed/{late_receipt}"  # (its pending receipt has the same name, elsewhere)
    deadline = time.monotonic() + 10  # the receipt is written just after the answer (arco.events.after_answer)
    while not any(late_committed in m.key for m in storage.list("_catalog/events/")) and time.monotonic() < deadline:
        time.sleep(0.05)

    # What must go, computed from the files themselves, a century of rules in one glance: everything is old.
    listed = {m.key for m in storage.list("_catalog/")} | {m.key for m in storage.list("main/")}
    assert any(late_committed in k for k in listed)
    history = set()
    for name in ("g.short", "g.plain"):
        table = py.load_table(name)
        history |= {storage_key(table.metadata_location, storage)} | {
            storage_key(e.metadata_file, storage) for e in table.metadata.metadata_log}
    expected = {
        *[k for k in listed if "/iceberg/pending/" in k],
        *[k for k in listed if "/committed/" in k and late_receipt not in k],
        *[k for k in listed if k.startswith("_catalog/iceberg_idempotency/") and k != landed_marker],
        *[k for k in listed if k.startswith("_catalog/iceberg_txns/")],
        *[k for k in listed if k.startswith(f"_catalog/iceberg_plans/{expired_plan.plan_id}/")],
        *[k for k in listed if "/metrics/" in k or k.startswith("_catalog/pipeline/runs/")],
        storage_key(str(orphan), storage),
        *[k for k in listed if k.endswith(".metadata.json") and "/short-" in k and k not in history],
    }
    # Versions expired from short's 2-entry log: PyIceberg deletes those of its own commits itself, as the property
    # asks; the one that expired through the server-side transaction is the pipeline's to remove.
    assert [k for k in expected if "/short-" in k]

    later = time.time() + 91 * DAY
    dry = gc.run_gc(spark, spec, Run("gc"), GcPolicy(), dry_run=True, now=later)
    assert {d.key for d in dry} == expected
    assert {m.key for m in storage.list("_catalog/")} | {m.key for m in storage.list("main/")} == listed

    done = gc.run_gc(spark, spec, Run("gc"), GcPolicy(), dry_run=False, now=later)
    assert {d.key for d in done} == expected
    survivors = {m.key for m in storage.list("_catalog/")} | {m.key for m in storage.list("main/")}
    assert survivors == listed - expected
    assert landed_marker in survivors and history <= survivors
    assert len([k for k in survivors if k.startswith(f"_catalog/iceberg_plans/{live_plan.plan_id}/")]) == 2

    fresh = RestCatalog("after", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    assert rows(fresh, "g.short") == [0, 1, 2, 3] and rows(fresh, "g.plain") == [0, 1, 2, 3, 99]
    for key, value in rest_catalog_conf(server.iceberg_uri, "main", ARCO_TOKEN).items():
        spark.conf.set(f"spark.sql.catalog.gcmain.{key}", value)
    spark.conf.set("spark.sql.catalog.gcmain", "org.apache.iceberg.spark.SparkCatalog")
    assert [r[0] for r in spark.sql("SELECT count(*) FROM gcmain.g.plain").collect()] == [5]
    assert [r[0] for r in spark.sql("SELECT count(*) FROM gcmain.g.short").collect()] == [4]
    fresh.load_table("g.plain").append(pa.table({"id": pa.array([100], pa.int64())}))  # and still writable
    assert rows(fresh, "g.plain")[-1] == 100


def storage_key(location: str, storage: LocalBackend) -> str:
    return location.removeprefix("file://").removeprefix(str(storage.root) + "/")
