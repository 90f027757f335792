"""Unity Catalog's Delta commit coordination (``/delta/preview/commits``) through the unitycatalog-client, against a
real ``arco serve``: commits, replays and conflicts, backfills, the reader's view, metadata that rides a commit,
grants, and many writers through two servers racing for one version (exactly one wins)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

pytestmark = pytest.mark.timeout(300)
COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0,
            "type_json": '{"name":"id","type":"long","nullable":true,"metadata":{}}'}]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir: Path = tmp_path_factory.mktemp("delta-commits")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        run_cli(warehouse, "user", "create", "ann@x.com")
        ann = run_cli(warehouse, "token", "create", "ann@x.com").strip()
        assert uc(server, "POST", "/schemas", json={"name": "cc", "catalog_name": "main"}).status_code == 200
        yield {"server": server, "ann": ann, "warehouse": warehouse, "workdir": workdir}


def uc(server: RunningServer, method: str, path: str, token: str = ARCO_TOKEN, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}", timeout=30,
                         headers={"Authorization": f"Bearer {token}"}, **kwargs)


def managed_table(server: RunningServer, name: str) -> dict:
    made = uc(server, "POST", "/tables", json={"name": name, "catalog_name": "main", "schema_name": "cc",
                                               "table_type": "MANAGED", "data_source_format": "DELTA",
                                               "columns": COLUMNS})
    assert made.status_code == 200, made.text
    return made.json()


def info(version: int, name: str | None = None) -> dict:
    return {"version": version, "timestamp": 1_700_000_000_000 + version, "file_size": 512,
            "file_name": name or f"{version:020d}.{uuid.uuid4()}.json",
            "file_modification_timestamp": 1_700_000_000_000}


def client_call(server: RunningServer, token: str, method: str, body: dict) -> Any:
    """``DeltaCommitsApi.<method>`` of the unitycatalog-client with ``body`` as its request model."""
    from unitycatalog.client import ApiClient, Configuration, DeltaCommitsApi
    from unitycatalog.client.models import DeltaCommit

    model = DeltaCommit.from_dict(body)

    async def run() -> Any:
        config = Configuration(host=f"{server.base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization", header_value=f"Bearer {token}") as client:
            return await getattr(DeltaCommitsApi(client), method)(model)

    return asyncio.run(run())


def commit(env: dict, table: dict, token: str = ARCO_TOKEN, **fields: Any) -> httpx.Response:
    return uc(env["server"], "POST", "/delta/preview/commits", token,
              json={"table_id": table["table_id"], "table_uri": table["storage_location"], **fields})


def read(env: dict, table: dict, start: int = 0, token: str = ARCO_TOKEN, **fields: Any) -> Any:
    """getCommits as Delta's UC client sends it: a GET with a JSON body (the Python client drops a GET's body, so
    it cannot make this call), parsed into the Python client's response model."""
    from unitycatalog.client.models import DeltaGetCommitsResponse

    got = uc(env["server"], "GET", "/delta/preview/commits", token, json={
        "table_id": table["table_id"], "table_uri": table["storage_location"], "start_version": start, **fields})
    assert got.status_code == 200, got.text
    return DeltaGetCommitsResponse.from_dict(got.json())


def test_commits_replays_conflicts_and_backfills(env: dict) -> None:
    server, table = env["server"], managed_table(env["server"], "events")
    fresh = read(env, table)
    assert (fresh.commits, fresh.latest_table_version) == ([], 0)
    first, second = info(1), info(2)
    for one in (first, second):
        client_call(server, ARCO_TOKEN, "commit", {"table_id": table["table_id"],
                                                   "table_uri": table["storage_location"], "commit_info": one})
    listed = read(env, table)
    assert listed.latest_table_version == 2 and [c.version for c in listed.commits] == [2, 1]
    assert listed.commits[0].file_name == second["file_name"] and listed.commits[0].file_size == 512
    assert commit(env, table, commit_info=second).status_code == 200  # a lost answer, sent again
    conflict = commit(env, table, commit_info=info(2))
    assert conflict.status_code == 409 and conflict.json()["error_code"] == "RESOURCE_CONFLICT"
    gap = commit(env, table, commit_info=info(4))
    assert gap.status_code == 400 and "must be 3" in gap.json()["message"]
    assert commit(env, table, commit_info=info(3), latest_backfilled_version=2).status_code == 200
    assert [c.version for c in read(env, table).commits] == [3]
    assert commit(env, table, latest_backfilled_version=3).status_code == 200  # backfill only
    after = read(env, table)
    assert (after.commits, after.latest_table_version) == ([], 3)
    ranged = read(env, table, start=4)
    assert ranged.commits == [] and ranged.latest_table_version == 3
    by_query = uc(server, "GET", "/delta/preview/commits", params={  # curl's way: the query string
        "table_id": table["table_id"], "table_uri": table["storage_location"], "start_version": 0})
    assert by_query.status_code == 200 and by_query.json() == {"commits": [], "latest_table_version": 3}


