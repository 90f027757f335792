"""Shared fixtures for end-to-end tests that drive a real Spark session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from arco.spark.session import hadoop_catalog_conf, local_spark_session, rest_catalog_conf
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The Hadoop catalog every e2e test can use without an Arco server; REST catalogs are added per test via
# spark.conf.set("spark.sql.catalog.<name>...") since Iceberg catalogs are resolved lazily by name.
HADOOP_CATALOG = "local"


@pytest.fixture(scope="session")
def hadoop_catalog() -> str:
    """Name of the Iceberg Hadoop catalog configured in the ``spark`` session (rooted at ``spark_warehouse``)."""
    return HADOOP_CATALOG


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iceberg-warehouse")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, spark_warehouse: Path) -> Iterator[SparkSession]:
    # One JVM for the whole run: starting Spark costs seconds, and one SparkContext per process is the rule anyway.
    session = local_spark_session(
        "arco-e2e",
        catalogs={HADOOP_CATALOG: hadoop_catalog_conf(spark_warehouse)},
        warehouse_dir=tmp_path_factory.mktemp("spark-warehouse"),
    )
    yield session
    session.stop()



@pytest.fixture(scope="session")
def arco(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One Arco server for the end-to-end run, on a fresh local warehouse."""
    workdir = tmp_path_factory.mktemp("arco-e2e")
    with arco_server(workdir / "warehouse", workdir, admin_token=ARCO_TOKEN) as server:
        yield server


@pytest.fixture(scope="session")
def spark_arco(spark: SparkSession, arco: RunningServer) -> str:
    """The name of a Spark catalog pointing at the ``arco`` server's ``main`` catalog."""
    for key, value in rest_catalog_conf(arco.iceberg_uri, "main", ARCO_TOKEN).items():
        spark.conf.set(f"spark.sql.catalog.arco.{key}", value)
    spark.conf.set("spark.sql.catalog.arco", "org.apache.iceberg.spark.SparkCatalog")
    return "arco"
