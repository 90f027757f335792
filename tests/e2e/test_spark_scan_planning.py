"""Server-side scan planning of a table Spark wrote through Arco, with Spark's own merge-on-read position deletes
(Iceberg Java writes them one delete file per data file): Arco's plan equals PyIceberg's ``plan_files()``.

Spark itself cannot plan on the server: the Iceberg 1.10 runtime knows the planning endpoints and their JSON
but has no client scan that calls them, so it always plans by reading manifests.
"""

from __future__ import annotations

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, EqualTo, GreaterThan
from pyspark.sql import SparkSession

from support.arco_server import ARCO_TOKEN, RunningServer

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


def served(arco: RunningServer, body: dict) -> set[tuple[str, frozenset[str]]]:
    answer = httpx.post(f"{arco.iceberg_uri}/v1/main/namespaces/mor/tables/events/plan", json=body, timeout=60,
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["status"] == "completed" and "plan-tasks" not in result
    deletes = [d["file-path"] for d in result.get("delete-files", [])]
    return {(t["data-file"]["file-path"], frozenset(deletes[i] for i in t.get("delete-file-references", [])))
            for t in result["file-scan-tasks"]}


def test_plan_of_a_spark_merge_on_read_table_equals_pyiceberg(spark: SparkSession, spark_arco: str,
                                                              arco: RunningServer) -> None:
    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.mor")
    spark.sql(f"""CREATE TABLE {c}.mor.events (id BIGINT, region STRING, ts TIMESTAMP) USING iceberg
                  PARTITIONED BY (region, days(ts))
                  TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read',
                                 'write.update.mode'='merge-on-read')""")
    for day in (1, 2):
        spark.sql(f"""INSERT INTO {c}.mor.events VALUES
                      ({day}0, 'eu', TIMESTAMP '2026-01-0{day} 10:00:00'),
                      ({day}1, 'eu', TIMESTAMP '2026-01-0{day} 11:00:00'),
                      ({day}2, 'us', TIMESTAMP '2026-01-0{day} 10:00:00'),
                      ({day}3, 'us', TIMESTAMP '2026-01-0{day} 11:00:00')""")
    spark.sql(f"DELETE FROM {c}.mor.events WHERE id IN (10, 22)")
    spark.sql(f"INSERT INTO {c}.mor.events VALUES (30, 'eu', TIMESTAMP '2026-01-01 12:00:00')")
    assert [r[0] for r in spark.sql(f"SELECT id FROM {c}.mor.events ORDER BY id").collect()] == \
        [11, 12, 13, 20, 21, 23, 30]

    table = RestCatalog("arco", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN).load_table("mor.events")
    cases: list[tuple[dict, BooleanExpression]] = [
        ({}, AlwaysTrue()),
        ({"filter": {"type": "eq", "term": "region", "value": "eu"}}, EqualTo("region", "eu")),
        ({"filter": {"type": "gt", "term": "id", "value": 20}}, GreaterThan("id", 20)),
    ]
    for body, expression in cases:
        expected = {(t.file.file_path, frozenset(d.file_path for d in t.delete_files))
                    for t in table.scan(row_filter=expression).plan_files()}
        assert served(arco, body) == expected
    everything = served(arco, {})
    assert sum(1 for _, deletes in everything if deletes) == 2  # Spark's position deletes, on the two files hit
    before_delete = table.snapshots()[1].snapshot_id
    assert all(not deletes for _, deletes in served(arco, {"snapshot-id": before_delete}))


def test_deletion_vectors_of_a_v3_table_are_served_one_per_data_file(spark: SparkSession, spark_arco: str,
                                                                     arco: RunningServer) -> None:
    """Iceberg Java writes a v3 table's deletes as deletion vectors, those of one DELETE in one Puffin file: each
    data file's task must name its own vector, with its offset and size in that file (what a client needs to
    read it), as Spark's own ``delete_files`` table lists them."""
    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.dv")
    spark.sql(f"""CREATE TABLE {c}.dv.events (id BIGINT, name STRING) USING iceberg
                  TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')""")
    for batch in range(3):
        values = ", ".join(f"({batch * 10 + i}, 'n{i}')" for i in range(10))
        spark.sql(f"INSERT INTO {c}.dv.events VALUES {values}")
    spark.sql(f"DELETE FROM {c}.dv.events WHERE id % 10 = 3")
    vectors = {row["referenced_data_file"]: (row["file_path"], row["content_offset"], row["content_size_in_bytes"])
               for row in spark.sql(f"SELECT * FROM {c}.dv.events.delete_files").collect()}
    assert len(vectors) >= 3 and len({path for path, _, _ in vectors.values()}) == 1  # one Puffin file

    answer = httpx.post(f"{arco.iceberg_uri}/v1/main/namespaces/dv/tables/events/plan", json={}, timeout=60,
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    deletes = result["delete-files"]
    assert len(deletes) == len(vectors)
    with_deletes = [t for t in result["file-scan-tasks"] if t.get("delete-file-references")]
    assert {t["data-file"]["file-path"] for t in with_deletes} == set(vectors)  # files without deletes have none
    for task in with_deletes:
        data_path = task["data-file"]["file-path"]
        [reference] = task["delete-file-references"]
        vector = deletes[reference]
        assert vector["file-format"] == "puffin" and vector["referenced-data-file"] == data_path
        assert (vector["file-path"], vector["content-offset"], vector["content-size-in-bytes"]) == vectors[data_path]

    # Row lineage: Spark writes new data files without a first row id, which they inherit from their manifest as
    # Iceberg Java's reader assigns it.
    first_row_ids = {row["file_path"]: row["first_row_id"]
                     for row in spark.sql(f"SELECT file_path, first_row_id FROM {c}.dv.events.data_files").collect()}
    assert len(set(first_row_ids.values())) == len(first_row_ids) and None not in first_row_ids.values()
    assert {t["data-file"]["file-path"]: t["data-file"].get("first-row-id")
            for t in result["file-scan-tasks"]} == first_row_ids

    table = RestCatalog("arco", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN).load_table("dv.events")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [i for i in range(30) if i % 10 != 3]
