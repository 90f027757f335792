"""Bad input to the Iceberg REST API: the spec's error shape and status, and nothing changed."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, RunningServer
from support.arco_server import ONE_COLUMN_SCHEMA as SCHEMA

pytestmark = pytest.mark.timeout(120)


def state(client: httpx.Client) -> tuple:
    namespaces = client.get("/namespaces").json()
    tables = client.get("/namespaces/db/tables").json()
    metadata = client.get("/namespaces/db/tables/t").json()["metadata-location"]
    return namespaces, tables, metadata


def assert_error(response: httpx.Response, status: int, error_type: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status and error["type"] == error_type and error["message"]
    return error["message"]


@pytest.mark.parametrize("content", [b"{", b"not json", b'{"namespace": ["x"],}', b'{"a": NaN}', b"\xff\xfe"])
def test_malformed_json(client: httpx.Client, content: bytes) -> None:
    before = state(client)
    assert_error(client.post("/namespaces", content=content), 400, "BadRequestException")
    assert_error(client.post("/namespaces/db/tables/t", content=content), 400, "BadRequestException")
    assert state(client) == before


@pytest.mark.parametrize("body", [[], "x", {"namespace": "db2"}, {"namespace": ["a"], "properties": {"k": 1}},
                                  {"namespace": []}, {"namespace": [1]}])
def test_wrong_types_on_create_namespace(client: httpx.Client, body: object) -> None:
    before = state(client)
    assert_error(client.post("/namespaces", json=body), 400, "BadRequestException")
    assert state(client) == before


@pytest.mark.parametrize("name", ["a/b", "..", ".", "a.b", "tab\tle", "nul\x00", "x" * 10_000, "", " ", "a\x7f"])
def test_hostile_names_in_bodies(client: httpx.Client, name: str) -> None:
    before = state(client)
    assert_error(client.post("/namespaces", json={"namespace": [name]}), 400, "BadRequestException")
    assert_error(client.post("/namespaces/db/tables", json={"name": name, "schema": SCHEMA}), 400,
                 "BadRequestException")
    assert state(client) == before


@pytest.mark.parametrize("segment", ["a%2Fb", "%2E%2E", "..", "a%00b", "x" * 10_000, "a%20b"])
def test_hostile_names_in_paths(client: httpx.Client, segment: str) -> None:
    before = state(client)
    r = client.get(f"/namespaces/{segment}")
    assert r.status_code in (400, 404) and r.json()["error"]["code"] == r.status_code
    r = client.post(f"/namespaces/db/tables/{segment}", json={"updates": []})
    # 405: the client itself folds a literal ".." segment, so the request reaches a GET-only route.
    assert r.status_code in (400, 404, 405) and r.json()["error"]["code"] == r.status_code
    assert state(client) == before


def test_a_nul_is_refused_as_a_nul_not_read_as_an_encoded_slash(client: httpx.Client) -> None:
    for path in ("/namespaces/db/tables/a%00b", "/namespaces/a%00b", "/namespaces/db/tables/a%2Fb%00"):
        message = assert_error(client.get(path), 400, "BadRequestException")
        assert "NUL" in message and "a/b" not in message, path


def test_encoded_slash_is_a_bad_name_not_another_route(client: httpx.Client) -> None:
    # A lookup finds no such table (404, as the reference implementation answers); a write is refused (400).
    message = assert_error(client.get("/namespaces/db/tables/a%2Fb"), 404, "NoSuchTableException")
    assert "a/b" in message
    message = assert_error(client.post("/namespaces/db/tables/a%2Fb", json={"updates": []}), 400,
                           "BadRequestException")
    assert "/" in message


def test_unknown_update_and_requirement_types_are_listed(client: httpx.Client) -> None:
    before = state(client)
    message = assert_error(client.post("/namespaces/db/tables/t", json={
        "updates": [{"action": "set-properties", "updates": {"a": "b"}}, {"action": "explode"},
                    {"action": "rewrite-history"}]}), 400, "BadRequestException")
    assert "explode" in message and "rewrite-history" in message
    message = assert_error(client.post("/namespaces/db/tables/t", json={
        "requirements": [{"type": "assert-weather"}], "updates": []}), 400, "BadRequestException")
    assert "assert-weather" in message
    assert state(client) == before


@pytest.mark.parametrize("update", [
    {"action": "set-location", "location": "file:///elsewhere"},
    {"action": "set-properties", "updates": {"ARCO.lineage": "x"}},
    {"action": "remove-properties", "removals": ["arco.quality"]},
    {"action": "add-schema"},
    {"action": "set-properties", "updates": {"k": 5}},
    {"action": "set-properties", "updates": 5},
    {"action": "set-properties", "updates": None},
    {"action": "add-encryption-key", "key": {"key-id": "k"}},
    # read by the server as an int on every later commit: was a 500, the table unusable had it been created so
    {"action": "set-properties", "updates": {"write.metadata.previous-versions-max": "x"}},
])
def test_guardrails_and_invalid_updates(client: httpx.Client, update: dict) -> None:
    before = state(client)
    assert_error(client.post("/namespaces/db/tables/t", json={"updates": [update]}), 400, "BadRequestException")
    assert state(client) == before


def test_a_table_created_with_a_property_the_server_cannot_read_is_refused(client: httpx.Client) -> None:
    before = state(client)
    message = assert_error(client.post("/namespaces/db/tables", json={
        "name": "unreadable", "schema": SCHEMA, "properties": {"write.metadata.previous-versions-max": "ten"}}),
        400, "BadRequestException")
    assert "must be an integer" in message
    assert state(client) == before


# Types PyIceberg's own validators refuse past pydantic (its ValidationError, a KeyError, a transform's ValueError):
# each was answered 500 before, found by fuzzing the spec's schemas.
MALFORMED_TYPES = [
    ({"type": "list"}, "element"),
    ({"type": "list", "element-id": 2, "element": {"type": "map"}, "element-required": False}, "key"),
    ("decimal(a,b)", "decimal(a,b)"),
    ("fixed[x]", "fixed[x]"),
    ("fixed[2147483648]", "fixed[2147483648] type; a fixed type is at most"),  # accepted before: unreadable by Java
]


@pytest.mark.parametrize(("field_type", "named"), MALFORMED_TYPES)
def test_malformed_types_in_a_schema_are_bad_requests_everywhere_a_schema_is_read(
        client: httpx.Client, field_type: object, named: str) -> None:
    before = state(client)
    schema = {"type": "struct", "fields": [{"id": 1, "name": "x", "required": False, "type": field_type}]}
    for response in posts_of_a_schema(client, schema):
        assert named in assert_error(response, 400, "BadRequestException")
    assert state(client) == before
    assert client.get("/namespaces/db/views").json()["identifiers"] == []


def posts_of_a_schema(client: httpx.Client, schema: dict) -> list[httpx.Response]:
    """The answers of every request that reads a client's schema: a commit's add-schema, a create table, a create
    view and a transaction's add-schema."""
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["db"],
               "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}
    return [client.post("/namespaces/db/tables/t", json={"updates": [{"action": "add-schema", "schema": schema}]}),
            client.post("/namespaces/db/tables", json={"name": "typed", "schema": schema}),
            client.post("/namespaces/db/views", json={"name": "typed", "schema": schema, "view-version": version}),
            client.post("/transactions/commit", json={"table-changes": [{
                "identifier": {"namespace": ["db"], "name": "t"},
                "updates": [{"action": "add-schema", "schema": schema}]}]})]


