"""Metastores as tenants of one warehouse, through the Databricks SDK and PyIceberg.

An account admin creates a second metastore and assigns a workspace to it; clients choose the workspace with the
SDK's ``workspace_id`` (the ``X-Databricks-Workspace-Id`` header) or with a token made for that workspace. Each
metastore has its own catalogs (the same names may be used in both), securables and admins, and deleting one
takes everything in it away from both APIs.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pyarrow as pa
import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import BadRequest, NotFound, PermissionDenied
from databricks.sdk.service.catalog import AwsIamRoleRequest, PermissionsChange, Privilege
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, RESTError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

pytestmark = pytest.mark.timeout(300)
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
EMEA_WORKSPACE = 7


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("metastores")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        run_cli(warehouse, "user", "create", "emma@x.com")
        tokens = {
            "emma-any": run_cli(warehouse, "token", "create", "emma@x.com").strip(),
            "emma-emea": run_cli(warehouse, "token", "create", "emma@x.com", "--workspace",
                                 str(EMEA_WORKSPACE)).strip(),
        }
        yield {"server": server, "warehouse": warehouse, "tokens": tokens}


def client(server: RunningServer, workspace: int | None = None, token: str = ARCO_TOKEN) -> WorkspaceClient:
    return WorkspaceClient(host=server.base_url, token=token,
                           workspace_id=str(workspace) if workspace is not None else None)


def uc(server: RunningServer, method: str, path: str, token: str = ARCO_TOKEN, workspace: int | None = None,
       **kwargs: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    if workspace is not None:
        headers["X-Databricks-Workspace-Id"] = str(workspace)
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}", headers=headers, timeout=30,
                         **kwargs)  # type: ignore[arg-type]


def iceberg(server: RunningServer, workspace: int | None = None, catalog: str = "main") -> RestCatalog:
    headers = {"header.X-Databricks-Workspace-Id": str(workspace)} if workspace is not None else {}
    return RestCatalog(f"ws{workspace}", uri=server.iceberg_uri, warehouse=catalog, token=ARCO_TOKEN, **headers)


def test_a_second_metastore_is_a_tenant_of_its_own(world: dict) -> None:
    server = world["server"]
    admin = client(server)
    [primary] = list(admin.metastores.list())
    warehouse_root = primary.storage_root

    with pytest.raises(BadRequest, match="inside this warehouse"):
        admin.metastores.create(name="emea", storage_root="s3://somewhere-else/root")
    emea = admin.metastores.create(name="emea", storage_root=f"{warehouse_root}/tenants", region="eu-west-1")
    assert emea.metastore_id != primary.metastore_id
    assert emea.storage_root == f"{warehouse_root}/tenants/{emea.metastore_id}"  # the spec appends the id
    assert (emea.owner, emea.region) == ("admin", "eu-west-1")
    assert {m.metastore_id for m in admin.metastores.list()} == {primary.metastore_id, emea.metastore_id}

    # A workspace with no metastore has no catalogs; assigning one gives it the new metastore's.
    with pytest.raises(NotFound, match="No metastore is assigned"):
        client(server, EMEA_WORKSPACE).metastores.current()
    admin.metastores.assign(workspace_id=EMEA_WORKSPACE, metastore_id=emea.metastore_id,
                            default_catalog_name="main")
    w7 = client(server, EMEA_WORKSPACE)
    assert w7.metastores.current().metastore_id == emea.metastore_id
    assert w7.metastores.summary().metastore_id == emea.metastore_id
    assert admin.metastores.summary().metastore_id == primary.metastore_id

    # The same catalog name in both metastores: two catalogs, each seen only from its own workspace.
    assert [c.name for c in w7.catalogs.list()] == []
    mine = w7.catalogs.create(name="main", comment="EMEA's main")
    assert mine.metastore_id == emea.metastore_id
    assert mine.storage_root.startswith(emea.storage_root + "/")
    assert admin.catalogs.get("main").storage_root != mine.storage_root
    assert admin.catalogs.get("main").metastore_id == primary.metastore_id
    w7.catalogs.create(name="sales")
    assert sorted(c.name for c in w7.catalogs.list()) == ["main", "sales"]
    assert "sales" not in [c.name for c in admin.catalogs.list()]
    with pytest.raises(NotFound):
        admin.catalogs.get("sales")

    # Iceberg clients pick the workspace with a header: the table lands in EMEA's main only.
    emea_iceberg = iceberg(server, EMEA_WORKSPACE)
    emea_iceberg.create_namespace("orders")
    table = emea_iceberg.create_table("orders.daily", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    assert emea_iceberg.load_table("orders.daily").scan().to_arrow().num_rows == 3
    assert ("orders",) not in iceberg(server).list_namespaces()
    with pytest.raises(NoSuchNamespaceError):
        iceberg(server).load_namespace_properties("orders")
    seen = w7.tables.get("main.orders.daily")
    assert (seen.data_source_format.value, seen.metastore_id) == ("ICEBERG", emea.metastore_id)
    assert table.location().startswith(emea.storage_root + "/")

    # Named securables are per metastore too: the same name in both.
    for w in (admin, w7):
        w.storage_credentials.create(name="shared-name", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::1:r"))
    assert len(list(admin.storage_credentials.list())) == len(list(w7.storage_credentials.list())) == 1
    assert admin.storage_credentials.get("shared-name").metastore_id == primary.metastore_id
    assert w7.storage_credentials.get("shared-name").metastore_id == emea.metastore_id


def test_metastore_admins_administer_their_own_metastore_only(world: dict) -> None:
    server, tokens = world["server"], world["tokens"]
    admin = client(server)
    emea = next(m for m in admin.metastores.list() if m.name == "emea")
    primary = next(m for m in admin.metastores.list() if m.name != "emea")
    admin.metastores.update(emea.metastore_id, owner="emma@x.com")

    emma7 = client(server, token=tokens["emma-emea"])  # a token made for workspace 7 needs no header
    assert emma7.metastores.current().metastore_id == emea.metastore_id
    assert uc(server, "GET", "/userinfo/me", token=tokens["emma-emea"]).json()["is_metastore_admin"] is True
    assert uc(server, "GET", "/userinfo/me", token=tokens["emma-any"]).json()["is_metastore_admin"] is False
    assert [m.metastore_id for m in emma7.metastores.list()] == [emea.metastore_id]
    with pytest.raises(PermissionDenied):
        emma7.metastores.get(primary.metastore_id)
    with pytest.raises(PermissionDenied):
        emma7.metastores.create(name="mine")  # account admins only

    # As EMEA's admin she sees and governs EMEA's catalogs; in workspace 0 she is a stranger.
    assert sorted(c.name for c in emma7.catalogs.list()) == ["main", "sales"]
    emma7.grants.update("catalog", "sales", changes=[PermissionsChange(principal="account users",
                                                                       add=[Privilege.USE_CATALOG])])
    emma0 = client(server, token=tokens["emma-any"])
    assert [c.name for c in emma0.catalogs.list()] == []
    with pytest.raises(PermissionDenied):
        emma0.grants.update("catalog", "main", changes=[PermissionsChange(principal="emma@x.com",
                                                                           add=[Privilege.USE_CATALOG])])
    # A token made for workspace 7 cannot be pointed at another workspace.
    refused = uc(server, "GET", "/catalogs", token=tokens["emma-emea"], workspace=0)
    assert refused.status_code == 403 and refused.json()["error_code"] == "PERMISSION_DENIED"
    # An unpinned token may name workspace 7, where she is admin.
    assert uc(server, "GET", "/userinfo/me", token=tokens["emma-any"],
              workspace=EMEA_WORKSPACE).json()["is_metastore_admin"] is True


def test_assignments_follow_the_spec(world: dict) -> None:
    server = world["server"]
    admin = client(server)
    emea = next(m for m in admin.metastores.list() if m.name == "emea")
    # PATCH changes the default catalog, which DuckDB's extension reads through the workspace setting.
    admin.metastores.update_assignment(workspace_id=EMEA_WORKSPACE, default_catalog_name="sales")
    assert client(server, EMEA_WORKSPACE).metastores.current().default_catalog_name == "sales"
    setting = httpx.get(f"{server.base_url}/api/2.0/settings/types/default_namespace_ws/names/default",
                        headers={"Authorization": f"Bearer {ARCO_TOKEN}", "X-Databricks-Workspace-Id": "7"})
    assert setting.json()["namespace"]["value"] == "sales"

    assert uc(server, "PUT", "/workspaces/8/metastore", json={"default_catalog_name": "x"}).status_code == 400
    assert uc(server, "PUT", "/workspaces/8/metastore", json={"metastore_id": emea.metastore_id}).status_code == 400
    assert uc(server, "PUT", "/workspaces/8/metastore",
              json={"metastore_id": "no-such-metastore", "default_catalog_name": "x"}).status_code == 404
    assert uc(server, "PUT", "/workspaces/eight/metastore",
              json={"metastore_id": emea.metastore_id, "default_catalog_name": "x"}).status_code == 400
    assert uc(server, "PATCH", "/workspaces/8/metastore", json={"default_catalog_name": "x"}).status_code == 404
    bad = uc(server, "GET", "/catalogs", workspace="seven")  # type: ignore[arg-type]
    assert bad.status_code == 400 and bad.json()["error_code"] == "INVALID_PARAMETER_VALUE"

    admin.metastores.assign(workspace_id=8, metastore_id=emea.metastore_id, default_catalog_name="main")
    assert client(server, 8).metastores.current().metastore_id == emea.metastore_id
    with pytest.raises(NotFound):
        admin.metastores.unassign(workspace_id=8, metastore_id="another-one")
    admin.metastores.unassign(workspace_id=8, metastore_id=emea.metastore_id)
    with pytest.raises(NotFound, match="No metastore is assigned to workspace 8"):
        list(client(server, 8).catalogs.list())


def test_concurrent_catalog_creates_in_one_metastore_give_one_winner(world: dict) -> None:
    server = world["server"]

    def create(_: int) -> int:
        return uc(server, "POST", "/catalogs", workspace=EMEA_WORKSPACE, json={"name": "race"}).status_code

    with ThreadPoolExecutor(4) as pool:
        codes = sorted(pool.map(create, range(4)))
    assert codes == [200, 409, 409, 409]
    # ... and the primary metastore may still have a catalog of that name.
    assert uc(server, "POST", "/catalogs", json={"name": "race"}).status_code == 200


def test_deleting_a_metastore(world: dict) -> None:
    server = world["server"]
    admin = client(server)
    primary = admin.metastores.summary()
    emea = next(m for m in admin.metastores.list() if m.name == "emea")
    with pytest.raises(BadRequest, match="primary"):
        admin.metastores.delete(primary.metastore_id, force=True)
    with pytest.raises(BadRequest, match="still holds"):
        admin.metastores.delete(emea.metastore_id)
    assert client(server, EMEA_WORKSPACE).catalogs.get("main").name == "main"  # nothing changed

    admin.metastores.delete(emea.metastore_id, force=True)
    assert [m.metastore_id for m in admin.metastores.list()] == [primary.metastore_id]
    with pytest.raises(NotFound):
        admin.metastores.get(emea.metastore_id)
    with pytest.raises(NotFound, match="No metastore is assigned"):
        client(server, EMEA_WORKSPACE).metastores.current()
    with pytest.raises(RESTError, match="No metastore is assigned to workspace 7"):
        iceberg(server, EMEA_WORKSPACE).list_namespaces()
    # The primary metastore's catalogs, securables and tables are untouched.
    assert admin.catalogs.get("main").metastore_id == primary.metastore_id
    assert admin.storage_credentials.get("shared-name").name == "shared-name"
    assert uc(server, "DELETE", f"/metastores/{emea.metastore_id}").status_code == 404


def test_only_account_admins_create_metastores(world: dict) -> None:
    response = uc(world["server"], "POST", "/metastores", token=world["tokens"]["emma-any"], json={"name": "x"})
    assert response.status_code == 403 and response.json()["error_code"] == "PERMISSION_DENIED"
    assert uc(world["server"], "POST", "/metastores", json={}).status_code == 400  # name is REQ
    assert uc(world["server"], "POST", "/metastores", json={"name": "\u0000"}).status_code == 400
    assert uc(world["server"], "POST", "/metastores",
              json={"name": "up", "storage_root": "/../../etc"}).status_code == 400
