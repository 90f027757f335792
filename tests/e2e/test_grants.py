"""Grants protect the same tables on both APIs: owners, grantees and strangers, through UC and Iceberg REST.

Users, groups, tokens and service principals are made with the CLI, as an operator would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import pyarrow as pa
import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import ResourceDoesNotExist
from databricks.sdk.service.catalog import PermissionsChange, Privilege
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from support.arco_server import ARCO_TOKEN, arco_server, run_cli

pytestmark = pytest.mark.timeout(300)
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("grants")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        for user in ("olga@x.com", "ann@x.com", "eve@x.com"):
            run_cli(warehouse, "user", "create", user)
        run_cli(warehouse, "group", "create", "analysts", "--member", "ann@x.com")
        tokens = {user: run_cli(warehouse, "token", "create", user).strip()
                  for user in ("olga@x.com", "ann@x.com", "eve@x.com")}
        yield {"server": server, "warehouse": warehouse, "tokens": tokens}


def uc(world: dict, who: str, method: str, path: str, **kwargs: object) -> httpx.Response:
    token = ARCO_TOKEN if who == "admin" else world["tokens"][who]
    return httpx.request(method, f"{world['server'].base_url}/api/2.1/unity-catalog{path}",
                         headers={"Authorization": f"Bearer {token}"}, timeout=30, **kwargs)  # type: ignore[arg-type]


def iceberg(world: dict, who: str, catalog: str = "sec") -> RestCatalog:
    return RestCatalog(who, uri=world["server"].iceberg_uri, warehouse=catalog, token=world["tokens"][who])


def grant(world: dict, who: str, kind: str, name: str, principal: str, *privileges: str,
          remove: bool = False) -> httpx.Response:
    change = {"principal": principal, ("remove" if remove else "add"): list(privileges)}
    return uc(world, who, "PATCH", f"/permissions/{kind}/{name}", json={"changes": [change]})


@pytest.fixture(scope="module")
def owned(world: dict) -> dict:
    """olga may create catalogs; she creates sec, sec.s and the Iceberg table sec.s.t, and owns them."""
    metastore_id = uc(world, "admin", "GET", "/metastore_summary").json()["metastore_id"]
    assert grant(world, "admin", "metastore", metastore_id, "olga@x.com", "CREATE_CATALOG").status_code == 200
    assert uc(world, "olga@x.com", "POST", "/catalogs", json={"name": "sec"}).json()["owner"] == "olga@x.com"
    assert uc(world, "olga@x.com", "POST", "/schemas", json={"name": "s", "catalog_name": "sec"}).status_code == 200
    table = iceberg(world, "olga@x.com").create_table("s.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    return {"metastore_id": metastore_id}


def test_a_stranger_sees_nothing_and_may_do_nothing(world: dict, owned: dict) -> None:
    assert "sec" not in [c["name"] for c in uc(world, "eve@x.com", "GET", "/catalogs").json()["catalogs"]]
    for path in ("/catalogs/sec", "/schemas/sec.s", "/tables/sec.s.t"):
        denied = uc(world, "eve@x.com", "GET", path)
        assert denied.status_code == 403 and denied.json()["error_code"] == "PERMISSION_DENIED", path
    # What lies in a catalog she may not use is refused alike whether it exists or not: no name is told.
    for path in ("/schemas/sec.nope", "/tables/sec.s.nope", "/tables/sec.nope.t", "/volumes/sec.s.nope",
                 "/functions/sec.s.nope", "/models/sec.s.nope"):
        denied = uc(world, "eve@x.com", "GET", path)
        assert denied.status_code == 403 and "use catalog sec" in denied.json()["message"], path
    # Nor do the lists and the grants of what is in it, for names that exist and names that do not.
    for path, params in (("/tables", {"catalog_name": "sec", "schema_name": "s"}),
                         ("/tables", {"catalog_name": "sec", "schema_name": "nope"}),
                         ("/permissions/schema/sec.s", {}), ("/permissions/schema/sec.nope", {}),
                         ("/permissions/table/sec.s.t", {"principal": "eve@x.com"}),
                         ("/permissions/table/sec.s.nope", {"principal": "eve@x.com"}),
                         ("/effective-permissions/table/sec.s.t", {"principal": "eve@x.com"}),
                         ("/effective-permissions/table/sec.s.nope", {"principal": "eve@x.com"}),
                         ("/permissions/function/sec.s.nope", {})):
        denied = uc(world, "eve@x.com", "GET", path, params=params)
        assert denied.status_code == 403 and "use catalog sec" in denied.json()["message"], (path, params)
    made = uc(world, "eve@x.com", "POST", "/tables", json={
        "name": "x", "catalog_name": "sec", "schema_name": "nope", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": "file:///tmp/x", "columns": []})
    assert made.status_code == 403 and "use catalog sec" in made.json()["message"]
    assert uc(world, "eve@x.com", "DELETE", "/tables/sec.s.nope").status_code == 403
    assert uc(world, "eve@x.com", "GET", "/catalogs/nope").status_code == 404  # catalogs: as the reference
    assert uc(world, "eve@x.com", "POST", "/catalogs", json={"name": "mine"}).status_code == 403
    with pytest.raises(ForbiddenError):
        iceberg(world, "eve@x.com").load_table("s.t")
    raw = httpx.get(f"{world['server'].iceberg_uri}/v1/sec/namespaces",
                    headers={"Authorization": f"Bearer {world['tokens']['eve@x.com']}"})
    assert raw.status_code == 403 and raw.json()["error"]["type"] == "ForbiddenException"
    assert uc(world, "eve@x.com", "DELETE", "/catalogs/sec").status_code == 403
    assert uc(world, "eve@x.com", "GET", "/permissions/table/sec.s.t").status_code == 403


def test_a_grantee_reads_but_may_not_write_until_granted_modify(world: dict, owned: dict) -> None:
    assert grant(world, "olga@x.com", "catalog", "sec", "analysts", "USE_CATALOG").status_code == 200
    assert grant(world, "olga@x.com", "schema", "sec.s", "analysts", "USE_SCHEMA").status_code == 200
    assert grant(world, "olga@x.com", "table", "sec.s.t", "ann@x.com", "SELECT").status_code == 200
    ann = iceberg(world, "ann@x.com")
    assert sorted(ann.load_table("s.t").scan().to_arrow().column("id").to_pylist()) == [1, 2]
    assert ("s", "t") in ann.list_tables("s")
    with pytest.raises(ForbiddenError):
        ann.load_table("s.t").append(pa.table({"id": pa.array([3], pa.int64())}))
    with pytest.raises(ForbiddenError):
        ann.drop_table("s.t")
    assert uc(world, "ann@x.com", "GET", "/tables/sec.s.t").json()["full_name"] == "sec.s.t"
    mine = uc(world, "ann@x.com", "GET", "/permissions/table/sec.s.t", params={"principal": "ann@x.com"})
    assert mine.json() == {"privilege_assignments": [{"principal": "ann@x.com", "privileges": ["SELECT"]}]}
    assert uc(world, "ann@x.com", "GET", "/permissions/table/sec.s.t").status_code == 403  # others' grants

    assert grant(world, "olga@x.com", "table", "sec.s.t", "ann@x.com", "MODIFY").status_code == 200
    ann.load_table("s.t").append(pa.table({"id": pa.array([3], pa.int64())}))
    assert grant(world, "olga@x.com", "table", "sec.s.t", "ann@x.com", "SELECT", "MODIFY",
                 remove=True).status_code == 200
    with pytest.raises(ForbiddenError):
        ann.load_table("s.t")  # revoked: no inheritance from the catalog or schema grants


def test_each_client_reads_every_grant_in_its_own_spelling(world: dict, owned: dict) -> None:
    """The Databricks SDK and the OSS client call the same 2.1 path and parse different enums (USE_CATALOG, USE
    CATALOG), each dropping or refusing the other's: a grant made by either, or by the 2.0 API, reads back in the
    reader's own spelling."""
    import asyncio

    from unitycatalog.client import ApiClient, Configuration, GrantsApi
    from unitycatalog.client.models import SecurableType

    sdk = WorkspaceClient(host=world["server"].base_url, token=world["tokens"]["olga@x.com"])
    sdk.grants.update("catalog", "sec", changes=[PermissionsChange(principal="eve@x.com",
                                                                   add=[Privilege.USE_CATALOG])])
    assert grant(world, "olga@x.com", "catalog", "sec", "ann@x.com", "USE CATALOG", "CREATE SCHEMA").status_code == 200
    legacy = httpx.patch(f"{world['server'].base_url}/api/2.0/unity-catalog/permissions/catalog/sec", json={
        "changes": [{"principal": "analysts", "add": ["USAGE"]}]}, timeout=30,
        headers={"Authorization": f"Bearer {world['tokens']['olga@x.com']}"})
    assert legacy.status_code == 200 and {"principal": "analysts", "privileges": ["USAGE"]} in \
        legacy.json()["privilege_assignments"]  # 2.0 reads back what it wrote
    by_sdk = {a.principal: a.privileges for a in sdk.grants.get("catalog", "sec").privilege_assignments}
    assert by_sdk["eve@x.com"] == [Privilege.USE_CATALOG] and by_sdk["analysts"] == [Privilege.USE_CATALOG]
    assert by_sdk["ann@x.com"] == [Privilege.CREATE_SCHEMA, Privilege.USE_CATALOG]

    async def by_oss_client() -> dict[str, list[str]]:
        config = Configuration(host=f"{world['server'].base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization",
                             header_value=f"Bearer {world['tokens']['olga@x.com']}") as client:
            got = await GrantsApi(client).get(SecurableType.CATALOG, "sec")  # its models refuse USE_CATALOG
            return {a.principal: [p.value for p in a.privileges or []] for a in got.privilege_assignments or []}

    by_oss = asyncio.run(by_oss_client())
    assert by_oss["eve@x.com"] == by_oss["analysts"] == ["USE CATALOG"]
    assert by_oss["ann@x.com"] == ["CREATE SCHEMA", "USE CATALOG"]
    plain = uc(world, "olga@x.com", "GET", "/permissions/catalog/sec").json()["privilege_assignments"]
    assert {"principal": "eve@x.com", "privileges": ["USE CATALOG"]} in plain  # the 2.1 spec's enum
    for principal, privileges in (("eve@x.com", ["USE_CATALOG"]), ("ann@x.com", ["USE CATALOG", "CREATE SCHEMA"]),
                                  ("analysts", ["USAGE"])):
        assert grant(world, "olga@x.com", "catalog", "sec", principal, *privileges, remove=True).status_code == 200