def test_a_writer_that_does_not_backfill_is_refused_until_it_does(env: dict) -> None:
    table = managed_table(env["server"], "lagging")
    for version in range(1, 11):
        assert commit(env, table, commit_info=info(version)).status_code == 200
    full = commit(env, table, commit_info=info(11))
    assert full.status_code == 429 and full.json()["error_code"] == "RESOURCE_EXHAUSTED"
    assert commit(env, table, commit_info=info(11), latest_backfilled_version=10).status_code == 200
    assert [c["version"] for c in uc(env["server"], "GET", "/delta/preview/commits", json={
        "table_id": table["table_id"], "table_uri": table["storage_location"], "start_version": 0}).json()[
        "commits"]] == [11]


def test_a_resend_of_a_backfilled_commit_is_settled_by_its_files(env: dict) -> None:
    table = managed_table(env["server"], "published")
    log = Path(table["storage_location"].removeprefix("file://")) / "_delta_log"
    (log / "_staged_commits").mkdir(parents=True)
    one = info(1)
    (log / "_staged_commits" / one["file_name"]).write_bytes(b'{"commitInfo":{}}\n')
    (log / f"{1:020d}.json").write_bytes(b'{"commitInfo":{}}\n')  # the writer's backfill
    other = info(1)
    (log / "_staged_commits" / other["file_name"]).write_bytes(b'{"commitInfo":{"other":1}}\n')
    assert commit(env, table, commit_info=one).status_code == 200
    assert commit(env, table, commit_info=info(2), latest_backfilled_version=1).status_code == 200
    assert commit(env, table, commit_info=one).status_code == 200  # the same file as published: a resend
    assert commit(env, table, commit_info=other).status_code == 409
    unreadable = commit(env, table, commit_info=info(1))  # no staged file of that name: the outcome is not known
    assert unreadable.status_code == 503 and unreadable.json()["error_code"] == "TEMPORARILY_UNAVAILABLE"
    onboarded_late = managed_table(env["server"], "onboarded_late")
    assert commit(env, onboarded_late, commit_info=info(5)).status_code == 200  # onboarding at version 5
    never = commit(env, onboarded_late, commit_info=info(2))  # before its first commit: no such version, ever
    assert never.status_code == 409 and "never committed" in never.json()["message"]


def test_metadata_rides_a_commit_and_is_seen_by_uc(env: dict) -> None:
    server, table = env["server"], managed_table(env["server"], "evolving")
    columns = [*COLUMNS, {"name": "city", "type_name": "STRING", "type_text": "string", "position": 1,
                          "type_json": '{"name":"city","type":"string","nullable":true,"metadata":{}}'}]
    done = commit(env, table, commit_info=info(1), metadata={
        "description": "events by city", "schema": {"columns": columns},
        "properties": {"properties": {"delta.enableInCommitTimestamps": "true",
                                      "io.unitycatalog.tableId": table["table_id"]}}})
    assert done.status_code == 200, done.text
    seen = uc(server, "GET", "/tables/main.cc.evolving").json()
    assert seen["comment"] == "events by city" and [c["name"] for c in seen["columns"]] == ["id", "city"]
    assert seen["properties"]["delta.enableInCommitTimestamps"] == "true"
    foreign = commit(env, table, commit_info=info(2), metadata={
        "properties": {"properties": {"io.unitycatalog.tableId": str(uuid.uuid4())}}})
    assert foreign.status_code == 400 and read(env, table).latest_table_version == 1  # refused whole


