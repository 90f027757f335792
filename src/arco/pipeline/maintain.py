"""``arco pipeline maintain``: keep users' Iceberg tables healthy with Iceberg's own Spark procedures.

For every Iceberg table (unless its ``maintenance.enabled`` property is ``false``), through an Arco server in the
driver (so every commit goes through Arco's commit path, recorded with this run and a task per table):

    rewrite_data_files   small-file compaction (runs when at least ``maintenance.rewrite.min-input-files``,
                         default 5, small files could be combined; target size: ``write.target-file-size-bytes``)
    rewrite_manifests    one manifest per partition spec where many small ones accumulated
    expire_snapshots     older than ``history.expire.max-snapshot-age-ms`` (Iceberg's, default 5 days), keeping
                         ``history.expire.min-snapshots-to-keep`` (default 1)
    remove_orphan_files  files under the table's location no snapshot references, older than
                         ``maintenance.orphan-files.older-than-ms`` (default 3 days: an in-flight write is younger)

A table whose maintenance fails is counted and reported; the run goes on with the next.
"""

from __future__ import annotations

import time
from typing import Any

from uuid6 import uuid7

from arco.catalog.store import CatalogStore
from arco.events.reconcile import iceberg_tables
from arco.events.timestamps import utc_datetime
from arco.iceberg.metadata_files import MetadataFiles
from arco.iceberg.pointer import PointerStore
from arco.pipeline.embedded_server import embedded_server
from arco.pipeline.runs import Run
from arco.pipeline.storage_spec import StorageSpec
from arco.spark.jars import ICEBERG_VERSION
from arco.spark.session import ICEBERG_SPARK_CATALOG, rest_catalog_conf

PIPELINE_TASK_HEADER = "X-Arco-Pipeline-Task"
DAY_MS = 24 * 3600 * 1000


def policy_of(properties: dict[str, str]) -> dict[str, Any]:
    """The maintenance a table asks for, from its properties (pure); a property that is not a whole number is a
    ValueError that names it."""
    def number(key: str, default: int) -> int:
        raw = properties.get(key, str(default))
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"table property {key} is {raw!r}, not a whole number") from None

    return {
        "enabled": properties.get("maintenance.enabled", "true").lower() != "false",
        # Iceberg's own switch (Boolean.parseBoolean: only "true" is true): a table that does not own its files,
        # as Iceberg's snapshot procedure makes one, must have none deleted; expiry and orphan removal refuse it.
        "gc": properties.get("gc.enabled", "true").lower() == "true",
        "min_input_files": number("maintenance.rewrite.min-input-files", 5),
        "max_snapshot_age_ms": number("history.expire.max-snapshot-age-ms", 5 * DAY_MS),
        "min_snapshots_to_keep": number("history.expire.min-snapshots-to-keep", 1),
        "orphan_older_than_ms": number("maintenance.orphan-files.older-than-ms", 3 * DAY_MS),
    }


def _quoted(parts: list[str]) -> str:
    return ".".join(f"`{p.replace('`', '``')}`" for p in parts)


def _literal(text: str) -> str:
    """``text`` as a Spark SQL string literal: a name is the user's (it may hold a quote), never SQL."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _timestamp(ms: float) -> str:
    """A Spark SQL timestamp; one before 1970 or past 9999 (an age of "forever", say) is clamped to them."""
    return utc_datetime(max(ms, 0)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def maintain_table(spark: Any, catalog: str, namespace: list[str], name: str, policy: dict[str, Any],
                   now_ms: float) -> dict[str, int]:
    """Run the procedures on one table through the Spark catalog ``catalog``; returns what they did."""
    ident = _literal(_quoted([*namespace, name]))  # the procedures parse it as an identifier, quotes and all
    table = f"{catalog}.{_quoted([*namespace, name])}"
    counts: dict[str, int] = {"data_files_before": spark.sql(f"SELECT count(*) FROM {table}.files").first()[0]}
    rewritten = spark.sql(
        f"CALL {catalog}.system.rewrite_data_files(table => {ident}, "
        f"options => map('min-input-files', '{policy['min_input_files']}'))").first()
    counts["data_files_rewritten"] = int(rewritten["rewritten_data_files_count"])
    counts["data_files_added"] = int(rewritten["added_data_files_count"])
    manifests = spark.sql(f"CALL {catalog}.system.rewrite_manifests(table => {ident})").first()
    counts["manifests_rewritten"] = int(manifests["rewritten_manifests_count"])
    if policy["gc"]:
        counts.update(_expire_and_remove_orphans(spark, catalog, ident, policy, now_ms))
    else:
        counts["tables_kept_whole_gc_disabled"] = 1
    spark.sql(f"REFRESH TABLE {table}")
    counts["data_files_after"] = spark.sql(f"SELECT count(*) FROM {table}.files").first()[0]
    return counts


def _expire_and_remove_orphans(spark: Any, catalog: str, ident: str, policy: dict[str, Any],
                               now_ms: float) -> dict[str, int]:
    """The procedures that delete files: old snapshots' and files no snapshot names."""
    counts: dict[str, int] = {}
    expired = spark.sql(
        f"CALL {catalog}.system.expire_snapshots(table => {ident}, "
        f"older_than => TIMESTAMP '{_timestamp(now_ms - policy['max_snapshot_age_ms'])}', "
        f"retain_last => {policy['min_snapshots_to_keep']})").first()
    counts["data_files_deleted"] = int(expired["deleted_data_files_count"])
    counts["manifest_lists_deleted"] = int(expired["deleted_manifest_lists_count"])
    # Iceberg refuses to look at files younger than a day (they may belong to a write in flight): never ask it to.
    orphan_cutoff = min(now_ms - policy["orphan_older_than_ms"], time.time() * 1000 - DAY_MS)
    orphans = spark.sql(
        f"CALL {catalog}.system.remove_orphan_files(table => {ident}, "
        f"older_than => TIMESTAMP '{_timestamp(orphan_cutoff)}')").collect()
    counts["orphan_files_removed"] = len(orphans)
    return counts


