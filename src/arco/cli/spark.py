"""``arco pyspark`` / ``arco spark-sql``: Spark's shells from this environment's PySpark, with the Iceberg runtime
jar and an Arco catalog configured, without activating the venv.

PySpark's launchers (``.venv/bin/pyspark``) only work in an activated venv: they look for ``load-spark-env.sh``
next to themselves unless ``SPARK_HOME`` is set. Here ``SPARK_HOME`` is the installed ``pyspark`` package, the
venv's ``bin`` leads ``PATH``, and Python workers and the driver run this interpreter. The catalog settings
(with the token) go to Spark in a properties file readable only by the caller, not on the command line where
any local user could read them, and the file is removed when the shell exits.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import click

DEFAULT_URI = "http://127.0.0.1:8181/iceberg"
SHELL_HELP = """

    \b
    Options this command does not know are passed on to Spark's shell, e.g. -e "SQL", -f file.sql, --master,
    --conf key=value, --driver-memory 4g. The token comes from --token or $ARCO_TOKEN.
"""


def java_env(env: dict[str, str]) -> dict[str, str]:
    """``JAVA_HOME`` for Spark when ``java`` is neither on PATH nor named by JAVA_HOME (a stripped PATH)."""
    if env.get("JAVA_HOME") or shutil.which("java", path=env.get("PATH")):
        return env
    found = shutil.which("java", path="/usr/local/bin:/usr/bin:/bin")
    candidates = [Path(found).resolve().parent.parent] if found else []
    candidates += sorted(Path("/usr/lib/jvm").glob("*17*")) + sorted(Path("/usr/lib/jvm").glob("*"))
    for home in candidates:
        if (home / "bin" / "java").exists():
            return {**env, "JAVA_HOME": str(home)}
    return env


def spark_env() -> dict[str, str]:
    """The environment Spark's launchers need, whatever the caller's PATH and venv."""
    import pyspark

    spark_home = Path(pyspark.__file__).resolve().parent
    venv_bin = str(Path(sys.executable).parent)
    env = dict(os.environ)
    env["SPARK_HOME"] = str(spark_home)
    env["PATH"] = os.pathsep.join([venv_bin, env.get("PATH") or "/usr/local/bin:/usr/bin:/bin"])
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # do not depend on the hostname resolving
    return java_env(env)


def shell_conf(uri: str, token: str | None, catalog: str, name: str) -> dict[str, str]:
    from arco.spark.jars import spark_jars
    from arco.spark.session import ICEBERG_EXTENSIONS, ICEBERG_SPARK_CATALOG, rest_catalog_conf

    conf = {
        "spark.jars": ",".join(str(p) for p in spark_jars()),
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        # No Hive metastore (no metastore_db/ or derby.log in the current directory); Arco is the catalog.
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.defaultCatalog": name,
        "spark.ui.showConsoleProgress": "false",
        f"spark.sql.catalog.{name}": ICEBERG_SPARK_CATALOG,
    }
    for key, value in rest_catalog_conf(uri, catalog, token).items():
        conf[f"spark.sql.catalog.{name}.{key}"] = value
    if token:  # where a static token would be exchanged (it never is); naming it silences Iceberg's warning
        conf[f"spark.sql.catalog.{name}.oauth2-server-uri"] = f"{uri.rstrip('/')}/v1/oauth/tokens"
    return conf


def run_shell(launcher: str, uri: str, token: str | None, catalog: str, name: str, args: tuple[str, ...]) -> int:
    from arco.spark.jars import SparkJarError

    try:
        conf = shell_conf(uri, token, catalog, name)
    except SparkJarError as exc:
        raise click.ClickException(str(exc)) from exc
    if not token:
        click.echo("warning: no token (--token or ARCO_TOKEN): Arco will answer 401", err=True)
    env = spark_env()
    scratch = tempfile.mkdtemp(prefix="arco-spark-shell-")  # 0700: only the caller reads the token in it
    try:
        env.setdefault("SPARK_LOCAL_DIRS", scratch)
        # Spark's own warehouse (tables of its in-memory built-in catalog) goes there too, not into the cwd.
        conf.setdefault("spark.sql.warehouse.dir", (Path(scratch) / "spark-warehouse").as_uri())
        properties = Path(scratch) / "spark.properties"
        properties.write_text("".join(f"{k}={_escape(v)}\n" for k, v in conf.items()))
        properties.chmod(0o600)
        command = [str(Path(env["SPARK_HOME"]) / "bin" / launcher), "--properties-file", str(properties), *args]
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the shell's to handle
        try:
            return subprocess.call(command, env=env)
        finally:
            signal.signal(signal.SIGINT, previous)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _escape(value: str) -> str:
    """A value for a Java properties file (backslashes are escapes there)."""
    return value.replace("\\", "\\\\")


def _shell_options(fn):  # type: ignore[no-untyped-def]
    fn = click.argument("spark_args", nargs=-1, type=click.UNPROCESSED)(fn)
    fn = click.option("--name", default="arco", show_default=True,
                      help="The catalog's name in Spark (also made the default catalog).")(fn)
    fn = click.option("--catalog", "--warehouse", "catalog", default="main", show_default=True,
                      envvar="ARCO_CATALOG", help="The Arco catalog to use (Iceberg's `warehouse`).")(fn)
    fn = click.option("--token", envvar="ARCO_TOKEN", show_envvar=True, default=None,
                      help="Bearer token for Arco (prefer the environment variable: it stays off the command "
                           "line).")(fn)
    fn = click.option("--uri", envvar="ARCO_URI", show_envvar=True, default=DEFAULT_URI, show_default=True,
                      help="Arco's Iceberg REST endpoint.")(fn)
    return fn


_PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": False, "allow_interspersed_args": False}


@click.command("pyspark", context_settings=_PASS_THROUGH)
@_shell_options
def pyspark_command(uri: str, token: str | None, catalog: str, name: str, spark_args: tuple[str, ...]) -> None:
    """Start the PySpark shell with the Iceberg runtime and an Arco catalog (named `arco`) configured.

    \b
    Example:
      ARCO_TOKEN=<token> arco pyspark --uri http://127.0.0.1:8181/iceberg
      >>> spark.sql("SHOW NAMESPACES IN arco").show()
    """
    sys.exit(run_shell("pyspark", uri, token, catalog, name, spark_args))


@click.command("spark-sql", context_settings=_PASS_THROUGH)
@_shell_options
def spark_sql_command(uri: str, token: str | None, catalog: str, name: str, spark_args: tuple[str, ...]) -> None:
    """Start Spark's SQL shell with the Iceberg runtime and an Arco catalog (named `arco`, the default catalog).

    \b
    Examples:
      ARCO_TOKEN=<token> arco spark-sql -e "SHOW NAMESPACES"
      ARCO_TOKEN=<token> arco spark-sql --catalog sales -e "SELECT * FROM db.orders LIMIT 10"
    """
    sys.exit(run_shell("spark-sql", uri, token, catalog, name, spark_args))


@click.command("spark-jars")
def spark_jars_command() -> None:
    """Print the comma-separated local jar paths a Spark session needs (spark.jars) to talk to Arco.

    \b
    Example:
      spark-submit --jars "$(arco spark-jars)" job.py
    """
    from arco.spark.jars import spark_jars

    click.echo(",".join(str(p) for p in spark_jars()))


pyspark_command.help = (pyspark_command.help or "") + SHELL_HELP
spark_sql_command.help = (spark_sql_command.help or "") + SHELL_HELP
COMMANDS = [pyspark_command, spark_sql_command, spark_jars_command]
