"""loadTable answers with the metadata file's own document (built from its bytes, not re-serialized through
PyIceberg's models): what a client gets must be exactly the file, in every snapshots mode, for files Arco wrote
and files other writers wrote, and a file that is no metadata document must fail as a bad file, not be sent."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import httpx
import orjson
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table.metadata import TableMetadataUtil

from arco.iceberg.responses import load_result_from_file
from support.arco_server import ARCO_TOKEN, arco_server, iceberg_client

pytestmark = pytest.mark.timeout(120)

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "required": False, "type": "long"}]}


def new_table(client: httpx.Client) -> tuple[str, dict]:
    name = f"t{uuid.uuid4().hex[:8]}"
    r = client.post("/namespaces/db/tables", json={"name": name, "schema": SCHEMA})
    assert r.status_code == 200, r.text
    return name, r.json()


def snapshot(snapshot_id: int, sequence: int, location: str, parent: int | None = None) -> dict:
    body = {"snapshot-id": snapshot_id, "sequence-number": sequence, "timestamp-ms": int(time.time() * 1000),
            "manifest-list": f"{location}/metadata/snap-{snapshot_id}.avro", "summary": {"operation": "append"},
            "schema-id": 0}
    return body | ({"parent-snapshot-id": parent} if parent is not None else {})


def file_of(location: str) -> Path:
    return Path(urlparse(location).path)


def test_the_answer_is_the_file_arco_wrote(client: httpx.Client) -> None:
    name, created = new_table(client)
    loaded = client.get(f"/namespaces/db/tables/{name}")
    assert loaded.status_code == 200, loaded.text
    body = loaded.json()
    assert body["metadata-location"] == created["metadata-location"]
    assert body["metadata"] == orjson.loads(file_of(body["metadata-location"]).read_bytes()) == created["metadata"]
    assert body["config"] == {}


def test_refs_mode_leaves_out_snapshots_no_ref_names(client: httpx.Client) -> None:
    name, created = new_table(client)
    location = created["metadata"]["location"]
    for snapshot_id, sequence, parent in ((11, 1, None), (12, 2, 11)):
        r = client.post(f"/namespaces/db/tables/{name}", json={"updates": [
            {"action": "add-snapshot", "snapshot": snapshot(snapshot_id, sequence, location, parent)},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}]})
        assert r.status_code == 200, r.text
    every = client.get(f"/namespaces/db/tables/{name}").json()["metadata"]
    referenced = client.get(f"/namespaces/db/tables/{name}", params={"snapshots": "refs"}).json()["metadata"]
    assert [s["snapshot-id"] for s in every["snapshots"]] == [11, 12]
    assert [s["snapshot-id"] for s in referenced["snapshots"]] == [12]
    assert {k: v for k, v in referenced.items() if k != "snapshots"} == \
        {k: v for k, v in every.items() if k != "snapshots"}


def test_a_file_another_writer_wrote_is_answered_as_written(client: httpx.Client) -> None:
    """Pretty-printed, with a field Arco does not know: the client gets that document, and can parse it."""
    name, created = new_table(client)
    assert client.post(f"/namespaces/db/tables/{name}/unregister").status_code == 200
    foreign = {**created["metadata"], "x-written-by": "another engine"}
    metadata_dir = file_of(created["metadata-location"]).parent
    path = metadata_dir / f"00009-{uuid.uuid4()}.metadata.json"
    path.write_bytes(orjson.dumps(foreign, option=orjson.OPT_INDENT_2) + b"\n")
    location = f"file://{path}"
    r = client.post("/namespaces/db/register", json={"name": name, "metadata-location": location})
    assert r.status_code == 200, r.text

    loaded = client.get(f"/namespaces/db/tables/{name}").json()
    assert loaded["metadata-location"] == location and loaded["metadata"] == foreign
    assert str(TableMetadataUtil.parse_raw(orjson.dumps(loaded["metadata"])).table_uuid) == foreign["table-uuid"]


def test_a_damaged_file_is_refused_not_sent(tmp_path: Path) -> None:
    """A metadata file overwritten with something that is no metadata document, read by a server that has not
    read it before: the load fails in the API's error shape, and sends none of the file's bytes."""
    warehouse = tmp_path / "wh"
    with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN) as maker, iceberg_client(maker) as making:
        making.post("/namespaces", json={"namespace": ["db"]}).raise_for_status()
        locations = {}
        for name in ("listed", "text"):
            r = making.post("/namespaces/db/tables", json={"name": name, "schema": SCHEMA})
            locations[name] = r.json()["metadata-location"]
        file_of(locations["listed"]).write_bytes(b'["marker-1c9f"]')
        file_of(locations["text"]).write_bytes(b"marker-7d2e, no json")
        with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN) as reader, iceberg_client(reader) as reading:
            for name in ("listed", "text"):
                r = reading.get(f"/namespaces/db/tables/{name}")
                assert r.status_code >= 500 and "error" in r.json(), r.text
                assert b"marker" not in r.content


@pytest.mark.parametrize("data", [b"[]", b"{}", b'{"format-version": 4, "location": "s3://b/t"}',
                                  b'{"format-version": 2}', b"\xff{", b"{,}"])
def test_bytes_that_are_no_metadata_document_are_left_to_the_parser(data: bytes) -> None:
    assert load_result_from_file("file:///w/t/metadata/00000-a.metadata.json", data, "all") is None


def test_the_body_is_the_file_between_the_location_and_an_empty_config() -> None:
    data = b'  {"format-version": 2, "location": "file:///w/t", "snapshots": [], "refs": {}}\n'
    result = load_result_from_file("file:///w/t/metadata/00001-a.metadata.json", data, "all")
    assert result is not None and result.table_location == "file:///w/t"
    assert orjson.loads(result.body) == {"metadata-location": "file:///w/t/metadata/00001-a.metadata.json",
                                         "metadata": orjson.loads(data), "config": {}}
    assert result.body.endswith(b',"config":{}}')  # where a caller's storage access is put in


def test_a_table_whose_metadata_file_is_gone_is_not_found_warm_or_cold(tmp_path: Path) -> None:
    """The metadata file a pointer names, deleted outside the catalog (Iceberg's CatalogTests move it away): a load
    by the server that holds it in memory and one by a new server both answer 404 naming the file (no 503: no retry
    brings it back), a commit with no base in memory is refused the same way and changes nothing, while Unity
    Catalog still lists the table (without columns) and a drop still works."""
    warehouse = tmp_path / "wh"
    with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN) as warm, iceberg_client(warm) as client:
        client.post("/namespaces", json={"namespace": ["db"]}).raise_for_status()
        name, created = new_table(client)
        location = created["metadata-location"]
        assert client.get(f"/namespaces/db/tables/{name}").status_code == 200  # now answered from memory
        moved = file_of(location).with_suffix(".bak")
        file_of(location).rename(moved)
        with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN) as cold, iceberg_client(cold) as new:
            for c in (client, new):
                r = c.get(f"/namespaces/db/tables/{name}")
                assert r.status_code == 404, r.text
                assert r.json()["error"]["type"] == "NotFoundException"  # as Java's CatalogTests expect
                assert f"Failed to open input stream for file: {location}" in r.json()["error"]["message"]
            r = new.post(f"/namespaces/db/tables/{name}", json={
                "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
            assert r.status_code == 404 and location in r.json()["error"]["message"], r.text
            catalog = RestCatalog("arco", uri=cold.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
            with pytest.raises(NoSuchTableError, match="Failed to open input stream"):
                catalog.load_table(f"db.{name}")
            uc = httpx.get(f"{cold.base_url}/api/2.1/unity-catalog/tables", timeout=30,
                           params={"catalog_name": "main", "schema_name": "db"},
                           headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
            assert uc.status_code == 200, uc.text
            assert [(t["name"], t.get("columns", [])) for t in uc.json()["tables"]] == [(name, [])]
        assert sorted(p.name for p in file_of(location).parent.iterdir()) == [moved.name]  # no new file
        moved.rename(file_of(location))  # restored: the table loads again, on the server that had it in memory
        assert client.get(f"/namespaces/db/tables/{name}").json()["metadata-location"] == location
        file_of(location).unlink()
        assert client.delete(f"/namespaces/db/tables/{name}").status_code == 204
        assert client.get(f"/namespaces/db/tables/{name}").json()["error"]["type"] == "NoSuchTableException"


def test_a_view_whose_metadata_file_is_gone_is_not_found(tmp_path: Path) -> None:
    """As for a table: the view's current metadata file deleted outside the catalog is a 404 naming it, from the
    server that holds the view in memory."""
    with arco_server(tmp_path / "wh", tmp_path, admin_token=ARCO_TOKEN) as server, iceberg_client(server) as client:
        client.post("/namespaces", json={"namespace": ["db"]}).raise_for_status()
        made = client.post("/namespaces/db/views", json={
            "name": "v", "schema": SCHEMA, "view-version": {
                "version-id": 1, "timestamp-ms": int(time.time() * 1000), "schema-id": 0,
                "summary": {"engine-name": "spark"}, "default-namespace": ["db"],
                "representations": [{"type": "sql", "sql": "SELECT 1 AS a", "dialect": "spark"}]}})
        assert made.status_code == 200, made.text
        location = made.json()["metadata-location"]
        assert client.get("/namespaces/db/views/v").status_code == 200
        file_of(location).unlink()
        r = client.get("/namespaces/db/views/v")
        assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchViewException", r.text
        assert f"Failed to open input stream for file: {location}" in r.json()["error"]["message"]
