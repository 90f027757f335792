"""Delta Sharing of Delta tables on an Azure (Azurite) warehouse: the server reads the
Delta log through deltalake with Arco's storage options mapped to deltalake's, and the recipient's client reads
the table through the file URLs it is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import delta_sharing
import httpx
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from arco.sharing.delta_source import delta_storage_options
from arco.storage.factory import open_storage
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server
from support.storage_targets import StorageTarget

pytestmark = [pytest.mark.emulator, pytest.mark.timeout(300)]


def uc(server: RunningServer, method: str, path: str, **kwargs: Any) -> httpx.Response:
    response = httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                             headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30, **kwargs)
    assert response.status_code == 200, response.text
    return response


# fake-gcs-server is not here: deltalake (object_store) asks the metadata server for a token even with
# google_skip_signature, so a GCS warehouse's options are mapped (delta_storage_options) but not tried end to end.
@pytest.mark.parametrize("target_fixture", ["azure_azurite_bucket"])
def test_a_delta_table_on_object_storage_is_shared(target_fixture: str, request: pytest.FixtureRequest,
                                                   tmp_path: Path) -> None:
    target: StorageTarget = request.getfixturevalue(target_fixture)
    options = [arg for k, v in target.options.items() for arg in ("--storage-option", f"{k}={v}")]
    with arco_server(f"{target.url}/wh", tmp_path, admin_token=ARCO_TOKEN, extra_args=tuple(options)) as server:
        uc(server, "POST", "/schemas", json={"name": "lake", "catalog_name": "main"})
        location = uc(server, "POST", "/staging-tables", json={"name": "orders", "catalog_name": "main",
                                                               "schema_name": "lake"}).json()["staging_location"]
        # Values the log percent-encodes in its paths (the blob's name has the single encoding): the SAS must name
        # the blob itself.
        odd = ["a b", "x/y", "=", "é", "%20"]
        rows = pa.table({"id": pa.array(range(1, 4 + len(odd)), pa.int64()), "region": ["eu", "us", "eu", *odd]})
        write_deltalake(location, rows, partition_by=["region"],
                        storage_options=delta_storage_options(target.options))
        uc(server, "POST", "/tables", json={
            "name": "orders", "catalog_name": "main", "schema_name": "lake", "table_type": "MANAGED",
            "data_source_format": "DELTA", "storage_location": location, "columns": [
                {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"},
                {"name": "region", "type_name": "STRING", "type_text": "string", "position": 1, "type_json": "{}"}]})
        uc(server, "POST", "/shares", json={"name": "cloud"})
        uc(server, "PATCH", "/shares/cloud", json={"updates": [
            {"action": "ADD", "data_object": {"name": "main.lake.orders", "data_object_type": "TABLE"}}]})
        recipient = uc(server, "POST", "/recipients", json={"name": "reader", "authentication_type": "TOKEN"}).json()
        uc(server, "PATCH", "/shares/cloud/permissions",
           json={"changes": [{"principal": "reader", "add": ["SELECT"]}]})
        profile = httpx.get(recipient["tokens"][0]["activation_url"], timeout=30).json()
        path = tmp_path / "reader.share"
        path.write_text(json.dumps(profile))

        frame = delta_sharing.load_as_pandas(f"{path}#cloud.lake.orders")
        assert sorted(zip(frame["id"], frame["region"], strict=True)) == sorted(
            zip(rows["id"].to_pylist(), rows["region"].to_pylist(), strict=True))
        assert delta_sharing.get_table_version(f"{path}#cloud.lake.orders") == 0


def test_an_iceberg_table_on_azure_is_shared(azure_azurite_bucket: StorageTarget, tmp_path: Path) -> None:
    """The server reads the Iceberg table's manifests with its own Azure credentials (PyArrow's Azure file system:
    the fsspec one PyIceberg picks for abfs:// needs adlfs, which Arco does not install)."""
    target = azure_azurite_bucket
    options = [arg for k, v in target.options.items() for arg in ("--storage-option", f"{k}={v}")]
    warehouse = f"{target.url}/wh"
    # The writer is a client: it gets a SAS with the table (Azurite signs no directory SAS: the container's).
    client_io = {k: v for k, v in open_storage(warehouse, target.options).fileio_properties().items()
                 if k != "adls.account-key"}
    with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN,
                     extra_args=(*options, "--vending-azure-sas-scope", "container-unsafe")) as server:
        writer = RestCatalog("w", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN, **client_io)
        writer.create_namespace("ice")
        table = writer.create_table("ice.points", Schema(NestedField(1, "id", LongType(), required=False)))
        table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
        uc(server, "POST", "/shares", json={"name": "icy"})
        uc(server, "PATCH", "/shares/icy", json={"updates": [
            {"action": "ADD", "data_object": {"name": "main.ice.points", "data_object_type": "TABLE"}}]})
        recipient = uc(server, "POST", "/recipients", json={"name": "icy_reader",
                                                            "authentication_type": "TOKEN"}).json()
        uc(server, "PATCH", "/shares/icy/permissions",
           json={"changes": [{"principal": "icy_reader", "add": ["SELECT"]}]})
        path = tmp_path / "icy.share"
        path.write_text(json.dumps(httpx.get(recipient["tokens"][0]["activation_url"], timeout=30).json()))
        frame = delta_sharing.load_as_pandas(f"{path}#icy.ice.points")
        assert sorted(frame["id"]) == [1, 2, 3]