def test_the_databricks_sdk_grants_and_bad_grants(world: dict, owned: dict) -> None:
    w = WorkspaceClient(host=world["server"].base_url, token=world["tokens"]["olga@x.com"])
    w.grants.update("schema", "sec.s", changes=[PermissionsChange(principal="eve@x.com", add=[Privilege.USE_SCHEMA])])
    assignments = {a.principal: a.privileges for a in w.grants.get("schema", "sec.s").privilege_assignments}
    assert assignments["eve@x.com"] == [Privilege.USE_SCHEMA]
    assert grant(world, "olga@x.com", "schema", "sec.s", "eve@x.com", "SELECT").status_code == 400  # not on a schema
    assert grant(world, "olga@x.com", "widget", "sec.s", "eve@x.com", "USAGE").status_code == 400
    assert grant(world, "olga@x.com", "table", "sec.s.t", "nobody@x.com", "SELECT").status_code == 400
    assert grant(world, "eve@x.com", "table", "sec.s.t", "eve@x.com", "SELECT").status_code == 403


def test_concurrent_grants_on_one_securable_both_land(world: dict, owned: dict) -> None:
    for n in range(6):
        run_cli(world["warehouse"], "user", "create", f"u{n}@x.com")
    barrier = threading.Barrier(6)
    results: list[int] = []

    def give(n: int) -> None:
        barrier.wait()
        results.append(grant(world, "olga@x.com", "table", "sec.s.t", f"u{n}@x.com", "SELECT").status_code)

    threads = [threading.Thread(target=give, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 6
    holders = {a["principal"] for a in uc(world, "olga@x.com", "GET", "/permissions/table/sec.s.t").json()[
        "privilege_assignments"]}
    assert {f"u{n}@x.com" for n in range(6)} <= holders


def test_a_revoked_token_stops_working_at_once(world: dict, owned: dict) -> None:
    token = run_cli(world["warehouse"], "token", "create", "eve@x.com").strip()
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{world['server'].base_url}/api/2.1/unity-catalog/catalogs", headers=headers).status_code == 200
    token_id = next(line.split("\t")[0] for line in run_cli(world["warehouse"], "token", "list").splitlines()[::-1]
                    if "eve@x.com" in line and "active" in line)
    run_cli(world["warehouse"], "token", "revoke", token_id)
    after = httpx.get(f"{world['server'].base_url}/api/2.1/unity-catalog/catalogs", headers=headers)
    assert after.status_code == 401 and after.json()["error_code"] == "UNAUTHENTICATED"


def test_a_service_principal_uses_oauth_client_credentials(world: dict, owned: dict) -> None:
    out = run_cli(world["warehouse"], "service-principal", "etl-bot")
    secret = next(line.split()[-1] for line in out.splitlines() if line.startswith("client secret"))
    assert grant(world, "olga@x.com", "catalog", "sec", "etl-bot", "USE_CATALOG").status_code == 200
    assert grant(world, "olga@x.com", "schema", "sec.s", "etl-bot", "USE_SCHEMA").status_code == 200
    assert grant(world, "olga@x.com", "table", "sec.s.t", "etl-bot", "SELECT").status_code == 200
    bot = RestCatalog("bot", uri=world["server"].iceberg_uri, warehouse="sec", credential=f"etl-bot:{secret}")
    assert len(bot.load_table("s.t").scan().to_arrow()) >= 2
    wrong = httpx.post(f"{world['server'].iceberg_uri}/v1/oauth/tokens", data={
        "grant_type": "client_credentials", "client_id": "etl-bot", "client_secret": "nope"})
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    # Its access token cannot be turned into a personal access token that would outlive it, and its revocation.
    access = httpx.post(f"{world['server'].iceberg_uri}/v1/oauth/tokens", data={
        "grant_type": "client_credentials", "client_id": "etl-bot", "client_secret": secret}).json()["access_token"]
    minted = httpx.post(f"{world['server'].base_url}/api/2.0/token/create", json={"comment": "forever"},
                        headers={"Authorization": f"Bearer {access}"})
    assert minted.status_code == 403 and "OAuth" in minted.json()["message"]


def test_who_am_i_and_table_credentials(world: dict, owned: dict) -> None:
    w = WorkspaceClient(host=world["server"].base_url, token=world["tokens"]["ann@x.com"])
    me = w.current_user.me()
    assert me.user_name == "ann@x.com" and "analysts" in {g.display for g in me.groups}
    assert uc(world, "ann@x.com", "GET", "/userinfo/me").json() == {"is_metastore_admin": False}
    assert uc(world, "admin", "GET", "/userinfo/me").json() == {"is_metastore_admin": True}
    assert uc(world, "ann@x.com", "GET", "/userinfo/mygroups").json() == {"group_name": ["account users", "analysts"]}

    table_id = uc(world, "olga@x.com", "GET", "/tables/sec.s.t").json()["table_id"]
    as_owner = httpx.post(f"{world['server'].base_url}/api/2.0/unity-catalog/temporary-table-credentials",
                          headers={"Authorization": f"Bearer {world['tokens']['olga@x.com']}"},
                          json={"table_id": table_id, "operation": "READ_WRITE"})
    assert as_owner.status_code == 200 and as_owner.json()["url"].startswith("file:")
    assert as_owner.json()["expiration_time"] > 0
    stranger = uc(world, "eve@x.com", "POST", "/temporary-table-credentials",
                  json={"table_id": table_id, "operation": "READ"})
    assert stranger.status_code == 403
    bad = uc(world, "olga@x.com", "POST", "/temporary-table-credentials", json={"table_id": table_id,
                                                                                "operation": "DELETE"})
    assert bad.status_code == 400
    for missing in ({"operation": "READ"}, {"table_id": 5, "operation": "READ"}):
        refused = uc(world, "olga@x.com", "POST", "/temporary-table-credentials", json=missing)
        assert refused.status_code == 400 and "table_id is required" in refused.json()["message"]
    outside = uc(world, "admin", "POST", "/temporary-path-credentials",
                 json={"url": "s3://bucket/path", "operation": "PATH_READ"})
    assert outside.status_code == 403 and "no external location" in outside.json()["message"]
    assert uc(world, "admin", "POST", "/storage-credentials", json={
        "name": "s3-role", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/r"}}).status_code == 200
    assert uc(world, "admin", "POST", "/external-locations", json={
        "name": "bucket", "url": "s3://bucket", "credential_name": "s3-role"}).status_code == 200
    cloud = uc(world, "admin", "POST", "/temporary-path-credentials",
               json={"url": "s3://bucket/path", "operation": "PATH_READ"})
    assert cloud.status_code == 501 and "s3.access-key-id" in cloud.json()["message"]  # names the setting
    assert uc(world, "ann@x.com", "POST", "/temporary-path-credentials",
              json={"url": "s3://bucket/path", "operation": "PATH_READ"}).status_code == 403


def test_sharing_securables_belong_to_their_owners(world: dict, owned: dict) -> None:
    assert uc(world, "admin", "POST", "/shares", json={"name": "adm"}).status_code == 200
    assert uc(world, "eve@x.com", "GET", "/shares/adm").status_code == 403
    assert "adm" not in [s["name"] for s in uc(world, "eve@x.com", "GET", "/shares").json().get("shares", [])]
    assert uc(world, "eve@x.com", "POST", "/shares", json={"name": "mine"}).status_code == 403
    assert grant(world, "admin", "metastore", owned["metastore_id"], "eve@x.com", "CREATE_SHARE").status_code == 200
    assert uc(world, "eve@x.com", "POST", "/shares", json={"name": "mine"}).json()["owner"] == "eve@x.com"
    no_select = uc(world, "eve@x.com", "PATCH", "/shares/mine", json={"updates": [
        {"action": "ADD", "data_object": {"name": "sec.s.t"}}]})
    # She may not use catalog sec: adding a table of it is refused alike whether the table exists or not.
    assert no_select.status_code == 403 and "use catalog sec" in no_select.json()["message"]
    for missing in ("sec.s.nope", "sec.nope.t"):
        probe = uc(world, "eve@x.com", "PATCH", "/shares/mine", json={"updates": [
            {"action": "ADD", "data_object": {"name": missing}}]})
        assert probe.status_code == 403 and probe.json()["message"] == no_select.json()["message"], missing
    # Added by an admin (who may use everything) it is still refused: the share's owner may not read it.
    by_admin = uc(world, "admin", "PATCH", "/shares/mine", json={"updates": [
        {"action": "ADD", "data_object": {"name": "sec.s.t"}}]})
    assert by_admin.status_code == 403 and "SELECT" in by_admin.json()["message"]
    assert uc(world, "admin", "POST", "/recipients", json={"name": "partner",
                                                          "authentication_type": "TOKEN"}).status_code == 200
    not_her_recipient = uc(world, "eve@x.com", "PATCH", "/shares/mine/permissions", json={"changes": [
        {"principal": "partner", "add": ["SELECT"]}]})
    assert not_her_recipient.status_code == 403


def test_users_manage_their_own_tokens_over_http(world: dict, owned: dict) -> None:
    w = WorkspaceClient(host=world["server"].base_url, token=world["tokens"]["ann@x.com"])
    created = w.tokens.create(comment="notebook", lifetime_seconds=3600)
    assert created.token_value and created.token_info.comment == "notebook"
    fresh = WorkspaceClient(host=world["server"].base_url, token=created.token_value)
    assert fresh.current_user.me().user_name == "ann@x.com"
    assert created.token_info.token_id in [t.token_id for t in w.tokens.list()]
    eve = WorkspaceClient(host=world["server"].base_url, token=world["tokens"]["eve@x.com"])
    assert created.token_info.token_id not in [t.token_id for t in eve.tokens.list()]
    with pytest.raises(ResourceDoesNotExist):
        eve.tokens.delete(created.token_info.token_id)  # not hers
    w.tokens.delete(created.token_info.token_id)
    gone = httpx.get(f"{world['server'].base_url}/api/2.1/unity-catalog/catalogs",
                     headers={"Authorization": f"Bearer {created.token_value}"})
    assert gone.status_code == 401
    # A token made with an expiring token expires no later than it.
    short = w.tokens.create(comment="short", lifetime_seconds=120)
    child = WorkspaceClient(host=world["server"].base_url, token=short.token_value).tokens.create(comment="child")
    assert child.token_info.expiry_time is not None and child.token_info.expiry_time <= short.token_info.expiry_time
    bad = httpx.post(f"{world['server'].base_url}/api/2.0/token/create", json={"lifetime_seconds": -5},
                     headers={"Authorization": f"Bearer {world['tokens']['ann@x.com']}"})
    assert bad.status_code == 400 and bad.json()["error_code"] == "INVALID_PARAMETER_VALUE"


def test_a_read_write_credential_needs_the_read_privilege_too(world: dict, owned: dict) -> None:
    """MODIFY "requires SELECT privilege also" (the 2.1 spec): a credential that reads and writes goes to a holder
    of both, never of the write privilege alone. So for paths (READ_FILES and WRITE_FILES) and volumes (READ_VOLUME
    and WRITE_VOLUME)."""
    landing = world["warehouse"].parent / "rw-landing"
    for path, body in (("/storage-credentials", {"name": "rw-cred",
                                                 "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/r"}}),
                       ("/external-locations", {"name": "rw-loc", "url": landing.as_uri(),
                                                "credential_name": "rw-cred"}),
                       ("/volumes", {"name": "rw_vol", "catalog_name": "sec", "schema_name": "s",
                                     "volume_type": "MANAGED"})):
        assert uc(world, "admin", "POST", path, json=body).status_code == 200, path
    table_id = uc(world, "olga@x.com", "GET", "/tables/sec.s.t").json()["table_id"]
    volume_id = uc(world, "admin", "GET", "/volumes/sec.s.rw_vol").json()["volume_id"]
    asks = [  # (the request, the securable, the write privilege, the read privilege)
        ("/temporary-table-credentials", {"table_id": table_id, "operation": "READ_WRITE"},
         ("table", "sec.s.t"), "MODIFY", "SELECT"),
        ("/temporary-path-credentials", {"url": f"{landing.as_uri()}/in", "operation": "PATH_READ_WRITE"},
         ("external_location", "rw-loc"), "WRITE_FILES", "READ_FILES"),
        ("/temporary-volume-credentials", {"volume_id": volume_id, "operation": "WRITE_VOLUME"},
         ("volume", "sec.s.rw_vol"), "WRITE_VOLUME", "READ_VOLUME"),
    ]
    granted = [("catalog", "sec", "USE_CATALOG"), ("schema", "sec.s", "USE_SCHEMA")]
    try:
        for kind, name, privilege in granted:
            assert grant(world, "admin", kind, name, "eve@x.com", privilege).status_code == 200
        for path, body, (kind, name), write, read in asks:
            granted.append((kind, name, write))
            assert grant(world, "admin", kind, name, "eve@x.com", write).status_code == 200
            refused = uc(world, "eve@x.com", "POST", path, json=body)
            assert refused.status_code == 403, (path, refused.text)
            assert f"{read} and {write}" in refused.json()["message"], (path, refused.text)
            granted.append((kind, name, read))
            assert grant(world, "admin", kind, name, "eve@x.com", read).status_code == 200
            allowed = uc(world, "eve@x.com", "POST", path, json=body)
            assert allowed.status_code == 200, (path, allowed.text)
    finally:  # eve is the other tests' stranger
        for kind, name, privilege in granted:
            grant(world, "admin", kind, name, "eve@x.com", privilege, remove=True)


def test_the_databricks_sdk_lists_privilege_assignments_a_page_at_a_time(world: dict, owned: dict) -> None:
    """The SDK's grants.list and grants.list_effective (Databricks' paginated getPermissions and
    getEffectivePermissions) read what grants.get and get_effective read."""
    from databricks.sdk.errors import InvalidParameterValue

    assert grant(world, "olga@x.com", "table", "sec.s.t", "analysts", "SELECT").status_code == 200
    try:
        olga = WorkspaceClient(host=world["server"].base_url, token=world["tokens"]["olga@x.com"])
        listed = {a.principal: [p.value for p in a.privileges or []] for a in olga.grants.list("table", "sec.s.t")}
        assert listed["analysts"] == ["SELECT"]
        got = olga.grants.get("table", "sec.s.t").privilege_assignments or []
        assert listed == {a.principal: [p.value for p in a.privileges or []] for a in got}
        only = list(olga.grants.list("table", "sec.s.t", principal="analysts", page_size=150))
        assert [a.principal for a in only] == ["analysts"]
        effective = list(olga.grants.list_effective("table", "sec.s.t", principal="ann@x.com"))
        assert "SELECT" in [p.privilege.value for a in effective for p in a.privileges or [] if p.privilege]
        with pytest.raises(InvalidParameterValue, match="at least 150"):
            list(olga.grants.list("table", "sec.s.t", page_size=10))
        stranger = uc(world, "eve@x.com", "GET", "/privilege-assignments/table/sec.s.t")
        assert stranger.status_code == 403
    finally:
        grant(world, "olga@x.com", "table", "sec.s.t", "analysts", "SELECT", remove=True)


def test_a_caller_who_may_not_use_a_schema_learns_no_table_names_in_it(world: dict, owned: dict) -> None:
    """USE_CATALOG without USE_SCHEMA: a table there is refused alike whether it exists or not, on both APIs (a 404
    for the missing one told which names exist); with USE_SCHEMA a missing table is a plain 404 again."""
    assert grant(world, "olga@x.com", "catalog", "sec", "eve@x.com", "USE_CATALOG").status_code == 200
    token = {"Authorization": f"Bearer {world['tokens']['eve@x.com']}"}
    base = f"{world['server'].iceberg_uri}/v1/sec/namespaces/s/tables"
    assert uc(world, "olga@x.com", "POST", "/volumes", json={
        "name": "files", "catalog_name": "sec", "schema_name": "s", "volume_type": "MANAGED"}).status_code == 200
    try:
        # Volumes, functions and models too: one refusal, in one wording, for names that exist and not.
        answers = {name: uc(world, "eve@x.com", "GET", f"/volumes/sec.s.{name}") for name in ("files", "nope")}
        assert {a.status_code for a in answers.values()} == {403}, {k: a.text for k, a in answers.items()}
        assert answers["files"].json()["message"] == answers["nope"].json()["message"]
        for path in ("/functions/sec.s.nope", "/models/sec.s.nope"):
            assert uc(world, "eve@x.com", "GET", path).json()["message"] == answers["nope"].json()["message"]
        for name in ("t", "nope"):
            for method in ("GET", "HEAD"):
                answer = httpx.request(method, f"{base}/{name}", headers=token, timeout=30)
                assert answer.status_code == 403, (method, name, answer.text)
            for path in (f"/{name}/credentials", f"/{name}/metrics"):
                body = {"report-type": "scan-report"} if path.endswith("metrics") else None
                answer = httpx.request("POST" if body else "GET", f"{base}{path}", headers=token, json=body,
                                       timeout=30)
                assert answer.status_code == 403, (path, answer.text)
            assert uc(world, "eve@x.com", "GET", f"/tables/sec.s.{name}").status_code == 403, name
            page = httpx.get(f"{world['server'].base_url}/ui/api/tables/sec.s.{name}", headers=token, timeout=30)
            assert page.status_code == 403, (name, page.text)
        assert grant(world, "olga@x.com", "schema", "sec.s", "eve@x.com", "USE_SCHEMA").status_code == 200
        assert httpx.get(f"{base}/nope", headers=token, timeout=30).status_code == 404
        refused = httpx.get(f"{base}/t", headers=token, timeout=30)  # no SELECT: the refusal says what is needed
        assert refused.status_code == 403 and "needs USE_CATALOG, USE_SCHEMA and SELECT" in refused.text
        page = httpx.get(f"{world['server'].base_url}/ui/api/tables/sec.s.t", headers=token, timeout=30)
        assert page.status_code == 403 and "SELECT" in page.text
        assert uc(world, "eve@x.com", "GET", "/tables/sec.s.nope").status_code == 404
        assert uc(world, "eve@x.com", "GET", "/volumes/sec.s.nope").status_code == 404
        no_read = uc(world, "eve@x.com", "GET", "/volumes/sec.s.files")
        assert no_read.status_code == 403 and "READ_VOLUME" in no_read.json()["message"]
    finally:
        grant(world, "olga@x.com", "schema", "sec.s", "eve@x.com", "USE_SCHEMA", remove=True)
        grant(world, "olga@x.com", "catalog", "sec", "eve@x.com", "USE_CATALOG", remove=True)


def test_an_owner_who_may_not_create_tables_is_told_why_a_rename_is_refused(world: dict, owned: dict) -> None:
    run_cli(world["warehouse"], "user", "create", "bob@x.com")
    world["tokens"]["bob@x.com"] = run_cli(world["warehouse"], "token", "create", "bob@x.com").strip()
    iceberg(world, "olga@x.com").create_table("s.renamable", SCHEMA)
    assert grant(world, "olga@x.com", "catalog", "sec", "bob@x.com", "USE_CATALOG").status_code == 200
    assert grant(world, "olga@x.com", "schema", "sec.s", "bob@x.com", "USE_SCHEMA").status_code == 200
    given = uc(world, "olga@x.com", "PATCH", "/tables/sec.s.renamable", json={"owner": "bob@x.com"})
    assert given.status_code == 200, given.text
    assert uc(world, "bob@x.com", "PATCH", "/tables/sec.s.renamable", json={"comment": "mine"}).status_code == 200
    refused = uc(world, "bob@x.com", "PATCH", "/tables/sec.s.renamable", json={"new_name": "elsewhere"})
    assert refused.status_code == 403 and "rename table" in refused.json()["message"]
    assert "CREATE_TABLE" in refused.json()["message"]  # what he lacks, as Iceberg's renameTable says it
    assert uc(world, "bob@x.com", "GET", "/tables/sec.s.renamable").json()["comment"] == "mine"
