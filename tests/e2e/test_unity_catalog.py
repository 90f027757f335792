"""The Unity Catalog API through its real clients (databricks-sdk, unitycatalog-client), and its view of Iceberg.

Authorization is the bootstrap admin's here; grants and users are tested in test_grants and
test_permission_matrix, more metastores in test_metastores.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import BadRequest, NotFound, ResourceConflict
from databricks.sdk.service.catalog import ColumnInfo, ColumnTypeName, DataSourceFormat, TableType, VolumeType
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DecimalType, ListType, LongType, NestedField, StringType, StructType

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir: Path = tmp_path_factory.mktemp("unity")
    with arco_server(workdir / "warehouse", workdir, admin_token=ARCO_TOKEN) as s:
        yield s


@pytest.fixture(scope="module")
def w(server: RunningServer) -> WorkspaceClient:
    return WorkspaceClient(host=server.base_url, token=ARCO_TOKEN)


@pytest.fixture(scope="module")
def external(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder inside an external location: where external tables may live (storage governance)."""
    root = tmp_path_factory.mktemp("external")
    assert uc(server, "POST", "/storage-credentials", json={
        "name": "e2e-cred", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/e2e"}}).status_code == 200
    made = uc(server, "POST", "/external-locations", json={"name": "e2e-external", "url": root.as_uri(),
                                                           "credential_name": "e2e-cred"})
    assert made.status_code == 200, made.text
    return root


def uc(server: RunningServer, method: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                         headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30, **kwargs)  # type: ignore[arg-type]


def test_the_databricks_sdk_finds_its_host_metadata_without_a_token(server: RunningServer,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The SDK reads /.well-known/databricks-config as it starts, before it authenticates, and warns without it."""
    answer = httpx.get(f"{server.base_url}/.well-known/databricks-config", timeout=30)
    assert answer.status_code == 200 and answer.json() == {}
    with caplog.at_level(logging.WARNING, logger="databricks.sdk"):
        client = WorkspaceClient(host=server.base_url, token=ARCO_TOKEN)
        assert client.current_user.me().user_name == "admin"
    assert not [r for r in caplog.records if "host metadata" in r.getMessage()]


def test_catalogs_and_schemas_with_the_databricks_sdk(w: WorkspaceClient, server: RunningServer) -> None:
    created = w.catalogs.create(name="Finance", comment="money", properties={"team": "fin"})
    assert (created.name, created.owner, created.comment, created.properties) == ("finance", "admin", "money",
                                                                                 {"team": "fin"})
    assert created.metastore_id and created.created_at
    assert "finance" in [c.name for c in w.catalogs.list()]
    with pytest.raises(ResourceConflict):
        w.catalogs.create(name="FINANCE")
    schema = w.schemas.create(name="Ledger", catalog_name="finance", comment="books")
    assert (schema.full_name, schema.catalog_name, schema.comment) == ("finance.ledger", "finance", "books")
    assert w.schemas.get("FINANCE.LEDGER").name == "ledger"  # case-insensitive full names
    updated = w.schemas.update("finance.ledger", comment="the books", properties={"k": "v"})
    assert (updated.comment, updated.properties) == ("the books", {"k": "v"})
    renamed = w.catalogs.update("finance", new_name="treasury")
    assert renamed.name == "treasury" and w.schemas.get("treasury.ledger").catalog_name == "treasury"
    with pytest.raises(NotFound):
        w.catalogs.get("finance")
    with pytest.raises(BadRequest, match="Catalog 'treasury' is not empty: it still contains schemas"):
        w.catalogs.delete("treasury")
    uc(server, "POST", "/volumes", json={"name": "v", "catalog_name": "treasury", "schema_name": "ledger",
                                         "volume_type": "MANAGED"}).raise_for_status()
    with pytest.raises(BadRequest, match="Schema 'ledger' is not empty: it still contains"):
        w.schemas.delete("treasury.ledger")
    w.catalogs.delete("treasury", force=True)
    with pytest.raises(NotFound):
        w.schemas.get("treasury.ledger")


def test_tables_views_and_summaries(w: WorkspaceClient, server: RunningServer, external: Path) -> None:
    tmp_path = external
    w.catalogs.create(name="lake")
    w.schemas.create(name="raw", catalog_name="lake")
    columns = [ColumnInfo(name="id", type_name=ColumnTypeName.LONG, type_text="bigint", position=0,
                          type_json='{"name":"id","type":"long","nullable":true,"metadata":{}}'),
               ColumnInfo(name="City", type_name=ColumnTypeName.STRING, type_text="string", position=1,
                          type_json='{"name":"City","type":"string","nullable":true,"metadata":{}}')]
    location = (tmp_path / "events").as_uri()
    table = w.tables.create(name="Events", catalog_name="lake", schema_name="raw", table_type=TableType.EXTERNAL,
                            data_source_format=DataSourceFormat.DELTA, columns=columns, storage_location=location)
    assert (table.full_name, table.table_type, table.data_source_format) == ("lake.raw.events", TableType.EXTERNAL,
                                                                             DataSourceFormat.DELTA)
    assert [c.name for c in table.columns] == ["id", "City"]  # column names keep their case
    assert w.tables.get("lake.raw.events").storage_location == location
    view = uc(server, "POST", "/tables", json={
        "name": "recent", "catalog_name": "lake", "schema_name": "raw", "table_type": "VIEW",
        "view_definition": "SELECT * FROM lake.raw.events", "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "type_json": "{}", "position": 0}]})
    assert view.status_code == 200, view.text
    assert view.json()["view_definition"] == "SELECT * FROM lake.raw.events"
    for i in range(3):
        w.tables.create(name=f"t{i}", catalog_name="lake", schema_name="raw", table_type=TableType.EXTERNAL,
                        data_source_format=DataSourceFormat.PARQUET, columns=columns,
                        storage_location=(tmp_path / f"t{i}").as_uri())
    names = [t.name for t in w.tables.list(catalog_name="lake", schema_name="raw", max_results=2)]
    assert names == ["events", "recent", "t0", "t1", "t2"]  # the SDK followed next_page_token
    # The reference server's token is the last name listed, and scripts written against it send one.
    after = uc(server, "GET", "/tables", params={"catalog_name": "lake", "schema_name": "raw", "page_token": "t0"})
    assert [t["name"] for t in after.json()["tables"]] == ["t1", "t2"]
    summaries = [s.full_name for s in w.tables.list_summaries(catalog_name="lake", table_name_pattern="t_")]
    assert summaries == ["lake.raw.t0", "lake.raw.t1", "lake.raw.t2"]
    w.tables.delete("lake.raw.t1")
    with pytest.raises(NotFound):
        w.tables.get("lake.raw.t1")


@pytest.mark.parametrize(("body", "fragment"), [
    ({"name": "a.b"}, "contains '.'"),
    ({"name": "a/b"}, "contains '/'"),
    ({}, "name must be a non-empty string"),
    ({"name": "x", "properties": {"k": 1}}, "properties"),
])
def test_bad_catalog_input_is_400_in_the_uc_shape(server: RunningServer, body: dict, fragment: str) -> None:
    before = uc(server, "GET", "/catalogs").json()
    response = uc(server, "POST", "/catalogs", json=body)
    assert response.status_code == 400
    assert response.json()["error_code"] == "INVALID_PARAMETER_VALUE" and fragment in response.json()["message"]
    assert response.json()["details"] == [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                           "reason": "INVALID_PARAMETER_VALUE", "domain": "unity-catalog"}]
    assert uc(server, "GET", "/catalogs").json() == before


def test_bad_update_and_delete_input_changes_nothing(server: RunningServer) -> None:
    uc(server, "POST", "/catalogs", json={"name": "keep"}).raise_for_status()
    before = uc(server, "GET", "/catalogs/keep").json()
    for new_name in ({}, ["renamed"], 7, True, ""):
        response = uc(server, "PATCH", "/catalogs/keep", json={"new_name": new_name})
        assert response.status_code == 400, (new_name, response.text)
        assert response.json()["error_code"] == "INVALID_PARAMETER_VALUE" and "new_name" in response.json()["message"]
    for force in ("null", "yes", "1"):
        response = uc(server, "DELETE", "/catalogs/keep", params={"force": force})
        assert response.status_code == 400 and "force must be true or false" in response.json()["message"], force
    assert uc(server, "GET", "/catalogs/keep").json() == before
    # An update that changes nothing is answered with the object as it was, updated_at and all (the reference's
    # CRUD tests compare them whole).
    uc(server, "POST", "/schemas", json={"name": "s", "catalog_name": "keep"}).raise_for_status()
    uc(server, "POST", "/volumes", json={"name": "v", "catalog_name": "keep", "schema_name": "s",
                                         "volume_type": "MANAGED"}).raise_for_status()
    for path in ("/catalogs/keep", "/schemas/keep.s", "/volumes/keep.s.v"):
        unchanged = uc(server, "GET", path).json()
        assert uc(server, "PATCH", path, json={}).json() == unchanged == uc(server, "GET", path).json(), path
    assert uc(server, "DELETE", "/volumes/keep.s.v").status_code == 200
    assert uc(server, "DELETE", "/schemas/keep.s").status_code == 200
    wrong_method = uc(server, "OPTIONS", "/catalogs/keep")
    assert wrong_method.status_code == 405 and wrong_method.json()["error_code"] == "METHOD_NOT_ALLOWED"
    assert wrong_method.headers["allow"] == "DELETE, GET, HEAD, PATCH"
    assert uc(server, "DELETE", "/catalogs/keep", params={"force": "False"}).status_code == 200


def test_an_api_arco_does_not_serve_is_told_from_a_missing_object(server: RunningServer) -> None:
    """Databricks' table constraints, say: ENDPOINT_NOT_FOUND, not the NOT_FOUND of a table that is not there."""
    for method, path in (("POST", "/constraints"), ("GET", "/system-schemas/nowhere"), ("GET", "/no/such/api")):
        missing = uc(server, method, path, json={} if method == "POST" else None)
        assert missing.status_code == 404 and missing.json()["error_code"] == "ENDPOINT_NOT_FOUND", path
    assert uc(server, "GET", "/tables/main.default.nope").json()["error_code"] == "TABLE_DOES_NOT_EXIST"


def test_bad_table_input(server: RunningServer) -> None:
    uc(server, "POST", "/catalogs", json={"name": "strict"})
    uc(server, "POST", "/schemas", json={"name": "s", "catalog_name": "strict"})
    base = {"name": "t", "catalog_name": "strict", "schema_name": "s",
            "columns": [{"name": "c", "type_name": "INT", "type_text": "int", "type_json": "{}", "position": 0}]}
    for body, fragment in [
        ({**base, "table_type": "EXTERNAL", "data_source_format": "DELTA"}, "storage_location is required"),
        ({**base, "table_type": "SOMETHING"}, "table_type must be one of"),
        ({**base, "table_type": "VIEW"}, "view_definition is required"),
        ({**base, "table_type": "MANAGED", "data_source_format": "XLS"}, "data_source_format must be one of"),
        ({**base, "table_type": "MANAGED", "data_source_format": "DELTA",
          "columns": [{"name": "c", "type_name": "WIDGET"}]}, "is not a column type name"),
        ({key: value for key, value in base.items() if key != "columns"} | {"table_type": "MANAGED"},
         "columns is required"),
    ]:
        response = uc(server, "POST", "/tables", json=body)
        assert response.status_code == 400, (body, response.text)
        assert fragment in response.json()["message"]
    assert uc(server, "GET", "/tables", params={"catalog_name": "strict", "schema_name": "s"}).json() == {"tables": []}
    ignored = uc(server, "POST", "/tables", json={**base, "table_type": "MANAGED", "data_source_format": "DELTA",
                                                  "owner": "mallory", "created_at": 1, "table_id": "x"})
    assert ignored.status_code == 200
    info = ignored.json()
    assert info["owner"] == "admin" and info["created_at"] > 1 and info["table_id"] != "x"  # IGN fields ignored
    assert uc(server, "GET", "/catalogs", params={"max_results": -1}).status_code == 400
    missing = uc(server, "GET", "/tables/strict.s.nope")
    assert missing.status_code == 404 and missing.json()["error_code"] == "TABLE_DOES_NOT_EXIST"
    assert uc(server, "GET", "/tables/strict.s").status_code == 400  # not a table full name


def test_iceberg_tables_appear_in_uc_and_changes_show_both_ways(server: RunningServer, w: WorkspaceClient) -> None:
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    py.create_namespace("shop")
    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    NestedField(2, "price", DecimalType(10, 2), required=False),
                    NestedField(3, "tags", ListType(4, StringType(), element_required=False), required=False),
                    NestedField(5, "addr", StructType(NestedField(6, "city", StringType(), required=False)),
                                required=False))
    spec = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=IdentityTransform(), name="id"))
    table = py.create_table("shop.orders", schema, partition_spec=spec, properties={"team": "shop"})

    assert w.tables.get("main.shop.orders").table_type == TableType.MANAGED
    assert w.tables.get("main.shop.orders").properties["team"] == "shop"  # the Iceberg table's own properties
    raw = uc(server, "GET", "/tables/main.shop.orders").json()
    assert raw["data_source_format"] == "ICEBERG" and raw["storage_location"] == table.metadata.location
    by_name = {c["name"]: c for c in raw["columns"]}
    assert [c["name"] for c in raw["columns"]] == ["id", "price", "tags", "addr"]
    assert (by_name["id"]["type_name"], by_name["id"]["nullable"],
            by_name["id"]["partition_index"]) == ("LONG", False, 0)
    assert (by_name["price"]["type_text"], by_name["price"]["type_precision"]) == ("decimal(10,2)", 10)
    assert by_name["tags"]["type_text"] == "array<string>" and by_name["addr"]["type_text"] == "struct<city:string>"

    with table.update_schema() as update:  # Iceberg schema evolution shows in UC at once
        update.add_column("note", StringType())
    assert [c["name"] for c in uc(server, "GET", "/tables/main.shop.orders").json()["columns"]][-1] == "note"
    # Its columns are its Iceberg schema: updateTable refuses to change them (and changes nothing), not ignores it.
    recolumned = uc(server, "PATCH", "/tables/main.shop.orders", json={"comment": "c", "columns": [
        {"name": "other", "type_name": "INT", "type_text": "int", "type_json": "{}", "position": 0}]})
    assert recolumned.status_code == 400 and "Iceberg REST API" in recolumned.json()["message"], recolumned.text
    unchanged = uc(server, "GET", "/tables/main.shop.orders").json()
    assert unchanged["columns"][0]["name"] == "id" and "comment" not in unchanged
    assert "shop" in [s.name for s in w.schemas.list(catalog_name="main")]

    py.rename_table("shop.orders", "shop.purchases")
    assert w.tables.get("main.shop.purchases").name == "purchases"
    w.tables.delete("main.shop.purchases")  # dropped through UC ...
    assert ("shop", "purchases") not in py.list_tables("shop")  # ... gone for Iceberg too

    w.schemas.create(name="fromuc", catalog_name="main")  # a UC schema is an Iceberg namespace
    assert ("fromuc",) in py.list_namespaces()
    made = py.create_table("fromuc.t", Schema(NestedField(1, "x", LongType(), required=False)))
    made.append(pa.table({"x": pa.array([1], pa.int64())}))
    assert [t.name for t in w.tables.list(catalog_name="main", schema_name="fromuc")] == ["t"]
    # A Delta table made through UC shares the namespace; Iceberg lists only what it can load.
    delta = uc(server, "POST", "/tables", json={
        "name": "d", "catalog_name": "main", "schema_name": "fromuc", "table_type": "MANAGED",
        "data_source_format": "DELTA", "columns": [{"name": "id", "type_name": "LONG", "type_text": "bigint",
                                                    "position": 0}]})
    assert delta.status_code == 200, delta.text
    assert py.list_tables("fromuc") == [("fromuc", "t")]
    assert sorted(t.name for t in w.tables.list(catalog_name="main", schema_name="fromuc")) == ["d", "t"]


