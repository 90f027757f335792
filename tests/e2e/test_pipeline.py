"""The Spark pipeline on a warehouse written by Spark and PyIceberg through Arco: compact and reconcile.

Compaction output is checked row by row against the receipts; re-runs, a crash before the commit point, corrupt
receipts, receipts of dropped tables and clock skew are each exercised.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import orjson
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from pyspark.sql import SparkSession

from arco.catalog.catalogs import create_catalog
from arco.catalog.store import CatalogStore
from arco.events.receipts import EVENTS, catalog_receipt_key, iceberg_receipt_key
from arco.pipeline import checkpoint, compact
from arco.pipeline.parquet_io import read_many, read_parquet
from arco.pipeline.rows import AUDIT, RUNS, TIMELINE
from arco.pipeline.runs import RUNS_PREFIX, Run
from arco.pipeline.storage_spec import StorageSpec
from arco.spark.session import rest_catalog_conf
from arco.storage.faults import SimulatedCrash
from arco.storage.local import LocalBackend
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pipeline") / "warehouse"


@pytest.fixture(scope="module")
def server(warehouse: Path) -> Iterator[RunningServer]:
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN) as s:
        yield s


@pytest.fixture(scope="module")
def populated(spark: SparkSession, server: RunningServer, warehouse: Path) -> StorageSpec:
    """Two catalogs; tables written by Spark (with a nested column) and by PyIceberg; a dropped table."""
    storage = LocalBackend(warehouse)
    create_catalog(CatalogStore(storage), "sales", owner="admin")
    for name in ("pmain", "psales"):
        for key, value in rest_catalog_conf(server.iceberg_uri, name[1:], ARCO_TOKEN).items():
            spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)
        spark.conf.set(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog")
    spark.sql("CREATE NAMESPACE pmain.raw")
    spark.sql("CREATE TABLE pmain.raw.events (id BIGINT, payload STRUCT<kind: STRING, n: INT>) USING iceberg")
    spark.sql("INSERT INTO pmain.raw.events VALUES (1, named_struct('kind', 'a', 'n', 1))")
    spark.sql("INSERT INTO pmain.raw.events VALUES (2, named_struct('kind', 'b', 'n', 2))")
    spark.sql("CREATE NAMESPACE psales.eu")
    spark.sql("CREATE TABLE psales.eu.orders (id BIGINT, amount INT) USING iceberg")
    spark.sql("INSERT INTO psales.eu.orders VALUES (1, 10), (2, 20)")
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    table = py.create_table("raw.cities", Schema(NestedField(1, "id", LongType(), required=False),
                                                 NestedField(2, "city", StringType(), required=False)))
    table.append(pa.table({"id": pa.array([1], pa.int64()), "city": pa.array(["oslo"])}))
    gone = py.create_table("raw.gone", Schema(NestedField(1, "id", LongType(), required=False)))
    gone.append(pa.table({"id": pa.array([1], pa.int64())}))
    py.drop_table("raw.gone")
    # What the audit must name and credit rightly: a schema-only commit, a grant, a token an admin makes by CLI.
    with table.update_schema() as update:
        update.add_column("country", StringType())
    run_cli(warehouse, "user", "create", "ann@x.com")
    run_cli(warehouse, "token", "create", "ann@x.com")
    granted = httpx.patch(f"{server.base_url}/api/2.1/unity-catalog/permissions/table/main.raw.cities",
                          json={"changes": [{"principal": "ann@x.com", "add": ["SELECT"]}]},
                          headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30)
    assert granted.status_code == 200, granted.text
    wait_for_catalog_receipts(storage)
    return StorageSpec(storage.url)


def wait_for_catalog_receipts(storage: LocalBackend, timeout_s: float = 10.0) -> None:
    """Until every Tier 1 entry has its catalog receipt: the server writes one just after its answer
    (arco.events.after_answer), so the last change's may still be on its way; the tests below compare the
    compaction with receipts that are all there."""
    store = CatalogStore(storage)
    store.ensure_fresh()
    keys = [catalog_receipt_key(seq, op["at_ms"]) for seq, op in store.log.operations(1, store.seq)]
    deadline = time.monotonic() + timeout_s
    while any(storage.head(key) is None for key in keys):
        assert time.monotonic() < deadline, "a catalog receipt was not written after its answer"
        time.sleep(0.05)


def committed_receipts(storage: LocalBackend, kind: str) -> dict[str, dict]:
    """The well-formed committed receipts of one kind (a test below plants broken ones on purpose)."""
    found = {}
    for meta in storage.list(f"{EVENTS}/"):
        if f"/{kind}/committed/" in meta.key:
            try:
                event = orjson.loads(storage.get(meta.key).data)
            except orjson.JSONDecodeError:
                continue
            if event.get("event_type") in ("IcebergCommitCommitted", "CatalogMutationCommitted"):
                found[meta.key] = event
    return found


def history(storage: LocalBackend, kind: str) -> pa.Table:
    schema = {"timeline": TIMELINE, "audit": AUDIT, "runs": RUNS}[kind]
    return read_many(storage, checkpoint.history_keys(storage, kind), schema)


def run_compact(spark: SparkSession, spec: StorageSpec) -> Run:
    """The compaction into Parquet alone: publishing the system tables (tests/e2e/test_history_tables.py) commits
    to Iceberg tables, whose receipts would be new for the next run and break the receipt counts made here."""
    run = Run("compact")
    compact.run_compact(spark, spec, run, publish=False)
    return run


def test_compaction_matches_the_receipts_row_by_row(spark: SparkSession, populated: StorageSpec) -> None:
    storage = populated.open()
    run = run_compact(spark, populated)
    timeline = {r["receipt_key"]: r for r in history(storage, "timeline").to_pylist()}
    receipts = committed_receipts(storage, "iceberg")
    assert set(timeline) == set(receipts) and len(receipts) >= 8
    for key, event in receipts.items():
        row = timeline[key]
        assert (row["table_uuid"], row["metadata_location"], row["snapshot_id"], row["operation"],
                row["sequence_number"], row["catalog"], row["table_name"]) == (
            event["table_uuid"], event["metadata_location"], event["snapshot_id"], event["operation"],
            event["sequence_number"], event["identifier"]["catalog"], event["identifier"]["name"])
        assert row["source_kind"] == "iceberg_rest" and row["lineage_confidence"] == "DeclaredUnverified"
        assert row["table_dropped"] == (event["identifier"]["name"] == "gone")
    audit = {r["receipt_key"]: r for r in history(storage, "audit").to_pylist()}
    catalog_receipts = committed_receipts(storage, "catalog")
    assert set(audit) == set(catalog_receipts)
    assert {(r["seq"], r["op"]) for r in audit.values()} == {(e["seq"], e["op"]) for e in catalog_receipts.values()}
    assert run.counts["for_dropped_tables"] == 2  # raw.gone's create and append

    columns = read_parquet(storage, "_catalog/core/snapshots/columns.parquet").to_pylist()
    events = sorted(c["column_path"] for c in columns if c["table_name"] == "events")
    assert events == ["id", "payload", "payload.kind", "payload.n"]
    assert {c["catalog"] for c in columns} == {"main", "sales"}
    assert "gone" not in {c["table_name"] for c in columns}


def duckdb_history(warehouse: Path, kind: str) -> tuple[duckdb.DuckDBPyConnection, str]:
    """A DuckDB connection with the committed Parquet files of one history table as the view ``h``."""
    files = [str(warehouse / key) for key in checkpoint.history_keys(LocalBackend(warehouse), kind)]
    con = duckdb.connect()
    con.execute(f"CREATE VIEW h AS SELECT * FROM read_parquet({files!r}, union_by_name = true)")
    return con, kind


def test_duckdb_reads_every_history_column_by_its_bare_name_and_the_audit_names_its_objects(
        spark: SparkSession, populated: StorageSpec, warehouse: Path) -> None:
    run_compact(spark, populated)
    keywords = duckdb.sql("SELECT keyword_name FROM duckdb_keywords() "
                          "WHERE keyword_category IN ('reserved', 'type_function')").fetchall()
    unusable = {k for (k,) in keywords}
    for kind in checkpoint.KINDS:
        con, _ = duckdb_history(warehouse, kind)
        columns = [c for (c,) in con.execute("SELECT column_name FROM (DESCRIBE h)").fetchall()]
        assert columns and not set(columns) & unusable, (kind, set(columns) & unusable)
        # Unquoted, in the clauses where a keyword would break the parse.
        for column in columns:
            con.execute(f"SELECT {column} FROM h WHERE {column} IS NOT NULL OR {column} IS NULL "
                        f"ORDER BY {column} LIMIT 1").fetchall()

    con, _ = duckdb_history(warehouse, "audit")
    assert con.execute("SELECT count(*) FROM h WHERE name IS NULL").fetchone() == (0,)
    named = set(con.execute("SELECT op, name, principal FROM h").fetchall())
    assert {("create_namespace", "raw", "admin"), ("create_namespace", "eu", "admin"),
            ("drop_table", "gone", "admin"), ("update_grants", "main.raw.cities", "admin"),
            ("create_token", "ann@x.com", "admin")} <= named
    assert con.execute("SELECT max(committed_at) > TIMESTAMPTZ '2020-01-01' FROM h").fetchone() == (True,)

    con, _ = duckdb_history(warehouse, "timeline")
    cities = con.execute("SELECT operation FROM h WHERE table_name = 'cities' ORDER BY sequence_number, "
                         "committed_at").fetchall()
    assert [op for (op,) in cities] == ["create", "append", "update-metadata"]


def test_a_rerun_with_nothing_new_writes_nothing(spark: SparkSession, populated: StorageSpec) -> None:
    storage = populated.open()
    run_compact(spark, populated)
    before = sorted((m.key, m.version) for m in storage.list("_catalog/"))
    run = run_compact(spark, populated)
    assert run.counts == {"uncommitted_files": 0, "receipts_new": 0}
    assert sorted((m.key, m.version) for m in storage.list("_catalog/")) == before


def test_a_crash_before_the_commit_point_then_a_rerun_counts_each_receipt_once(
        spark: SparkSession, populated: StorageSpec, server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = populated.open()
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    py.load_table("raw.cities").append(pa.table({"id": pa.array([2], pa.int64()), "city": pa.array(["rome"])}))

    def crash(*args: object, **kwargs: object) -> None:
        raise SimulatedCrash("the driver died before committing the batch")

    monkeypatch.setattr(compact, "commit_batch", crash)
    with pytest.raises(SimulatedCrash):
        run_compact(spark, populated)
    monkeypatch.undo()
    orphans = [m.key for m in storage.list(f"{checkpoint.HISTORY}/")
               if m.key not in set(sum((checkpoint.history_keys(storage, k) for k in checkpoint.ALL_KINDS), []))]
    assert orphans  # the crashed run's part files, listed by no batch

    run = run_compact(spark, populated)
    assert run.counts["uncommitted_files"] == len(orphans)  # left for gc: a run still going has such files too
    assert all(storage.head(key) is not None for key in orphans)
    keys = history(storage, "timeline").column("receipt_key").to_pylist()
    assert len(keys) == len(set(keys)) == len(committed_receipts(storage, "iceberg"))


def test_overlapping_runs_commit_one_batch_and_leave_each_other_s_files_alone(
        spark: SparkSession, populated: StorageSpec, server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run B starts while run A is between writing its part files and its commit point (two schedulers, or an
    operator's run beside cron's): B must not delete A's files, and A's batch must name only files that exist."""
    storage = populated.open()
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    py.load_table("raw.cities").append(pa.table({"id": pa.array([3], pa.int64()), "city": pa.array(["oslo"])}))
    real_commit = compact.commit_batch

    def b_stops_before_its_commit(*args: object, **kwargs: object) -> None:
        raise SimulatedCrash("run B is still going")

    def a_commits_after_b_started(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(compact, "commit_batch", b_stops_before_its_commit)
        with pytest.raises(SimulatedCrash):
            run_compact(spark, populated)  # B plans (seeing A's part files uncommitted) and writes its own
        return real_commit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compact, "commit_batch", a_commits_after_b_started)
    run_compact(spark, populated)
    monkeypatch.undo()
    for kind in checkpoint.ALL_KINDS:  # every file the state lists is there: the history reads whole
        assert all(storage.head(key) is not None for key in checkpoint.history_keys(storage, kind))
    keys = history(storage, "timeline").column("receipt_key").to_pylist()
    assert len(keys) == len(set(keys)) == len(committed_receipts(storage, "iceberg"))
    assert run_compact(spark, populated).counts["receipts_new"] == 0


