"""Compatibility with the reference implementation, as Iceberg's own CatalogTests probe it, through a real
``arco serve``: requirement failure wording, spec/sort-order id reassignment, format v3, lookups of names Arco
never stores, unregisterTable, and removing absent properties."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from uuid6 import uuid7

from support.arco_server import ARCO_TOKEN, ONE_COLUMN_SCHEMA, RunningServer

pytestmark = pytest.mark.timeout(120)

TWO_COLUMNS = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "a", "required": False, "type": "long"},
    {"id": 2, "name": "b", "required": False, "type": "string"},
]}
DEFAULTS = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": False, "type": "long"},
    {"id": 2, "name": "n", "required": False, "type": "int", "initial-default": 5, "write-default": 6},
]}


def error_of(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return response.json()["error"]["message"]


def new_table(client: httpx.Client, schema: dict = TWO_COLUMNS, **extra: object) -> tuple[str, dict]:
    name = f"t{uuid.uuid4().hex[:8]}"
    r = client.post("/namespaces/db/tables", json={"name": name, "schema": schema, **extra})
    assert r.status_code == 200, r.text
    return name, r.json()


# -- 1: requirement failures ------------------------------------------------------------------------------------


def test_requirement_failures_use_the_reference_wording(client: httpx.Client) -> None:
    name, created = new_table(client)
    table_uuid = created["metadata"]["table-uuid"]
    cases = [
        ({"type": "assert-current-schema-id", "current-schema-id": 1},
         "Requirement failed: current schema changed: expected id 1 != 0"),
        ({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 1},
         "Requirement failed: last assigned field id changed: expected id 1 != 2"),
        ({"type": "assert-default-sort-order-id", "default-sort-order-id": 1},
         "Requirement failed: default sort order changed: expected id 1 != 0"),
        ({"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"},
         f"Requirement failed: UUID does not match: expected {table_uuid} != 00000000-0000-0000-0000-000000000000"),
    ]
    for requirement, message in cases:
        r = client.post(f"/namespaces/db/tables/{name}",
                        json={"requirements": [requirement], "updates": [
                            {"action": "set-properties", "updates": {"k": "v"}}]})
        assert error_of(r, 409) == message
    r = client.post(f"/namespaces/db/tables/{name}", json={"requirements": [{"type": "assert-create"}],
                                                            "updates": []})
    assert error_of(r, 409) == "Requirement failed: table already exists"


# -- 2: sort orders and specs whose id is taken -------------------------------------------------------------------


def test_two_writers_adding_sort_order_1_from_one_base_both_land(client: httpx.Client) -> None:
    name, _ = new_table(client)
    for source_id in (1, 2):  # both were computed against the base with only the unsorted order 0
        r = client.post(f"/namespaces/db/tables/{name}", json={"updates": [
            {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
                {"source-id": source_id, "transform": "identity", "direction": "asc",
                 "null-order": "nulls-first"}]}},
            {"action": "set-default-sort-order", "sort-order-id": -1}]})
        assert r.status_code == 200, r.text
    metadata = client.get(f"/namespaces/db/tables/{name}").json()["metadata"]
    orders = {o["order-id"]: o["fields"][0]["source-id"] for o in metadata["sort-orders"] if o["fields"]}
    assert orders == {1: 1, 2: 2}
    assert metadata["default-sort-order-id"] == 2


def test_two_replace_transactions_with_different_specs_both_land(client: httpx.Client) -> None:
    name, created = new_table(client)
    base = created["metadata"]

    def replace(field: str, source_id: int) -> dict:
        # What a replace transaction sends: requirements on the base, a new spec with the next free id, "-1".
        return {"requirements": [{"type": "assert-table-uuid", "uuid": base["table-uuid"]}],
                "updates": [{"action": "add-spec", "spec": {"spec-id": 1, "fields": [
                    {"source-id": source_id, "field-id": 1000, "transform": "identity", "name": field}]}},
                    {"action": "set-default-spec", "spec-id": -1},
                    {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
                        {"source-id": source_id, "transform": "identity", "direction": "desc",
                         "null-order": "nulls-last"}]}},
                    {"action": "set-default-sort-order", "sort-order-id": -1}]}

    for field, source_id in (("a", 1), ("b", 2)):
        r = client.post(f"/namespaces/db/tables/{name}", json=replace(field, source_id))
        assert r.status_code == 200, r.text
    metadata = client.get(f"/namespaces/db/tables/{name}").json()["metadata"]
    assert {s["spec-id"]: [f["name"] for f in s["fields"]] for s in metadata["partition-specs"]} == \
        {0: [], 1: ["a"], 2: ["b"]}
    assert (metadata["default-spec-id"], metadata["default-sort-order-id"]) == (2, 2)


# -- 3: format v3 -------------------------------------------------------------------------------------------------


def test_a_v3_create_keeps_field_defaults(client: httpx.Client) -> None:
    name, created = new_table(client, DEFAULTS, properties={"format-version": "3"})
    for metadata in (created["metadata"], client.get(f"/namespaces/db/tables/{name}").json()["metadata"]):
        assert metadata["format-version"] == 3 and metadata["next-row-id"] == 0
        field = metadata["schemas"][0]["fields"][1]
        assert (field["initial-default"], field["write-default"]) == (5, 6)
    staged = client.post("/namespaces/db/tables", json={"name": "staged_v3", "schema": DEFAULTS,
                                                        "stage-create": True,
                                                        "properties": {"format-version": "3"}})
    assert staged.status_code == 200, staged.text
    assert staged.json()["metadata"]["schemas"][0]["fields"][1]["initial-default"] == 5


def test_field_defaults_below_v3_are_refused_not_dropped(client: httpx.Client) -> None:
    r = client.post("/namespaces/db/tables", json={"name": "v2_defaults", "schema": DEFAULTS})
    assert "not supported until v3" in error_of(r, 400)
    assert client.head("/namespaces/db/tables/v2_defaults").status_code == 404


def test_a_create_transaction_upgrading_to_v3(client: httpx.Client) -> None:
    name = f"c{uuid.uuid4().hex[:8]}"
    # Staged as v2 (the client's default); the create transaction upgrades it, as Java's does.
    staged = client.post("/namespaces/db/tables", json={"name": name, "schema": TWO_COLUMNS,
                                                        "stage-create": True}).json()
    table_uuid = staged["metadata"]["table-uuid"]
    r = client.post(f"/namespaces/db/tables/{name}", json={
        "requirements": [{"type": "assert-create"}],
        "updates": [{"action": "assign-uuid", "uuid": table_uuid},
                    {"action": "upgrade-format-version", "format-version": 3},
                    {"action": "add-schema", "schema": DEFAULTS},
                    {"action": "set-current-schema", "schema-id": -1},
                    {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                    {"action": "set-default-spec", "spec-id": -1},
                    {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                    {"action": "set-default-sort-order", "sort-order-id": -1},
                    {"action": "set-location", "location": staged["metadata"]["location"]}]})
    assert r.status_code == 200, r.text
    metadata = client.get(f"/namespaces/db/tables/{name}").json()["metadata"]
    assert metadata["format-version"] == 3 and metadata["next-row-id"] == 0
    assert metadata["schemas"][0]["fields"][1]["initial-default"] == 5


def test_pyiceberg_reads_a_v3_table_with_defaults(server: RunningServer, client: httpx.Client) -> None:
    # PyIceberg's own create_table drops default values client-side (its fresh-id assignment), so the table
    # is created over raw HTTP, as Java clients send it, and read with PyIceberg.

    name, _ = new_table(client, DEFAULTS, properties={"format-version": "3"})
    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    loaded = catalog.load_table(f"db.{name}")
    assert loaded.metadata.format_version == 3
    field = loaded.schema().find_field("n")
    assert (field.initial_default, field.write_default) == (5, 6)
    with loaded.transaction() as txn:
        txn.set_properties(owner_note="x")
    assert catalog.load_table(f"db.{name}").schema().find_field("n").initial_default == 5


def test_an_existing_table_upgrades_to_v3(client: httpx.Client) -> None:
    name, _ = new_table(client)
    r = client.post(f"/namespaces/db/tables/{name}",
                    json={"updates": [{"action": "upgrade-format-version", "format-version": 3}]})
    assert r.status_code == 200, r.text
    assert (r.json()["metadata"]["format-version"], r.json()["metadata"]["next-row-id"]) == (3, 0)


# -- 4: lookups of names Arco never stores ------------------------------------------------------------------------


@pytest.mark.parametrize("segment", ["a%2Fb", "x%2Fy%2Fz"])
def test_lookups_of_unstorable_names_are_404(client: httpx.Client, segment: str) -> None:
    assert client.head(f"/namespaces/{segment}").status_code == 404
    assert error_of(client.get(f"/namespaces/{segment}"), 404).startswith("Namespace does not exist")
    assert client.get(f"/namespaces/{segment}").json()["error"]["type"] == "NoSuchNamespaceException"
    assert client.head(f"/namespaces/db/tables/{segment}").status_code == 404
    assert client.head(f"/namespaces/{segment}/tables/t").status_code == 404
    r = client.get(f"/namespaces/db/tables/{segment}")
    assert error_of(r, 404).startswith("Table does not exist")
    assert r.json()["error"]["type"] == "NoSuchTableException"
    # Dropping, changing or listing such a namespace finds none (Java's dropNamespace then returns false).
    for r in (client.delete(f"/namespaces/{segment}"),
              client.post(f"/namespaces/{segment}/properties", json={"updates": {"a": "b"}}),
              client.get(f"/namespaces/{segment}/tables"), client.get(f"/namespaces/{segment}/views"),
              client.get("/namespaces", params={"parent": segment.replace("%2F", "/")})):
        assert error_of(r, 404).startswith("Namespace does not exist"), r.request.url
        assert r.json()["error"]["type"] == "NoSuchNamespaceException"
    # Creating such a name stays a bad request.
    error_of(client.post("/namespaces", json={"namespace": ["a/b"]}), 400)
    error_of(client.post("/namespaces/db/tables", json={"name": "x/y", "schema": ONE_COLUMN_SCHEMA}), 400)


# -- 5: unregisterTable ------------------------------------------------------------------------------------------


def local_path(location: str) -> Path:
    return Path(urlparse(location).path)


def test_unregister_keeps_the_files_and_register_works_again(client: httpx.Client) -> None:
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister" in \
        client.get(f"{client.base_url.scheme}://{client.base_url.host}:{client.base_url.port}"
                   "/iceberg/v1/config").json()["endpoints"]
    name, created = new_table(client)
    r = client.post(f"/namespaces/db/tables/{name}",
                    json={"updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    last = r.json()["metadata-location"]
    files = sorted(p for p in local_path(created["metadata"]["location"]).rglob("*") if p.is_file())
    assert len(files) >= 2

    key = {"Idempotency-Key": str(uuid.uuid7()) if hasattr(uuid, "uuid7") else "0190b4d4-7b3c-7e1a-9c1e-6a0b2d3c4e5f"}
    r = client.post(f"/namespaces/db/tables/{name}/unregister", headers=key)
    assert r.status_code == 200, r.text
    assert r.json()["metadata-location"] == last and r.json()["metadata"]["properties"]["k"] == "v"
    replay = client.post(f"/namespaces/db/tables/{name}/unregister", headers=key)
    assert replay.status_code == 200 and replay.json()["metadata-location"] == last

    assert client.head(f"/namespaces/db/tables/{name}").status_code == 404
    assert client.post(f"/namespaces/db/tables/{name}", json={"updates": []}).status_code == 404
    assert error_of(client.post(f"/namespaces/db/tables/{name}/unregister"), 404)
    assert all(p.is_file() for p in files)

    # Overwriting is refused as the reference refuses it (Catalog.registerTable's default), whatever the name.
    for target in (name, "other"):
        refused = client.post("/namespaces/db/register", json={"name": target, "metadata-location": last,
                                                               "overwrite": True})
        assert error_of(refused, 406) == "Registering tables with overwrite is not supported"
    assert error_of(client.post("/namespaces/db/register", json={"name": name, "metadata-location": last,
                                                                 "overwrite": "yes"}), 400)
    assert client.head("/namespaces/db/tables/other").status_code == 404
    r = client.post("/namespaces/db/register", json={"name": name, "metadata-location": last, "overwrite": False})
    assert r.status_code == 200, r.text
    loaded = client.get(f"/namespaces/db/tables/{name}").json()
    assert loaded["metadata-location"] == last and loaded["metadata"]["properties"]["k"] == "v"
    r = client.post(f"/namespaces/db/tables/{name}",
                    json={"updates": [{"action": "set-properties", "updates": {"k": "w"}}]})
    assert r.status_code == 200, r.text


def test_config_declares_the_traits_the_compatibility_kit_reads(server: RunningServer) -> None:
    """Iceberg's REST Compatibility Kit reads ``rck.*`` from the client's merged properties: a kit run needs no
    setting of its own to know that Arco creates no namespace implicitly."""
    config = httpx.get(f"{server.iceberg_uri}/v1/config?warehouse=main",
                       headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).json()
    assert config["defaults"]["rck.requires-namespace-create"] == "true"
    assert httpx.post(f"{server.iceberg_uri}/v1/main/namespaces/nowhere/tables",
                      headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                      json={"name": "t", "schema": ONE_COLUMN_SCHEMA}).status_code == 404


def test_a_new_table_says_zstd_for_parquet_as_javas_new_tables_do(client: httpx.Client) -> None:
    """Java writes ``write.parquet.compression-codec=zstd`` into every new table; a Java writer falls back to gzip on
    a table without it. A creator's own choice wins."""
    _, plain = new_table(client)
    assert plain["metadata"]["properties"] == {"write.parquet.compression-codec": "zstd"}
    _, chosen = new_table(client, properties={"write.parquet.compression-codec": "snappy", "k": "v"})
    assert chosen["metadata"]["properties"] == {"write.parquet.compression-codec": "snappy", "k": "v"}
    name = f"s{uuid.uuid4().hex[:8]}"
    staged = client.post("/namespaces/db/tables", json={"name": name, "schema": TWO_COLUMNS, "stage-create": True})
    assert staged.json()["metadata"]["properties"] == {"write.parquet.compression-codec": "zstd"}


