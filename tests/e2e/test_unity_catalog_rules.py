"""Rules every Unity Catalog securable follows, through real clients: no empty comment, no owner that is not a
principal, an Iceberg table's updated_at following its commits, staging tables for names no table has, and no
external location deleted from under managed storage (even with force)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from databricks.sdk import WorkspaceClient
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli
from support.sharing import uc

pytestmark = pytest.mark.timeout(300)
COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0,
            "type_json": json.dumps({"name": "id", "type": "long", "nullable": True, "metadata": {}})}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("uc-rules")
    with arco_server(workdir / "warehouse", workdir, admin_token=ARCO_TOKEN) as s:
        run_cli(workdir / "warehouse", "user", "create", "ann@x.com")
        run_cli(workdir / "warehouse", "group", "create", "analysts", "--member", "ann@x.com")
        run_cli(workdir / "warehouse", "service-principal", "etl-bot")
        yield s


@pytest.fixture(scope="module")
def landing(server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An external location (``landing``) over a folder of its own, and its credential ``role``."""
    root = tmp_path_factory.mktemp("landing")
    assert uc(server, "POST", "/storage-credentials", json={
        "name": "role", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/r"}}).status_code == 200
    made = uc(server, "POST", "/external-locations", json={"name": "landing", "url": root.as_uri(),
                                                           "credential_name": "role"})
    assert made.status_code == 200, made.text
    return root


def ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def function_info(name: str, comment: str) -> dict:
    return {"function_info": {
        "name": name, "catalog_name": "notes", "schema_name": "s", "comment": comment,
        "input_params": {"parameters": [{"name": "x", "type_text": "int", "type_name": "INT", "position": 0,
                                         "type_json": '{"type":"int"}'}]},
        "data_type": "INT", "full_data_type": "int", "routine_body": "SQL", "routine_definition": "x + 1",
        "parameter_style": "S", "is_deterministic": True, "sql_data_access": "CONTAINS_SQL", "is_null_call": False,
        "security_type": "DEFINER", "specific_name": name}}


def test_an_empty_comment_is_no_comment_on_every_securable(server: RunningServer, landing: Path,
                                                           tmp_path: Path) -> None:
    # (path to create at, its body, path of the made object): each made with "" and answered without a comment.
    made = [
        ("/catalogs", {"name": "notes", "comment": ""}, "/catalogs/notes"),
        ("/schemas", {"name": "s", "catalog_name": "notes", "comment": ""}, "/schemas/notes.s"),
        ("/tables", {"name": "t", "catalog_name": "notes", "schema_name": "s", "table_type": "MANAGED",
                     "data_source_format": "DELTA", "columns": COLUMNS, "comment": ""}, "/tables/notes.s.t"),
        ("/volumes", {"name": "v", "catalog_name": "notes", "schema_name": "s", "volume_type": "MANAGED",
                      "comment": ""}, "/volumes/notes.s.v"),
        ("/functions", function_info("f", ""), "/functions/notes.s.f"),
        ("/models", {"name": "m", "catalog_name": "notes", "schema_name": "s", "comment": ""}, "/models/notes.s.m"),
        ("/models/versions", {"model_name": "m", "catalog_name": "notes", "schema_name": "s", "source": "file:///m",
                              "comment": ""}, "/models/notes.s.m/versions/1"),
        ("/storage-credentials", {"name": "quiet", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/q"},
                                  "comment": ""}, "/storage-credentials/quiet"),
        ("/external-locations", {"name": "quiet", "url": tmp_path.as_uri(), "credential_name": "role",
                                 "comment": ""}, "/external-locations/quiet"),
        ("/shares", {"name": "quiet", "comment": ""}, "/shares/quiet"),
        ("/recipients", {"name": "quiet", "authentication_type": "TOKEN", "comment": ""}, "/recipients/quiet"),
    ]
    for path, body, made_at in made:
        assert "comment" not in ok(uc(server, "POST", path, json=body)), path
        assert "comment" not in ok(uc(server, "GET", made_at)), made_at

    # On update, "" clears a comment (every securable whose PATCH takes one; a function's changes only its owner).
    for made_at in ("/catalogs/notes", "/schemas/notes.s", "/tables/notes.s.t", "/volumes/notes.s.v",
                    "/models/notes.s.m", "/models/notes.s.m/versions/1", "/storage-credentials/quiet",
                    "/external-locations/quiet", "/shares/quiet", "/recipients/quiet"):
        assert ok(uc(server, "PATCH", made_at, json={"comment": "said"}))["comment"] == "said", made_at
        assert "comment" not in ok(uc(server, "PATCH", made_at, json={"comment": ""})), made_at
        assert "comment" not in ok(uc(server, "GET", made_at)), made_at

    from unitycatalog.client import ApiClient, Configuration, SchemasApi, TablesApi, VolumesApi

    async def listed() -> tuple[list[str], list[str], list[str]]:  # the client that failed on "comment": ""
        config = Configuration(host=f"{server.base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization", header_value=f"Bearer {ARCO_TOKEN}") as client:
            volumes = await VolumesApi(client).list_volumes(catalog_name="notes", schema_name="s")
            tables = await TablesApi(client).list_tables(catalog_name="notes", schema_name="s")
            schemas = await SchemasApi(client).list_schemas(catalog_name="notes")
            return ([v.name for v in volumes.volumes or []], [t.name for t in tables.tables or []],
                    [s.name for s in schemas.schemas or []])

    assert asyncio.run(listed()) == (["v"], ["t"], ["s"])


def test_an_owner_must_be_a_principal(server: RunningServer, landing: Path) -> None:
    w = WorkspaceClient(host=server.base_url, token=ARCO_TOKEN)
    w.catalogs.create(name="owned")
    w.schemas.create(name="s", catalog_name="owned")
    ok(uc(server, "POST", "/tables", json={"name": "t", "catalog_name": "owned", "schema_name": "s",
                                           "table_type": "MANAGED", "data_source_format": "DELTA",
                                           "columns": COLUMNS}))
    ok(uc(server, "POST", "/volumes", json={"name": "v", "catalog_name": "owned", "schema_name": "s",
                                            "volume_type": "MANAGED"}))
    ok(uc(server, "POST", "/models", json={"name": "m", "catalog_name": "owned", "schema_name": "s"}))
    ok(uc(server, "POST", "/functions", json={"function_info": {**function_info("f", "c")["function_info"],
                                                                "catalog_name": "owned"}}))
    ok(uc(server, "POST", "/storage-credentials", json={"name": "owned", "aws_iam_role": {"role_arn": "a"}}))
    ok(uc(server, "POST", "/shares", json={"name": "owned"}))
    ok(uc(server, "POST", "/recipients", json={"name": "owned", "authentication_type": "TOKEN"}))
    metastore_id = ok(uc(server, "GET", "/metastore_summary"))["metastore_id"]
    securables = ["/catalogs/owned", "/schemas/owned.s", "/tables/owned.s.t", "/volumes/owned.s.v",
                  "/models/owned.s.m", "/functions/owned.s.f", "/storage-credentials/owned",
                  "/external-locations/landing", "/shares/owned", "/recipients/owned", f"/metastores/{metastore_id}"]
    for path in securables:
        before = ok(uc(server, "GET", path))
        refused = uc(server, "PATCH", path, json={"owner": "ghost@x.com"})
        assert refused.status_code == 400, (path, refused.text)
        assert refused.json()["error_code"] == "INVALID_PARAMETER_VALUE"
        assert "principal 'ghost@x.com' does not exist" in refused.json()["message"]
        assert ok(uc(server, "GET", path))["owner"] == before["owner"], path  # nothing changed
    # Users, groups and service principals may own; the databricks-sdk sets an owner as any client does.
    assert w.catalogs.update("owned", owner="ann@x.com").owner == "ann@x.com"
    assert w.schemas.update("owned.s", owner="analysts").owner == "analysts"
    assert w.tables.get("owned.s.t").owner == "admin"
    assert ok(uc(server, "PATCH", "/tables/owned.s.t", json={"owner": "etl-bot"}))["owner"] == "etl-bot"
    assert ok(uc(server, "PATCH", "/shares/owned", json={"owner": "analysts"}))["owner"] == "analysts"
    assert ok(uc(server, "PATCH", "/catalogs/owned", json={"owner": "admin"}))["owner"] == "admin"  # given back


def test_an_iceberg_table_s_updated_at_follows_its_commits(server: RunningServer) -> None:
    py = RestCatalog("py", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    py.create_namespace("ice")
    table = py.create_table("ice.events", Schema(NestedField(1, "id", LongType(), required=False)))
    created = ok(uc(server, "GET", "/tables/main.ice.events"))
    with table.update_schema() as update:
        update.add_column("note", StringType())
    evolved = ok(uc(server, "GET", "/tables/main.ice.events"))
    assert evolved["updated_at"] > created["updated_at"] >= created["created_at"]
    assert evolved["updated_at"] == py.load_table("ice.events").metadata.last_updated_ms
    assert evolved["updated_by"] == "admin" and evolved["created_at"] == created["created_at"]
    table = py.load_table("ice.events")
    with table.transaction() as tx:
        tx.set_properties({"stage": "gold"})
    assert ok(uc(server, "GET", "/tables/main.ice.events"))["updated_at"] > evolved["updated_at"]
    listed = ok(uc(server, "GET", "/tables", params={"catalog_name": "main", "schema_name": "ice"}))["tables"]
    assert [t["updated_at"] for t in listed] == [py.load_table("ice.events").metadata.last_updated_ms]
    commented = ok(uc(server, "PATCH", "/tables/main.ice.events", json={"comment": "later through UC"}))
    assert commented["updated_at"] > py.load_table("ice.events").metadata.last_updated_ms  # UC's change is later


def test_a_staging_table_is_for_a_name_no_table_has(server: RunningServer) -> None:
    ok(uc(server, "POST", "/schemas", json={"name": "stage", "catalog_name": "main"}))
    ok(uc(server, "POST", "/tables", json={"name": "taken", "catalog_name": "main", "schema_name": "stage",
                                           "table_type": "MANAGED", "data_source_format": "DELTA",
                                           "columns": COLUMNS}))
    for name in ("taken", "TAKEN"):
        clash = uc(server, "POST", "/staging-tables", json={"name": name, "catalog_name": "main",
                                                            "schema_name": "stage"})
        assert clash.status_code == 409 and clash.json()["error_code"] == "TABLE_ALREADY_EXISTS", clash.text
    # Another staging table of a name already staged is a new instance with storage of its own (a retried CTAS);
    # either promotes, and then the name is a table's.
    first, second = (ok(uc(server, "POST", "/staging-tables", json={"name": "ctas", "catalog_name": "main",
                                                                     "schema_name": "stage"})) for _ in range(2))
    assert first["id"] != second["id"] and first["staging_location"] != second["staging_location"]
    promoted = ok(uc(server, "POST", "/tables", json={
        "name": "ctas", "catalog_name": "main", "schema_name": "stage", "table_type": "MANAGED",
        "data_source_format": "DELTA", "columns": COLUMNS, "storage_location": second["staging_location"]}))
    assert promoted["table_id"] == second["id"]
    again = uc(server, "POST", "/staging-tables", json={"name": "ctas", "catalog_name": "main",
                                                        "schema_name": "stage"})
    assert again.status_code == 409 and again.json()["error_code"] == "TABLE_ALREADY_EXISTS"


def test_an_external_location_holding_managed_storage_is_not_deleted_even_with_force(
        server: RunningServer, tmp_path: Path) -> None:
    warehouse = ok(uc(server, "GET", "/catalogs/main"))["storage_location"].rsplit("/", 1)[0]
    ok(uc(server, "POST", "/storage-credentials", json={"name": "keeper", "aws_iam_role": {"role_arn": "k"}}))
    ok(uc(server, "POST", "/external-locations", json={"name": "keeper", "url": f"{warehouse}/keeper",
                                                       "credential_name": "keeper"}))
    ok(uc(server, "POST", "/catalogs", json={"name": "rooted", "storage_root": f"{warehouse}/keeper/rooted"}))
    for force in ("false", "true"):
        refused = uc(server, "DELETE", "/external-locations/keeper", params={"force": force})
        assert refused.status_code == 400, refused.text
        assert "the managed storage of catalog rooted" in refused.json()["message"]
    ok(uc(server, "GET", "/external-locations/keeper"))  # still there
    ok(uc(server, "DELETE", "/catalogs/rooted", params={"force": "true"}))
    ok(uc(server, "DELETE", "/external-locations/keeper"))

    # Force still deletes a location with external tables inside, as the spec describes it.
    ok(uc(server, "POST", "/external-locations", json={"name": "outer", "url": tmp_path.as_uri(),
                                                       "credential_name": "keeper"}))
    ok(uc(server, "POST", "/schemas", json={"name": "outside", "catalog_name": "main"}))
    ok(uc(server, "POST", "/tables", json={"name": "ext", "catalog_name": "main", "schema_name": "outside",
                                           "table_type": "EXTERNAL", "data_source_format": "DELTA",
                                           "columns": COLUMNS, "storage_location": (tmp_path / "ext").as_uri()}))
    assert uc(server, "DELETE", "/external-locations/outer").status_code == 400
    ok(uc(server, "DELETE", "/external-locations/outer", params={"force": "true"}))
    assert uc(server, "GET", "/external-locations/outer").status_code == 404


def test_the_permissions_of_a_missing_function_name_the_function(server: RunningServer) -> None:
    """A FUNCTION securable falls back to a registered model of that name (Databricks' type for models); with
    neither there, the answer is about the function asked for."""
    uc(server, "POST", "/schemas", json={"name": "fns", "catalog_name": "main"})
    missing = uc(server, "GET", "/permissions/function/main.fns.nofn")
    assert missing.status_code == 404, missing.text
    assert "unction" in missing.json()["message"] and "model" not in missing.json()["message"].lower()
    assert uc(server, "POST", "/models", json={"name": "m", "catalog_name": "main",
                                               "schema_name": "fns"}).status_code == 200
    assert uc(server, "GET", "/permissions/function/main.fns.m").status_code == 200


def test_a_body_that_repeats_a_member_name_is_refused_and_changes_nothing(server: RunningServer) -> None:
    answer = uc(server, "POST", "/catalogs", content=b'{"name": "dupkey", "name": "dupkey2"}')
    assert answer.status_code == 400 and answer.json()["error_code"] == "INVALID_PARAMETER_VALUE", answer.text
    assert "repeats the member name" in answer.json()["message"]
    assert {c["name"] for c in uc(server, "GET", "/catalogs").json()["catalogs"]}.isdisjoint({"dupkey", "dupkey2"})


def test_an_update_that_cannot_be_made_whole_changes_nothing(server: RunningServer, landing: Path) -> None:
    ok(uc(server, "POST", "/schemas", json={"name": "upd", "catalog_name": "main"}))
    for name in ("a", "b"):
        ok(uc(server, "POST", "/tables", json={"name": name, "catalog_name": "main", "schema_name": "upd",
                                               "table_type": "MANAGED", "data_source_format": "DELTA",
                                               "columns": COLUMNS}))
    before = ok(uc(server, "GET", "/tables/main.upd.a"))
    taken = uc(server, "PATCH", "/tables/main.upd.a", json={"new_name": "B", "comment": "renamed"})
    assert taken.status_code == 409 and taken.json()["error_code"] == "TABLE_ALREADY_EXISTS", taken.text
    elsewhere = (landing / "moved").as_uri()
    for change in ({"storage_location": elsewhere}, {"data_source_format": "PARQUET"}, {"storage_location": 5}):
        refused = uc(server, "PATCH", "/tables/main.upd.a", json={**change, "comment": "moved"})
        assert refused.status_code == 400 and refused.json()["error_code"] == "INVALID_PARAMETER_VALUE", change
    assert ok(uc(server, "GET", "/tables/main.upd.a")) == before  # neither comment landed
    # The table as read, sent back whole (2.0's partial TableInfo) with one change, is that change alone.
    same = ok(uc(server, "PATCH", "/tables/main.upd.a", json={**before, "comment": "kept"}))
    assert same["comment"] == "kept" and same["storage_location"] == before["storage_location"]
    view = ok(uc(server, "POST", "/tables", json={"name": "v", "catalog_name": "main", "schema_name": "upd",
                                                  "table_type": "VIEW", "view_definition": "SELECT 1 id",
                                                  "columns": COLUMNS}))
    assert view["view_definition"] == "SELECT 1 id"
    changed = ok(uc(server, "PATCH", "/tables/main.upd.v", json={"view_definition": "SELECT 2 id"}))
    assert changed["view_definition"] == "SELECT 2 id" == ok(uc(server, "GET", "/tables/main.upd.v"))[
        "view_definition"]
    assert uc(server, "PATCH", "/tables/main.upd.v", json={"view_definition": ""}).status_code == 400
    # A rename with other changes lands as one catalog operation: all of it, under the new name.
    renamed = ok(uc(server, "PATCH", "/tables/main.upd.a", json={"new_name": "a2", "comment": "both"}))
    assert (renamed["name"], renamed["comment"], renamed["table_id"]) == ("a2", "both", before["table_id"])
    assert uc(server, "GET", "/tables/main.upd.a").status_code == 404


def test_no_update_moves_a_securable_s_storage(server: RunningServer, landing: Path) -> None:
    ok(uc(server, "POST", "/catalogs", json={"name": "fixed"}))
    ok(uc(server, "POST", "/schemas", json={"name": "s", "catalog_name": "fixed"}))
    ok(uc(server, "POST", "/volumes", json={"name": "v", "catalog_name": "fixed", "schema_name": "s",
                                            "volume_type": "MANAGED"}))
    elsewhere = (landing / "elsewhere").as_uri()
    for path, field in (("/catalogs/fixed", "storage_root"), ("/schemas/fixed.s", "storage_root"),
                        ("/volumes/fixed.s.v", "storage_location")):
        before = ok(uc(server, "GET", path))
        refused = uc(server, "PATCH", path, json={field: elsewhere, "comment": "moved"})
        assert refused.status_code == 400 and refused.json()["error_code"] == "INVALID_PARAMETER_VALUE", path
        assert ok(uc(server, "GET", path)) == before, path
        if before.get(field):  # sent back as read: no change, and the rest of the update lands
            assert ok(uc(server, "PATCH", path, json={field: before[field], "comment": "kept"}))["comment"] == "kept"


@pytest.mark.parametrize("path", [
    "/catalogs/a%00b", "/schemas/main.a%00b", "/tables/main.default.a%E2%80%AEb", "/tables/main.a%1Bb.t",
    "/volumes/main.default.a%00b", "/functions/main.a%00b.f", "/tables?catalog_name=main&schema_name=a%00b",
    "/permissions/table/main.default.a%00b",
])
def test_a_name_no_object_could_have_is_refused_not_looked_up(server: RunningServer, path: str) -> None:
    """Control and text-reordering characters are a 400 that names the rule: never a "does not exist" that would
    echo them back as they are (an over-long name is looked up, and not found: tests/integration/server)."""
    answer = uc(server, "GET", path)
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["error_code"] == "INVALID_PARAMETER_VALUE" and "does not exist" not in body["message"]
    assert not any(ch in body["message"] for ch in ("\x00", "\x1b", "\u202e"))
