"""Iceberg REST views with real clients against a real ``arco serve``: PyIceberg's view calls, the Databricks SDK
seeing the view in Unity Catalog, and Spark SQL's view statements (marked ``spark``)."""

from __future__ import annotations

import pytest
from databricks.sdk import WorkspaceClient
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchViewError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewRepresentation, ViewVersion
from pyspark.sql import SparkSession

from support.arco_server import ARCO_TOKEN, RunningServer

pytestmark = pytest.mark.timeout(600)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False))


@pytest.fixture
def catalog(arco: RunningServer) -> RestCatalog:
    return RestCatalog("arco", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN)


def sql_version(sql: str, namespace: str) -> ViewVersion:
    return ViewVersion(**{"version-id": 1, "schema-id": 0, "summary": {"engine-name": "pyiceberg"},
                          "representations": [ViewRepresentation(SQLViewRepresentation(
                              type="sql", sql=sql, dialect="spark"))],
                          "default-namespace": [namespace]})


def test_pyiceberg_view_calls(catalog: RestCatalog) -> None:
    catalog.create_namespace_if_not_exists("pyviews")
    catalog.create_table_if_not_exists("pyviews.cities", schema=SCHEMA)
    view = catalog.create_view("pyviews.v_cities", SCHEMA, sql_version("SELECT id, city FROM cities", "pyviews"),
                               properties={"comment": "all cities"})
    assert view.metadata.current_version_id == 1 and view.metadata.properties["comment"] == "all cities"
    assert catalog.view_exists("pyviews.v_cities")
    assert not catalog.view_exists("pyviews.cities")  # a table is not a view
    assert ("pyviews", "v_cities") in catalog.list_views("pyviews")
    assert ("pyviews", "v_cities") not in catalog.list_tables("pyviews")
    loaded = catalog.load_view("pyviews.v_cities")
    assert loaded.metadata.view_uuid == view.metadata.view_uuid
    assert loaded.metadata.versions[0].representations[0].root.sql == "SELECT id, city FROM cities"
    catalog.drop_view("pyviews.v_cities")
    assert not catalog.view_exists("pyviews.v_cities")
    with pytest.raises(NoSuchViewError):
        catalog.drop_view("pyviews.v_cities")


def test_the_databricks_sdk_sees_the_view(catalog: RestCatalog, arco: RunningServer) -> None:
    catalog.create_namespace_if_not_exists("ucviews")
    view = ViewVersion(**{"version-id": 1, "schema-id": 0, "default-namespace": ["ucviews"],
                          "representations": [
                              ViewRepresentation(SQLViewRepresentation(type="sql", sql="SELECT 1 AS id, 'x' AS city",
                                                                       dialect="trino")),
                              ViewRepresentation(SQLViewRepresentation(type="sql", sql="SELECT 1 id, 'x' city",
                                                                       dialect="spark"))]})
    catalog.create_view("ucviews.v", SCHEMA, view)
    w = WorkspaceClient(host=arco.base_url, token=ARCO_TOKEN)
    info = w.tables.get("main.ucviews.v")
    assert info.table_type is not None and info.table_type.value == "VIEW"
    assert info.view_definition == "SELECT 1 id, 'x' city"
    assert [(c.name, c.type_name.value if c.type_name else None) for c in info.columns or []] == \
        [("id", "LONG"), ("city", "STRING")]
    assert "v" in [t.name for t in w.tables.list(catalog_name="main", schema_name="ucviews")]


def rows(spark: SparkSession, sql: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(sql).collect()]


@pytest.mark.spark
def test_spark_sql_views(spark: SparkSession, spark_arco: str, catalog: RestCatalog) -> None:
    c = spark_arco
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.sv")
    spark.sql(f"CREATE TABLE {c}.sv.orders (id BIGINT, region STRING, amount INT) USING iceberg")
    spark.sql(f"INSERT INTO {c}.sv.orders VALUES (1, 'eu', 10), (2, 'us', 20), (3, 'eu', 30)")

    spark.sql(f"CREATE VIEW {c}.sv.eu_orders AS SELECT id, amount FROM {c}.sv.orders WHERE region = 'eu'")
    assert rows(spark, f"SELECT id, amount FROM {c}.sv.eu_orders ORDER BY id") == [(1, 10), (3, 30)]
    assert ("sv", "eu_orders", False) in rows(spark, f"SHOW VIEWS IN {c}.sv")
    assert "eu_orders" not in [r[1] for r in rows(spark, f"SHOW TABLES IN {c}.sv")]

    spark.sql(f"CREATE VIEW {c}.sv.eu_total AS SELECT sum(amount) AS total FROM {c}.sv.eu_orders")  # view over view
    assert rows(spark, f"SELECT total FROM {c}.sv.eu_total") == [(40,)]

    spark.sql(f"CREATE OR REPLACE VIEW {c}.sv.eu_orders AS SELECT id, amount * 2 AS amount FROM {c}.sv.orders "
              "WHERE region = 'eu'")
    assert rows(spark, f"SELECT total FROM {c}.sv.eu_total") == [(80,)]
    assert catalog.load_view("sv.eu_orders").metadata.current_version_id == 2

    spark.sql(f"ALTER VIEW {c}.sv.eu_orders SET TBLPROPERTIES ('owner-team' = 'sales')")
    assert catalog.load_view("sv.eu_orders").metadata.properties["owner-team"] == "sales"

    with pytest.raises(Exception, match="(?i)already exists"):
        spark.sql(f"CREATE VIEW {c}.sv.orders AS SELECT 1 AS x")  # a view over a table's name

    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {c}.sv_archive")
    spark.sql(f"ALTER VIEW {c}.sv.eu_total RENAME TO {c}.sv_archive.eu_total_old")
    assert rows(spark, f"SELECT total FROM {c}.sv_archive.eu_total_old") == [(80,)]
    spark.sql(f"DROP VIEW {c}.sv_archive.eu_total_old")
    spark.sql(f"DROP VIEW {c}.sv.eu_orders")
    assert rows(spark, f"SHOW VIEWS IN {c}.sv") == []
    assert rows(spark, f"SELECT count(*) FROM {c}.sv.orders") == [(3,)]
