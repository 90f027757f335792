"""An Iceberg table written by Spark through Arco, read by a Delta Sharing recipient with pandas; then the Spark
compactor puts the recipient's reads into the audit history under the recipient's name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import delta_sharing
import httpx
import pytest

from arco.pipeline import checkpoint, compact
from arco.pipeline.parquet_io import read_many
from arco.pipeline.rows import AUDIT
from arco.pipeline.runs import Run
from arco.pipeline.storage_spec import StorageSpec
from arco.spark.session import rest_catalog_conf
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server
from support.net import stop

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sharing-spark") / "warehouse"


@pytest.fixture(scope="module")
def server(warehouse: Path) -> Iterator[RunningServer]:
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN) as s:
        yield s


def uc(server: RunningServer, method: str, path: str, **kwargs: Any) -> httpx.Response:
    response = httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                             headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30, **kwargs)
    assert response.status_code == 200, response.text
    return response


def test_a_spark_written_iceberg_table_reaches_pandas_and_the_audit_history(spark: SparkSession,
                                                                             server: RunningServer,
                                                                             warehouse: Path) -> None:
    pytest.importorskip("arco.sharing.iceberg_source")
    for key, value in rest_catalog_conf(server.iceberg_uri, "main", ARCO_TOKEN).items():
        spark.conf.set(f"spark.sql.catalog.sharing.{key}", value)
    spark.conf.set("spark.sql.catalog.sharing", "org.apache.iceberg.spark.SparkCatalog")
    spark.sql("CREATE NAMESPACE sharing.sparkdb")
    spark.sql("CREATE TABLE sharing.sparkdb.sales (id BIGINT, region STRING, amount DOUBLE) USING iceberg "
              "PARTITIONED BY (region)")
    spark.sql("INSERT INTO sharing.sparkdb.sales VALUES (1, 'eu', 1.5), (2, 'us', 2.5)")
    spark.sql("INSERT INTO sharing.sparkdb.sales VALUES (3, 'eu', 3.5)")
    expected = sorted(tuple(r) for r in spark.sql("SELECT id, region, amount FROM sharing.sparkdb.sales").collect())

    uc(server, "POST", "/shares", json={"name": "spark_share"})
    uc(server, "PATCH", "/shares/spark_share", json={"updates": [
        {"action": "ADD", "data_object": {"name": "main.sparkdb.sales", "data_object_type": "TABLE"}}]})
    recipient = uc(server, "POST", "/recipients", json={"name": "globex", "authentication_type": "TOKEN"}).json()
    uc(server, "PATCH", "/shares/spark_share/permissions",
       json={"changes": [{"principal": "globex", "add": ["SELECT"]}]})
    profile = warehouse.parent / "globex.share"
    profile.write_text(httpx.get(recipient["tokens"][0]["activation_url"], timeout=30).text)

    frame = delta_sharing.load_as_pandas(f"{profile}#spark_share.sparkdb.sales")
    assert sorted(zip(frame["id"], frame["region"], frame["amount"], strict=True)) == expected
    table = delta_sharing.SharingClient(str(profile)).list_all_tables()
    assert [(t.share, t.schema, t.name) for t in table] == [("spark_share", "sparkdb", "sales")]

    stop(server.process)  # the server writes its tallies of file downloads as it exits
    run = Run("compact")
    compact.run_compact(spark, StorageSpec(str(warehouse)), run)
    storage = StorageSpec(str(warehouse)).open()
    audit = read_many(storage, checkpoint.history_keys(storage, "audit"), AUDIT).to_pylist()
    reads = [r for r in audit if r["principal"] == "recipient:globex"]
    assert {r["op"] for r in reads} >= {"delta_sharing.queryTable", "delta_sharing.listAllTables"}
    query = next(r for r in reads if r["op"] == "delta_sharing.queryTable")
    assert (query["namespace"], query["name"], query["source_kind"]) == (["spark_share", "sparkdb"], "sales",
                                                                          "delta_sharing")
    assert json.loads(query["details"])["files"] >= 2
    downloads = [r for r in reads if r["op"] == "delta_sharing.downloadFiles"]
    assert downloads and downloads[0]["name"] == "sales"
    details = json.loads(downloads[0]["details"])
    assert details["files"] >= 2 and details["details"]["bytes"] > 0 and len(details["details"]["files"]) >= 2