def test_the_unitycatalog_client_and_the_20_paths(server: RunningServer) -> None:
    from unitycatalog.client import ApiClient, CatalogsApi, Configuration, SchemasApi, TablesApi

    async def run() -> tuple[list[str], list[str], list[str]]:
        config = Configuration(host=f"{server.base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization", header_value=f"Bearer {ARCO_TOKEN}") as client:
            catalogs = await CatalogsApi(client).list_catalogs()
            from unitycatalog.client.models import CreateSchema

            await SchemasApi(client).create_schema(CreateSchema(name="ucc", catalog_name="main"))
            schemas = await SchemasApi(client).list_schemas(catalog_name="main")
            tables = await TablesApi(client).list_tables(catalog_name="main", schema_name="ucc")
            return ([c.name for c in catalogs.catalogs or []], [s.name for s in schemas.schemas or []],
                    [t.name for t in tables.tables or []])

    catalogs, schemas, tables = asyncio.run(run())
    assert "main" in catalogs and "ucc" in schemas and tables == []
    old = httpx.get(f"{server.base_url}/api/2.0/unity-catalog/schemas/main.ucc",
                    headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert old.status_code == 200 and old.json()["full_name"] == "main.ucc"
    summary = httpx.get(f"{server.base_url}/api/2.1/unity-catalog/metastore_summary",
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).json()
    assert summary["metastore_id"] == uc(server, "GET", "/catalogs/main").json()["metastore_id"]
    unauthenticated = httpx.get(f"{server.base_url}/api/2.1/unity-catalog/catalogs")
    assert unauthenticated.status_code == 401 and unauthenticated.json()["error_code"] == "UNAUTHENTICATED"


def test_a_view_keeps_the_dependencies_its_client_gives(server: RunningServer) -> None:
    from unitycatalog.client import ApiClient, Configuration, TablesApi
    from unitycatalog.client.models import (
        ColumnInfo,
        ColumnTypeName,
        CreateTable,
        DataSourceFormat,
        Dependency,
        DependencyList,
        FunctionDependency,
        TableDependency,
        TableType,
    )

    uc(server, "POST", "/schemas", json={"name": "views", "catalog_name": "main"}).raise_for_status()
    depends = DependencyList(dependencies=[
        Dependency(table=TableDependency(table_full_name="main.views.orders")),
        Dependency(function=FunctionDependency(function_full_name="main.views.to_eur"))])

    async def run() -> tuple[Any, Any]:
        config = Configuration(host=f"{server.base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization", header_value=f"Bearer {ARCO_TOKEN}") as client:
            tables = TablesApi(client)
            made = await tables.create_table(CreateTable(
                name="eur_orders", catalog_name="main", schema_name="views", table_type=TableType.VIEW,
                data_source_format=DataSourceFormat.DELTA, view_definition="SELECT to_eur(x) FROM orders",
                view_dependencies=depends,
                columns=[ColumnInfo(name="x", type_name=ColumnTypeName.DOUBLE, type_text="double", position=0)]))
            return made, await tables.get_table("main.views.eur_orders")

    made, read = asyncio.run(run())
    assert made.view_dependencies == depends and read.view_dependencies == depends
    malformed = uc(server, "POST", "/tables", json={
        "name": "bad", "catalog_name": "main", "schema_name": "views", "table_type": "VIEW",
        "view_definition": "SELECT 1", "columns": [], "view_dependencies": {"dependencies": [
            {"table": {"table_full_name": "orders"}}]}})
    assert malformed.status_code == 400 and malformed.json()["error_code"] == "INVALID_PARAMETER_VALUE"
    assert uc(server, "GET", "/tables/main.views.bad").status_code == 404


@pytest.mark.duckdb
def test_duckdb_reads_a_delta_table_registered_in_uc(server: RunningServer, external: Path) -> None:
    tmp_path = external
    from deltalake import write_deltalake

    from support.duckdb_ext import connect_with

    location = tmp_path / "people"
    write_deltalake(str(location), pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])}))
    uc(server, "POST", "/schemas", json={"name": "delta", "catalog_name": "main"})
    created = uc(server, "POST", "/tables", json={
        "name": "people", "catalog_name": "main", "schema_name": "delta", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": location.as_uri(), "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0,
             "type_json": '{"name":"id","type":"long","nullable":true,"metadata":{}}'},
            {"name": "name", "type_name": "STRING", "type_text": "string", "position": 1,
             "type_json": '{"name":"name","type":"string","nullable":true,"metadata":{}}'}]})
    assert created.status_code == 200, created.text
    con = connect_with(("httpfs", "delta", "unity_catalog"))
    con.execute(f"CREATE SECRET (TYPE UNITY_CATALOG, TOKEN '{ARCO_TOKEN}', ENDPOINT '{server.base_url}', "
                "AWS_REGION 'us-east-1')")
    con.execute("ATTACH 'main' AS uc (TYPE UNITY_CATALOG)")
    assert con.execute("SELECT id, name FROM uc.delta.people ORDER BY id").fetchall() == [(1, "a"), (2, "b"),
                                                                                         (3, "c")]