def nested_schema(levels: int, kind: str = "struct") -> dict:
    """A schema nesting ``levels`` types: itself, then ``levels - 1`` structs or lists inside its one field."""
    inner: object = "long"
    for i in range(levels - 1):
        inner = ({"type": "struct", "fields": [{"id": 100 + i, "name": f"f{i}", "required": False, "type": inner}]}
                 if kind == "struct" else
                 {"type": "list", "element-id": 100 + i, "element": inner, "element-required": False})
    return {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "required": False, "type": inner}]}


@pytest.mark.parametrize(("levels", "kind"), [(51, "struct"), (90, "struct"), (300, "struct"), (300, "list")])
def test_schemas_nested_too_deeply_are_bad_requests(client: httpx.Client, levels: int, kind: str) -> None:
    # 90 and more structs took PyIceberg's recursion past Python's limit: a 500 before the bound.
    before = state(client)
    for response in posts_of_a_schema(client, nested_schema(levels, kind)):
        assert f"nests types {levels} deep; at most 50" in assert_error(response, 400, "BadRequestException")
    assert state(client) == before
    assert client.get("/namespaces/db/views").json()["identifiers"] == []


def test_a_schema_nested_to_the_limit_is_created_loaded_and_evolved(client: httpx.Client) -> None:
    created = client.post("/namespaces/db/tables", json={"name": "deep", "schema": nested_schema(50)})
    assert created.status_code == 200, created.text
    evolved = client.post("/namespaces/db/tables/deep", json={"updates": [
        {"action": "add-schema", "schema": {**nested_schema(50, "list"), "schema-id": 1}},
        {"action": "set-current-schema", "schema-id": -1}]})
    assert evolved.status_code == 200, evolved.text
    loaded = client.get("/namespaces/db/tables/deep").json()["metadata"]
    assert loaded["current-schema-id"] == 1 and len(loaded["schemas"]) == 2
    assert client.delete("/namespaces/db/tables/deep").status_code == 204