def failure_reason(exc: BaseException) -> str:
    """One line saying why a table's maintenance failed: the Java exception under Py4J's "An error occurred while
    calling o49.sql." where Spark raised one, else the error's first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if lines and lines[0].startswith("An error occurred while calling") and len(lines) > 1:
        lines = [lines[1].removeprefix(":").strip()]
    return (lines[0] if lines else "")[:500] or type(exc).__name__


class NoSuchTable(LookupError):
    """``--table`` names no Iceberg table of the warehouse."""


class StorageNotInSpark(RuntimeError):
    """Spark holds no Iceberg FileIO for the warehouse's object storage: maintenance would fail on every table."""


# What Iceberg's Spark runtime needs, beside itself, to read and write each object store: a class of the store's
# SDK, and the Iceberg bundle jar that carries it (none of which is on PyPI, so Arco's own Spark has none).
OBJECT_STORE_CLASSES = {"s3": ("software.amazon.awssdk.services.s3.S3Client", "iceberg-aws-bundle"),
                        "gs": ("com.google.cloud.storage.Storage", "iceberg-gcp-bundle"),
                        "az": ("com.azure.storage.file.datalake.DataLakeFileClient", "iceberg-azure-bundle"),
                        "abfs": ("com.azure.storage.file.datalake.DataLakeFileClient", "iceberg-azure-bundle"),
                        "abfss": ("com.azure.storage.file.datalake.DataLakeFileClient", "iceberg-azure-bundle")}


def check_spark_reaches(spark: Any, warehouse_url: str) -> None:
    """Refuse up front, saying what to add, when Spark cannot open the warehouse's files (a local directory
    always can)."""
    scheme = warehouse_url.split("://", 1)[0].lower() if "://" in warehouse_url else "file"
    needed = OBJECT_STORE_CLASSES.get(scheme)
    if needed is None or spark._jvm.org.apache.spark.util.Utils.classIsLoadable(needed[0]):
        return
    raise StorageNotInSpark(
        f"maintain rewrites table files through Spark, and this Spark has no Iceberg FileIO for {scheme}:// "
        f"storage (the {needed[1]} jar, {ICEBERG_VERSION}, which Arco's install does not carry): run it with "
        f"spark-submit --jars \"$(arco spark-jars),{needed[1]}-{ICEBERG_VERSION}.jar\" on a cluster that has it "
        "(README, \"The pipeline (Spark)\"). Nothing was changed.")


def run_maintain(spark: Any, spec: StorageSpec, run: Run, only_table: str | None = None,
                 now_ms: float | None = None, progress: Any | None = None) -> dict[str, int]:
    storage = spec.open()
    now_ms = time.time() * 1000 if now_ms is None else now_ms
    tables = iceberg_tables(CatalogStore(storage))
    if only_table is not None:  # names are matched ignoring case, as the catalog matches them
        tables = [(e, i) for e, i in tables
                  if ".".join((i["catalog"], *i["namespace"], i["name"])).casefold() == only_table.casefold()]
        if not tables:
            raise NoSuchTable(f"there is no Iceberg table {only_table} in this warehouse (give its full name, "
                              "catalog.namespace.table)")
    check_spark_reaches(spark, storage.url)
    own_io = storage.fileio_properties()  # the job's own credentials: the embedded server vends none
    pointers, files = PointerStore(storage), MetadataFiles(storage)
    task = progress.add_task("maintaining tables", total=len(tables)) if progress is not None else None
    with embedded_server(storage) as server:
        for index, (entry, identifier) in enumerate(tables):
            if progress is not None:
                progress.update(task, description=f"maintaining {'.'.join((*entry.namespace, entry.name))}")
            pointer = pointers.load(entry.id)
            if pointer is None or pointer.pointer.dropped:
                continue
            try:
                policy = policy_of(dict(files.read(pointer.pointer.current_metadata_location).properties))
                if not policy["enabled"]:
                    run.count("tables_skipped_by_property")
                    continue
                # One Spark catalog per task: the REST client's headers are fixed when a catalog is first used.
                catalog = f"arco_maintain_{index}"
                conf = rest_catalog_conf(server.iceberg_uri, identifier["catalog"], server.token,
                                         headers={PIPELINE_TASK_HEADER: f"{run.run_id}/{uuid7()}"})
                conf.update(own_io)
                spark.conf.set(f"spark.sql.catalog.{catalog}", ICEBERG_SPARK_CATALOG)
                for key, value in conf.items():
                    spark.conf.set(f"spark.sql.catalog.{catalog}.{key}", value)
                for name, value in maintain_table(spark, catalog, identifier["namespace"], identifier["name"],
                                                  policy, now_ms).items():
                    run.count(name, value)
                run.count("tables_maintained")
            except Exception as exc:  # noqa: BLE001 - one table's failure is reported; the others still run
                run.count("tables_failed")
                run.errors.append(f"{identifier['catalog']}.{'.'.join(entry.namespace)}.{entry.name}: "
                                  f"{failure_reason(exc)}")
            if progress is not None:
                progress.update(task, advance=1)
    return run.counts
