"""Start a local Spark 3.5 session wired for Iceberg, for tests and small batch jobs on a 2-core machine."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from arco.spark.jars import spark_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
ICEBERG_SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
LOOPBACK = "127.0.0.1"


def rest_catalog_conf(
    uri: str, warehouse: str, token: str | None, *, headers: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Catalog properties (without the ``spark.sql.catalog.<name>.`` prefix) for an Iceberg REST catalog.

    ``headers`` become ``header.<Name>`` properties, which the REST client sends with every request
    (e.g. ``{"X-Iceberg-Access-Delegation": "vended-credentials"}``).
    """
    conf = {"type": "rest", "uri": uri, "warehouse": warehouse}
    if token is not None:
        # A static bearer token, sent as "Authorization: Bearer <token>". Iceberg handles it in its oauth2 auth
        # manager; naming the type and the token endpoint explicitly stops it warning that it inferred them (the
        # endpoint's fallback is deprecated). Arco tokens are opaque (not JWTs with an expiry), so the client
        # never tries to refresh them there.
        conf["token"] = token
        conf["rest.auth.type"] = "oauth2"
        conf["oauth2-server-uri"] = uri.rstrip("/") + "/v1/oauth/tokens"
    for name, value in (headers or {}).items():
        conf[f"header.{name}"] = value
    return conf


def hadoop_catalog_conf(warehouse_dir: Path | str) -> dict[str, str]:
    """Catalog properties for an Iceberg Hadoop catalog (tables as plain directories) rooted at ``warehouse_dir``."""
    return {"type": "hadoop", "warehouse": Path(warehouse_dir).resolve().as_uri()}


@functools.cache
def _scratch_root() -> Path:
    # One scratch directory per process for Spark's block manager, shuffle files and Derby, so nothing lands in
    # the current directory (metastore_db/, derby.log, spark-warehouse/) and parallel runs do not collide.
    root = Path(tempfile.mkdtemp(prefix="arco-spark-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def local_spark_session(
    app_name: str,
    *,
    catalogs: dict[str, dict[str, str]] | None = None,
    warehouse_dir: Path | None = None,
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """A local Spark session with the Iceberg runtime and SQL extensions, and the given Iceberg catalogs.

    ``catalogs`` maps a catalog name to its properties (see ``rest_catalog_conf`` / ``hadoop_catalog_conf``);
    each becomes ``spark.sql.catalog.<name>`` = SparkCatalog plus ``spark.sql.catalog.<name>.<key>``.
    ``warehouse_dir`` is Spark's own ``spark.sql.warehouse.dir`` (the built-in session catalog), defaulting
    to a temporary directory. ``extra_conf`` is applied last and wins.

    Spark allows one SparkContext per process: if one is already running, its JVM settings (jars, driver
    options) stay as they were and only SQL settings from this call take effect (``getOrCreate`` semantics).
    """
    from pyspark.sql import SparkSession

    # Spark otherwise resolves the machine's hostname, which on CI/containers may not be routable.
    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    # Python workers must run the same interpreter (and venv) as the driver, not whatever `python3` is on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable

    scratch = _scratch_root()
    local_dir = scratch / "local"
    derby_home = scratch / "derby"
    local_dir.mkdir(exist_ok=True)
    derby_home.mkdir(exist_ok=True)
    # Block manager and shuffle files go to the scratch dir. Through the environment (which the JVM that
    # PySpark launches inherits) rather than spark.local.dir, which makes Spark log a warning on every start.
    os.environ.setdefault("SPARK_LOCAL_DIRS", str(local_dir))
    warehouse = warehouse_dir if warehouse_dir is not None else scratch / "spark-warehouse"

    conf: dict[str, str] = {
        # Two cores: two task slots, and few shuffle partitions so small queries are not 200 tiny tasks.
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.jars": ",".join(str(p) for p in spark_jars()),
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        "spark.driver.host": LOOPBACK,
        "spark.driver.bindAddress": LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": Path(warehouse).resolve().as_uri(),
        # No Hive metastore: the built-in catalog stays in memory; Iceberg tables live in the Iceberg catalogs.
        "spark.sql.catalogImplementation": "in-memory",
        # Anything that still touches Derby writes derby.log under the scratch dir, not the cwd.
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={derby_home}",
        # Deterministic timestamps in tests, whatever the machine's zone.
        "spark.sql.session.timeZone": "UTC",
    }
    for name, props in (catalogs or {}).items():
        conf[f"spark.sql.catalog.{name}"] = ICEBERG_SPARK_CATALOG
        for key, value in props.items():
            conf[f"spark.sql.catalog.{name}.{key}"] = value
    conf.update(extra_conf or {})

    builder = SparkSession.builder.appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