def test_a_malformed_transform_is_a_bad_request(client: httpx.Client) -> None:
    before = state(client)
    spec = {"fields": [{"source-id": 1, "field-id": 1000, "name": "p", "transform": "bucket[x]"}]}
    message = assert_error(client.post("/namespaces/db/tables/t", json={"updates": [{"action": "add-spec",
                                                                                     "spec": spec}]}),
                           400, "BadRequestException")
    assert "bucket[x]" in message
    assert state(client) == before


@pytest.mark.parametrize("body", [{"updates": [], "requirements": 5}, {"updates": [], "requirements": ["x"]},
                                  {"updates": ["x", [None]], "requirements": []}, {"updates": 7},
                                  {"updates": [], "requirements": {"type": "assert-create"}}])
def test_requirements_and_updates_of_the_wrong_shape(client: httpx.Client, body: dict) -> None:
    before = state(client)
    message = assert_error(client.post("/namespaces/db/tables/t", json=body), 400, "BadRequestException")
    assert "must be a list of objects" in message
    assert state(client) == before


@pytest.mark.parametrize("body", [{"removals": False}, {"removals": 0}, {"removals": ""}, {"removals": [1]}])
def test_namespace_property_removals_of_the_wrong_type(client: httpx.Client, body: dict) -> None:
    before = client.get("/namespaces/db").json()
    message = assert_error(client.post("/namespaces/db/properties", json=body), 400, "BadRequestException")
    assert "removals" in message
    assert client.get("/namespaces/db").json() == before


def test_a_namespace_property_both_set_and_removed_is_unprocessable(client: httpx.Client) -> None:
    before = client.get("/namespaces/db").json()
    message = assert_error(client.post("/namespaces/db/properties", json={"removals": ["owner", "a"], "updates": {
        "owner": "u", "b": "c"}}), 422, "UnprocessableEntityException")  # the spec's answer, as the reference's
    assert message.endswith("cannot simultaneously set and remove keys: owner")
    assert client.get("/namespaces/db").json() == before


def test_commit_against_a_dropped_table(client: httpx.Client) -> None:
    client.post("/namespaces/db/tables", json={"name": "gone", "schema": SCHEMA}).raise_for_status()
    assert client.delete("/namespaces/db/tables/gone").status_code == 204
    assert_error(client.post("/namespaces/db/tables/gone", json={
        "updates": [{"action": "set-properties", "updates": {"a": "b"}}]}), 404, "NoSuchTableException")
    assert_error(client.get("/namespaces/db/tables/gone"), 404, "NoSuchTableException")


def test_body_over_the_limit(client: httpx.Client) -> None:
    before = state(client)
    big = b'{"namespace": ["x"], "properties": {"k": "' + b"a" * 2_000_000 + b'"}}'
    assert_error(client.post("/namespaces", content=big), 413, "BadRequestException")
    assert state(client) == before


