"""Volumes, functions, registered models and model versions, effective permissions and tables.exists, through
databricks-sdk and unitycatalog-client against a real ``arco serve``.

Grants on the new securables and who may do what are in test_permission_matrix too; storage rules for volumes in
tests/unit/catalog/test_locations.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import BadRequest, NotFound, PermissionDenied, ResourceConflict
from databricks.sdk.service.catalog import (
    AwsIamRoleRequest,
    ColumnTypeName,
    CreateFunction,
    CreateFunctionParameterStyle,
    CreateFunctionRoutineBody,
    CreateFunctionSecurityType,
    CreateFunctionSqlDataAccess,
    FunctionParameterInfo,
    FunctionParameterInfos,
    PermissionsChange,
    Privilege,
    VolumeType,
)

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir: Path = tmp_path_factory.mktemp("uc-objects")
    warehouse = workdir / "warehouse"
    landing = workdir / "landing"
    landing.mkdir()
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        tokens = {}
        for user in ("ann@x.com", "bob@x.com"):
            run_cli(warehouse, "user", "create", user)
            tokens[user] = run_cli(warehouse, "token", "create", user).strip()
        run_cli(warehouse, "group", "create", "analysts", "--member", "ann@x.com")
        w = WorkspaceClient(host=server.base_url, token=ARCO_TOKEN)
        w.storage_credentials.create(name="cred", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::1:role/r"))
        w.external_locations.create(name="landing", url=landing.as_uri(), credential_name="cred")
        w.catalogs.create(name="lab")
        w.schemas.create(name="s", catalog_name="lab")
        yield {"server": server, "w": w, "warehouse": warehouse, "landing": landing, "tokens": tokens,
               "as": lambda user: WorkspaceClient(host=server.base_url, token=tokens[user])}


def uc(server: RunningServer, method: str, path: str, token: str = ARCO_TOKEN, **kwargs: object) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                         headers={"Authorization": f"Bearer {token}"}, timeout=30, **kwargs)  # type: ignore[arg-type]


def files_under(url: str) -> list[Path]:
    root = Path(url.removeprefix("file://"))
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_managed_and_external_volumes_with_the_databricks_sdk(env: dict) -> None:
    w, landing = env["w"], env["landing"]
    managed = w.volumes.create(catalog_name="lab", schema_name="s", name="Raw", volume_type=VolumeType.MANAGED,
                               comment="landing zone")
    assert (managed.full_name, managed.volume_type, managed.owner, managed.comment) == (
        "lab.s.raw", VolumeType.MANAGED, "admin", "landing zone")
    assert managed.volume_id and managed.created_at and managed.storage_location
    assert managed.storage_location.startswith((env["warehouse"]).as_uri()) and managed.volume_id.replace("-", "") \
        in managed.storage_location
    external = w.volumes.create(catalog_name="lab", schema_name="s", name="ext", volume_type=VolumeType.EXTERNAL,
                                storage_location=(landing / "vol").as_uri())
    assert external.storage_location == (landing / "vol").as_uri()
    assert [v.name for v in w.volumes.list(catalog_name="lab", schema_name="s", max_results=1)] == ["ext", "raw"]
    assert w.volumes.read("LAB.S.RAW").volume_id == managed.volume_id
    # storage governance: no volume inside or around another's storage, none outside external locations
    for location in [(landing / "vol" / "inner").as_uri(), landing.as_uri(), managed.storage_location,
                     (env["warehouse"] / "x").as_uri()]:
        with pytest.raises(BadRequest):
            w.volumes.create(catalog_name="lab", schema_name="s", name="bad", volume_type=VolumeType.EXTERNAL,
                             storage_location=location)
    inside = uc(env["server"], "POST", "/tables", json={  # nor a table inside a volume
        "name": "t", "catalog_name": "lab", "schema_name": "s", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "columns": [], "storage_location": (landing / "vol" / "t").as_uri()})
    assert inside.status_code == 400 and "volume ext" in inside.text, inside.text
    with pytest.raises(ResourceConflict):
        w.volumes.create(catalog_name="lab", schema_name="s", name="raw", volume_type=VolumeType.MANAGED)
    renamed = w.volumes.update("lab.s.raw", new_name="bronze", comment="renamed")
    assert (renamed.full_name, renamed.comment, renamed.volume_id) == ("lab.s.bronze", "renamed", managed.volume_id)
    with pytest.raises(NotFound):
        w.volumes.read("lab.s.raw")
    # a managed volume's files go with it; an external volume's stay
    managed_dir = Path(managed.storage_location.removeprefix("file://"))
    managed_dir.mkdir(parents=True)
    (managed_dir / "a.bin").write_bytes(b"x")
    (landing / "vol").mkdir()
    (landing / "vol" / "b.bin").write_bytes(b"y")
    in_use = uc(env["server"], "DELETE", "/external-locations/landing")  # an external volume lives in it
    assert in_use.status_code == 400 and "external volume(s) ext" in in_use.json()["message"], in_use.text
    w.volumes.delete("lab.s.bronze")
    w.volumes.delete("lab.s.ext")
    assert files_under(managed.storage_location) == []
    assert (landing / "vol" / "b.bin").exists()
    assert list(w.volumes.list(catalog_name="lab", schema_name="s")) == []


def test_schema_with_volumes_drops_only_with_force_and_renames_keep_them(env: dict) -> None:
    w = env["w"]
    w.catalogs.create(name="drops")
    w.schemas.create(name="d", catalog_name="drops")
    w.volumes.create(catalog_name="drops", schema_name="d", name="v", volume_type=VolumeType.MANAGED)
    with pytest.raises(BadRequest):
        w.schemas.delete("drops.d")
    w.schemas.update("drops.d", new_name="e")
    w.catalogs.update("drops", new_name="drops2")
    assert w.volumes.read("drops2.e.v").full_name == "drops2.e.v"
    w.schemas.delete("drops2.e", force=True)
    w.schemas.create(name="e", catalog_name="drops2")
    assert list(w.volumes.list(catalog_name="drops2", schema_name="e")) == []  # a new schema starts empty


def _function(name: str, **changes: object) -> CreateFunction:
    fields = dict(
        name=name, catalog_name="lab", schema_name="s",
        input_params=FunctionParameterInfos(parameters=[FunctionParameterInfo(
            name="x", type_text="int", type_name=ColumnTypeName.INT, position=0, type_json='{"type":"int"}')]),
        data_type=ColumnTypeName.INT, full_data_type="int", routine_body=CreateFunctionRoutineBody.SQL,
        routine_definition="x + 1", parameter_style=CreateFunctionParameterStyle.S, is_deterministic=True,
        sql_data_access=CreateFunctionSqlDataAccess.CONTAINS_SQL, is_null_call=False,
        security_type=CreateFunctionSecurityType.DEFINER, specific_name=name, comment="adds one")
    fields.update(changes)
    return CreateFunction(**fields)  # type: ignore[arg-type]


def test_functions_with_the_databricks_sdk(env: dict) -> None:
    w = env["w"]
    made = w.functions.create(_function("Inc"))
    assert (made.full_name, made.routine_definition, made.data_type, made.owner) == ("lab.s.inc", "x + 1",
                                                                                     ColumnTypeName.INT, "admin")
    assert made.input_params.parameters[0].name == "x" and made.function_id and made.is_deterministic is True
    w.functions.create(_function("py", routine_body=CreateFunctionRoutineBody.EXTERNAL, external_language="PYTHON",
                                 sql_data_access=CreateFunctionSqlDataAccess.NO_SQL, routine_definition="return x"))
    assert [f.name for f in w.functions.list(catalog_name="lab", schema_name="s", max_results=1)] == ["inc", "py"]
    assert w.functions.get("lab.s.py").external_language == "PYTHON"
    with pytest.raises(ResourceConflict):
        w.functions.create(_function("inc"))
    with pytest.raises(BadRequest):  # EXTERNAL needs external_language
        w.functions.create(_function("bad", routine_body=CreateFunctionRoutineBody.EXTERNAL,
                                     sql_data_access=CreateFunctionSqlDataAccess.NO_SQL))
    raw = _function("raw").as_dict()
    for key, value in [("is_deterministic", None), ("is_deterministic", "yes"), ("data_type", "WORD"),
                       ("routine_body", "JAVA"), ("input_params", {"parameters": [{"name": "x"}]}),
                       ("name", "a.b"), ("specific_name", 3)]:
        body = {k: v for k, v in raw.items() if k != key} if value is None else {**raw, key: value}
        response = uc(env["server"], "POST", "/functions", json={"function_info": body})
        assert response.status_code == 400 and response.json()["error_code"] == "INVALID_PARAMETER_VALUE", (key,
                                                                                                          response.text)
    assert uc(env["server"], "POST", "/functions", content=b"{not json").status_code == 400
    assert [f.name for f in w.functions.list(catalog_name="lab", schema_name="s")] == ["inc", "py"]
    w.functions.delete("lab.s.py")
    with pytest.raises(NotFound):
        w.functions.get("lab.s.py")


def test_registered_models_and_versions_with_both_clients(env: dict) -> None:
    w, server = env["w"], env["server"]
    model = w.registered_models.create(catalog_name="lab", schema_name="s", name="Churn", comment="v1")
    assert (model.full_name, model.owner, model.comment) == ("lab.s.churn", "admin", "v1")
    assert model.storage_location and model.storage_location.startswith(env["warehouse"].as_uri())
    from unitycatalog.client import ApiClient, Configuration, ModelVersionsApi
    from unitycatalog.client.models import CreateModelVersion, FinalizeModelVersion

    async def run() -> tuple:
        config = Configuration(host=f"{server.base_url}/api/2.1/unity-catalog")
        async with ApiClient(config, header_name="Authorization", header_value=f"Bearer {ARCO_TOKEN}") as client:
            api = ModelVersionsApi(client)
            first = await api.create_model_version(CreateModelVersion(
                model_name="churn", catalog_name="lab", schema_name="s", source="runs:/1/model", run_id="r1"))
            second = await api.create_model_version(CreateModelVersion(
                model_name="churn", catalog_name="lab", schema_name="s", source="runs:/2/model"))
            done = await api.finalize_model_version("lab.s.churn", 1, FinalizeModelVersion(full_name="lab.s.churn",
                                                                                            version=1))
            listed = await api.list_model_versions("lab.s.churn", max_results=1)
            return first, second, done, listed

    first, second, done, listed = asyncio.run(run())
    assert (first.version, first.status.value, first.run_id) == (1, "PENDING_REGISTRATION", "r1")
    assert first.storage_location == f"{model.storage_location}/versions/1" and second.version == 2
    assert done.status.value == "READY" and listed.next_page_token
    again = uc(server, "PATCH", "/models/lab.s.churn/versions/1/finalize", json={"full_name": "lab.s.churn",
                                                                                 "version": 1})
    assert again.status_code == 400, again.text  # only a pending version can be finalized
    for path in ("/models/lab.s.churn", "/models/lab.s.churn/versions/1"):  # as the reference: nothing to update
        empty = uc(server, "PATCH", path, json={})
        assert empty.status_code == 400 and empty.json()["message"] == "No updated fields defined.", path
    assert uc(server, "GET", "/models/lab.s.churn/versions", params={"page_token": "1"}).json()[
        "model_versions"][0]["version"] == 2  # the reference's token: the last version listed
    assert [v.version for v in w.model_versions.list("lab.s.churn")] == [1, 2]
    assert w.model_versions.update("lab.s.churn", 2, comment="second").comment == "second"
    assert w.model_versions.get("lab.s.churn", 2).source == "runs:/2/model"
    version_dir = Path(second.storage_location.removeprefix("file://"))
    version_dir.mkdir(parents=True)
    (version_dir / "model.pkl").write_bytes(b"m")
    w.model_versions.delete("lab.s.churn", 2)
    assert not (version_dir / "model.pkl").exists()
    with pytest.raises(NotFound):
        w.model_versions.get("lab.s.churn", 2)
    third = uc(server, "POST", "/models/versions", json={"model_name": "churn", "catalog_name": "lab",
                                                         "schema_name": "s", "source": "s3://x"}).json()
    assert third["version"] == 3  # numbers are never reused
    assert uc(server, "POST", "/models/versions", json={"model_name": "churn", "catalog_name": "lab",
                                                        "schema_name": "s"}).status_code == 400  # source required
    assert w.registered_models.update("lab.s.churn", new_name="attrition").full_name == "lab.s.attrition"
    assert [m.full_name for m in w.registered_models.list()] == ["lab.s.attrition"]
    assert [m.full_name for m in w.registered_models.list(catalog_name="lab", schema_name="s")] == ["lab.s.attrition"]
    refused = uc(server, "DELETE", "/models/lab.s.attrition")
    assert refused.status_code == 400, refused.text  # versions left
    assert uc(server, "DELETE", "/models/lab.s.attrition?force=true").status_code == 200
    with pytest.raises(NotFound):
        w.registered_models.get("lab.s.attrition")


def test_effective_permissions_report_direct_and_group_grants(env: dict) -> None:
    w, server = env["w"], env["server"]
    w.grants.update("catalog", "lab", changes=[PermissionsChange(principal="ann@x.com", add=[Privilege.USE_CATALOG]),
                                               PermissionsChange(principal="analysts",
                                                                 add=[Privilege.USE_CATALOG, Privilege.CREATE_SCHEMA])])
    effective = w.grants.get_effective("catalog", "lab")
    by_principal = {a.principal: sorted(p.privilege.value for p in a.privileges)
                    for a in effective.privilege_assignments}
    assert by_principal == {"analysts": ["CREATE_SCHEMA", "USE_CATALOG"], "ann@x.com": ["USE_CATALOG"]}
    assert all(p.inherited_from_type is None and p.inherited_from_name is None
               for a in effective.privilege_assignments for p in a.privileges)
    ann = env["as"]("ann@x.com")
    mine = ann.grants.get_effective("catalog", "lab", principal="ann@x.com")
    assert {a.principal for a in mine.privilege_assignments} == {"ann@x.com", "analysts"}  # through her group
    with pytest.raises(PermissionDenied):
        ann.grants.get_effective("catalog", "lab")  # everyone's: admins and owners only
    with pytest.raises(PermissionDenied):
        env["as"]("bob@x.com").grants.get_effective("catalog", "lab", principal="ann@x.com")
    assert not env["as"]("bob@x.com").grants.get_effective("catalog", "lab", principal="bob@x.com") \
        .privilege_assignments
    assert uc(server, "GET", "/effective-permissions/catalog/lab?max_results=10").status_code == 400
    old = httpx.get(f"{server.base_url}/api/2.0/unity-catalog/effective-permissions/catalog/lab",
                    headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert old.status_code == 200 and len(old.json()["privilege_assignments"]) == 2
    with pytest.raises(NotFound):
        w.grants.get_effective("catalog", "nope")
    # grants and effective permissions on the new securable types
    w.volumes.create(catalog_name="lab", schema_name="s", name="shared", volume_type=VolumeType.MANAGED)
    w.grants.update("volume", "lab.s.shared", changes=[PermissionsChange(principal="analysts",
                                                                         add=[Privilege.READ_VOLUME])])
    assert [a.principal for a in w.grants.get("volume", "lab.s.shared").privilege_assignments] == ["analysts"]
    on_volume = ann.grants.get_effective("VOLUME", "lab.s.shared", principal="ann@x.com")
    assert [(a.principal, [p.privilege for p in a.privileges]) for a in on_volume.privilege_assignments] == [
        ("analysts", [Privilege.READ_VOLUME])]
    with pytest.raises(BadRequest):
        w.grants.update("volume", "lab.s.shared", changes=[PermissionsChange(principal="ann@x.com",
                                                                             add=[Privilege.SELECT])])


def test_table_exists(env: dict) -> None:
    w, server = env["w"], env["server"]
    made = uc(server, "POST", "/tables", json={"name": "t", "catalog_name": "lab", "schema_name": "s",
                                               "table_type": "MANAGED", "data_source_format": "DELTA",
                                               "columns": []})
    assert made.status_code == 200, made.text
    assert w.tables.exists("lab.s.t").table_exists is True
    assert w.tables.exists("LAB.S.T").table_exists is True
    assert w.tables.exists("lab.s.none").table_exists is False
    with pytest.raises(NotFound):
        w.tables.exists("lab.nope.t")
    with pytest.raises(BadRequest):
        w.tables.exists("lab.t")
    bob = env["as"]("bob@x.com")
    with pytest.raises(PermissionDenied):
        bob.tables.exists("lab.s.t")
    w.grants.update("catalog", "lab", changes=[PermissionsChange(principal="bob@x.com", add=[Privilege.USE_CATALOG])])
    w.grants.update("schema", "lab.s", changes=[PermissionsChange(principal="bob@x.com", add=[Privilege.USE_SCHEMA])])
    assert bob.tables.exists("lab.s.none").table_exists is False
    with pytest.raises(PermissionDenied):
        bob.tables.exists("lab.s.t")  # exists, and bob may not read it
    w.grants.update("table", "lab.s.t", changes=[PermissionsChange(principal="bob@x.com", add=[Privilege.SELECT])])
    assert bob.tables.exists("lab.s.t").table_exists is True
    assert httpx.get(f"{server.base_url}/api/2.0/unity-catalog/tables/lab.s.t/exists",
                     headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).json() == {"table_exists": True}


@pytest.mark.parametrize(("path", "body"), [
    ("/volumes", {"catalog_name": "lab", "schema_name": "s", "name": "x", "volume_type": "SHARED"}),
    ("/volumes", {"catalog_name": "lab", "schema_name": "s", "name": "x/../y", "volume_type": "MANAGED"}),
    ("/volumes", {"catalog_name": "lab", "schema_name": "s", "name": "x"}),
    ("/volumes", {"catalog_name": "lab", "schema_name": "s", "name": "x", "volume_type": "MANAGED",
                  "storage_location": "file:///tmp/x"}),
    ("/volumes", {"catalog_name": "lab", "schema_name": "s", "name": "x", "volume_type": "EXTERNAL"}),
    ("/volumes", {"catalog_name": "lab", "schema_name": "s", "name": "x", "volume_type": "MANAGED", "comment": 5}),
    ("/volumes", ["not", "an", "object"]),
    ("/models", {"catalog_name": "lab", "schema_name": "s"}),
    ("/models", {"catalog_name": "lab", "schema_name": "s", "name": "m", "storage_location": "file:///tmp/m"}),
    ("/models", {"catalog_name": 1, "schema_name": "s", "name": "m"}),
    ("/functions", {}),
])
def test_bad_input_is_400_and_changes_nothing(env: dict, path: str, body: object) -> None:
    response = uc(env["server"], "POST", path, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error_code"] == "INVALID_PARAMETER_VALUE"
    assert list(env["w"].volumes.list(catalog_name="lab", schema_name="s")) == [] or \
        all(v.name in {"shared"} for v in env["w"].volumes.list(catalog_name="lab", schema_name="s"))
