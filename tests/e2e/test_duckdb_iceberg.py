"""DuckDB 1.5's iceberg extension through Arco: every write goes through POST /transactions/commit.

DuckDB and Spark read each other's tables, and PyIceberg reads DuckDB's positional deletes.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyspark.sql import SparkSession

from support.arco_server import ARCO_TOKEN, RunningServer
from support.duckdb_ext import attach_arco, connect_with_iceberg

pytestmark = [pytest.mark.duckdb, pytest.mark.timeout(600)]


@pytest.fixture
def ddb(arco: RunningServer) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect_with_iceberg()
    attach_arco(con, arco.iceberg_uri, ARCO_TOKEN)
    yield con
    con.close()


def fetch(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return [tuple(r) for r in con.execute(sql).fetchall()]


def spark_rows(spark: SparkSession, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


def test_create_insert_update_delete(ddb: duckdb.DuckDBPyConnection, arco: RunningServer) -> None:
    ddb.execute("CREATE SCHEMA IF NOT EXISTS arco.duck")
    ddb.execute("CREATE TABLE arco.duck.people (id INTEGER, name VARCHAR, score DOUBLE)")
    ddb.execute("INSERT INTO arco.duck.people VALUES (1, 'ada', 1.5), (2, 'bob', 2.5), (3, 'cy', 3.5)")
    ddb.execute("INSERT INTO arco.duck.people VALUES (4, 'dee', 4.5)")
    ddb.execute("UPDATE arco.duck.people SET score = score * 10 WHERE id = 2")
    ddb.execute("DELETE FROM arco.duck.people WHERE id = 1")
    expected = [(2, "bob", 25.0), (3, "cy", 3.5), (4, "dee", 4.5)]
    assert fetch(ddb, "SELECT * FROM arco.duck.people ORDER BY id") == expected

    # A new connection sees the same state: it was committed to the catalog, not only held by this session.
    other = connect_with_iceberg()
    attach_arco(other, arco.iceberg_uri, ARCO_TOKEN)
    assert fetch(other, "SELECT * FROM arco.duck.people ORDER BY id") == expected
    assert ("people",) in fetch(other, "SELECT table_name FROM information_schema.tables "
                                       "WHERE table_catalog = 'arco' AND table_schema = 'duck'")
    other.close()

    # PyIceberg applies the positional delete files DuckDB wrote.
    table = RestCatalog("py", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN).load_table("duck.people")
    data = table.scan().to_arrow().sort_by("id")
    assert data.column("id").to_pylist() == [2, 3, 4]
    assert len(table.metadata.snapshots) == 4  # two inserts, one update, one delete: one snapshot each


def test_create_table_as_select_and_a_create_with_rows_in_one_transaction(ddb: duckdb.DuckDBPyConnection,
                                                                            arco: RunningServer) -> None:
    """Both stage the table (stage-create) and write its first manifests before it exists: on a local warehouse
    into the staged location's metadata folder, which DuckDB does not make itself."""
    ddb.execute("CREATE SCHEMA IF NOT EXISTS arco.duck_ctas")
    ddb.execute("CREATE TABLE arco.duck_ctas.squares AS SELECT range AS n, range * range AS sq FROM range(10)")
    ddb.execute("BEGIN")
    ddb.execute("CREATE TABLE arco.duck_ctas.staged (id BIGINT)")
    ddb.execute("INSERT INTO arco.duck_ctas.staged VALUES (1), (2)")
    ddb.execute("COMMIT")
    assert fetch(ddb, "SELECT sum(sq) FROM arco.duck_ctas.squares") == [(285,)]
    catalog = RestCatalog("py", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    assert sorted(catalog.load_table("duck_ctas.staged").scan().to_arrow()["id"].to_pylist()) == [1, 2]
    assert catalog.load_table("duck_ctas.squares").scan().to_arrow().num_rows == 10


def test_one_duckdb_transaction_changes_two_tables_at_once(ddb: duckdb.DuckDBPyConnection,
                                                            arco: RunningServer) -> None:
    ddb.execute("CREATE SCHEMA IF NOT EXISTS arco.duck_tx")
    ddb.execute("CREATE TABLE arco.duck_tx.a (id INTEGER)")
    ddb.execute("CREATE TABLE arco.duck_tx.b (id INTEGER)")
    ddb.execute("BEGIN")
    ddb.execute("INSERT INTO arco.duck_tx.a VALUES (1)")
    ddb.execute("INSERT INTO arco.duck_tx.b VALUES (2)")
    ddb.execute("COMMIT")
    catalog = RestCatalog("py", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    assert catalog.load_table("duck_tx.a").scan().to_arrow().column("id").to_pylist() == [1]
    assert catalog.load_table("duck_tx.b").scan().to_arrow().column("id").to_pylist() == [2]


@pytest.mark.spark
def test_duckdb_reads_spark_and_spark_reads_duckdb(ddb: duckdb.DuckDBPyConnection, spark: SparkSession,
                                                   spark_arco: str) -> None:
    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.mixed")
    spark.sql(f"CREATE TABLE {c}.mixed.from_spark (id BIGINT, city STRING) USING iceberg PARTITIONED BY (city)")
    spark.sql(f"INSERT INTO {c}.mixed.from_spark VALUES (1, 'oslo'), (2, 'rome'), (3, 'oslo')")
    spark.sql(f"DELETE FROM {c}.mixed.from_spark WHERE id = 3")
    assert fetch(ddb, "SELECT id, city FROM arco.mixed.from_spark ORDER BY id") == [(1, "oslo"), (2, "rome")]

    ddb.execute("CREATE TABLE arco.mixed.from_duckdb (id BIGINT, city VARCHAR)")
    ddb.execute("INSERT INTO arco.mixed.from_duckdb VALUES (10, 'lima'), (11, 'kyiv'), (12, 'baku')")
    ddb.execute("DELETE FROM arco.mixed.from_duckdb WHERE id = 11")
    spark.sql(f"REFRESH TABLE {c}.mixed.from_duckdb")
    assert spark_rows(spark, f"SELECT id, city FROM {c}.mixed.from_duckdb ORDER BY id") == [(10, "lima"),
                                                                                             (12, "baku")]
    # Spark writes on top of DuckDB's snapshots, and DuckDB sees that too.
    spark.sql(f"INSERT INTO {c}.mixed.from_duckdb VALUES (13, 'oslo')")
    assert fetch(ddb, "SELECT count(*) FROM arco.mixed.from_duckdb") == [(3,)]