def test_dropping_a_managed_table_removes_its_data_and_an_external_one_keeps_it(server: RunningServer,
                                                                               w: WorkspaceClient,
                                                                               external: Path) -> None:
    from deltalake import write_deltalake

    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    uc(server, "POST", "/schemas", json={"name": "drops", "catalog_name": "main"})
    columns = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0}]
    managed = uc(server, "POST", "/tables", json={"name": "m", "catalog_name": "main", "schema_name": "drops",
                                                  "table_type": "MANAGED", "data_source_format": "DELTA",
                                                  "columns": columns})
    assert managed.status_code == 200, managed.text
    managed_folder = Path(managed.json()["storage_location"].removeprefix("file://"))
    write_deltalake(str(managed_folder), rows)
    outside = external / "kept"
    write_deltalake(str(outside), rows)
    assert uc(server, "POST", "/tables", json={
        "name": "x", "catalog_name": "main", "schema_name": "drops", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": outside.as_uri(), "columns": columns}).status_code == 200
    iceberg = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN).create_table(
        "drops.i", Schema(NestedField(1, "id", LongType(), required=False)))
    iceberg.append(rows)
    iceberg_folder = Path(iceberg.metadata.location.removeprefix("file://"))
    kept = sorted(outside.rglob("*"))

    for name in ("m", "x", "i"):
        w.tables.delete(f"main.drops.{name}")
    deadline = time.monotonic() + 30  # the purge runs after the answer
    while time.monotonic() < deadline and any(p.is_file() for f in (managed_folder, iceberg_folder)
                                              for p in f.rglob("*")):
        time.sleep(0.1)
    assert not [p for f in (managed_folder, iceberg_folder) for p in f.rglob("*") if p.is_file()]
    assert sorted(outside.rglob("*")) == kept


def test_polars_reads_the_schema_of_a_table_created_without_type_json(server: RunningServer,
                                                                      external: Path) -> None:
    """Polars builds a UC table's schema from each column's type_json and refuses a schema where one is missing;
    the Databricks SDK's ColumnInfo lets callers leave it out."""
    import polars as pl

    uc(server, "POST", "/schemas", json={"name": "untyped", "catalog_name": "main"})
    created = uc(server, "POST", "/tables", json={
        "name": "t", "catalog_name": "main", "schema_name": "untyped", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": (external / "untyped").as_uri(), "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0},
            {"name": "price", "type_name": "DECIMAL", "type_text": "decimal(9,2)", "position": 1},
            {"name": "tags", "type_name": "MAP", "type_text": "map<string,array<int>>", "position": 2}]})
    assert created.status_code == 200, created.text
    catalog = pl.Catalog(server.base_url, bearer_token=ARCO_TOKEN, require_https=False)
    info = catalog.get_table_info("main", "untyped", "t")
    assert info.get_polars_schema() == pl.Schema({"id": pl.Int64, "price": pl.Decimal(9, 2),
                                                  "tags": pl.List(pl.Struct({"key": pl.String,
                                                                             "value": pl.List(pl.Int32)}))})
    assert [t.name for t in catalog.list_tables("main", "untyped")] == ["t"]


