"""``write.metadata.path``: where a table's or view's metadata files go (as Java and PyIceberg write them, and as
Iceberg's ViewCatalogTests.createViewWithCustomMetadataLocation checks), inside the object's own location and
spelled plainly, else refused with nothing written; GC finds orphan metadata files there too."""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlparse

import httpx
import orjson
import pytest
from pyiceberg.catalog import MetastoreCatalog
from uuid6 import uuid7

from arco.catalog.store import CatalogStore
from arco.events.reconcile import iceberg_tables
from arco.pipeline.gc import table_deletions
from arco.pipeline.gc_rules import GcPolicy
from arco.pipeline.storage_spec import StorageSpec
from arco.storage.factory import open_storage
from support.arco_server import ONE_COLUMN_SCHEMA, RunningServer

pytestmark = pytest.mark.timeout(120)

VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {"engine": "t"},
                "representations": [{"type": "sql", "sql": "SELECT x FROM db.t", "dialect": "spark"}],
                "default-namespace": ["db"]}


def local(location: str) -> Path:
    return Path(urlparse(location).path)


def new_table(client: httpx.Client) -> tuple[str, str]:
    """A new table's path and location."""
    name = f"m{uuid.uuid4().hex[:8]}"
    r = client.post("/namespaces/db/tables", json={"name": name, "schema": ONE_COLUMN_SCHEMA})
    assert r.status_code == 200, r.text
    assert r.json()["metadata-location"].startswith(f"{r.json()['metadata']['location']}/metadata/00000-")
    return f"/namespaces/db/tables/{name}", r.json()["metadata"]["location"]


def set_properties(client: httpx.Client, path: str, updates: dict[str, str]) -> httpx.Response:
    return client.post(path, json={"requirements": [], "updates": [{"action": "set-properties", "updates": updates}]})


def test_metadata_files_are_named_as_java_and_pyiceberg_name_them(client: httpx.Client) -> None:
    """``<version>-<uuid>.metadata.json``: PyIceberg's catalogs read the version from such a name (and only such)."""
    path, _ = new_table(client)
    first = client.get(path).json()["metadata-location"]
    keyed = client.post(path, headers={"Idempotency-Key": str(uuid7())}, json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}).json()
    unkeyed = set_properties(client, path, {"k": "w"}).json()
    versions = [MetastoreCatalog._parse_metadata_version(x) for x in (first, keyed["metadata-location"],
                                                                      unkeyed["metadata-location"])]
    assert versions == [0, 1, 2]


def test_a_tables_metadata_files_follow_write_metadata_path(client: httpx.Client) -> None:
    path, location = new_table(client)
    custom = f"{location}/custom-metadata"
    r = set_properties(client, path, {"write.metadata.path": custom})
    assert r.status_code == 200, r.text
    assert r.json()["metadata-location"].startswith(f"{custom}/00001-")
    assert local(r.json()["metadata-location"]).is_file()
    again = set_properties(client, path, {"k": "v"})
    assert again.json()["metadata-location"].startswith(f"{custom}/00002-")
    assert client.get(path).json()["metadata-location"] == again.json()["metadata-location"]