def test_missing_things(client: httpx.Client, server: RunningServer) -> None:
    assert_error(client.get("/namespaces/nope"), 404, "NoSuchNamespaceException")
    assert_error(client.get("/namespaces/db/tables/nope"), 404, "NoSuchTableException")
    assert_error(client.delete("/namespaces/nope"), 404, "NoSuchNamespaceException")
    assert_error(client.post("/namespaces/nope/tables", json={"name": "t", "schema": SCHEMA}), 404,
                 "NoSuchNamespaceException")
    assert_error(client.delete("/namespaces/db"), 409, "NamespaceNotEmptyException")
    assert_error(client.post("/namespaces", json={"namespace": ["db"]}), 409, "AlreadyExistsException")
    r = httpx.get(f"{server.iceberg_uri}/v1/config", params={"warehouse": "nowhere"},
                  headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert_error(r, 404, "NoSuchWarehouseException")
    r = httpx.get(f"{server.iceberg_uri}/v1/nowhere/namespaces", headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert r.status_code == 404


def test_a_lookup_of_a_very_long_name_is_not_echoed_whole(client: httpx.Client, server: RunningServer) -> None:
    """No catalog could hold a 20,000-character name: the 404 says so without sending the name back whole, on
    both APIs."""
    long = "x" * 20_000
    message = assert_error(client.get(f"/namespaces/db/tables/{long}"), 404, "NoSuchTableException")
    assert len(message) < 1_500
    unity = httpx.Client(base_url=f"{server.base_url}/api/2.1/unity-catalog", headers={
        "Authorization": f"Bearer {ARCO_TOKEN}"})
    for path, code in ((f"/catalogs/{long}", "CATALOG_DOES_NOT_EXIST"), (f"/schemas/main.{long}",
                                                                          "SCHEMA_DOES_NOT_EXIST"),
                       (f"/tables/main.db.{long}", "TABLE_DOES_NOT_EXIST")):
        r = unity.get(path)
        assert r.status_code == 404 and r.json()["error_code"] == code, r.text[:300]
        assert len(r.text) < 1_500 and " characters)" in r.json()["message"]


def test_etag_and_if_none_match(client: httpx.Client) -> None:
    first = client.get("/namespaces/db/tables/t")
    etag = first.headers["etag"]
    assert client.get("/namespaces/db/tables/t", headers={"If-None-Match": etag}).status_code == 304
    client.post("/namespaces/db/tables/t", json={"updates": [{"action": "set-properties", "updates": {"v": "2"}}]})
    changed = client.get("/namespaces/db/tables/t", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    refs = client.get("/namespaces/db/tables/t", params={"snapshots": "refs"})
    assert refs.status_code == 200 and refs.headers["etag"] != changed.headers["etag"]
    assert_error(client.get("/namespaces/db/tables/t", params={"snapshots": "some"}), 400, "BadRequestException")
    # A CommitTableResponse's or CreateTableResponse's ETag is one a load of the same version answers 304 to.
    committed = client.post("/namespaces/db/tables/t", json={"updates": [
        {"action": "set-properties", "updates": {"v": "3"}}]})
    assert committed.headers["etag"] not in (etag, changed.headers["etag"])
    assert client.get("/namespaces/db/tables/t", headers={"If-None-Match": committed.headers["etag"]}).status_code \
        == 304
    created = client.post("/namespaces/db/tables", json={"name": "tagged", "schema": SCHEMA})
    assert client.get("/namespaces/db/tables/tagged", headers={"If-None-Match": created.headers["etag"]}) \
        .status_code == 304


@pytest.mark.parametrize("tail", [
    b"Content-Length: 100\r\n\r\n{\"namespace\": [",  # the client leaves before its body has arrived
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",  # a chunk size the HTTP parser refuses
])
def test_a_body_that_never_arrives_is_no_server_fault(client: httpx.Client, server: RunningServer,
                                                       tail: bytes) -> None:
    before = state(client)
    port = int(server.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"POST /iceberg/v1/main/namespaces HTTP/1.1\r\nHost: arco\r\n"
                    b"Authorization: Bearer " + ARCO_TOKEN.encode() + b"\r\n" + tail)
        raw.shutdown(socket.SHUT_WR)
        answer = raw.recv(65536)
    assert not answer.startswith(b"HTTP/1.1 5"), answer[:200]
    deadline = time.monotonic() + 1.5  # the request's task sees the client gone within milliseconds
    while time.monotonic() < deadline:
        assert "ClientDisconnect" not in server.log()  # was logged as an unexpected error, with its traceback
        time.sleep(0.05)
    assert state(client) == before


def test_a_name_holding_the_text_of_an_encoded_slash_is_that_name_once_decoded(server: RunningServer,
                                                                                client: httpx.Client) -> None:
    # A client encodes the "%" of such a name ("%252F"); the path must not be decoded a second time into a slash.
    from pyiceberg.catalog.rest import RestCatalog

    assert client.post("/namespaces", json={"namespace": ["odd%2Fns"]}).status_code == 200
    assert client.post("/namespaces/odd%252Fns/tables", json={"name": "odd%2Ft", "schema": SCHEMA}).status_code == 200
    loaded = client.get("/namespaces/odd%252Fns/tables/odd%252Ft")
    assert loaded.status_code == 200, loaded.text
    catalog = RestCatalog("arco", uri=server.iceberg_uri, token=ARCO_TOKEN, warehouse="main")
    table = catalog.load_table(("odd%2Fns", "odd%2Ft"))
    table.transaction().set_properties(seen="yes").commit_transaction()
    assert catalog.load_table(("odd%2Fns", "odd%2Ft")).properties["seen"] == "yes"
    assert ("odd%2Fns", "odd%2Ft") in catalog.list_tables("odd%2Fns")
    # An encoded slash is still a slash: no table of that name, and none can be made.
    assert_error(client.get("/namespaces/odd%252Fns/tables/odd%2Ft"), 404, "NoSuchTableException")
    catalog.drop_table(("odd%2Fns", "odd%2Ft"))
    catalog.drop_namespace("odd%2Fns")


LONG = {"id": 1, "name": "id", "required": False, "type": "long"}


def commit(client: httpx.Client, requirements: list, updates: list) -> httpx.Response:
    return client.post("/namespaces/db/tables/t", json={"requirements": requirements, "updates": updates})


@pytest.mark.parametrize("requirement", [
    {"type": "assert-current-schema-id", "current-schema-id": False},  # lax parsing read false as schema 0
    {"type": "assert-current-schema-id", "current-schema-id": "0"},
    {"type": "assert-current-schema-id", "current-schema-id": 0.0},
    {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": "1"},
    {"type": "assert-table-uuid", "uuid": 5},
])
def test_a_requirement_of_the_wrong_json_type_is_refused_not_converted(client: httpx.Client,
                                                                        requirement: dict) -> None:
    before = state(client)
    message = assert_error(commit(client, [requirement], [{"action": "set-properties", "updates": {"k": "v"}}]),
                           400, "BadRequestException")
    assert "invalid requirement" in message
    assert state(client) == before


@pytest.mark.parametrize("update", [
    {"action": "set-snapshot-ref", "ref-name": "b", "type": "branch", "snapshot-id": "1"},
    {"action": "set-current-schema", "schema-id": True},
    {"action": "upgrade-format-version", "format-version": 2.0},
    {"action": "remove-properties", "removals": "k"},
    # PyIceberg builds these through constructors of its own, which lose pydantic's strict mode
    {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [LONG | {"id": "1"}]}},
    {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [LONG | {"required": 1}]}},
    {"action": "add-schema", "schema": {"type": "struct", "schema-id": "1", "fields": [LONG]}},
    {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
        LONG | {"type": {"type": "map", "key-id": "2", "key": "long", "value-id": 3, "value": "long",
                         "value-required": False}}]}},
    {"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": "1", "field-id": 1000, "name": "p", "transform": "identity"}]}},
    {"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": 1000.0, "name": "p", "transform": "identity"}]}},
    {"action": "add-sort-order", "sort-order": {"order-id": "1", "fields": []}},
    {"action": "add-snapshot", "snapshot": {"snapshot-id": 7, "sequence-number": 1, "timestamp-ms": 1,
                                            "manifest-list": "x", "schema-id": 0,
                                            "summary": {"operation": "append", "added-files": 1}}},
])
def test_an_update_of_the_wrong_json_type_is_refused_not_converted(client: httpx.Client, update: dict) -> None:
    before = state(client)
    assert_error(commit(client, [], [update]), 400, "BadRequestException")
    assert state(client) == before


