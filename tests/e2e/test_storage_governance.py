"""Storage governance on a real server: every attack on another table's bytes that a CREATE_TABLE holder could
make is refused, and what external locations allow works with PyIceberg and the UC API.

mallory holds USE_CATALOG, USE_SCHEMA and CREATE_TABLE on her own schema (main.mal) and nothing else. ann also
holds CREATE_EXTERNAL_TABLE on the external location "landing". The victim is the admin's table main.prod.orders.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError, ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from uuid6 import uuid7

from support.arco_server import ARCO_TOKEN, arco_server, run_cli

pytestmark = pytest.mark.timeout(300)
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0,
            "type_json": '{"name":"id","type":"long","nullable":true,"metadata":{}}'}]
ICEBERG_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False,
                                                                 "type": "long"}]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("governance")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        for user in ("mallory@x.com", "ann@x.com"):
            run_cli(warehouse, "user", "create", user)
        tokens = {user: run_cli(warehouse, "token", "create", user).strip()
                  for user in ("mallory@x.com", "ann@x.com")}
        tokens["admin"] = ARCO_TOKEN
        world = {"server": server, "warehouse": warehouse.resolve(), "tokens": tokens}
        admin = iceberg(world, "admin")
        admin.create_namespace("prod")
        victim = admin.create_table("prod.orders", SCHEMA)
        victim.append(ROWS)
        world["victim"] = victim
        for user, schema in (("mallory@x.com", "mal"), ("ann@x.com", "annex")):
            admin.create_namespace(schema)
            grant(world, "catalog", "main", user, "USE_CATALOG")
            grant(world, "schema", f"main.{schema}", user, "USE_SCHEMA", "CREATE_TABLE")
        landing = world["warehouse"] / "landing"
        landing.mkdir()
        assert uc(world, "admin", "POST", "/storage-credentials", json={
            "name": "cred", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/r"}}).status_code == 200
        made = uc(world, "admin", "POST", "/external-locations", json={"name": "landing", "url": landing.as_uri(),
                                                                       "credential_name": "cred"})
        assert made.status_code == 200, made.text
        grant(world, "external_location", "landing", "ann@x.com", "CREATE_EXTERNAL_TABLE")
        world["landing"] = landing
        yield world


def iceberg(world: dict, who: str) -> RestCatalog:
    return RestCatalog(who, uri=world["server"].iceberg_uri, warehouse="main", token=world["tokens"][who])


def uc(world: dict, who: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.request(method, f"{world['server'].base_url}/api/2.1/unity-catalog{path}", timeout=30,
                         headers={"Authorization": f"Bearer {world['tokens'][who]}"}, **kwargs)  # type: ignore[arg-type]


def rest(world: dict, who: str, method: str, path: str, headers: dict[str, str] | None = None,
         **kwargs: object) -> httpx.Response:
    return httpx.request(method, f"{world['server'].iceberg_uri}/v1/main{path}", timeout=30,  # type: ignore[arg-type]
                         headers={"Authorization": f"Bearer {world['tokens'][who]}", **(headers or {})}, **kwargs)


def grant(world: dict, kind: str, name: str, principal: str, *privileges: str) -> None:
    done = uc(world, "admin", "PATCH", f"/permissions/{kind}/{name}",
              json={"changes": [{"principal": principal, "add": list(privileges)}]})
    assert done.status_code == 200, done.text


def victim_files(world: dict) -> list[Path]:
    location = Path(world["victim"].metadata.location.removeprefix("file://"))
    return sorted(p for p in location.rglob("*") if p.is_file())


def forged_metadata(world: dict, where: Path, location: str) -> Path:
    """The victim's metadata JSON with a new table-uuid and the attacker's chosen location, saved at ``where``."""
    victim_meta = json.loads(Path(world["victim"].metadata_location.removeprefix("file://")).read_text())
    victim_meta.update({"table-uuid": str(uuid.uuid4()), "location": location})
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps(victim_meta))
    return where


def assert_refused(response: httpx.Response, *words: str) -> None:
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"] if "error" in response.json() else response.json()["message"]
    for word in words:
        assert word in message, message


# -- attack 1: register a forged metadata file whose location is another table's, then purge it -----------


@pytest.mark.parametrize("target", ["victim", "warehouse root", "catalog files"])
def test_register_of_forged_metadata_pointing_at_other_data_is_refused(world: dict, target: str) -> None:
    before = victim_files(world)
    location = {"victim": world["victim"].metadata.location, "warehouse root": world["warehouse"].as_uri(),
                "catalog files": (world["warehouse"] / "_catalog").as_uri()}[target]
    for folder in ("main/mal/forged", "landing/forged"):  # in her own schema's storage, or in an external location
        forged = forged_metadata(world, world["warehouse"] / folder / "metadata" / "v1.metadata.json", location)
        answer = rest(world, "mallory@x.com", "POST", "/namespaces/mal/register",
                      json={"name": "stolen", "metadata-location": forged.as_uri()})
        assert_refused(answer)
        purge = rest(world, "mallory@x.com", "DELETE", "/namespaces/mal/tables/stolen",
                     params={"purgeRequested": "true"})
        assert purge.status_code == 404
    time.sleep(0.3)  # a purge runs in the background: give a wrongly started one time to do damage
    assert victim_files(world) == before
    assert (world["warehouse"] / "_catalog").is_dir()
    assert iceberg(world, "admin").load_table("prod.orders").scan().to_arrow().num_rows == 3


def test_register_never_reads_or_quotes_files_it_may_not_register(world: dict) -> None:
    secret_file = next(p for p in (world["warehouse"] / "_catalog").rglob("*") if p.is_file())
    content = secret_file.read_text(errors="replace")[:40]
    for target in (secret_file.as_uri(), world["victim"].metadata_location, "/etc/passwd",
                   f"{world['warehouse'].as_uri()}/main/mal/../../_catalog/x.metadata.json"):
        answer = rest(world, "mallory@x.com", "POST", "/namespaces/mal/register",
                      json={"name": "peek", "metadata-location": target})
        assert_refused(answer)
        assert content not in answer.text and "format-version" not in answer.text


# -- attack 2: UC external tables over someone else's storage --------------------------------------------


@pytest.mark.parametrize("location_of", [
    lambda w: w["victim"].metadata.location, lambda w: "file:///etc", lambda w: w["warehouse"].as_uri(),
    lambda w: f"{w['warehouse'].as_uri()}/landing/../main/prod", lambda w: (w["warehouse"] / "_catalog").as_uri(),
    lambda w: f"{w['warehouse'].as_uri()}/main",
], ids=["victim", "etc", "warehouse-root", "dotdot", "catalog-files", "managed-root"])
def test_uc_external_table_over_foreign_storage_is_refused(world: dict, location_of) -> None:  # type: ignore[no-untyped-def]
    for who in ("mallory@x.com", "ann@x.com", "admin"):
        answer = uc(world, who, "POST", "/tables", json={
            "name": "grab", "catalog_name": "main", "schema_name": "annex" if who != "mallory@x.com" else "mal",
            "table_type": "EXTERNAL", "data_source_format": "DELTA", "columns": COLUMNS,
            "storage_location": location_of(world)})
        assert answer.status_code == 400, answer.text
        assert answer.json()["error_code"] == "INVALID_PARAMETER_VALUE"
        assert "location" in answer.json()["message"], answer.json()["message"]


def test_uc_external_table_inside_a_granted_external_location(world: dict) -> None:
    location = (world["landing"] / "delta_t").as_uri()
    denied = uc(world, "mallory@x.com", "POST", "/tables", json={
        "name": "d", "catalog_name": "main", "schema_name": "mal", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "columns": COLUMNS, "storage_location": location})
    assert denied.status_code == 400 and "CREATE_EXTERNAL_TABLE" in denied.json()["message"]
    made = uc(world, "ann@x.com", "POST", "/tables", json={
        "name": "d", "catalog_name": "main", "schema_name": "annex", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "columns": COLUMNS, "storage_location": location})
    assert made.status_code == 200, made.text
    assert made.json()["storage_location"] == location
    creds = uc(world, "mallory@x.com", "POST", "/temporary-table-credentials",
               json={"table_id": made.json()["table_id"], "operation": "READ"})
    assert creds.status_code == 403


def test_nothing_in_a_read_only_external_location_gets_write_credentials(world: dict) -> None:
    """Its tables and volumes follow the location's read-only flag as its paths do: READ credentials, never
    READ_WRITE, even for an owner or admin."""
    archive = world["warehouse"] / "archive"
    archive.mkdir()
    made = uc(world, "admin", "POST", "/external-locations", json={
        "name": "archive", "url": archive.as_uri(), "credential_name": "cred", "read_only": True})
    assert made.status_code == 200, made.text
    table = uc(world, "admin", "POST", "/tables", json={
        "name": "archived", "catalog_name": "main", "schema_name": "annex", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "columns": COLUMNS, "storage_location": (archive / "t").as_uri()})
    assert table.status_code == 200, table.text
    volume = uc(world, "admin", "POST", "/volumes", json={
        "name": "archived_files", "catalog_name": "main", "schema_name": "annex", "volume_type": "EXTERNAL",
        "storage_location": (archive / "v").as_uri()})
    assert volume.status_code == 200, volume.text
    asks = [("/temporary-table-credentials", {"table_id": table.json()["table_id"]}, "READ_WRITE", "READ"),
            ("/temporary-volume-credentials", {"volume_id": volume.json()["volume_id"]}, "WRITE_VOLUME",
             "READ_VOLUME"),
            ("/temporary-path-credentials", {"url": (archive / "t").as_uri()}, "PATH_READ_WRITE", "PATH_READ")]
    for path, body, write, read in asks:
        refused = uc(world, "admin", "POST", path, json={**body, "operation": write})
        assert refused.status_code == 403 and "read-only" in refused.json()["message"], (path, refused.text)
        assert uc(world, "admin", "POST", path, json={**body, "operation": read}).status_code == 200, path


def test_a_table_in_a_location_made_read_only_takes_no_more_commits_until_it_is_writable_again(world: dict) -> None:
    """Every commit writes a metadata file in the table's folder, so none lands once the location is read-only
    (admins' neither); reads go on, and commits resume when its owner makes it writable again."""
    shelf = world["warehouse"] / "shelf"
    shelf.mkdir()
    made = uc(world, "admin", "POST", "/external-locations", json={
        "name": "shelf", "url": shelf.as_uri(), "credential_name": "cred"})
    assert made.status_code == 200, made.text
    grant(world, "external_location", "shelf", "ann@x.com", "CREATE_EXTERNAL_TABLE")
    table = iceberg(world, "ann@x.com").create_table("annex.shelved", SCHEMA, location=(shelf / "t").as_uri())
    table.append(ROWS)
    flip = uc(world, "admin", "PATCH", "/external-locations/shelf", json={"read_only": True})
    assert flip.status_code == 200 and flip.json()["read_only"] is True, flip.text
    metadata_files = sorted(shelf.rglob("*.metadata.json"))  # Arco's (the client writes data and manifests)
    with pytest.raises(ForbiddenError, match="read-only"):
        table.append(ROWS)
    for who in ("ann@x.com", "admin"):
        answer = rest(world, who, "POST", "/namespaces/annex/tables/shelved", json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
        assert answer.status_code == 403 and "shelf" in answer.json()["error"]["message"], answer.text
        together = rest(world, who, "POST", "/transactions/commit", json={"table-changes": [{
            "identifier": {"namespace": ["annex"], "name": "shelved"}, "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}]})
        assert together.status_code == 403, together.text
    assert sorted(shelf.rglob("*.metadata.json")) == metadata_files
    assert iceberg(world, "ann@x.com").load_table("annex.shelved").scan().to_arrow().num_rows == 3
    assert uc(world, "admin", "PATCH", "/external-locations/shelf", json={"read_only": False}).status_code == 200
    table.refresh().append(ROWS)
    assert iceberg(world, "ann@x.com").load_table("annex.shelved").scan().to_arrow().num_rows == 6


def test_nothing_new_is_made_in_managed_storage_whose_location_was_made_read_only(world: dict) -> None:
    """A schema's managed storage placed in an external location that is made read-only since: every create
    that would write there is refused (Iceberg tables and views, UC managed tables, volumes and staging tables),
    and a staging table made before gets READ credentials only."""
    dock = world["warehouse"] / "dock"
    dock.mkdir()
    assert uc(world, "admin", "POST", "/external-locations", json={
        "name": "dock", "url": dock.as_uri(), "credential_name": "cred"}).status_code == 200
    made = uc(world, "admin", "POST", "/schemas", json={"name": "docked", "catalog_name": "main",
                                                         "storage_root": (dock / "root").as_uri()})
    assert made.status_code == 200, made.text
    staged = uc(world, "admin", "POST", "/staging-tables", json={"name": "early", "catalog_name": "main",
                                                                 "schema_name": "docked"})
    assert staged.status_code == 200, staged.text
    flip = uc(world, "admin", "PATCH", "/external-locations/dock", json={"read_only": True})
    assert flip.status_code == 200, flip.text
    before = sorted(dock.rglob("*"))
    view = {"name": "v", "schema": SCHEMA_JSON, "view-version": {
        "version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["docked"],
        "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}}
    refusals = [
        rest(world, "admin", "POST", "/namespaces/docked/tables", json={"name": "t", "schema": SCHEMA_JSON}),
        rest(world, "admin", "POST", "/namespaces/docked/tables", json={"name": "s", "schema": SCHEMA_JSON,
                                                                         "stage-create": True}),
        rest(world, "admin", "POST", "/namespaces/docked/views", json=view),
        uc(world, "admin", "POST", "/tables", json={
            "name": "m", "catalog_name": "main", "schema_name": "docked", "table_type": "MANAGED",
            "data_source_format": "DELTA", "columns": COLUMNS}),
        uc(world, "admin", "POST", "/volumes", json={"name": "vol", "catalog_name": "main", "schema_name": "docked",
                                                      "volume_type": "MANAGED"}),
        uc(world, "admin", "POST", "/staging-tables", json={"name": "late", "catalog_name": "main",
                                                            "schema_name": "docked"}),
    ]
    for answer in refusals:
        assert answer.status_code == 400 and "read-only" in answer.text, answer.text
    assert sorted(dock.rglob("*")) == before  # not a byte written
    write = uc(world, "admin", "POST", "/temporary-table-credentials", json={"table_id": staged.json()["id"],
                                                                             "operation": "READ_WRITE"})
    assert write.status_code == 403 and "read-only" in write.json()["message"], write.text
    assert uc(world, "admin", "POST", "/temporary-table-credentials", json={
        "table_id": staged.json()["id"], "operation": "READ"}).status_code == 200
    assert uc(world, "admin", "PATCH", "/external-locations/dock", json={"read_only": False}).status_code == 200
    assert rest(world, "admin", "POST", "/namespaces/docked/tables", json={"name": "t", "schema": SCHEMA_JSON}
                ).status_code == 200


# -- attack 3: write paths into another table --------------------------------------------------------------


def test_write_paths_into_another_table_are_refused(world: dict) -> None:
    own = iceberg(world, "mallory@x.com").create_table("mal.mine", SCHEMA)
    elsewhere = world["victim"].metadata.location + "/data"
    for key in ("write.data.path", "write.metadata.path", "write.object-storage.path"):
        answer = rest(world, "mallory@x.com", "POST", "/namespaces/mal/tables/mine", json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": {key: elsewhere}}]})
        assert_refused(answer, key)
        created = rest(world, "mallory@x.com", "POST", "/namespaces/mal/tables", json={
            "name": f"w{key.split('.')[1]}", "schema": ICEBERG_SCHEMA, "properties": {key: elsewhere}})
        assert_refused(created, key)
    inside = own.metadata.location + "/custom-data"
    ok = rest(world, "mallory@x.com", "POST", "/namespaces/mal/tables/mine", json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"write.data.path": inside}}]})
    assert ok.status_code == 200, ok.text


def test_a_snapshot_pointing_into_another_table_is_refused(world: dict) -> None:
    iceberg(world, "mallory@x.com").create_table("mal.snap", SCHEMA)
    victim_list = world["victim"].current_snapshot().manifest_list
    answer = rest(world, "mallory@x.com", "POST", "/namespaces/mal/tables/snap", json={
        "requirements": [], "updates": [{"action": "add-snapshot", "snapshot": {
            "snapshot-id": 42, "sequence-number": 1, "timestamp-ms": 1, "manifest-list": victim_list,
            "summary": {"operation": "append"}, "schema-id": 0}}]})
    assert_refused(answer, "manifest list")


# -- locations: create, stage, set-location -----------------------------------------------------------------


@pytest.mark.parametrize("location, rule", [
    ("relative/dir", "absolute"), ("file:///etc/arco", "no external location"), ("ftp://h/x", "scheme"),
    ("WAREHOUSE", "whole warehouse"), ("WAREHOUSE/_catalog/t", "Arco's own"), ("WAREHOUSE/main/prod", "overlaps"),
    ("WAREHOUSE/landing/a/../../main", "'..'"), ("WAREHOUSE/landing/a%2F..%2F..%2Fmain", "'..'"),
])
def test_hostile_requested_locations_are_refused_with_the_rule(world: dict, location: str, rule: str) -> None:
    location = location.replace("WAREHOUSE", world["warehouse"].as_uri())
    answer = rest(world, "ann@x.com", "POST", "/namespaces/annex/tables",
                  json={"name": "h", "schema": ICEBERG_SCHEMA, "location": location})
    assert_refused(answer, rule)
    assert answer.json()["error"]["type"] == "BadRequestException"


def test_a_table_in_an_external_location_is_external_and_purge_keeps_its_files(world: dict) -> None:
    location = (world["landing"] / "events").as_uri()
    with pytest.raises(BadRequestError, match="CREATE_EXTERNAL_TABLE"):
        iceberg(world, "mallory@x.com").create_table("mal.events", SCHEMA, location=location)
    table = iceberg(world, "ann@x.com").create_table("annex.events", SCHEMA, location=location)
    table.append(ROWS)
    assert table.metadata.location == location
    info = uc(world, "ann@x.com", "GET", "/tables/main.annex.events").json()
    assert info["table_type"] == "EXTERNAL" and info["storage_location"] == location
    files = sorted(p for p in (world["landing"] / "events").rglob("*") if p.is_file())
    assert any(p.suffix == ".parquet" for p in files)
    assert rest(world, "ann@x.com", "DELETE", "/namespaces/annex/tables/events",
                params={"purgeRequested": "true"}).status_code == 204
    time.sleep(0.3)
    assert sorted(p for p in (world["landing"] / "events").rglob("*") if p.is_file()) == files


def test_a_staged_create_with_a_location_follows_the_same_rule(world: dict) -> None:
    location = (world["landing"] / "ctas").as_uri()
    with pytest.raises(BadRequestError):
        iceberg(world, "mallory@x.com").create_table_transaction("mal.ctas", SCHEMA, location=location)
    txn = iceberg(world, "ann@x.com").create_table_transaction("annex.ctas", SCHEMA, location=location)
    txn.commit_transaction()
    assert iceberg(world, "ann@x.com").load_table("annex.ctas").metadata.location == location


def test_purge_of_a_managed_table_deletes_its_files_and_only_them(world: dict) -> None:
    before = victim_files(world)
    table = iceberg(world, "mallory@x.com").create_table("mal.scratch", SCHEMA)
    table.append(ROWS)
    folder = Path(table.metadata.location.removeprefix("file://"))
    assert any(folder.rglob("*.parquet"))
    assert rest(world, "mallory@x.com", "DELETE", "/namespaces/mal/tables/scratch",
                params={"purgeRequested": "true"}).status_code == 204
    deadline = time.monotonic() + 10
    while any(p.is_file() for p in folder.rglob("*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(p.is_file() for p in folder.rglob("*"))
    assert victim_files(world) == before


def test_a_dropped_managed_table_is_registered_again_in_place_and_stays_purgeable(world: dict) -> None:
    catalog = iceberg(world, "mallory@x.com")
    table = catalog.create_table("mal.again", SCHEMA)
    table.append(ROWS)
    catalog.drop_table("mal.again")
    registered = catalog.register_table("mal.again2", table.metadata_location)
    assert registered.scan().to_arrow().num_rows == 3
    info = uc(world, "admin", "GET", "/tables/main.mal.again2").json()
    assert info["table_type"] == "MANAGED"
    # Someone else's dropped table cannot be taken over from another catalog's files or another table's folder.
    copy = world["warehouse"] / "main" / "mal" / "copy.metadata.json"
    shutil.copy(Path(table.metadata_location.removeprefix("file://")), copy)
    assert_refused(rest(world, "mallory@x.com", "POST", "/namespaces/mal/register",
                        json={"name": "c", "metadata-location": copy.as_uri()}))


def test_set_location_to_the_current_location_is_a_no_op(world: dict) -> None:
    table = iceberg(world, "mallory@x.com").create_table("mal.loc", SCHEMA)
    for spelling in (table.metadata.location, table.metadata.location + "/",
                     table.metadata.location.replace("file:///", "file:/")):
        same = rest(world, "mallory@x.com", "POST", "/namespaces/mal/tables/loc", json={
            "requirements": [], "updates": [{"action": "set-location", "location": spelling}]})
        assert same.status_code == 200, same.text
    moved = rest(world, "mallory@x.com", "POST", "/namespaces/mal/tables/loc", json={
        "requirements": [], "updates": [{"action": "set-location", "location": table.metadata.location + "2"}]})
    assert_refused(moved, "set-location")


def test_external_locations_cannot_cover_managed_storage_or_the_warehouse(world: dict) -> None:
    wh = world["warehouse"].as_uri()
    for url in (wh, f"{wh}/main", f"{wh}/main/prod", f"{wh}/_catalog", "file:///", f"{wh}/landing/inner"):
        answer = uc(world, "admin", "POST", "/external-locations", json={"name": "bad", "url": url,
                                                                         "credential_name": "cred"})
        assert answer.status_code == 400, (url, answer.text)


def test_an_external_location_cannot_borrow_a_storage_credential_its_creator_may_not_use(world: dict) -> None:
    """CREATE_EXTERNAL_LOCATION on the metastore is not enough: the credential named (whose role vends the
    location's paths) needs it too, as the spec says, on create and when a location is pointed at another one."""
    metastore = uc(world, "admin", "GET", "/metastore_summary").json()["metastore_id"]
    grant(world, "metastore", metastore, "mallory@x.com", "CREATE_EXTERNAL_LOCATION")
    grant(world, "metastore", metastore, "mallory@x.com", "CREATE_STORAGE_CREDENTIAL")
    (world["warehouse"] / "mallory-lake").mkdir()
    body = {"name": "mal-lake", "url": (world["warehouse"] / "mallory-lake").as_uri(), "credential_name": "cred"}
    refused = uc(world, "mallory@x.com", "POST", "/external-locations", json=body)
    assert refused.status_code == 403 and "CREATE_EXTERNAL_LOCATION on it" in refused.json()["message"], refused.text
    assert uc(world, "admin", "GET", "/external-locations/mal-lake").status_code == 404  # nothing was made
    own = uc(world, "mallory@x.com", "POST", "/storage-credentials", json={
        "name": "mal-cred", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/mal"}})
    assert own.status_code == 200, own.text
    made = uc(world, "mallory@x.com", "POST", "/external-locations", json={**body, "credential_name": "mal-cred"})
    assert made.status_code == 200, made.text  # her own credential
    moved = uc(world, "mallory@x.com", "PATCH", "/external-locations/mal-lake", json={"credential_name": "cred"})
    assert moved.status_code == 403, moved.text
    assert uc(world, "admin", "GET", "/external-locations/mal-lake").json()["credential_name"] == "mal-cred"
    grant(world, "storage_credential", "cred", "mallory@x.com", "CREATE EXTERNAL LOCATION")  # the OSS spelling
    assert uc(world, "mallory@x.com", "PATCH", "/external-locations/mal-lake",
              json={"credential_name": "cred"}).status_code == 200
    assert uc(world, "mallory@x.com", "DELETE", "/external-locations/mal-lake").status_code == 200


def test_an_idempotency_key_replays_only_for_the_caller_that_used_it(world: dict) -> None:
    """Another caller sending the same key and body must not get the first caller's answer (a table it may not
    read, with credentials on object storage): a key is one caller's."""
    iceberg(world, "admin").create_namespace("both")
    for user in ("mallory@x.com", "ann@x.com"):
        grant(world, "schema", "main.both", user, "USE_SCHEMA", "CREATE_TABLE")
    body = {"name": "payroll", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "salary", "required": False, "type": "long"}]}}
    key = {"Idempotency-Key": str(uuid7())}
    made = rest(world, "ann@x.com", "POST", "/namespaces/both/tables", json=body, headers=key)
    assert made.status_code == 200, made.text
    replayed = rest(world, "mallory@x.com", "POST", "/namespaces/both/tables", json=body, headers=key)
    assert replayed.status_code == 409, replayed.text
    assert "another caller" in replayed.json()["error"]["message"] and "metadata" not in replayed.json()
    assert rest(world, "mallory@x.com", "GET", "/namespaces/both/tables/payroll").status_code == 403
    again = rest(world, "ann@x.com", "POST", "/namespaces/both/tables", json=body, headers=key)
    assert again.status_code == 200 and again.json()["metadata-location"] == made.json()["metadata-location"]


def test_a_dropped_table_cannot_be_taken_over_by_someone_who_never_had_it(world: dict) -> None:
    """Ann drops her table without purge; Mallory, who may create tables in her own schema and in Ann's, knows the
    metadata file's name: registering it (then reading or purging it) is refused, in Ann's schema as in her own.
    Ann herself brings it back."""
    iceberg(world, "admin").create_namespace("annshare")
    for user in ("mallory@x.com", "ann@x.com"):
        grant(world, "schema", "main.annshare", user, "USE_SCHEMA", "CREATE_TABLE")
    ann = iceberg(world, "ann@x.com")
    table = ann.create_table("annshare.cards", SCHEMA)
    table.append(ROWS)
    ann.drop_table("annshare.cards")
    for namespace in ("annshare", "mal"):
        refused = rest(world, "mallory@x.com", "POST", f"/namespaces/{namespace}/register",
                       json={"name": "stolen", "metadata-location": table.metadata_location})
        assert refused.status_code in (400, 403), refused.text
    assert Path(table.metadata_location.removeprefix("file://")).is_file()  # nothing was purged
    back = ann.register_table("annshare.cards", table.metadata_location)
    assert back.scan().to_arrow().num_rows == len(ROWS)


def test_a_refused_location_names_nothing_the_caller_may_not_see(world: dict) -> None:
    """Mallory has no rights on the external location ``landing``: asking for a place over Ann's external table
    there is refused for that, without naming the table or where it is."""
    ann = iceberg(world, "ann@x.com")
    ann.create_table("annex.layoffs_plan", SCHEMA, location=(world["landing"] / "layoffs").as_uri())
    answer = rest(world, "mallory@x.com", "POST", "/namespaces/mal/tables", json={
        "name": "probe", "location": (world["landing"] / "layoffs" / "x").as_uri(), "schema": {
            "type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "required": False, "type": "long"}]}})
    assert_refused(answer, "may not create external tables in external location landing")
    assert "layoffs_plan" not in answer.text
    # So on Unity Catalog: a refused location is a 400 on both APIs, whichever rule refused it (the governance
    # contract), the message naming the privilege that is missing.
    answer = uc(world, "mallory@x.com", "POST", "/tables", json={
        "name": "probe", "catalog_name": "main", "schema_name": "mal", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": (world["landing"] / "layoffs" / "x").as_uri(),
        "columns": COLUMNS})
    assert_refused(answer, "needs CREATE_EXTERNAL_TABLE")
    assert answer.json()["error_code"] == "INVALID_PARAMETER_VALUE" and "layoffs_plan" not in answer.text