def test_a_create_with_write_metadata_path_writes_its_first_file_there(client: httpx.Client) -> None:
    # A managed table's location is Arco's to choose, so a create can only name a path inside it by staging
    # first: the stage answers the location, the create transaction's commit names the path.
    name = f"s{uuid.uuid4().hex[:8]}"
    staged = client.post("/namespaces/db/tables", json={"name": name, "schema": ONE_COLUMN_SCHEMA,
                                                        "stage-create": True})
    assert staged.status_code == 200, staged.text
    metadata = staged.json()["metadata"]
    custom = f"{metadata['location']}/meta"
    r = client.post(f"/namespaces/db/tables/{name}", json={
        "requirements": [{"type": "assert-create"}],
        "updates": [{"action": "assign-uuid", "uuid": metadata["table-uuid"]},
                    {"action": "upgrade-format-version", "format-version": 2},
                    {"action": "add-schema", "schema": metadata["schemas"][0]},
                    {"action": "set-current-schema", "schema-id": -1},
                    {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                    {"action": "set-default-spec", "spec-id": -1},
                    {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                    {"action": "set-default-sort-order", "sort-order-id": -1},
                    {"action": "set-location", "location": metadata["location"]},
                    {"action": "set-properties", "updates": {"write.metadata.path": custom}}]})
    assert r.status_code == 200, r.text
    assert r.json()["metadata-location"].startswith(f"{custom}/00000-")
    assert local(r.json()["metadata-location"]).is_file()


@pytest.mark.parametrize("spelling,fragment", [
    ("{location}/a/./b", "plainly"),
    ("{location}/a//b", "plainly"),
    ("{location}/%61", "plainly"),
    ("{location}/../elsewhere", ".."),
    ("file:///tmp/elsewhere", "inside the table's location"),
])
def test_a_write_metadata_path_spelled_otherwise_or_outside_is_refused(client: httpx.Client, spelling: str,
                                                                         fragment: str) -> None:
    path, location = new_table(client)
    before = client.get(path).json()["metadata-location"]
    r = set_properties(client, path, {"write.metadata.path": spelling.format(location=location)})
    assert r.status_code == 400, r.text
    assert fragment in r.json()["error"]["message"]
    assert client.get(path).json()["metadata-location"] == before


def test_a_views_metadata_files_follow_write_metadata_path(client: httpx.Client) -> None:
    name = f"v{uuid.uuid4().hex[:8]}"
    created = client.post("/namespaces/db/views", json={"name": name, "schema": ONE_COLUMN_SCHEMA,
                                                        "view-version": VIEW_VERSION})
    assert created.status_code == 200, created.text
    location = created.json()["metadata"]["location"]
    custom = f"{location}/custom-location"
    r = set_properties(client, f"/namespaces/db/views/{name}", {"write.metadata.path": custom})
    assert r.status_code == 200, r.text
    assert r.json()["metadata-location"].startswith(f"{custom}/00001-")
    assert local(r.json()["metadata-location"]).is_file()
    outside = set_properties(client, f"/namespaces/db/views/{name}", {"write.metadata.path": "file:///tmp/x"})
    assert outside.status_code == 400 and "inside" in outside.json()["error"]["message"]
    refused = client.post("/namespaces/db/views", json={
        "name": f"{name}_2", "schema": ONE_COLUMN_SCHEMA, "view-version": VIEW_VERSION,
        "properties": {"write.metadata.path": "file:///tmp/elsewhere"}})
    assert refused.status_code == 400, refused.text
    assert client.head(f"/namespaces/db/views/{name}_2").status_code == 404


def test_gc_finds_orphan_metadata_under_write_metadata_path(client: httpx.Client, server: RunningServer) -> None:
    path, location = new_table(client)
    custom = f"{location}/meta"
    committed = set_properties(client, path, {"write.metadata.path": custom}).json()["metadata-location"]
    orphan = local(custom) / "00002-lost-race.metadata.json"  # what a commit that lost its race leaves behind
    orphan.write_bytes(local(committed).read_bytes())
    warehouse = str(server.warehouse_dir)  # type: ignore[attr-defined]
    entries = [e for e, _ in iceberg_tables(CatalogStore(open_storage(warehouse, {})))
               if e.location.rstrip("/") == location.rstrip("/")]
    assert len(entries) == 1
    found = list(table_deletions(StorageSpec(warehouse), set(), GcPolicy(orphan_metadata_age_s=0.0),
                                 time.time() + 60, iter([asdict(entry) for entry in entries])))
    assert [d["key"].rsplit("/", 1)[-1] for d in found] == [orphan.name]


def test_gc_keeps_another_table_s_files_and_a_later_lineage_s(client: httpx.Client, server: RunningServer) -> None:
    """A table asking for expired versions to be deleted loses only its own older ones: not the files a table
    dropped without purge left in the same folder (another table-uuid), nor versions numbered after its current
    one (the table registered again from an older file)."""
    path, location = new_table(client)
    set_properties(client, path, {"write.metadata.delete-after-commit.enabled": "true",
                                  "write.metadata.previous-versions-max": "1"})
    for i in range(3):
        current = set_properties(client, path, {"n": str(i)}).json()["metadata-location"]
    folder = local(current).parent
    mine = sorted(p.name for p in folder.glob("*.metadata.json"))
    foreign = folder / "00001-dropped-table.metadata.json"
    foreign.write_bytes(orjson.dumps({**orjson.loads(local(current).read_bytes()), "table-uuid": str(uuid.uuid4())}))
    later = folder / "00099-other-lineage.metadata.json"
    later.write_bytes(local(current).read_bytes())
    warehouse = str(server.warehouse_dir)  # type: ignore[attr-defined]
    entries = [e for e, _ in iceberg_tables(CatalogStore(open_storage(warehouse, {})))
               if e.location.rstrip("/") == location.rstrip("/")]
    storage = open_storage(warehouse, {})
    prefix = folder.relative_to(server.warehouse_dir).as_posix()  # type: ignore[attr-defined]
    every_file = {hashlib.sha256(storage.location_of(m.key).encode()).hexdigest()
                  for m in storage.list(prefix + "/")}  # all of them known committed
    found = list(table_deletions(StorageSpec(warehouse), every_file, GcPolicy(orphan_metadata_age_s=0.0),
                                 time.time() + 60, iter([asdict(entry) for entry in entries])))
    deleted = sorted(d["key"].rsplit("/", 1)[-1] for d in found)
    history = {local(current).name} | {local(e["metadata-file"]).name
                                       for e in client.get(path).json()["metadata"]["metadata-log"]}
    assert deleted == sorted(set(mine) - history) and deleted  # its own expired versions, and only those