def test_a_table_staged_on_a_local_disk_has_its_metadata_folder_and_nothing_elsewhere(
        client: httpx.Client, tmp_path: Path) -> None:
    """DuckDB writes a CTAS's manifests into the staged location's metadata folder before the table exists; a
    stage at a place the caller may not use is refused before anything is made there."""
    name = f"s{uuid.uuid4().hex[:8]}"
    staged = client.post("/namespaces/db/tables", json={"name": name, "schema": TWO_COLUMNS, "stage-create": True})
    assert staged.status_code == 200, staged.text
    assert (local_path(staged.json()["metadata"]["location"]) / "metadata").is_dir()
    elsewhere = tmp_path / "elsewhere"
    refused = client.post("/namespaces/db/tables", json={"name": f"{name}x", "schema": TWO_COLUMNS,
                                                         "stage-create": True, "location": str(elsewhere)})
    assert refused.status_code == 400 and "no external location" in refused.text
    assert not elsewhere.exists()


def test_a_commit_body_naming_its_table_in_other_case_is_that_table(client: httpx.Client) -> None:
    """Names match ignoring case everywhere (the path's ``Tb`` is ``tb``), so does the body's identifier; a body
    naming another table is still refused."""
    name, _ = new_table(client)
    body = {"identifier": {"namespace": ["DB"], "name": name.upper()}, "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    answer = client.post(f"/namespaces/db/tables/{name}", json=body)
    assert answer.status_code == 200, answer.text
    other = client.post(f"/namespaces/db/tables/{name}", json={**body, "identifier": {"namespace": ["db"],
                                                                                       "name": "t"}})
    assert other.status_code == 400 and "does not match" in other.text


# -- 6: removing a property the table does not have ----------------------------------------------------------------


def test_removing_an_absent_property_changes_nothing(client: httpx.Client) -> None:
    # The reference implementation removes what is there (Java clients, such as Spark's ALTER TABLE ... UNSET
    # TBLPROPERTIES IF EXISTS, send such removals); PyIceberg's applier raised KeyError, which was a 500.
    name, created = new_table(client, properties={"kept": "1"})
    r = client.post(f"/namespaces/db/tables/{name}", json={"updates": [
        {"action": "remove-properties", "removals": ["never-set", "kept"]}]})
    assert r.status_code == 200, r.text
    assert "kept" not in r.json()["metadata"]["properties"]
    r = client.post("/transactions/commit", json={"table-changes": [{
        "identifier": {"namespace": ["db"], "name": name},
        "updates": [{"action": "remove-properties", "removals": ["kept"]}]}]})
    assert r.status_code == 204, r.text
    assert "kept" not in client.get(f"/namespaces/db/tables/{name}").json()["metadata"]["properties"]


# -- 7: commits that change nothing; snapshots built on an older table --------------------------------------------


def metadata_files(created: dict) -> list[str]:
    return sorted(p.name for p in (local_path(created["metadata"]["location"]) / "metadata").iterdir())


def test_a_commit_that_changes_nothing_writes_nothing_and_answers_the_table(client: httpx.Client) -> None:
    # The reference does not commit an update whose changes are empty; Arco wrote a file with the next number that
    # left its base out of the metadata log, so the log skipped a version for good.
    name, created = new_table(client)
    location, table_uuid = created["metadata-location"], created["metadata"]["table-uuid"]
    written = metadata_files(created)
    for body, key in (({"requirements": [{"type": "assert-table-uuid", "uuid": table_uuid}], "updates": []}, None),
                      ({}, None), ({"updates": [{"action": "remove-properties", "removals": ["never-set"]}]}, None),
                      ({"updates": []}, str(uuid7()))):
        r = client.post(f"/namespaces/db/tables/{name}", json=body,
                        headers={"Idempotency-Key": key} if key else {})
        assert r.status_code == 200, r.text
        assert r.json()["metadata-location"] == location and r.json()["metadata"] == created["metadata"]
    assert metadata_files(created) == written
    refused = client.post(f"/namespaces/db/tables/{name}", json={
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}], "updates": []})
    assert error_of(refused, 409).startswith("Requirement failed: current schema changed")
    changed = client.post(f"/namespaces/db/tables/{name}", json={
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert changed.status_code == 200, changed.text
    assert [e["metadata-file"] for e in changed.json()["metadata"]["metadata-log"]] == [location]


def test_a_transaction_writes_nothing_for_a_table_it_does_not_change(client: httpx.Client) -> None:
    (still, before), (changed, _) = new_table(client), new_table(client)
    r = client.post("/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ["db"], "name": still}, "updates": [],
         "requirements": [{"type": "assert-table-uuid", "uuid": before["metadata"]["table-uuid"]}]},
        {"identifier": {"namespace": ["db"], "name": changed},
         "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}]})
    assert r.status_code == 204, r.text
    after = client.get(f"/namespaces/db/tables/{still}").json()
    assert after["metadata-location"] == before["metadata-location"] and metadata_files(before) == \
        metadata_files(after)
    assert client.get(f"/namespaces/db/tables/{changed}").json()["metadata"]["properties"]["k"] == "v"
    refused = client.post("/transactions/commit", json={"table-changes": [  # its requirement still counts
        {"identifier": {"namespace": ["db"], "name": still}, "updates": [],
         "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 9}]},
        {"identifier": {"namespace": ["db"], "name": changed},
         "updates": [{"action": "set-properties", "updates": {"k": "w"}}]}]})
    assert error_of(refused, 409).startswith("Requirement failed")
    assert client.get(f"/namespaces/db/tables/{changed}").json()["metadata"]["properties"]["k"] == "v"


def snapshot(snapshot_id: int, parent: int | None, sequence_number: int, table: dict) -> dict:
    return {"snapshot-id": snapshot_id, "parent-snapshot-id": parent, "sequence-number": sequence_number,
            "timestamp-ms": 1_700_000_000_000 + snapshot_id, "summary": {"operation": "append"}, "schema-id": 0,
            "manifest-list": f"{table['location']}/metadata/snap-{snapshot_id}.avro"}


def test_a_snapshot_built_on_an_older_table_is_a_retryable_conflict(client: httpx.Client) -> None:
    # Iceberg's TestRESTCatalog.testSequenceNumberConflictThrowsCommitFailed: a writer that lost a race to another
    # branch must get CommitFailedException (409) with "Validation failed, please retry", which Java clients
    # retry on refreshed metadata; a 400 ended its write for good.
    name, created = new_table(client)
    table = created["metadata"]
    url = f"/namespaces/db/tables/{name}"
    first = client.post(url, json={"updates": [
        {"action": "add-snapshot", "snapshot": snapshot(1, None, 1, table)},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1}]})
    assert first.status_code == 200, first.text
    other = client.post(url, json={"updates": [
        {"action": "add-snapshot", "snapshot": snapshot(2, 1, 2, table)},
        {"action": "set-snapshot-ref", "ref-name": "other", "type": "branch", "snapshot-id": 2}]})
    assert other.status_code == 200, other.text
    stale = client.post(url, json={
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
        "updates": [{"action": "add-snapshot", "snapshot": snapshot(3, 1, 2, table)},
                    {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 3}]})
    assert stale.json()["error"]["type"] == "CommitFailedException"
    assert error_of(stale, 409) == ("Validation failed, please retry: Cannot add snapshot with sequence number 2 "
                                    "older than last sequence number 2")
    retried = client.post(url, json={  # rebuilt on the table as it is now
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
        "updates": [{"action": "add-snapshot", "snapshot": snapshot(3, 1, 3, table)},
                    {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 3}]})
    assert retried.status_code == 200, retried.text
    unknown = client.post(url, json={"updates": [{"action": "set-current-schema", "schema-id": 7}]})
    assert error_of(unknown, 400).startswith("cannot apply the updates")
    assert unknown.json()["error"]["type"] == "IllegalArgumentException"


# -- 8: a table in a namespace that does not exist ------------------------------------------------------------------


def test_dropping_or_renaming_a_table_of_a_missing_namespace_is_no_such_table(client: httpx.Client) -> None:
    # As the reference answers: Java's dropTable returns false on NoSuchTableException, and throws on
    # NoSuchNamespaceException. The destination's namespace is checked first, as the reference does.
    for method, path in (("DELETE", "/namespaces/nonexist/tables/nope"),
                         ("DELETE", "/namespaces/nonexist/tables/nope?purgeRequested=true")):
        r = client.request(method, path)
        assert error_of(r, 404) == "Table does not exist: nonexist.nope" and \
            r.json()["error"]["type"] == "NoSuchTableException"
    moved = client.post("/tables/rename", json={"source": {"namespace": ["nonexist"], "name": "missing"},
                                                "destination": {"namespace": ["db"], "name": "x"}})
    assert moved.json()["error"]["type"] == "NoSuchTableException" and error_of(moved, 404).endswith("missing")
    nowhere = client.post("/tables/rename", json={"source": {"namespace": ["nonexist"], "name": "missing"},
                                                  "destination": {"namespace": ["nonexist2"], "name": "x"}})
    assert nowhere.json()["error"]["type"] == "NoSuchNamespaceException" and \
        error_of(nowhere, 404) == "Namespace does not exist: nonexist2"


# -- 7: a namespace's location ------------------------------------------------------------------------------------


def test_a_namespace_location_is_where_its_tables_go_when_governance_allows(server: RunningServer,
                                                                          client: httpx.Client) -> None:
    """Spark's ``CREATE NAMESPACE ... LOCATION``: the location becomes the namespace's storage root, on the terms of
    a Unity Catalog schema's storage_root (inside an external location), and is not changed afterwards."""
    warehouse = f"file://{server.warehouse_dir}"  # type: ignore[attr-defined]
    root = f"{warehouse}/ns-lake/sales"
    refused = client.post("/namespaces", json={"namespace": ["sales"], "properties": {"location": root}})
    assert "in no external location" in error_of(refused, 400)
    assert "outside this server's warehouse" in error_of(client.post("/namespaces", json={
        "namespace": ["sales"], "properties": {"location": "file:///tmp/elsewhere"}}), 400)
    uc = httpx.Client(base_url=f"{server.base_url}/api/2.1/unity-catalog", timeout=30,
                      headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    uc.post("/storage-credentials", json={"name": "ns-role", "aws_iam_role": {
        "role_arn": "arn:aws:iam::1:role/ns"}}).raise_for_status()
    uc.post("/external-locations", json={"name": "ns-lake", "url": f"{warehouse}/ns-lake",
                                         "credential_name": "ns-role"}).raise_for_status()

    r = client.post("/namespaces", json={"namespace": ["sales"], "properties": {"location": root, "k": "v"}})
    assert r.status_code == 200, r.text
    assert client.get("/namespaces/sales").json()["properties"] == {"location": root, "k": "v"}
    schema = uc.get("/schemas/main.sales").json()
    assert schema["storage_root"] == root
    assert schema["storage_location"] == f"{root}/__unitystorage/schemas/{schema['schema_id']}"
    r = client.post("/namespaces/sales/tables", json={"name": "orders", "schema": TWO_COLUMNS})
    assert r.json()["metadata"]["location"].startswith(f"{schema['storage_location']}/orders-"), r.text
    # Two namespaces may name one root: each keeps its tables in a folder of its own under it.
    assert client.post("/namespaces", json={"namespace": ["other"], "properties": {"location": root}}).status_code \
        == 200
    r = client.post("/namespaces/other/tables", json={"name": "orders", "schema": TWO_COLUMNS})
    other = uc.get("/schemas/main.other").json()["storage_location"]
    assert other != schema["storage_location"] and r.json()["metadata"]["location"].startswith(f"{other}/orders-")
    squatter = client.post("/namespaces", json={"namespace": ["squat"], "properties": {
        "location": schema["storage_location"]}})
    assert "lies inside" in error_of(squatter, 400)  # nobody else's root may lie in a namespace's managed storage
    nested = client.post("/namespaces", json={"namespace": ["sales", "eu"], "properties": {"location": root}})
    assert "top-level namespace only" in error_of(nested, 400)

    moved = client.post("/namespaces/sales/properties", json={"updates": {"location": f"{warehouse}/ns-lake/x"}})
    assert "chosen when it is created" in error_of(moved, 400)
    assert "chosen when it is created" in error_of(
        client.post("/namespaces/sales/properties", json={"removals": ["location"]}), 400)
    same = client.post("/namespaces/sales/properties", json={"updates": {"location": root, "k": "w"}})
    assert same.status_code == 200, same.text


def test_a_namespace_without_a_chosen_location_reports_where_its_tables_go(client: httpx.Client) -> None:
    """As Hive's and Hadoop's catalogs do (Spark's DESCRIBE NAMESPACE shows it): the folder Arco places its tables
    in, which is no stored property (the namespace's properties stay what was set)."""
    assert client.post("/namespaces", json={"namespace": ["placed"], "properties": {"k": "v"}}).status_code == 200
    assert client.post("/namespaces", json={"namespace": ["placed", "inner"]}).status_code == 200
    for path in ("placed", "placed%1Finner"):
        properties = client.get(f"/namespaces/{path}").json()["properties"]
        made = client.post(f"/namespaces/{path}/tables", json={"name": "t", "schema": TWO_COLUMNS})
        assert made.json()["metadata"]["location"].startswith(properties["location"] + "/t-"), made.text
    assert client.get("/namespaces/placed").json()["properties"]["k"] == "v"
    assert client.post("/namespaces/placed/properties", json={"updates": {"k": "w"}}).json()["updated"] == ["k"]


# -- a snapshot's timestamp is the writer's: any long, as Java's TableMetadata takes it ------------------------------


@pytest.mark.parametrize("timestamp_ms", [253_402_300_800_000, 2**63 - 1, -5])  # year 10000, Long.MAX_VALUE, 1969
def test_a_snapshot_stamped_outside_the_calendar_commits_and_loads(server: RunningServer, client: httpx.Client,
                                                                   timestamp_ms: int) -> None:
    import pyarrow as pa

    name, _ = new_table(client, ONE_COLUMN_SCHEMA)
    catalog = RestCatalog("arco", uri=server.iceberg_uri, token=ARCO_TOKEN, warehouse="main")
    table = catalog.load_table(("db", name))
    table.append(pa.table({"x": pa.array([1], pa.int64())}))
    current = catalog.load_table(("db", name)).current_snapshot()
    assert current is not None
    # With an Idempotency-Key: the body holds the parent's id, a 63-bit long RFC 8785 has no exact number for.
    key = str(uuid7())
    body = {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": {
            "snapshot-id": 777, "parent-snapshot-id": current.snapshot_id,
            "sequence-number": current.sequence_number + 1, "timestamp-ms": timestamp_ms,
            "manifest-list": current.manifest_list, "summary": {"operation": "append"}, "schema-id": 0}},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 777}]}
    r = client.post(f"/namespaces/db/tables/{name}", headers={"Idempotency-Key": key}, json=body)
    assert r.status_code == 200, r.text
    retried = client.post(f"/namespaces/db/tables/{name}", headers={"Idempotency-Key": key}, json=body)
    assert retried.json()["metadata-location"] == r.json()["metadata-location"]
    body["updates"][0]["snapshot"]["parent-snapshot-id"] += 1  # the same key on another request
    assert error_of(client.post(f"/namespaces/db/tables/{name}", headers={"Idempotency-Key": key}, json=body), 409)
    loaded = catalog.load_table(("db", name))
    assert (loaded.current_snapshot().snapshot_id, loaded.current_snapshot().timestamp_ms) == (777, timestamp_ms)
    assert loaded.scan().to_arrow().num_rows == 1
