"""History as tables and declared lineage, end to end: Spark writes through Arco, the compactor runs, and then

* the lineage endpoint shows ``INSERT INTO t2 SELECT * FROM t1`` as ``t1@s1 -> t2@s2`` (DeclaredUnverified,
  with Spark's application id), redacts what the caller cannot read, and refuses bad input;
* Spark (through a second Spark catalog whose warehouse is ``system``) and DuckDB (ATTACH) read the ``system``
  tables through Arco; a non-admin gets 403 until granted; nobody writes them but the pipeline;
* a re-run adds nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import orjson
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyspark.sql import SparkSession

from arco.catalog.store import CatalogStore
from arco.pipeline import checkpoint, compact
from arco.pipeline.lineage import LINEAGE
from arco.pipeline.parquet_io import read_many
from arco.pipeline.runs import Run
from arco.pipeline.storage_spec import StorageSpec
from arco.spark.session import rest_catalog_conf
from arco.storage.local import LocalBackend
from arco.ui.lineage import lineage_of
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli
from support.duckdb_ext import attach_arco, connect_with_iceberg

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

SYSTEM_TABLES = ["history.timeline", "history.runs", "history.lineage", "history.reports", "access.audit",
                 "information.tables", "information.columns"]


@pytest.fixture(scope="module")
def world(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Spark creates t1 and t2 and copies t1 into t2; ann may read t2 only; the compactor has run once."""
    workdir = tmp_path_factory.mktemp("history-tables")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        for key, value in rest_catalog_conf(server.iceberg_uri, "main", ARCO_TOKEN).items():
            spark.conf.set(f"spark.sql.catalog.hmain.{key}", value)
        spark.conf.set("spark.sql.catalog.hmain", "org.apache.iceberg.spark.SparkCatalog")
        spark.sql("CREATE NAMESPACE hmain.lin")
        spark.sql("CREATE TABLE hmain.lin.t1 (id BIGINT, v STRING) USING iceberg")
        spark.sql("INSERT INTO hmain.lin.t1 VALUES (1, 'a'), (2, 'b')")
        spark.sql("CREATE TABLE hmain.lin.t2 (id BIGINT, v STRING) USING iceberg")
        spark.sql("INSERT INTO hmain.lin.t2 SELECT * FROM hmain.lin.t1")
        snapshots = {name: spark.sql(f"SELECT snapshot_id FROM hmain.lin.{name}.snapshots "
                                     "ORDER BY committed_at DESC LIMIT 1").first()[0] for name in ("t1", "t2")}
        run_cli(warehouse, "user", "create", "ann@x.com")
        ann = run_cli(warehouse, "token", "create", "ann@x.com").strip()
        for kind, name, privilege in (("catalog", "main", "USE_CATALOG"), ("schema", "main.lin", "USE_SCHEMA"),
                                      ("table", "main.lin.t2", "SELECT")):
            assert uc(server, ARCO_TOKEN, "PATCH", f"/permissions/{kind}/{name}",
                      json={"changes": [{"principal": "ann@x.com", "add": [privilege]}]}).status_code == 200
        storage = LocalBackend(warehouse)
        run = Run("compact")
        compact.run_compact(spark, StorageSpec(storage.url), run)
        assert not run.errors, run.errors
        yield {"server": server, "warehouse": warehouse, "storage": storage, "snapshots": snapshots, "ann": ann,
               "app_id": spark.sparkContext.applicationId, "run": run}


def uc(server: RunningServer, token: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                         headers={"Authorization": f"Bearer {token}"}, timeout=30, **kwargs)  # type: ignore[arg-type]


def stored_reports(warehouse: Path) -> list[dict]:
    return [orjson.loads(p.read_bytes()) for p in sorted((warehouse / "_catalog" / "events").rglob("metrics/*.json"))]


def ends(edge: dict) -> tuple:
    return (edge["source"].get("full_name"), edge["source"].get("snapshot_id"), edge["target"].get("full_name"),
            edge["target"].get("snapshot_id"), edge["confidence"])