@pytest.mark.parametrize("update, words", [
    ({"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
        LONG, {"id": 2**31, "name": "big", "required": False, "type": "long"}]}}, "field id 2147483648"),
    ({"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
        LONG, {"id": 2, "name": "l", "required": False,
               "type": {"type": "list", "element-id": 2**32, "element": "long", "element-required": False}}]}},
     "field id 4294967296"),
    ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": 1000, "name": "p", "transform": "bucket[0]"}]}}, "bucket count"),
    ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": 1000, "name": "p", "transform": "bucket[4294967296]"}]}}, "bucket count"),
    ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": 1000, "name": "p", "transform": "truncate[0]"}]}}, "width"),
    ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": 1000, "name": "p", "transform": "bogus"}]}}, "unknown transform"),
    ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 99, "field-id": 1000, "name": "p", "transform": "identity"}]}}, "no column has field id 99"),
    ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": 2**31, "name": "p", "transform": "identity"}]}}, "field-id 2147483648"),
    ({"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": 1000, "name": "p", "transform": "year"}]}}, "does not apply"),
    ({"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
        {"source-id": 99, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}},
     "no column has field id 99"),
    ({"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
        {"source-id": 1, "transform": "bucket[0]", "direction": "asc", "null-order": "nulls-first"}]}},
     "bucket count"),
])
def test_a_layout_no_engine_could_read_or_write_is_refused(client: httpx.Client, update: dict, words: str) -> None:
    """Ids past Java's int (Java readers refuse the file), a zero bucket count (every append divides by zero), an
    unknown transform or a missing source column (every append fails): PyIceberg's models take each of them."""
    before = state(client)
    message = assert_error(commit(client, [], [update]), 400, "BadRequestException")
    assert words in message
    assert state(client) == before