def test_grants_locations_and_tables_that_are_not_coordinated(env: dict, tmp_path: Path) -> None:
    server, table = env["server"], managed_table(env["server"], "guarded")
    denied = commit(env, table, env["ann"], commit_info=info(1))
    assert denied.status_code == 403 and denied.json()["error_code"] == "PERMISSION_DENIED"
    for kind, name, privileges in (("catalog", "main", ["USE_CATALOG"]), ("schema", "main.cc", ["USE_SCHEMA"]),
                                   ("table", "main.cc.guarded", ["SELECT"])):
        assert uc(server, "PATCH", f"/permissions/{kind}/{name}", json={
            "changes": [{"principal": "ann@x.com", "add": privileges}]}).status_code == 200
    assert read(env, table, token=env["ann"]).latest_table_version == 0  # SELECT reads the commits ...
    assert commit(env, table, env["ann"], commit_info=info(1)).status_code == 403  # ... MODIFY writes them
    moved = commit(env, {**table, "storage_location": tmp_path.as_uri()}, commit_info=info(1))
    assert moved.status_code == 400 and "is not the table's location" in moved.json()["message"]
    missing = commit(env, {**table, "table_id": str(uuid.uuid4())}, commit_info=info(1))
    assert missing.status_code == 404 and missing.json()["error_code"] == "TABLE_DOES_NOT_EXIST"
    assert uc(server, "POST", "/delta/preview/commits", content=b"{").status_code == 400
    assert read(env, table).latest_table_version == 0  # nothing above changed the table


def test_many_writers_through_two_servers_racing_for_one_version_get_one_success(env: dict) -> None:
    table = managed_table(env["server"], "raced")
    assert commit(env, table, commit_info=info(1)).status_code == 200
    with arco_server(env["warehouse"], env["workdir"], admin_token=ARCO_TOKEN) as other:
        servers = [env["server"], other]
        for version in range(2, 6):
            attempts = [info(version) for _ in range(8)]
            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(lambda i, tried=attempts: commit({"server": servers[i % 2]}, table,
                                                                         commit_info=tried[i]).status_code, range(8)))
            assert sorted(statuses) == [200] + [409] * 7, statuses
            winner = next(c for c in read(env, table).commits if c.version == version)
            assert winner.file_name == attempts[statuses.index(200)]["file_name"]
    assert read(env, table).latest_table_version == 5


def test_a_shared_coordinated_table_is_served_as_far_as_the_catalog_published_it(env: dict) -> None:
    """Delta Sharing serves a coordinated table's log up to the catalog's published version: not a commit the
    catalog accepted but nobody published yet, and never a file a writer put in the log around the catalog."""
    import pyarrow as pa
    from deltalake import write_deltalake

    from support.sharing import activate, ds, share_with

    server, table = env["server"], managed_table(env["server"], "shared_cc")
    location = table["storage_location"]
    write_deltalake(location, pa.table({"id": pa.array([1, 2], pa.int64())}))  # version 0
    assert commit(env, table, commit_info=info(1)).status_code == 200  # accepted, not yet published
    write_deltalake(location, pa.table({"id": pa.array([666], pa.int64())}), mode="append")  # around the catalog
    recipient = share_with(server, "cc_share", "cc_reader", ["main.cc.shared_cc"])
    profile = activate(recipient, Path(env["workdir"]))[1]
    path = "/shares/cc_share/schemas/cc/tables/shared_cc"
    assert ds(server, profile, "GET", f"{path}/version").headers["delta-table-version"] == "0"
    queried = ds(server, profile, "POST", f"{path}/query", json={})
    assert queried.status_code == 200 and queried.headers["delta-table-version"] == "0"
    assert ds(server, profile, "POST", f"{path}/query", json={"version": 1}).status_code == 400
    assert commit(env, table, latest_backfilled_version=1).status_code == 200  # published: served from now on
    assert ds(server, profile, "GET", f"{path}/version").headers["delta-table-version"] == "1"