def test_a_batch_naming_a_file_that_is_gone_is_not_committed(populated: StorageSpec) -> None:
    storage = populated.open()
    state = checkpoint.load_state(storage)
    gone = f"{checkpoint.HISTORY}/timeline/nope.parquet"
    with pytest.raises(checkpoint.ConcurrentCompaction, match="gone"):
        checkpoint.commit_batch(storage, state, {"batch_id": "b", "run_id": "r", "files": {"timeline": [gone]}})
    assert checkpoint.load_state(storage).batches == state.batches


def test_bad_receipts_are_counted_and_skipped_and_skew_is_reported(spark: SparkSession,
                                                                    populated: StorageSpec) -> None:
    storage = populated.open()
    some_key, some_event = next(iter(committed_receipts(storage, "iceberg").items()))
    day = some_key.split("/")[2]
    storage.put(f"{EVENTS}/{day}/iceberg/committed/{'0' * 64}.json", b'{"event_type": "IcebergCommitCommi')
    storage.put(f"{EVENTS}/{day}/iceberg/committed/{'1' * 64}.json", orjson.dumps({"event_type": "x"}))
    skewed = {**some_event, "commit_key": "2" * 64}
    storage.put(f"{EVENTS}/1999-01-01/iceberg/committed/{'2' * 64}.json", orjson.dumps(skewed))

    run = run_compact(spark, populated)

    assert run.counts["receipts_skipped"] == 2 and len(run.errors) == 2
    assert run.counts["clock_skewed"] == 1 and run.counts["timeline_rows"] == 1
    assert any("0" * 64 in e for e in run.errors) and any("1" * 64 in e for e in run.errors)
    assert storage.head(f"{EVENTS}/{day}/iceberg/committed/{'0' * 64}.json") is not None  # never deleted
    again = run_compact(spark, populated)
    assert again.counts["receipts_skipped"] == 2 and "timeline_rows" not in again.counts


