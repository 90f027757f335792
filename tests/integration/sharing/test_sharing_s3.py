"""Delta Sharing on an S3 warehouse (SeaweedFS): the file URLs a recipient gets are pre-signed by the storage
(SigV4 query signatures, one object each, expiring), and the delta-sharing client reads the table through them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import delta_sharing
import httpx
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from arco.sharing.delta_source import delta_storage_options
from support import emulators
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server
from support.sharing import activate, ds, share_with
from support.storage_targets import StorageTarget

pytestmark = [pytest.mark.emulator, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def server(s3_seaweedfs_bucket: StorageTarget, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("sharing-s3")
    options = [arg for k, v in s3_seaweedfs_bucket.options.items() for arg in ("--storage-option", f"{k}={v}")]
    with arco_server(f"{s3_seaweedfs_bucket.url}/wh", workdir, admin_token=ARCO_TOKEN,
                     extra_args=tuple(options)) as s:
        yield s


def uc(server: RunningServer, method: str, path: str, **kwargs: Any) -> httpx.Response:
    response = httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                             headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30, **kwargs)
    assert response.status_code == 200, response.text
    return response


def test_recipients_read_s3_files_through_presigned_urls(server: RunningServer, s3_seaweedfs_bucket: StorageTarget,
                                                         seaweedfs_server: emulators.S3Server,
                                                         tmp_path: Path) -> None:
    uc(server, "POST", "/schemas", json={"name": "lake", "catalog_name": "main"})
    location = uc(server, "POST", "/staging-tables", json={"name": "orders", "catalog_name": "main",
                                                           "schema_name": "lake"}).json()["staging_location"]
    assert location.startswith("s3://")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "region": ["eu", "us", "eu"]})
    write_deltalake(location, rows, partition_by=["region"],
                    storage_options=delta_storage_options(s3_seaweedfs_bucket.options))
    uc(server, "POST", "/tables", json={
        "name": "orders", "catalog_name": "main", "schema_name": "lake", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": location, "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"},
            {"name": "region", "type_name": "STRING", "type_text": "string", "position": 1, "type_json": "{}"}]})
    uc(server, "POST", "/shares", json={"name": "s3share"})
    uc(server, "PATCH", "/shares/s3share", json={"updates": [
        {"action": "ADD", "data_object": {"name": "main.lake.orders", "data_object_type": "TABLE"}}]})
    recipient = uc(server, "POST", "/recipients", json={"name": "s3reader", "authentication_type": "TOKEN"}).json()
    uc(server, "PATCH", "/shares/s3share/permissions", json={"changes": [{"principal": "s3reader", "add": ["SELECT"]}]})
    profile = httpx.get(recipient["tokens"][0]["activation_url"], timeout=30).json()
    path = tmp_path / "s3reader.share"
    path.write_text(json.dumps(profile))

    answer = httpx.post(f"{server.base_url}/delta-sharing/shares/s3share/schemas/lake/tables/orders/query", json={},
                        headers={"Authorization": f"Bearer {profile['bearerToken']}"}, timeout=30)
    urls = [json.loads(line)["file"]["url"] for line in answer.text.splitlines()[2:]]
    assert len(urls) == 2, answer.text
    assert all(u.startswith(seaweedfs_server.endpoint_url) and "X-Amz-Signature=" in u and "X-Amz-Expires=" in u
               for u in urls)
    assert httpx.get(urls[0], timeout=30).content[:4] == b"PAR1"
    other_object = urls[0].split("?")[0].rsplit("/", 1)[0] + "/other.parquet?" + urls[0].split("?")[1]
    assert httpx.get(other_object, timeout=30).status_code == 403  # the signature covers exactly one object

    frame = delta_sharing.load_as_pandas(f"{path}#s3share.lake.orders")
    assert sorted(zip(frame["id"], frame["region"], strict=True)) == [(1, "eu"), (2, "us"), (3, "eu")]


def test_files_under_escaped_partition_directories_are_presigned_by_their_real_key(
        server: RunningServer, s3_seaweedfs_bucket: StorageTarget, tmp_path: Path) -> None:
    """The log names ``s=a%2520b/...`` for the object ``s=a%20b/...``: the key is decoded once where the log is read,
    and the signer encodes it once into the URL, so the pre-signed URL opens the object deltalake wrote."""
    uc(server, "POST", "/schemas", json={"name": "odd", "catalog_name": "main"})
    location = uc(server, "POST", "/staging-tables", json={"name": "strings", "catalog_name": "main",
                                                           "schema_name": "odd"}).json()["staging_location"]
    values = ["a b", "x/y", "=", "é", "%20", "plain"]
    rows = pa.table({"id": pa.array(range(len(values)), pa.int64()), "s": values})
    options = delta_storage_options(s3_seaweedfs_bucket.options)
    write_deltalake(location, rows, partition_by=["s"], storage_options=options)
    uc(server, "POST", "/tables", json={
        "name": "strings", "catalog_name": "main", "schema_name": "odd", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": location, "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"},
            {"name": "s", "type_name": "STRING", "type_text": "string", "position": 1, "type_json": "{}"}]})
    path, profile = activate(share_with(server, "oddshare", "oddreader", ["main.odd.strings"], history=False),
                             tmp_path)

    answer = ds(server, profile, "POST", "/shares/oddshare/schemas/odd/tables/strings/query", json={})
    urls = [json.loads(line)["file"]["url"] for line in answer.text.splitlines()[2:]]
    assert len(urls) == len(values) and all(httpx.get(u, timeout=30).status_code == 200 for u in urls)
    frame = delta_sharing.load_as_pandas(f"{path}#oddshare.odd.strings")
    expected = DeltaTable(location, storage_options=options).to_pandas()
    assert sorted(zip(frame["id"], frame["s"], strict=True)) == sorted(
        zip(expected["id"], expected["s"], strict=True)) == sorted(enumerate(values))