def test_storage_credentials_and_external_locations(w: WorkspaceClient, server: RunningServer,
                                                    tmp_path: Path) -> None:
    from databricks.sdk.service.catalog import AwsIamRoleRequest

    credential = w.storage_credentials.create(name="lake-role", comment="reader",
                                              aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::1:role/r"))
    assert credential.aws_iam_role.role_arn == "arn:aws:iam::1:role/r" and credential.owner == "admin"
    secret = uc(server, "POST", "/storage-credentials", json={"name": "az", "azure_service_principal": {
        "directory_id": "d", "application_id": "a", "client_secret": "s3cr3t"}})
    assert secret.status_code == 200 and "client_secret" not in secret.json()["azure_service_principal"]
    assert "s3cr3t" not in uc(server, "GET", "/storage-credentials/az").text
    oss_view = uc(server, "GET", "/credentials/lake-role").json()  # unitycatalog-oss 2.1 names the same objects
    assert (oss_view["purpose"], oss_view["aws_iam_role"]["role_arn"]) == ("STORAGE", "arn:aws:iam::1:role/r")
    assert "lake-role" in [c["name"] for c in uc(server, "GET", "/credentials").json()["credentials"]]
    for bad in ({"name": "none"},
                {"name": "two", "aws_iam_role": {"role_arn": "x"},
                 "gcp_service_account_key": {"email": "e", "private_key_id": "i", "private_key": "k"}},
                {"name": "half", "aws_iam_role": {}}):
        assert uc(server, "POST", "/storage-credentials", json=bad).status_code == 400, bad

    root = tmp_path / "landing"
    (root / "2026").mkdir(parents=True)
    (root / "a.csv").write_text("x\n1\n")
    location = w.external_locations.create(name="landing", url=root.as_uri(), credential_name="lake-role")
    assert location.url == root.as_uri() and location.credential_name == "lake-role"
    assert location.credential_id == credential.id  # linked by id too, as the spec has it
    assert credential.aws_iam_role.external_id == credential.id
    raw_credential = uc(server, "GET", "/storage-credentials/lake-role").json()
    assert None not in raw_credential.values()  # fields the spec types as strings are omitted, never null
    for overlapping in (root.as_uri(), (root / "2026").as_uri(), tmp_path.as_uri()):
        clash = uc(server, "POST", "/external-locations", json={"name": "x", "url": overlapping,
                                                                 "credential_name": "lake-role"})
        assert clash.status_code == 400 and "overlaps" in clash.json()["message"], overlapping
    assert uc(server, "POST", "/external-locations", json={"name": "y", "url": "ftp://host/x",
                                                           "credential_name": "lake-role"}).status_code == 400
    assert uc(server, "POST", "/external-locations", json={"name": "z", "url": "s3://b/z",
                                                           "credential_name": "missing"}).status_code == 404
    files = uc(server, "GET", "/files", params={"url": root.as_uri()}).json()["files"]
    assert [(f["name"], f["is_dir"]) for f in files] == [("2026", True), ("a.csv", False)]
    (root / "out").symlink_to("/etc")
    for escaping in (f"{root.as_uri()}/../../", f"{root.as_uri()}/2026/%2e%2e/%2e%2e", "file:///etc",
                     f"{root.as_uri()}/out"):  # the last through a link: refused even for an admin
        refused = uc(server, "GET", "/files", params={"url": escaping})
        assert refused.status_code in (400, 403) and "files" not in refused.json(), escaping
    in_use = uc(server, "DELETE", "/storage-credentials/lake-role")
    assert in_use.status_code == 400 and "landing" in in_use.json()["message"]
    renamed = w.external_locations.update("landing", new_name="inbox", comment="renamed")
    assert (renamed.name, renamed.comment) == ("inbox", "renamed")
    w.external_locations.delete("inbox")
    w.storage_credentials.delete("lake-role")
    assert "lake-role" not in [c.name for c in w.storage_credentials.list()]
    missing = uc(server, "GET", "/storage-credentials/lake-role")
    assert missing.status_code == 404 and missing.json()["error_code"] == "STORAGE_CREDENTIAL_DOES_NOT_EXIST"


def test_a_catalog_with_a_storage_root_keeps_its_tables_in_a_folder_of_its_own_under_it(
        w: WorkspaceClient, server: RunningServer) -> None:
    from databricks.sdk.service.catalog import AwsIamRoleRequest

    warehouse = w.catalogs.get("main").storage_location.rsplit("/", 1)[0]
    w.storage_credentials.create(name="managed-role", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::1:role/m"))
    w.external_locations.create(name="managed-lake", url=f"{warehouse}/lake", credential_name="managed-role")
    with pytest.raises(BadRequest, match="in no external location"):
        w.catalogs.create(name="stray", storage_root=f"{warehouse}/elsewhere")
    with pytest.raises(BadRequest, match="outside this server's warehouse"):
        w.catalogs.create(name="stray", storage_root="file:///tmp/stray")
    rooted = w.catalogs.create(name="rooted", storage_root=f"{warehouse}/lake/managed/")
    assert rooted.storage_root == f"{warehouse}/lake/managed"
    rooted_id = uc(server, "GET", "/catalogs/rooted").json()["id"]  # the Databricks SDK's CatalogInfo has no id
    assert rooted.storage_location == f"{warehouse}/lake/managed/__unitystorage/catalogs/{rooted_id}"
    assert (w.catalogs.get("rooted").storage_root, w.catalogs.get("rooted").storage_location) == (
        rooted.storage_root, rooted.storage_location)

    # Managed tables, Iceberg's included, live inside the catalog's folder; nothing else may be placed there.
    catalog = RestCatalog("rooted", uri=server.iceberg_uri, warehouse="rooted", token=ARCO_TOKEN)
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", Schema(NestedField(1, "id", LongType(), required=False)))
    assert table.location().startswith(f"{rooted.storage_location}/db/")
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert catalog.load_table("db.t").scan().to_arrow().num_rows == 2
    assert Path(table.metadata_location.removeprefix("file://")).is_file()
    squatter = uc(server, "POST", "/tables", json={
        "name": "squat", "catalog_name": "rooted", "schema_name": "db", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "columns": [], "storage_location": f"{rooted.storage_location}/db/x"})
    assert squatter.status_code == 400 and "managed storage of catalog rooted" in squatter.json()["message"]

    # A schema may name a root of its own: its managed tables and volumes go to a folder under it.
    schema = w.schemas.create(name="own", catalog_name="rooted", storage_root=f"{warehouse}/lake/own")
    schema_id = uc(server, "GET", "/schemas/rooted.own").json()["schema_id"]
    assert (schema.storage_root, schema.storage_location) == (
        f"{warehouse}/lake/own", f"{warehouse}/lake/own/__unitystorage/schemas/{schema_id}")
    placed = catalog.create_table("own.t", Schema(NestedField(1, "id", LongType(), required=False)))
    assert placed.location().startswith(f"{schema.storage_location}/t-")
    placed.append(pa.table({"id": pa.array([1], pa.int64())}))
    placed_folder = Path(placed.location().removeprefix("file://"))
    assert any(placed_folder.rglob("*.parquet"))
    volume = w.volumes.create(catalog_name="rooted", schema_name="own", name="files",
                              volume_type=VolumeType.MANAGED)
    assert volume.storage_location.startswith(f"{schema.storage_location}/files-")

    in_use = uc(server, "DELETE", "/external-locations/managed-lake")
    assert in_use.status_code == 400, in_use.text
    assert "managed storage of catalog rooted" in in_use.json()["message"]
    assert "managed storage of schema own" in in_use.json()["message"]
    catalog.purge_table("db.t")
    catalog.purge_table("own.t")  # Arco's to delete: the folder it allocated under the schema's root
    deadline = time.monotonic() + 30
    while any(p.is_file() for p in placed_folder.rglob("*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(p.is_file() for p in placed_folder.rglob("*"))
    w.volumes.delete("rooted.own.files")
    w.catalogs.delete("rooted", force=True)
    w.external_locations.delete("managed-lake")
    w.storage_credentials.delete("managed-role")


def test_shares_recipients_and_providers(w: WorkspaceClient, server: RunningServer) -> None:
    from databricks.sdk.service.catalog import PermissionsChange as Change
    from databricks.sdk.service.catalog import Privilege
    from databricks.sdk.service.sharing import (
        AuthenticationType,
        SharedDataObject,
        SharedDataObjectDataObjectType,
        SharedDataObjectUpdate,
        SharedDataObjectUpdateAction,
    )

    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    py.create_namespace("shared")
    py.create_table("shared.sales", Schema(NestedField(1, "id", LongType(), required=False)))
    share = w.shares.create(name="Quarterly", comment="for partners")
    assert (share.name, share.owner) == ("quarterly", "admin")
    updated = w.shares.update("quarterly", updates=[SharedDataObjectUpdate(
        action=SharedDataObjectUpdateAction.ADD,
        data_object=SharedDataObject(name="main.shared.sales",
                                     data_object_type=SharedDataObjectDataObjectType.TABLE))])
    assert [(o.name, o.shared_as) for o in updated.objects] == [("main.shared.sales", "shared.sales")]
    again = uc(server, "PATCH", "/shares/quarterly", json={"updates": [
        {"action": "ADD", "data_object": {"name": "main.shared.sales"}}]})
    assert again.status_code == 409
    assert uc(server, "PATCH", "/shares/quarterly", json={"updates": [
        {"action": "ADD", "data_object": {"name": "main.shared.nope"}}]}).status_code == 404

    recipient = w.recipients.create(name="acme", authentication_type=AuthenticationType.TOKEN,
                                    comment="partner")
    activation_url = recipient.tokens[0].activation_url
    assert activation_url and activation_url.startswith(server.base_url)
    profile = httpx.get(activation_url).json()  # public: the link is the secret
    assert profile["bearerToken"] and profile["endpoint"].endswith("/delta-sharing/")
    assert httpx.get(activation_url).status_code == 404  # once only
    assert profile["bearerToken"] not in uc(server, "GET", "/recipients/acme").text
    assert uc(server, "GET", "/recipients/acme").json()["tokens"][0]["activation_url"] == ""
    assert uc(server, "POST", "/recipients", json={"name": "bad", "authentication_type": "TOKEN",
                                                   "ip_access_list": {"allowed_ip_addresses": ["300.1.1.1"]}}
              ).status_code == 400

    w.shares.update_permissions("quarterly", changes=[Change(principal="acme", add=[Privilege.SELECT])])
    assignments = w.shares.share_permissions("quarterly").privilege_assignments
    assert [(a.principal, [p.value for p in a.privileges]) for a in assignments] == [("acme", ["SELECT"])]
    assert uc(server, "GET", "/recipients/acme/share-permissions").json()["permissions_out"][0]["share_name"] == \
        "quarterly"
    assert uc(server, "PATCH", "/shares/quarterly/permissions", json={"changes": [
        {"principal": "acme", "add": ["MODIFY"]}]}).status_code == 400
    rotated = w.recipients.rotate_token("acme", existing_token_expire_in_seconds=0)
    assert len(rotated.tokens) == 2 and rotated.tokens[0].expiration_time and rotated.tokens[1].activation_url
    assert uc(server, "POST", "/recipients/acme/rotate-token",
              json={"existing_token_expire_in_seconds": -1}).status_code == 400
    unused = uc(server, "POST", "/recipients", json={"name": "later", "authentication_type": "TOKEN"}).json()
    first_link = unused["tokens"][0]["activation_url"]
    again = uc(server, "POST", "/recipients/later/rotate-token", json={"existing_token_expire_in_seconds": 0}).json()
    assert httpx.get(first_link).status_code == 404  # its token expired with the rotation: no profile from it
    assert httpx.get(again["tokens"][-1]["activation_url"]).status_code == 200

    provider = uc(server, "POST", "/providers", json={
        "name": "upstream", "authentication_type": "TOKEN",
        "recipient_profile_str": '{"shareCredentialsVersion": 1, "endpoint": "http://127.0.0.1:9/ds/", '
                                 '"bearerToken": "t0ken"}'})
    assert provider.status_code == 200, provider.text
    assert provider.json()["recipient_profile"]["endpoint"] == "http://127.0.0.1:9/ds/"
    assert "t0ken" not in provider.text
    assert uc(server, "POST", "/providers", json={"name": "broken", "recipient_profile_str": "{}"}).status_code == 400
    unreached = uc(server, "GET", "/providers/upstream/shares")  # nobody listens on port 9
    # A server that answers, but not as a sharing server does: the same answer, so the call is no port scanner.
    answering = uc(server, "PATCH", "/providers/upstream", json={"recipient_profile_str": json.dumps({
        "shareCredentialsVersion": 1, "endpoint": f"{server.base_url}/health", "bearerToken": "t0ken"})})
    assert answering.status_code == 200, answering.text
    not_sharing = uc(server, "GET", "/providers/upstream/shares")
    assert unreached.status_code == not_sharing.status_code == 502
    assert unreached.json()["message"] == not_sharing.json()["message"]
    for endpoint in (f"{server.base_url}/api/2.1/unity-catalog/metastore_summary#", "file:///etc/passwd",
                     f"{server.base_url}/x?y=1", "http://user:pw@127.0.0.1:9/"):
        pointed = uc(server, "PATCH", "/providers/upstream", json={"recipient_profile_str": json.dumps({
            "shareCredentialsVersion": 1, "endpoint": endpoint, "bearerToken": "t0ken"})})
        assert pointed.status_code == 400 and "endpoint" in pointed.json()["message"], endpoint
    w.shares.delete("quarterly")
    w.recipients.delete("acme")
    w.providers.delete("upstream")
    assert uc(server, "GET", "/shares/quarterly").json()["error_code"] == "SHARE_DOES_NOT_EXIST"


def test_metastores_assignments_and_staging_tables(w: WorkspaceClient, server: RunningServer) -> None:
    [metastore] = list(w.metastores.list())
    assert w.metastores.get(metastore.metastore_id).metastore_id == metastore.metastore_id
    assert w.metastores.summary().metastore_id == metastore.metastore_id
    updated = uc(server, "PATCH", f"/metastores/{metastore.metastore_id}",
                 json={"name": "lakehouse", "delta_sharing_scope": "INTERNAL_AND_EXTERNAL",
                       "delta_sharing_recipient_token_lifetime_in_seconds": 3600})
    assert updated.status_code == 200 and updated.json()["name"] == "lakehouse"
    assert updated.json()["delta_sharing_scope"] == "INTERNAL_AND_EXTERNAL"
    assert uc(server, "PATCH", f"/metastores/{metastore.metastore_id}",
              json={"storage_root": "s3://elsewhere"}).status_code == 400
    # Outside the warehouse: Arco could not write there (more metastores: tests/e2e/test_metastores.py).
    assert uc(server, "POST", "/metastores", json={"name": "second", "storage_root": "s3://x"}).status_code == 400
    assert uc(server, "GET", "/metastores/not-this-one").status_code == 404

    assert uc(server, "PUT", "/workspaces/42/metastore", json={"metastore_id": metastore.metastore_id,
                                                               "default_catalog_name": "main"}).status_code == 200
    assert uc(server, "PUT", "/workspaces/42/metastore", json={"metastore_id": "nope",
                                                               "default_catalog_name": "main"}).status_code == 404
    assert w.metastores.current().metastore_id == metastore.metastore_id

    uc(server, "POST", "/schemas", json={"name": "staged", "catalog_name": "main"})
    staging = uc(server, "POST", "/staging-tables", json={"name": "ctas", "catalog_name": "main",
                                                          "schema_name": "staged"}).json()
    assert staging["staging_location"] and staging["id"]
    columns = [{"name": "c", "type_name": "INT", "type_text": "int", "type_json": "{}", "position": 0}]
    promoted = uc(server, "POST", "/tables", json={
        "name": "ctas", "catalog_name": "main", "schema_name": "staged", "table_type": "MANAGED",
        "data_source_format": "DELTA", "columns": columns, "storage_location": staging["staging_location"]})
    assert promoted.status_code == 200, promoted.text
    assert (promoted.json()["table_id"], promoted.json()["storage_location"]) == (staging["id"],
                                                                                   staging["staging_location"])
    elsewhere = uc(server, "POST", "/tables", json={
        "name": "other", "catalog_name": "main", "schema_name": "staged", "table_type": "MANAGED",
        "data_source_format": "DELTA", "columns": columns, "storage_location": staging["staging_location"]})
    assert elsewhere.status_code == 400  # a staging location belongs to the table it was made for


def test_two_clients_creating_the_same_name_get_one_success(server: RunningServer) -> None:
    import threading

    for attempt in range(3):
        barrier = threading.Barrier(4)
        statuses: list[int] = []

        def create(name: str = f"race{attempt}", barrier: threading.Barrier = barrier,
                   statuses: list[int] = statuses) -> None:
            barrier.wait()
            statuses.append(uc(server, "POST", "/catalogs", json={"name": name}).status_code)

        threads = [threading.Thread(target=create) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(statuses) == [200, 409, 409, 409], statuses


def test_non_ascii_names_in_url_encoded_full_names(server: RunningServer) -> None:
    """The spec's example: SomeCÄt.SømeSchëma.テーブル, percent-encoded in the path, lower-cased when stored."""
    from urllib.parse import quote

    assert uc(server, "POST", "/catalogs", json={"name": "SomeCÄt"}).json()["name"] == "somecät"
    assert uc(server, "POST", "/schemas", json={"name": "SømeSchëma", "catalog_name": "SomeCÄt"}).status_code == 200
    created = uc(server, "POST", "/tables", json={
        "name": "テーブル", "catalog_name": "somecät", "schema_name": "sømeschëma", "table_type": "MANAGED",
        "data_source_format": "DELTA",
        "columns": [{"name": "Ä", "type_name": "INT", "type_text": "int", "type_json": "{}", "position": 0}]})
    assert created.status_code == 200, created.text
    path = "/tables/" + quote("SomeCÄt.SømeSchëma.テーブル", safe=".")
    assert path == "/tables/SomeC%C3%84t.S%C3%B8meSch%C3%ABma.%E3%83%86%E3%83%BC%E3%83%96%E3%83%AB"
    found = uc(server, "GET", path).json()
    assert found["full_name"] == "somecät.sømeschëma.テーブル" and found["columns"][0]["name"] == "Ä"


def test_the_unitycatalog_client_drives_grants_credentials_and_locations(server: RunningServer,
                                                                        tmp_path: Path) -> None:
    from unitycatalog.client import (
        ApiClient,
        Configuration,
        CredentialsApi,
        ExternalLocationsApi,
        GrantsApi,
    )
    from unitycatalog.client.models import (
        AwsIamRoleRequest,
        CreateCredentialRequest,
        CreateExternalLocation,
        PermissionsChange,
        SecurableType,
        UpdatePermissions,
    )

    async def run() -> tuple[list, list, list]:
        config = Configuration(host=f"{server.base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization", header_value=f"Bearer {ARCO_TOKEN}") as client:
            credentials = CredentialsApi(client)
            await credentials.create_credential(CreateCredentialRequest(
                name="oss-cred", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::2:role/o")))
            listed = await credentials.list_credentials()
            locations = ExternalLocationsApi(client)
            await locations.create_external_location(CreateExternalLocation(
                name="oss-loc", url=(tmp_path / "oss").as_uri(), credential_name="oss-cred"))
            grants = GrantsApi(client)
            await grants.update(SecurableType.CATALOG, "main", UpdatePermissions(changes=[PermissionsChange(
                principal="account users", add=["USE CATALOG"], remove=[])]))
            await grants.update(SecurableType.CREDENTIAL, "oss-cred", UpdatePermissions(changes=[PermissionsChange(
                principal="account users", add=["READ FILES"], remove=[])]))
            # Privileges the 2.1 enum cannot name, granted through Databricks' names: the client still reads the
            # grants (ALL_PRIVILEGES as what it amounts to on a catalog; a Delta Sharing privilege not at all).
            metastore = uc(server, "GET", "/metastore_summary").json()["metastore_id"]
            for kind, name, privilege in (("catalog", "main", "ALL_PRIVILEGES"),
                                          ("metastore", metastore, "CREATE_SHARE")):
                granted = uc(server, "PATCH", f"/permissions/{kind}/{name}", json={"changes": [
                    {"principal": "account users", "add": [privilege]}]})
                assert granted.status_code == 200, granted.text
            on_catalog = await grants.get(SecurableType.CATALOG, "main")
            on_metastore = await grants.get(SecurableType.METASTORE, metastore)
            return ([c.name for c in listed.credentials or []],
                    {a.principal: a.privileges for a in on_catalog.privilege_assignments or []},
                    [(await locations.get_external_location("oss-loc")).credential_name],
                    {a.principal: a.privileges for a in on_metastore.privilege_assignments or []})

    credentials, grantees, location_credential, on_metastore = asyncio.run(run())
    assert "oss-cred" in credentials and "account users" in grantees and location_credential == ["oss-cred"]
    assert [p.value for p in grantees["account users"]] == ["CREATE SCHEMA", "USE CATALOG"]
    assert "CREATE SHARE" not in [p.value for p in on_metastore.get("account users", [])]
    as_databricks_reads = httpx.get(f"{server.base_url}/api/2.1/unity-catalog/permissions/catalog/main",
                                    params={"principal": "account users"}, timeout=30,
                                    headers={"Authorization": f"Bearer {ARCO_TOKEN}",
                                             "User-Agent": "databricks-sdk-py/0.40.0"}).json()["privilege_assignments"]
    assert as_databricks_reads == [{"principal": "account users", "privileges": ["ALL_PRIVILEGES", "USE_CATALOG"]}]
    metastore = uc(server, "GET", "/metastore_summary").json()["metastore_id"]
    for kind, name, privilege in (("catalog", "main", "ALL_PRIVILEGES"), ("metastore", metastore, "CREATE_SHARE")):
        assert uc(server, "PATCH", f"/permissions/{kind}/{name}", json={"changes": [
            {"principal": "account users", "remove": [privilege]}]}).status_code == 200
    on_credential = uc(server, "GET", "/permissions/storage_credential/oss-cred").json()
    assert on_credential == {"privilege_assignments": [{"principal": "account users", "privileges": ["READ FILES"]}]}