def test_a_table_whose_metadata_fails_to_parse_is_counted_not_fatal(spark: SparkSession, populated: StorageSpec,
                                                                      server: RunningServer) -> None:
    storage = populated.open()
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    table = py.create_table("raw.broken", Schema(NestedField(1, "id", LongType(), required=False)))
    key = table.metadata_location.removeprefix(storage.url + "/")
    original = storage.get(key).data
    storage.put(key, b'{"format-version": 2, "truncated')
    try:
        run = run_compact(spark, populated)
        assert run.counts["tables_with_unreadable_metadata"] == 1
        assert run.counts["projection_tables"] >= 4
    finally:
        storage.put(key, original)


def test_reconcile_restores_deleted_receipts_and_leaves_compacted_ones_to_the_history(
        spark: SparkSession, populated: StorageSpec, warehouse: Path, server: RunningServer) -> None:
    """A receipt lost before compaction is written again; one the history holds, which gc deletes once compacted,
    is not (it was never lost: writing it again would count thousands of "backfills" after every gc)."""
    storage = populated.open()
    run_compact(spark, populated)
    compacted = checkpoint.compacted_receipt_keys(storage)
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    py.load_table("raw.cities").append(pa.table({"id": pa.array([4], pa.int64()), "city": pa.array(["riga"])}))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the receipt is written just after the answer
        receipts = committed_receipts(storage, "iceberg")
        live = [k for k, e in receipts.items() if e["identifier"]["name"] != "gone"
                and k == iceberg_receipt_key("committed", e["metadata_location"], e["last_updated_ms"])]
        lost = [k for k in live if k not in compacted][:2]
        if lost:
            break
        time.sleep(0.05)
    gone_by_gc = [k for k in live if k in compacted][:2]
    assert lost and gone_by_gc
    for key in [*lost, *gone_by_gc]:
        storage.delete(key)
    result = subprocess.run([sys.executable, "-m", "arco.cli.main", "pipeline", "reconcile", "--warehouse",
                             str(warehouse), "--master", "local[2]"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "committed receipts backfilled" in result.stdout
    assert all(storage.head(key) is not None for key in lost)
    assert all(storage.head(key) is None for key in gone_by_gc)


def test_the_compact_command_prints_a_summary(populated: StorageSpec, warehouse: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "arco.cli.main", "pipeline", "compact", "--warehouse",
                             str(warehouse), "--master", "local[2]"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "arco pipeline compact" in result.stdout or "nothing new" in result.stdout


def test_the_documented_spark_submit_command_runs_a_job(populated: StorageSpec, warehouse: Path) -> None:
    """The README's cluster recipe, on a local master: spark-submit with Arco's jars and its submit script."""
    venv_bin = Path(sys.executable).parent
    jars = subprocess.run([str(venv_bin / "arco"), "spark-jars"], capture_output=True, text=True, check=True).stdout
    script = subprocess.run([sys.executable, "-c", "import arco.pipeline.submit as s; print(s.__file__)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    result = subprocess.run([str(venv_bin / "spark-submit"), "--master", "local[2]", "--jars", jars.strip(),
                             script, "reconcile", "--warehouse", str(warehouse)],
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "arco pipeline reconcile: succeeded" in result.stdout


def test_compact_fails_loudly_when_the_system_tables_are_not_published(populated: StorageSpec, warehouse: Path,
                                                                        server: RunningServer) -> None:
    """The history is compacted either way, but a scheduler must see that the system tables are stale: the command
    exits non-zero and says what to do; the next run publishes them."""
    storage = populated.open()
    compact_cli = [sys.executable, "-m", "arco.cli.main", "pipeline", "compact", "--warehouse", str(warehouse),
                   "--master", "local[2]"]
    assert subprocess.run(compact_cli, capture_output=True, text=True, timeout=600).returncode == 0
    system = RestCatalog("sys", uri=server.iceberg_uri, warehouse="system", token=ARCO_TOKEN)
    key = system.load_table("history.timeline").metadata_location.removeprefix(storage.url + "/")
    original = storage.get(key).data
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    cities = py.load_table("raw.cities")
    cities.append(pa.table({"id": pa.array([9], pa.int64()), "city": pa.array(["lima"])}))
    wait_for_catalog_receipts(storage)
    storage.put(key, b'{"format-version": 2, "truncated')
    try:
        failed = subprocess.run(compact_cli, capture_output=True, text=True, timeout=600)
    finally:
        storage.put(key, original)
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "system tables were not published" in failed.stderr and "run compact again" in failed.stderr
    assert "failed to publish the system tables" in " ".join(failed.stdout.split())  # rich wraps lines
    again = subprocess.run(compact_cli, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    published = system.load_table("history.timeline").scan(selected_fields=("metadata_location",)).to_arrow()
    locations = [loc for loc in published["metadata_location"].to_pylist() if "/cities-" in loc]
    # The append made meanwhile; the second run also found only bad receipts new (never deleted, refused each
    # time), and publishes all the same.
    assert cities.metadata_location in locations, again.stdout
    # The failed run's history row was written with its batch; its final status follows it, an amendment.
    amended = [m.key for m in storage.list(RUNS_PREFIX) if m.key.endswith(".amended.json")]
    assert len(amended) == 1
    failed_id = orjson.loads(storage.get(amended[0]).data)["run_id"]
    runs = system.load_table("history.runs").scan(row_filter=f"run_id == '{failed_id}'").to_arrow()
    rows_by_time = sorted(zip(runs["ended_at"].to_pylist(), runs["status"].to_pylist(), strict=True))
    assert [status for _, status in rows_by_time] == ["succeeded", "failed to publish the system tables"]