def test_a_spec_on_a_column_added_in_the_same_commit_is_checked_against_that_schema(client: httpx.Client) -> None:
    name = f"layout_{time.time_ns()}"
    assert client.post("/namespaces/db/tables", json={"name": name, "schema": SCHEMA}).status_code == 200
    schema = client.get(f"/namespaces/db/tables/{name}").json()["metadata"]["schemas"][0]
    grown = {**schema, "schema-id": 1, "fields": [*schema["fields"],
                                                  {"id": 100, "name": "day", "required": False, "type": "date"}]}
    spec = {"spec-id": 1, "fields": [{"source-id": 100, "field-id": 1000, "name": "d", "transform": "day"}]}
    r = client.post(f"/namespaces/db/tables/{name}", json={"requirements": [], "updates": [
        {"action": "add-spec", "spec": spec}, {"action": "add-schema", "schema": grown}]})
    assert_error(r, 400, "BadRequestException")  # the spec comes before the schema that has its column
    r = client.post(f"/namespaces/db/tables/{name}", json={"requirements": [], "updates": [
        {"action": "add-schema", "schema": grown}, {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": spec}, {"action": "set-default-spec", "spec-id": -1}]})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["partition-specs"][-1]["fields"][0]["transform"] == "day"


@pytest.mark.parametrize("extra, words", [
    ({"stage-create": "yes"}, "stage-create"),
    ({"stage-create": 1}, "stage-create"),
    ({"partition-spec": {}}, "'partition-spec' must be an object with a list of 'fields'"),
    ({"write-order": {"order-id": 0}}, "'write-order' must be an object with a list of 'fields'"),
    ({"partition-spec": {"fields": [{"source-id": 1, "field-id": 1000, "name": "p", "transform": "bucket[0]"}]}},
     "bucket count"),
    ({"partition-spec": {"fields": [{"source-id": 1, "field-id": 1000, "name": "p", "transform": "bogus"}]}},
     "unknown transform"),
    ({"write-order": {"order-id": 1, "fields": [
        {"source-id": 7, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}},
     "no column has field id 7"),
    ({"schema": {"type": "struct", "fields": [{"id": "1", "name": "a", "required": False, "type": "long"}]}},
     "'id' must be an integer"),
])
def test_a_create_with_a_bad_layout_or_wrong_types_is_refused(client: httpx.Client, extra: dict,
                                                               words: str) -> None:
    before = state(client)
    body = {"name": "never_made", "schema": SCHEMA} | extra
    message = assert_error(client.post("/namespaces/db/tables", json=body), 400, "BadRequestException")
    assert words in message
    assert state(client) == before
    assert client.get("/namespaces/db/tables/never_made").status_code == 404