def test_spark_insert_select_gives_a_declared_edge_from_t1_to_t2(world: dict) -> None:
    server, s = world["server"], world["snapshots"]
    answer = uc(server, ARCO_TOKEN, "GET", "/lineage/tables/main.lin.t2", params={"direction": "upstream"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    expected = ("main.lin.t1", s["t1"], "main.lin.t2", s["t2"], "DeclaredUnverified")
    assert [ends(e) for e in body["edges"]] == [expected], (body, stored_reports(world["warehouse"]))
    (edge,) = body["edges"]
    assert edge["app_id"] == world["app_id"] and edge["engine"] == "spark"
    assert [(n["full_name"], n["depth"]) for n in body["nodes"]] == [("main.lin.t2", 0), ("main.lin.t1", 1)]

    downstream = uc(server, ARCO_TOKEN, "GET", "/lineage/tables/main.lin.t1",
                    params={"direction": "downstream", "depth": "10"}).json()
    assert [ends(e) for e in downstream["edges"]] == [expected]
    assert uc(server, ARCO_TOKEN, "GET", "/lineage/tables/main.lin.t1",
              params={"direction": "upstream"}).json()["edges"] == []

    # The table page reads the same edges.
    with CatalogStore(world["storage"]).read() as state:
        t2 = next(t.id for t in state.tables.values() if t.name == "t2")
    page = lineage_of(world["storage"], t2, "main.lin.t2")
    assert page.known and [(e.upstream, e.confidence) for e in page.upstream] == [("main.lin.t1",
                                                                                  "DeclaredUnverified")]
    assert page.by_snapshot == {s["t2"]: ["main.lin.t1"]}  # the version that snapshot made, and no other
    # A neighbour renamed since: the page names it as it is called now.
    with CatalogStore(world["storage"]).read() as state:
        t1 = next(t.id for t in state.tables.values() if t.name == "t1")
    renamed = lineage_of(world["storage"], t2, "main.lin.t2", name_of=lambda u: "main.lin.t1b" if u == t1 else None)
    assert [e.upstream for e in renamed.upstream] == ["main.lin.t1b"] and renamed.by_snapshot == {
        s["t2"]: ["main.lin.t1b"]}


def test_a_table_the_caller_cannot_read_is_redacted_and_its_own_lineage_refused(world: dict) -> None:
    server, ann = world["server"], world["ann"]
    body = uc(server, ann, "GET", "/lineage/tables/main.lin.t2").json()
    (edge,) = body["edges"]
    assert edge["source"] == {"redacted": True} and edge["target"]["full_name"] == "main.lin.t2"
    assert {"redacted": True, "depth": 1} in body["nodes"] and "main.lin.t1" not in orjson.dumps(body).decode()
    refused = uc(server, ann, "GET", "/lineage/tables/main.lin.t1")
    assert refused.status_code == 403 and refused.json()["error_code"] == "PERMISSION_DENIED"


@pytest.mark.parametrize(("name", "params", "status", "code"), [
    ("main.lin.nope", {}, 404, "TABLE_DOES_NOT_EXIST"),
    ("nocatalog.lin.t2", {}, 404, "CATALOG_DOES_NOT_EXIST"),
    ("main.lin.t2", {"depth": "11"}, 400, "INVALID_PARAMETER_VALUE"),
    ("main.lin.t2", {"depth": "0"}, 400, "INVALID_PARAMETER_VALUE"),
    ("main.lin.t2", {"depth": "two"}, 400, "INVALID_PARAMETER_VALUE"),
    ("main.lin.t2", {"direction": "sideways"}, 400, "INVALID_PARAMETER_VALUE"),
    ("t2", {}, 400, "INVALID_PARAMETER_VALUE"),
])
def test_bad_lineage_queries(world: dict, name: str, params: dict, status: int, code: str) -> None:
    answer = uc(world["server"], ARCO_TOKEN, "GET", f"/lineage/tables/{name}", params=params)
    assert answer.status_code == status and answer.json()["error_code"] == code, answer.text


def test_spark_reads_the_system_tables_through_a_second_catalog(spark: SparkSession, world: dict) -> None:
    for key, value in rest_catalog_conf(world["server"].iceberg_uri, "system", ARCO_TOKEN).items():
        spark.conf.set(f"spark.sql.catalog.hsys.{key}", value)
    spark.conf.set("spark.sql.catalog.hsys", "org.apache.iceberg.spark.SparkCatalog")
    audit = {(r.op, r.name) for r in spark.sql("SELECT op, name FROM hsys.access.audit").collect()}
    assert {("create_namespace", "lin"), ("create_table", "t1"), ("create_table", "t2")} <= audit
    edges = [tuple(r) for r in spark.sql("SELECT source_table, source_snapshot_id, target_table, target_snapshot_id, "
                                         "confidence FROM hsys.history.lineage").collect()]
    s = world["snapshots"]
    assert edges == [("t1", s["t1"], "t2", s["t2"], "DeclaredUnverified")]
    t2 = spark.sql("SELECT operation, lineage_confidence FROM hsys.history.timeline WHERE table_name = 't2' "
                   "ORDER BY committed_at").collect()
    assert [tuple(r) for r in t2] == [("create", "DeclaredUnverified"), ("append", "DeclaredUnverified")]
    scans = spark.sql("SELECT count(*) FROM hsys.history.reports WHERE report_type = 'scan-report' "
                      "AND table_name = 't1'").first()[0]
    assert scans >= 1
    assert spark.sql("SELECT count(*) FROM hsys.information.columns WHERE table_name = 't2'").first()[0] == 2
    with pytest.raises(Exception, match="(?i)forbidden|read-only"):
        spark.sql("INSERT INTO hsys.history.runs SELECT * FROM hsys.history.runs")


def test_duckdb_reads_every_system_table_by_bare_column_names(world: dict) -> None:
    con = connect_with_iceberg()
    attach_arco(con, world["server"].iceberg_uri, ARCO_TOKEN, catalog="system", alias="sys")
    unusable = {k for (k,) in duckdb.sql("SELECT keyword_name FROM duckdb_keywords() "
                                         "WHERE keyword_category IN ('reserved', 'type_function')").fetchall()}
    for table in SYSTEM_TABLES:
        columns = [c for (c,) in con.execute(f"SELECT column_name FROM (DESCRIBE sys.{table})").fetchall()]
        assert columns and not set(columns) & unusable, (table, set(columns) & unusable)
        con.execute(f"SELECT {', '.join(columns)} FROM sys.{table} LIMIT 1").fetchall()
    assert con.execute("SELECT source_table, target_table FROM sys.history.lineage").fetchall() == [("t1", "t2")]
    assert con.execute("SELECT count(*) FROM sys.access.audit WHERE op = 'create_table'").fetchone()[0] >= 2


def test_a_non_admin_reads_a_system_table_only_once_granted(world: dict) -> None:
    server, ann = world["server"], world["ann"]
    with pytest.raises(ForbiddenError):  # already at /v1/config: the catalog itself needs USE_CATALOG
        RestCatalog("ann", uri=server.iceberg_uri, warehouse="system", token=ann).load_table("access.audit")
    for kind, name, privilege in (("catalog", "system", "USE_CATALOG"), ("schema", "system.access", "USE_SCHEMA"),
                                  ("table", "system.access.audit", "SELECT")):
        granted = uc(server, ARCO_TOKEN, "PATCH", f"/permissions/{kind}/{name}",
                     json={"changes": [{"principal": "ann@x.com", "add": [privilege]}]})
        assert granted.status_code == 200, granted.text
    as_ann = RestCatalog("ann", uri=server.iceberg_uri, warehouse="system", token=ann)
    assert as_ann.load_table("access.audit").scan().to_arrow().num_rows > 0
    with pytest.raises(ForbiddenError):
        as_ann.load_table("history.timeline")


def test_nobody_but_the_pipeline_writes_the_system_catalog(world: dict) -> None:
    server = world["server"]
    admin = RestCatalog("admin", uri=server.iceberg_uri, warehouse="system", token=ARCO_TOKEN)
    runs = admin.load_table("history.runs")
    with pytest.raises(ForbiddenError):
        runs.append(runs.scan().to_arrow())  # an admin too: the commit is refused
    with pytest.raises(ForbiddenError):
        admin.create_table("history.mine", Schema(NestedField(1, "id", LongType(), required=False)))
    with pytest.raises(ForbiddenError):
        admin.drop_table("history.runs")
    with pytest.raises(ForbiddenError):
        admin.create_namespace("mine")
    created = uc(server, ARCO_TOKEN, "POST", "/tables", json={
        "name": "mine", "catalog_name": "system", "schema_name": "history", "table_type": "MANAGED",
        "data_source_format": "DELTA",
        "columns": [{"name": "id", "type_name": "LONG", "type_text": "bigint", "type_json": "{}", "position": 0}]})
    assert created.status_code == 403 and created.json()["error_code"] == "PERMISSION_DENIED", created.text
    dropped = uc(server, ARCO_TOKEN, "DELETE", "/catalogs/system", params={"force": "true"})
    assert dropped.status_code == 403, dropped.text
    assert admin.load_table("history.runs").scan().to_arrow().num_rows >= 1


def test_a_rerun_adds_nothing(spark: SparkSession, world: dict) -> None:
    storage = world["storage"]
    spec = StorageSpec(storage.url)
    edges_before = read_many(storage, checkpoint.history_keys(storage, "lineage"), LINEAGE).num_rows
    # The grants and reads of the tests above are history, published by the first run; the second finds only the
    # system tables' own commits, and publishes nothing for them; the third finds nothing.
    runs = [Run("compact") for _ in range(3)]
    for run in runs:
        compact.run_compact(spark, spec, run)
        assert not run.errors, run.errors
    assert runs[0].counts.get("system_table_appends", 0) >= 1
    assert "system_table_appends" not in runs[1].counts, runs[1].counts
    assert runs[2].counts == {"uncommitted_files": 0, "receipts_new": 0}
    assert read_many(storage, checkpoint.history_keys(storage, "lineage"), LINEAGE).num_rows == edges_before


def test_the_table_page_shows_the_edge_in_a_browser(world: dict) -> None:
    """A person sees what the endpoint says: t2's page in Debian's Chromium draws t1 upstream of it, and the version
    Spark's INSERT ... SELECT made names t1 as its lineage."""
    import os
    import shutil

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (scripts/install-emulators.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True,
                                             args=["--no-sandbox"] if os.geteuid() == 0 else [])
        page = browser.new_context(base_url=world["server"].base_url).new_page()
        page.goto("/tables/main.lin.t2")
        page.fill("#token", ARCO_TOKEN)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert page.url.endswith("/tables/main.lin.t2")
        assert page.locator("[data-testid=lineage-unknown]").count() == 0
        drawn = page.locator("#lineage svg").text_content() or ""
        assert "main.lin.t1" in drawn and "t2" in drawn.replace("main.lin.t1", "")
        versions = [page.get_by_test_id("version").nth(i).inner_text()
                    for i in range(page.get_by_test_id("version").count())]
        assert any("main.lin.t1" in v and "Lineage:" in v for v in versions), versions
        browser.close()
