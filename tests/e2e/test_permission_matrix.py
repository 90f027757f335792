"""The permission matrix: admin, owner, grantee and stranger against the endpoints of both APIs.

The owner (olga) holds the CREATE_* privileges on the metastore and made every object; the grantee (ann) holds
USE_CATALOG, USE_SCHEMA, SELECT on the tables, READ_FILES on the external location and a privilege on the
storage credential; the stranger (eve) holds nothing. Each row says, per role, whether the call is allowed
(a 2xx), denied (403), or not made (None: it would destroy what the other rows need).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, arco_server, run_cli

pytestmark = pytest.mark.timeout(300)
ROLES = ("admin", "olga@x.com", "ann@x.com", "eve@x.com")
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "type_json": "{}", "position": 0}]


def function_info(name: str) -> dict:
    return {"name": name, "catalog_name": "cat", "schema_name": "s", "data_type": "INT", "full_data_type": "int",
            "input_params": {"parameters": [{"name": "x", "type_text": "int", "type_name": "INT",
                                             "type_json": "{}", "position": 0}]},
            "routine_body": "SQL", "routine_definition": "x + 1", "parameter_style": "S", "is_deterministic": True,
            "sql_data_access": "CONTAINS_SQL", "is_null_call": False, "security_type": "DEFINER",
            "specific_name": name}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("matrix")
    warehouse = workdir / "warehouse"
    (workdir / "landing").mkdir()
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        tokens = {"admin": ARCO_TOKEN}
        for user in ROLES[1:]:
            run_cli(warehouse, "user", "create", user)
            tokens[user] = run_cli(warehouse, "token", "create", user).strip()

        def call(who: str, method: str, path: str, **kwargs: object) -> httpx.Response:
            return httpx.request(method, f"{server.base_url}{path}", timeout=30,
                                 headers={"Authorization": f"Bearer {tokens[who]}"}, **kwargs)  # type: ignore[arg-type]

        uc = "/api/2.1/unity-catalog"
        metastore = call("admin", "GET", f"{uc}/metastore_summary").json()["metastore_id"]
        ok = call("admin", "PATCH", f"{uc}/permissions/metastore/{metastore}", json={"changes": [
            {"principal": "olga@x.com", "add": ["CREATE_CATALOG", "CREATE_STORAGE_CREDENTIAL",
                                                "CREATE_EXTERNAL_LOCATION", "CREATE_SHARE", "CREATE_RECIPIENT",
                                                "CREATE_PROVIDER"]}]})
        assert ok.status_code == 200, ok.text
        # The reference server's name for the metastore it serves names this one too.
        by_word = call("admin", "GET", f"{uc}/permissions/metastore/metastore").json()["privilege_assignments"]
        assert by_word == call("admin", "GET", f"{uc}/permissions/metastore/{metastore}").json()[
            "privilege_assignments"] and by_word[0]["principal"] == "olga@x.com"
        made = [
            call("olga@x.com", "POST", f"{uc}/catalogs", json={"name": "cat"}),
            call("olga@x.com", "POST", f"{uc}/schemas", json={"name": "s", "catalog_name": "cat"}),
            call("olga@x.com", "POST", "/iceberg/v1/cat/namespaces/s/tables", json={"name": "ice", "schema": SCHEMA}),
            call("olga@x.com", "POST", f"{uc}/storage-credentials", json={
                "name": "cred", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/r"}}),
            call("olga@x.com", "POST", f"{uc}/external-locations", json={
                "name": "loc", "url": (workdir / "landing").as_uri(), "credential_name": "cred"}),
            # External tables live inside an external location on which their creator may create them.
            call("olga@x.com", "POST", f"{uc}/tables", json={
                "name": "t", "catalog_name": "cat", "schema_name": "s", "table_type": "EXTERNAL",
                "data_source_format": "DELTA", "columns": COLUMNS,
                "storage_location": (workdir / "landing" / "t").as_uri()}),
            call("olga@x.com", "POST", f"{uc}/shares", json={"name": "sh"}),
            call("olga@x.com", "POST", f"{uc}/volumes", json={"name": "vol", "catalog_name": "cat", "schema_name": "s",
                                                             "volume_type": "MANAGED"}),
            call("olga@x.com", "POST", f"{uc}/functions", json={"function_info": function_info("fn")}),
            call("olga@x.com", "POST", f"{uc}/models", json={"name": "m", "catalog_name": "cat", "schema_name": "s"}),
            call("olga@x.com", "POST", f"{uc}/recipients", json={"name": "r", "authentication_type": "TOKEN"}),
            call("olga@x.com", "POST", f"{uc}/providers", json={
                "name": "p", "recipient_profile_str": '{"endpoint": "http://127.0.0.1:9/", "bearerToken": "x"}'}),
        ]
        assert all(r.status_code == 200 for r in made), [r.text for r in made if r.status_code != 200]
        for kind, name, privileges in [("catalog", "cat", ["USE_CATALOG"]), ("schema", "cat.s", ["USE_SCHEMA"]),
                                       ("table", "cat.s.t", ["SELECT"]), ("table", "cat.s.ice", ["SELECT"]),
                                       ("storage_credential", "cred", ["READ_FILES"]),
                                       ("external_location", "loc", ["READ_FILES"]),
                                       ("volume", "cat.s.vol", ["READ_VOLUME"]), ("function", "cat.s.fn", ["EXECUTE"]),
                                       ("registered_model", "cat.s.m", ["EXECUTE"])]:
            granted = call("olga@x.com", "PATCH", f"{uc}/permissions/{kind}/{name}", json={"changes": [
                {"principal": "ann@x.com", "add": privileges}]})
            assert granted.status_code == 200, granted.text
        ice_id = call("admin", "GET", f"{uc}/tables/cat.s.ice").json()["table_id"]
        yield {"call": call, "metastore": metastore, "ice_id": ice_id, "landing": (workdir / "landing").as_uri()}


UC = "/api/2.1/unity-catalog"
A, D = True, False  # allowed, denied
MATRIX = [
    # name, method, path, json body, (admin, owner, grantee, stranger)
    ("get catalog", "GET", f"{UC}/catalogs/cat", None, (A, A, A, D)),
    ("update catalog comment", "PATCH", f"{UC}/catalogs/cat", {"comment": "c"}, (A, A, D, D)),
    ("get schema", "GET", f"{UC}/schemas/cat.s", None, (A, A, A, D)),
    ("update schema comment", "PATCH", f"{UC}/schemas/cat.s", {"comment": "c"}, (A, A, D, D)),
    ("create schema", "POST", f"{UC}/schemas", {"catalog_name": "cat", "name": "n_{role}"}, (A, A, D, D)),
    ("get table", "GET", f"{UC}/tables/cat.s.t", None, (A, A, A, D)),
    ("update table comment", "PATCH", f"{UC}/tables/cat.s.t", {"comment": "c"}, (A, A, D, D)),
    ("create table", "POST", f"{UC}/tables", {"name": "x_{role}", "catalog_name": "cat", "schema_name": "s",
                                              "table_type": "MANAGED", "data_source_format": "DELTA",
                                              "columns": COLUMNS}, (A, A, D, D)),
    ("delete table", "DELETE", f"{UC}/tables/cat.s.t", None, (None, None, D, D)),
    ("delete schema", "DELETE", f"{UC}/schemas/cat.s", None, (None, None, D, D)),
    ("delete catalog", "DELETE", f"{UC}/catalogs/cat", None, (None, None, D, D)),
    ("create catalog", "POST", f"{UC}/catalogs", {"name": "c_{role}"}, (A, A, D, D)),
    ("read all grants on a table", "GET", f"{UC}/permissions/table/cat.s.t", None, (A, A, D, D)),
    # eve may not use catalog cat: even her own grants there are refused, alike for names that exist and not.
    ("read own grants on a table", "GET", f"{UC}/permissions/table/cat.s.t?principal={{email}}", None, (A, A, A, D)),
    ("read own grants on no table", "GET", f"{UC}/permissions/table/cat.s.nope?principal={{email}}", None,
     (None, None, None, D)),
    ("grant on a table", "PATCH", f"{UC}/permissions/table/cat.s.t",
     {"changes": [{"principal": "ann@x.com", "add": ["SELECT"]}]}, (A, A, D, D)),
    ("get storage credential", "GET", f"{UC}/storage-credentials/cred", None, (A, A, A, D)),
    ("update storage credential", "PATCH", f"{UC}/storage-credentials/cred", {"comment": "c"}, (A, A, D, D)),
    ("delete storage credential", "DELETE", f"{UC}/storage-credentials/cred", None, (None, None, D, D)),
    ("get external location", "GET", f"{UC}/external-locations/loc", None, (A, A, A, D)),
    ("update external location", "PATCH", f"{UC}/external-locations/loc", {"comment": "c"}, (A, A, D, D)),
    ("delete external location", "DELETE", f"{UC}/external-locations/loc", None, (None, None, D, D)),
    ("list files", "GET", f"{UC}/files?url={{landing}}", None, (A, A, A, D)),
    ("get share", "GET", f"{UC}/shares/sh", None, (A, A, D, D)),
    ("share permissions", "GET", f"{UC}/shares/sh/permissions", None, (A, A, D, D)),
    ("delete share", "DELETE", f"{UC}/shares/sh", None, (None, None, D, D)),
    ("get recipient", "GET", f"{UC}/recipients/r", None, (A, A, D, D)),
    ("recipient share permissions", "GET", f"{UC}/recipients/r/share-permissions", None, (A, A, D, D)),
    ("rotate recipient token", "POST", f"{UC}/recipients/r/rotate-token",
     {"existing_token_expire_in_seconds": 3600}, (A, A, D, D)),
    ("get provider", "GET", f"{UC}/providers/p", None, (A, A, D, D)),
    ("get metastore", "GET", f"{UC}/metastores/{{metastore}}", None, (A, D, D, D)),
    ("update metastore", "PATCH", f"{UC}/metastores/{{metastore}}", {"delta_sharing_scope": "INTERNAL"},
     (A, D, D, D)),
    ("assign metastore", "PUT", f"{UC}/workspaces/7/metastore", {"metastore_id": "{metastore}",
                                                                 "default_catalog_name": "main"}, (A, D, D, D)),
    ("metastore summary", "GET", f"{UC}/metastore_summary", None, (A, A, A, A)),
    ("read table credentials", "POST", f"{UC}/temporary-table-credentials",
     {"table_id": "{ice_id}", "operation": "READ"}, (A, A, A, D)),
    ("write table credentials", "POST", f"{UC}/temporary-table-credentials",
     {"table_id": "{ice_id}", "operation": "READ_WRITE"}, (A, A, D, D)),
    ("iceberg list namespaces", "GET", "/iceberg/v1/cat/namespaces", None, (A, A, A, D)),
    ("iceberg load table", "GET", "/iceberg/v1/cat/namespaces/s/tables/ice", None, (A, A, A, D)),
    ("iceberg plan table scan", "POST", "/iceberg/v1/cat/namespaces/s/tables/ice/plan", {}, (A, A, A, D)),
    ("iceberg commit", "POST", "/iceberg/v1/cat/namespaces/s/tables/ice",
     {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "{role}"}}]}, (A, A, D, D)),
    ("iceberg create table", "POST", "/iceberg/v1/cat/namespaces/s/tables",
     {"name": "i_{role}", "schema": SCHEMA}, (A, A, D, D)),
    ("iceberg drop table", "DELETE", "/iceberg/v1/cat/namespaces/s/tables/ice", None, (None, None, D, D)),
    ("create staging table", "POST", f"{UC}/staging-tables", {"name": "st_{role}", "catalog_name": "cat",
                                                              "schema_name": "s"}, (A, A, D, D)),
    ("create storage credential", "POST", f"{UC}/storage-credentials",
     {"name": "c_{role}", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/x"}}, (A, A, D, D)),
    ("create share", "POST", f"{UC}/shares", {"name": "s_{role}"}, (A, A, D, D)),
    ("create recipient", "POST", f"{UC}/recipients", {"name": "r_{role}", "authentication_type": "TOKEN"},
     (A, A, D, D)),
    ("create provider", "POST", f"{UC}/providers", {
        "name": "p_{role}", "recipient_profile_str": '{"endpoint": "http://127.0.0.1:9/", "bearerToken": "x"}'},
     (A, A, D, D)),
    ("share permissions update", "PATCH", f"{UC}/shares/sh/permissions",
     {"changes": [{"principal": "r", "add": ["SELECT"]}]}, (A, A, D, D)),
    ("my info", "GET", f"{UC}/userinfo/me", None, (A, A, A, A)),
    ("my groups", "GET", f"{UC}/userinfo/mygroups", None, (A, A, A, A)),
    ("current metastore assignment", "GET", f"{UC}/current-metastore-assignment", None, (A, A, A, A)),
    ("list metastores", "GET", f"{UC}/metastores", None, (A, D, D, D)),
    ("iceberg config", "GET", "/iceberg/v1/config?warehouse=cat", None, (A, A, A, D)),
    ("iceberg namespace properties", "POST", "/iceberg/v1/cat/namespaces/s/properties", {"updates": {"k": "v"}},
     (A, A, D, D)),
    ("iceberg create namespace", "POST", "/iceberg/v1/cat/namespaces", {"namespace": ["ns_{role}"]}, (A, A, D, D)),
    ("iceberg table metrics", "POST", "/iceberg/v1/cat/namespaces/s/tables/ice/metrics",
     {"report-type": "scan-report", "table-name": "ice", "snapshot-id": -1, "filter": True, "schema-id": 0,
      "projected-field-ids": [], "projected-field-names": [], "metrics": {}}, (A, A, A, D)),
    ("iceberg rename table", "POST", "/iceberg/v1/cat/tables/rename",
     {"source": {"namespace": ["s"], "name": "ice"}, "destination": {"namespace": ["s"], "name": "ice2"}},
     (None, None, D, D)),
    ("iceberg drop namespace", "DELETE", "/iceberg/v1/cat/namespaces/s", None, (None, None, D, D)),
    ("get volume", "GET", f"{UC}/volumes/cat.s.vol", None, (A, A, A, D)),
    ("update volume comment", "PATCH", f"{UC}/volumes/cat.s.vol", {"comment": "c"}, (A, A, D, D)),
    ("create managed volume", "POST", f"{UC}/volumes", {"name": "v_{role}", "catalog_name": "cat",
                                                        "schema_name": "s", "volume_type": "MANAGED"}, (A, A, D, D)),
    ("create external volume", "POST", f"{UC}/volumes", {"name": "ev_{role}", "catalog_name": "cat",
                                                         "schema_name": "s", "volume_type": "EXTERNAL",
                                                         "storage_location": "{landing}/ev_{role}"}, (A, A, D, D)),
    ("delete volume", "DELETE", f"{UC}/volumes/cat.s.vol", None, (None, None, D, D)),
    ("read grants on a volume", "GET", f"{UC}/permissions/volume/cat.s.vol", None, (A, A, D, D)),
    ("grant on a volume", "PATCH", f"{UC}/permissions/volume/cat.s.vol",
     {"changes": [{"principal": "ann@x.com", "add": ["READ_VOLUME"]}]}, (A, A, D, D)),
    ("get function", "GET", f"{UC}/functions/cat.s.fn", None, (A, A, A, D)),
    ("create function", "POST", f"{UC}/functions", {"function_info": function_info("f_{role}")}, (A, A, D, D)),
    ("delete function", "DELETE", f"{UC}/functions/cat.s.fn", None, (None, None, D, D)),
    ("get registered model", "GET", f"{UC}/models/cat.s.m", None, (A, A, A, D)),
    ("update registered model", "PATCH", f"{UC}/models/cat.s.m", {"comment": "c"}, (A, A, D, D)),
    ("create registered model", "POST", f"{UC}/models", {"name": "m_{role}", "catalog_name": "cat",
                                                         "schema_name": "s"}, (A, A, D, D)),
    ("create model version", "POST", f"{UC}/models/versions", {"model_name": "m", "catalog_name": "cat",
                                                               "schema_name": "s", "source": "runs:/1"}, (A, A, D, D)),
    ("list model versions", "GET", f"{UC}/models/cat.s.m/versions", None, (A, A, A, D)),
    ("delete registered model", "DELETE", f"{UC}/models/cat.s.m?force=true", None, (None, None, D, D)),
    ("grant on a registered model", "PATCH", f"{UC}/permissions/registered_model/cat.s.m",
     {"changes": [{"principal": "ann@x.com", "add": ["EXECUTE"]}]}, (A, A, D, D)),
    ("everyone's effective permissions", "GET", f"{UC}/effective-permissions/table/cat.s.t", None, (A, A, D, D)),
    ("own effective permissions", "GET", f"{UC}/effective-permissions/table/cat.s.t?principal={{email}}", None,
     (A, A, A, D)),
    ("table exists", "GET", f"{UC}/tables/cat.s.t/exists", None, (A, A, A, D)),
]

# List endpoints answer everyone, showing each caller only what it may see: (list path, key, item).
VISIBILITY = [
    ("catalogs", f"{UC}/catalogs", "catalogs", "name", "cat", (A, A, A, D)),
    ("schemas", f"{UC}/schemas?catalog_name=cat", "schemas", "name", "s", (A, A, A, None)),
    ("tables", f"{UC}/tables?catalog_name=cat&schema_name=s", "tables", "name", "t", (A, A, A, None)),
    ("table summaries", f"{UC}/table-summaries?catalog_name=cat", "tables", "full_name", "cat.s.t", (A, A, A, D)),
    ("storage credentials", f"{UC}/storage-credentials", "storage_credentials", "name", "cred", (A, A, A, D)),
    ("external locations", f"{UC}/external-locations", "external_locations", "name", "loc", (A, A, A, D)),
    ("shares", f"{UC}/shares", "shares", "name", "sh", (A, A, D, D)),
    ("recipients", f"{UC}/recipients", "recipients", "name", "r", (A, A, D, D)),
    ("providers", f"{UC}/providers", "providers", "name", "p", (A, A, D, D)),
    ("iceberg tables", "/iceberg/v1/cat/namespaces/s/tables", "identifiers", "name", "ice", (A, A, A, None)),
    ("volumes", f"{UC}/volumes?catalog_name=cat&schema_name=s", "volumes", "name", "vol", (A, A, A, None)),
    ("functions", f"{UC}/functions?catalog_name=cat&schema_name=s", "functions", "name", "fn", (A, A, A, None)),
    ("registered models", f"{UC}/models?catalog_name=cat&schema_name=s", "registered_models", "name", "m",
     (A, A, A, None)),
    ("all registered models", f"{UC}/models", "registered_models", "full_name", "cat.s.m", (A, A, A, D)),
]


def _fill(value: object, **names: str) -> object:
    if isinstance(value, str):
        for key, replacement in names.items():
            value = value.replace("{" + key + "}", replacement)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, **names) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, **names) for v in value]
    return value


@pytest.mark.parametrize(("name", "method", "path", "body", "expected"), MATRIX, ids=[row[0] for row in MATRIX])
def test_permission_matrix(setup: dict, name: str, method: str, path: str, body: object,
                           expected: tuple[bool | None, ...]) -> None:
    for role, allowed in zip(ROLES, expected, strict=True):
        if allowed is None:
            continue
        names = {"role": role.split("@")[0], "email": role, "metastore": setup["metastore"], "ice_id": setup["ice_id"],
                 "landing": setup["landing"]}
        response = setup["call"](role, method, _fill(path, **names), json=_fill(body, **names))
        if allowed:
            assert 200 <= response.status_code < 300, (role, response.status_code, response.text)
        else:
            assert response.status_code == 403, (role, response.status_code, response.text)


@pytest.mark.parametrize(("name", "path", "key", "field", "item", "expected"), VISIBILITY,
                         ids=[row[0] for row in VISIBILITY])
def test_lists_show_only_what_each_caller_may_see(setup: dict, name: str, path: str, key: str, field: str,
                                                  item: str, expected: tuple[bool | None, ...]) -> None:
    for role, visible in zip(ROLES, expected, strict=True):
        if visible is None:  # the caller may not even use the parent: the list itself is refused
            assert setup["call"](role, "GET", path).status_code == 403, role
            continue
        response = setup["call"](role, "GET", path)
        assert response.status_code == 200, (role, response.text)
        names = [entry.get(field) for entry in response.json().get(key, [])]
        assert (item in names) == visible, (role, names)
