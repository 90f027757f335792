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

from arco.sharing.delta_source import delta_storage_options
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
