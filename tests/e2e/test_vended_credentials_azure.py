"""PyIceberg on an Azure warehouse in Azurite, holding no account key: only the SAS token Arco vends.

Azurite accepts container SAS tokens but not directory ones (``sr=d``), so the server runs with
``--vending-azure-sas-scope container-unsafe`` here (the tables are in the warehouse's container, which the safe
``container`` scope never signs for: tests/integration/vending/test_vending_azure.py); the permissions (read vs
read-write) and expiry are Azurite's to enforce, and it does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from support import emulators
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli

pytestmark = [pytest.mark.timeout(300), pytest.mark.emulator]
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


@pytest.fixture(scope="module")
def azure(azurite_server: emulators.AzureServer) -> emulators.AzureServer:
    return azurite_server


@pytest.fixture(scope="module")
def server(azurite_server: emulators.AzureServer, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[RunningServer]:
    from arco.storage.azure import create_container

    container = f"arco-e2e-{uuid.uuid4().hex[:10]}"
    create_container(container, azurite_server.options())
    workdir = tmp_path_factory.mktemp("vended-azure")
    # abfs://container/...: the spelling PyIceberg's Arrow FileIO reads; table locations follow the warehouse's.
    with arco_server(f"abfs://{container}/wh", workdir, admin_token=ARCO_TOKEN, extra_args=(
            f"--storage-option=adls.connection-string={azurite_server.connection_string}",
            "--vending-azure-sas-scope", "container-unsafe")) as running:
        running.warehouse = f"abfs://{container}/wh"  # type: ignore[attr-defined]
        yield running


def test_pyiceberg_appends_and_reads_with_a_vended_sas_only(server: RunningServer) -> None:
    # Without adlfs installed, PyIceberg must be told to use its Arrow FileIO for abfs:// (fsspec is preferred).
    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN,
                          **{"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    catalog.create_namespace("az")
    table = catalog.create_table("az.events", SCHEMA)
    assert table.metadata.location.startswith("abfs://")
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    assert sorted(catalog.load_table("az.events").scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    answer = httpx.get(f"{server.iceberg_uri}/v1/main/namespaces/az/tables/events", timeout=30,
                       headers={"Authorization": f"Bearer {ARCO_TOKEN}",
                                "X-Iceberg-Access-Delegation": "vended-credentials"}).json()
    (credential,) = answer["storage-credentials"]
    assert "sp=racwdl" in credential["config"]["adls.sas-token"] or "racwdl" in credential["config"]["adls.sas-token"]
    assert "AccountKey" not in str(answer)  # the account key never leaves the server


def test_a_select_only_grantee_gets_a_sas_that_cannot_write(server: RunningServer,
                                                           azure: emulators.AzureServer) -> None:
    from azure.core.exceptions import HttpResponseError
    from azure.storage.blob import ContainerClient

    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN,
                          **{"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    catalog.create_namespace("ro")
    catalog.create_table("ro.t", SCHEMA).append(pa.table({"id": pa.array([1], pa.int64())}))
    option = f"adls.connection-string={azure.connection_string}"
    run_cli(server.warehouse, "user", "create", "ann@x.com", "--storage-option", option)  # type: ignore[attr-defined]
    token = run_cli(server.warehouse, "token", "create", "ann@x.com",  # type: ignore[attr-defined]
                    "--storage-option", option).strip()
    for kind, name, privileges in (("catalog", "main", ["USE_CATALOG"]), ("schema", "main.ro", ["USE_SCHEMA"]),
                                   ("table", "main.ro.t", ["SELECT"])):
        granted = httpx.patch(f"{server.base_url}/api/2.1/unity-catalog/permissions/{kind}/{name}", timeout=30,
                              headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                              json={"changes": [{"principal": "ann@x.com", "add": privileges}]})
        assert granted.status_code == 200, granted.text
    answer = httpx.get(f"{server.iceberg_uri}/v1/main/namespaces/ro/tables/t", timeout=30,
                       headers={"Authorization": f"Bearer {token}",
                                "X-Iceberg-Access-Delegation": "vended-credentials"}).json()
    (credential,) = answer["storage-credentials"]
    sas = credential["config"]["adls.sas-token"].lstrip("?")
    container = server.warehouse.removeprefix("abfs://").split("/")[0]  # type: ignore[attr-defined]
    client = ContainerClient(azure.blob_endpoint, container, credential=sas)
    listed = [b.name for b in client.list_blobs(name_starts_with="wh/")]
    assert any(name.endswith(".metadata.json") for name in listed)  # reading works
    with pytest.raises(HttpResponseError) as refused:
        client.upload_blob("wh/main/ro/intruder.parquet", b"x")
    assert refused.value.status_code == 403


def _uc(server: RunningServer, method: str, path: str, token: str = ARCO_TOKEN, **kwargs: object) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}", timeout=30,  # type: ignore[arg-type]
                         headers={"Authorization": f"Bearer {token}"}, **kwargs)


def test_spelling_out_the_warehouse_s_own_account_names_the_same_place(server: RunningServer,
                                                                      azure: emulators.AzureServer) -> None:
    """abfss://c@<account>.dfs.core.windows.net/k is abfs://c/k when <account> is the warehouse's: an external
    location spelled so cannot cover Arco's files or managed storage, and Iceberg's locations and registered
    metadata files inside the warehouse are recognised in any spelling."""
    container = server.warehouse.removeprefix("abfs://").split("/")[0]  # type: ignore[attr-defined]
    account_root = f"abfss://{container}@{azure.account_name}.dfs.core.windows.net/wh"
    option = f"adls.connection-string={azure.connection_string}"
    run_cli(server.warehouse, "user", "create", "bob@x.com", "--storage-option", option)  # type: ignore[attr-defined]
    bob = run_cli(server.warehouse, "token", "create", "bob@x.com",  # type: ignore[attr-defined]
                  "--storage-option", option).strip()
    assert _uc(server, "POST", "/storage-credentials", json={
        "name": "azc", "azure_managed_identity": {"access_connector_id": "x"}}).status_code == 200
    for kind, name in (("metastore", _uc(server, "GET", "/metastore_summary").json()["metastore_id"]),
                       ("storage_credential", "azc")):
        granted = _uc(server, "PATCH", f"/permissions/{kind}/{name}", json={"changes": [
            {"principal": "bob@x.com", "add": ["CREATE_EXTERNAL_LOCATION"]}]})
        assert granted.status_code == 200, granted.text
    for spelling in (f"{account_root}/_catalog", f"{account_root}/main",
                     f"wasbs://{container}@{azure.account_name}.blob.core.windows.net/wh/_catalog"):
        refused = _uc(server, "POST", "/external-locations", bob, json={
            "name": f"x{uuid.uuid4().hex[:6]}", "url": spelling, "credential_name": "azc"})
        assert refused.status_code == 400 and "overlaps" in refused.json()["message"], (spelling, refused.text)
        vended = _uc(server, "POST", "/temporary-path-credentials", json={"url": spelling, "operation": "PATH_READ"})
        assert vended.status_code == 403, vended.text  # not even an admin reaches Arco's files by path

    # An external location under the warehouse, in either spelling: Iceberg tables there, and registering again.
    made = _uc(server, "POST", "/external-locations", json={
        "name": "ext", "url": f"{account_root}/ext", "credential_name": "azc"})
    assert made.status_code == 200, made.text
    # Answered as it was given: Spark and the UC connectors read abfss://, and have no az:// to read.
    assert made.json()["url"] == f"{account_root}/ext"
    assert _uc(server, "GET", "/external-locations/ext").json()["url"] == f"{account_root}/ext"
    path = _uc(server, "POST", "/temporary-path-credentials", json={"url": f"{account_root}/ext/files",
                                                                   "operation": "PATH_READ"})
    assert path.status_code == 200 and path.json()["url"].rstrip("/") == f"{account_root}/ext/files", path.text
    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN,
                          **{"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    catalog.create_namespace("spelled")
    table = catalog.create_table("spelled.t", SCHEMA, location=f"abfs://{container}/wh/ext/t")
    table.append(pa.table({"id": pa.array([7], pa.int64())}))
    catalog.drop_table("spelled.t")
    again = catalog.register_table("spelled.t", table.metadata_location.replace(
        f"abfs://{container}/wh", account_root))
    assert again.scan().to_arrow().column("id").to_pylist() == [7]
