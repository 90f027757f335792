"""Smoke test: Spark 3.5 + the Iceberg runtime from PyPI can create, write, change and read an Iceberg table."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

INITIAL_ROWS = [
    (1, "eu", date(2024, 1, 1), 10.0),
    (2, "eu", date(2024, 1, 2), 20.0),
    (3, "us", date(2024, 1, 1), 30.0),
    (4, "us", date(2024, 1, 3), 40.0),
]


def rows(spark: SparkSession, sql: str) -> list[tuple[object, ...]]:
    return [tuple(row) for row in spark.sql(sql).collect()]


def test_iceberg_table_lifecycle(spark: SparkSession, spark_warehouse: Path, hadoop_catalog: str) -> None:
    table = f"{hadoop_catalog}.smoke.events"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {hadoop_catalog}.smoke")
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(
        f"""CREATE TABLE {table} (id BIGINT, region STRING, event_date DATE, amount DOUBLE)
            USING iceberg PARTITIONED BY (region, days(event_date))"""
    )
    values = ", ".join(f"({i}, '{r}', DATE '{d.isoformat()}', {a})" for i, r, d, a in INITIAL_ROWS)
    spark.sql(f"INSERT INTO {table} VALUES {values}")

    assert rows(spark, f"SELECT id, region, event_date, amount FROM {table} ORDER BY id") == INITIAL_ROWS
    # The partition spec was applied: one partition per (region, day) present in the data.
    assert spark.sql(f"SELECT * FROM {table}.partitions").count() == 4
    # The Hadoop catalog really wrote to the pytest warehouse directory, not somewhere else.
    assert list((spark_warehouse / "smoke" / "events" / "metadata").glob("v*.metadata.json"))

    # A row-level change: Iceberg rewrites (or adds delete files for) only the affected rows.
    spark.sql(f"UPDATE {table} SET amount = amount * 10 WHERE region = 'eu' AND id = 2")
    spark.sql(f"DELETE FROM {table} WHERE id = 4")
    assert rows(spark, f"SELECT id, amount FROM {table} ORDER BY id") == [(1, 10.0), (2, 200.0), (3, 30.0)]

    snapshots = rows(spark, f"SELECT snapshot_id, operation FROM {table}.snapshots ORDER BY committed_at")
    assert len(snapshots) == 3, snapshots
    assert snapshots[0][1] == "append"

    # CALL is parsed only by the Iceberg SQL extensions, so this fails if they are not loaded.
    first_snapshot = snapshots[0][0]
    spark.sql(f"CALL {hadoop_catalog}.system.rollback_to_snapshot('smoke.events', {first_snapshot})")
    assert rows(spark, f"SELECT id, region, event_date, amount FROM {table} ORDER BY id") == INITIAL_ROWS
    # Rolling back moves the current-snapshot pointer; it adds no snapshot but is recorded in the history.
    assert spark.sql(f"SELECT * FROM {table}.snapshots").count() == 3
    assert spark.sql(f"SELECT * FROM {table}.history").count() == 4
