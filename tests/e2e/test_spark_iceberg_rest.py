"""Spark 3.5 with the Iceberg runtime, through Arco's Iceberg REST API: the statements data engineers run."""

from __future__ import annotations

import time

import httpx
import pytest
from pyspark.sql import SparkSession

from support.arco_server import ARCO_TOKEN, RunningServer

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


def rows(spark: SparkSession, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def test_ddl_and_dml(spark: SparkSession, spark_arco: str) -> None:
    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.sales")
    assert ("sales",) in rows(spark, f"SHOW NAMESPACES IN {c}")
    spark.sql(f"""CREATE TABLE {c}.sales.orders (id BIGINT, region STRING, amount INT, ts TIMESTAMP)
                  USING iceberg PARTITIONED BY (region, days(ts))""")
    spark.sql(f"""INSERT INTO {c}.sales.orders VALUES
                  (1, 'eu', 10, TIMESTAMP '2026-01-01 10:00:00'), (2, 'us', 20, TIMESTAMP '2026-01-02 10:00:00'),
                  (3, 'eu', 30, TIMESTAMP '2026-01-03 10:00:00')""")
    assert rows(spark, f"SELECT id, amount FROM {c}.sales.orders ORDER BY id") == [(1, 10), (2, 20), (3, 30)]

    spark.sql(f"UPDATE {c}.sales.orders SET amount = amount + 1 WHERE region = 'eu'")
    spark.sql(f"DELETE FROM {c}.sales.orders WHERE id = 2")
    spark.sql(f"""MERGE INTO {c}.sales.orders t
                  USING (SELECT 3 AS id, 99 AS amount UNION ALL SELECT 4, 40) s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET t.amount = s.amount
                  WHEN NOT MATCHED THEN INSERT (id, region, amount, ts)
                                        VALUES (s.id, 'us', s.amount, TIMESTAMP '2026-01-04 10:00:00')""")
    assert rows(spark, f"SELECT id, amount FROM {c}.sales.orders ORDER BY id") == [(1, 11), (3, 99), (4, 40)]

    spark.sql(f"ALTER TABLE {c}.sales.orders ADD COLUMN note STRING")
    spark.sql(f"ALTER TABLE {c}.sales.orders RENAME COLUMN note TO comment")
    spark.sql(f"ALTER TABLE {c}.sales.orders ALTER COLUMN amount TYPE BIGINT")
    spark.sql(f"ALTER TABLE {c}.sales.orders DROP COLUMN comment")
    spark.sql(f"ALTER TABLE {c}.sales.orders ADD PARTITION FIELD bucket(4, id)")
    spark.sql(f"ALTER TABLE {c}.sales.orders WRITE ORDERED BY id")
    described = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE {c}.sales.orders").collect()}
    assert described["amount"] == "bigint" and "comment" not in described

    history = rows(spark, f"SELECT snapshot_id FROM {c}.sales.orders.snapshots ORDER BY committed_at")
    assert len(history) == 4
    first = history[0][0]
    assert rows(spark, f"SELECT count(*) FROM {c}.sales.orders VERSION AS OF {first}") == [(3,)]
    assert len(rows(spark, f"SELECT * FROM {c}.sales.orders.history")) == 4
    assert rows(spark, f"SELECT count(*) FROM {c}.sales.orders.files")[0][0] >= 1
    time.sleep(1.1)  # TIMESTAMP AS OF takes whole seconds: be a full second past the last commit
    now = time.time()
    assert rows(spark, f"SELECT count(*) FROM {c}.sales.orders TIMESTAMP AS OF {int(now)}") == [(3,)]

    spark.sql(f"ALTER TABLE {c}.sales.orders CREATE BRANCH audit")
    spark.sql(f"ALTER TABLE {c}.sales.orders CREATE TAG v1")
    refs = {r[0] for r in spark.sql(f"SELECT name FROM {c}.sales.orders.refs").collect()}
    assert refs == {"main", "audit", "v1"}
    spark.sql(f"INSERT INTO {c}.sales.orders.branch_audit VALUES (5, 'eu', 50, TIMESTAMP '2026-01-05 10:00:00')")
    assert rows(spark, f"SELECT count(*) FROM {c}.sales.orders VERSION AS OF 'audit'") == [(4,)]
    assert rows(spark, f"SELECT count(*) FROM {c}.sales.orders") == [(3,)]

    spark.sql(f"CALL {c}.system.rollback_to_snapshot('sales.orders', {first})")
    assert rows(spark, f"SELECT count(*) FROM {c}.sales.orders") == [(3,)]
    spark.sql(f"CALL {c}.system.rewrite_data_files(table => 'sales.orders', options => map('min-input-files','1'))")
    spark.sql(f"CALL {c}.system.expire_snapshots(table => 'sales.orders', "
              "older_than => TIMESTAMP '2100-01-01 00:00:00', retain_last => 1)")
    assert rows(spark, f"SELECT id FROM {c}.sales.orders ORDER BY id") == [(1,), (2,), (3,)]

    spark.sql(f"CREATE TABLE {c}.sales.big_orders USING iceberg AS SELECT * FROM {c}.sales.orders WHERE amount >= 20")
    assert rows(spark, f"SELECT id FROM {c}.sales.big_orders ORDER BY id") == [(2,), (3,)]
    spark.sql(f"REPLACE TABLE {c}.sales.big_orders USING iceberg AS SELECT id FROM {c}.sales.orders")
    assert rows(spark, f"SELECT count(*) FROM {c}.sales.big_orders") == [(3,)]

    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.archive")
    spark.sql(f"ALTER TABLE {c}.sales.big_orders RENAME TO archive.old_orders")  # the target is relative to the catalog
    assert rows(spark, f"SELECT count(*) FROM {c}.archive.old_orders") == [(3,)]
    spark.sql(f"DROP TABLE {c}.archive.old_orders")
    spark.sql(f"DROP TABLE {c}.sales.orders PURGE")
    assert rows(spark, f"SHOW TABLES IN {c}.sales") == []


def test_expiring_snapshots_that_have_table_statistics(spark: SparkSession, spark_arco: str) -> None:
    """Spark's expiry removes a snapshot and then its statistics (already gone with it): the commit lands."""
    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.stats")
    spark.sql(f"CREATE TABLE {c}.stats.t (id INT, p STRING) USING iceberg PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {c}.stats.t VALUES (1, 'a')")
    spark.sql(f"CALL {c}.system.compute_table_stats('stats.t')")
    spark.sql(f"CALL {c}.system.compute_partition_stats('stats.t')")
    spark.sql(f"INSERT INTO {c}.stats.t VALUES (2, 'b')")
    spark.sql(f"CALL {c}.system.expire_snapshots(table => 'stats.t', older_than => TIMESTAMP '2999-01-01 00:00:00', "
              "retain_last => 1)")
    assert rows(spark, f"SELECT count(*) FROM {c}.stats.t.snapshots") == [(1,)]
    assert rows(spark, f"SELECT id FROM {c}.stats.t ORDER BY id") == [(1,), (2,)]


def test_format_version_3_row_lineage(spark: SparkSession, spark_arco: str, arco: RunningServer) -> None:
    from pyiceberg.catalog.rest import RestCatalog

    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.v3")
    spark.sql(f"CREATE TABLE {c}.v3.t (id BIGINT) USING iceberg TBLPROPERTIES ('format-version'='3')")
    spark.sql(f"INSERT INTO {c}.v3.t VALUES (1), (2)")
    spark.sql(f"INSERT INTO {c}.v3.t VALUES (3)")
    assert rows(spark, f"SELECT id FROM {c}.v3.t ORDER BY id") == [(1,), (2,), (3,)]
    catalog = RestCatalog("check", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    metadata = catalog.load_table("v3.t").metadata
    assert metadata.format_version == 3
    assert metadata.next_row_id == 3  # every added row got a row id
    assert [s.first_row_id for s in metadata.snapshots] == [0, 2]


def dropped_reports(server: RunningServer, reason: str) -> float:
    exposition = httpx.get(f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).text
    return next((float(line.split()[-1]) for line in exposition.splitlines()
                 if line.startswith(f'arco_metrics_reports_dropped_total{{reason="{reason}"}} ')), 0.0)


def test_a_ctas_commit_report_sent_before_the_table_exists_is_answered(spark: SparkSession, spark_arco: str,
                                                                      arco: RunningServer) -> None:
    """Spark reports a CTAS's commit from inside its staged create, before the table exists: answered 204 (a 404
    makes Iceberg's Java client log a warning with a stack trace for every CTAS), not kept (it names no table)."""
    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.reports")
    before = dropped_reports(arco, "no_table")
    spark.sql(f"CREATE TABLE {c}.reports.made USING iceberg AS SELECT 1 AS id")
    deadline = time.monotonic() + 30  # the client sends reports from a thread of its own
    while dropped_reports(arco, "no_table") == before:
        assert time.monotonic() < deadline, "the CTAS's commit report never reached the server"
        time.sleep(0.2)
    assert rows(spark, f"SELECT id FROM {c}.reports.made") == [(1,)]
