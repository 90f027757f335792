"""Iceberg REST views over HTTP against a real ``arco serve``: every route, the name space shared with tables,
replace with requirements and a concurrent race, bad input answered 400 with nothing changed, Idempotency-Key
replays, and the view as Unity Catalog shows it."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from uuid6 import uuid7

from support.arco_server import ARCO_TOKEN, ONE_COLUMN_SCHEMA, RunningServer, run_cli

pytestmark = pytest.mark.timeout(180)

SCHEMA_2 = {"type": "struct", "schema-id": 0,
            "fields": [{"id": 1, "name": "x", "required": False, "type": "long"},
                       {"id": 2, "name": "y", "required": False, "type": "string"}]}


def version(sql: str, dialect: str = "spark", schema_id: int = 0, **extra: Any) -> dict[str, Any]:
    return {"version-id": 1, "schema-id": schema_id, "timestamp-ms": 1_700_000_000_000, "summary": {"engine": "t"},
            "representations": [{"type": "sql", "sql": sql, "dialect": dialect}], "default-namespace": ["db"],
            **extra}


def create_body(name: str, sql: str = "SELECT x FROM db.t", **extra: Any) -> dict[str, Any]:
    return {"name": name, "schema": ONE_COLUMN_SCHEMA, "view-version": version(sql), "properties": {"k": "v"},
            **extra}


def replace_body(view_uuid: str, sql: str, dialect: str = "spark") -> dict[str, Any]:
    return {"requirements": [{"type": "assert-view-uuid", "uuid": view_uuid}],
            "updates": [{"action": "add-schema", "schema": SCHEMA_2},
                        {"action": "add-view-version", "view-version": version(sql, dialect, schema_id=-1)},
                        {"action": "set-current-view-version", "view-version-id": -1}]}


def error_type(response: httpx.Response) -> str:
    return response.json()["error"]["type"]


def test_config_advertises_every_view_endpoint(client: httpx.Client, server: RunningServer) -> None:
    config = httpx.get(f"{server.iceberg_uri}/v1/config?warehouse=main",
                       headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).json()
    for endpoint in ("GET /v1/{prefix}/namespaces/{namespace}/views",
                     "POST /v1/{prefix}/namespaces/{namespace}/views",
                     "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
                     "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
                     "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
                     "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
                     "POST /v1/{prefix}/namespaces/{namespace}/register-view",
                     "POST /v1/{prefix}/views/rename"):
        assert endpoint in config["endpoints"]


def test_view_lifecycle(client: httpx.Client) -> None:
    created = client.post("/namespaces/db/views", json=create_body("v1"))
    assert created.status_code == 200, created.text
    body = created.json()
    metadata = body["metadata"]
    assert metadata["format-version"] == 1 and metadata["current-version-id"] == 1
    assert metadata["versions"][0]["representations"][0]["sql"] == "SELECT x FROM db.t"
    assert metadata["properties"] == {"k": "v"} and len(metadata["version-log"]) == 1
    assert body["metadata-location"].endswith(".metadata.json")

    loaded = client.get("/namespaces/db/views/v1").json()
    assert loaded["metadata"] == metadata and loaded["metadata-location"] == body["metadata-location"]
    assert client.head("/namespaces/db/views/v1").status_code == 204
    assert client.head("/namespaces/db/views/nope").status_code == 404
    assert {"namespace": ["db"], "name": "v1"} in client.get("/namespaces/db/views").json()["identifiers"]
    assert {"namespace": ["db"], "name": "v1"} not in client.get("/namespaces/db/tables").json()["identifiers"]

    replaced = client.post("/namespaces/db/views/v1", json=replace_body(metadata["view-uuid"], "SELECT x, 'a' y"))
    assert replaced.status_code == 200, replaced.text
    new = replaced.json()["metadata"]
    assert new["current-version-id"] == 2 and len(new["schemas"]) == 2
    assert new["versions"][1]["schema-id"] == 1 and len(new["version-log"]) == 2

    props = client.post("/namespaces/db/views/v1", json={"updates": [
        {"action": "set-properties", "updates": {"p": "1"}}, {"action": "remove-properties", "removals": ["k"]}]})
    assert props.json()["metadata"]["properties"] == {"p": "1"}

    client.post("/namespaces", json={"namespace": ["other"]}).raise_for_status()
    renamed = client.post("/views/rename", json={"source": {"namespace": ["db"], "name": "v1"},
                                                 "destination": {"namespace": ["other"], "name": "v2"}})
    assert renamed.status_code == 204, renamed.text
    assert client.get("/namespaces/db/views/v1").status_code == 404
    assert client.get("/namespaces/other/views/v2").json()["metadata"]["view-uuid"] == metadata["view-uuid"]

    assert client.delete("/namespaces/other/views/v2").status_code == 204
    gone = client.delete("/namespaces/other/views/v2")
    assert gone.status_code == 404 and error_type(gone) == "NoSuchViewException"
    assert client.get("/namespaces/other/views").json()["identifiers"] == []
    client.delete("/namespaces/other").raise_for_status()


def test_tables_and_views_share_one_name_space(client: httpx.Client) -> None:
    client.post("/namespaces/db/views", json=create_body("shared")).raise_for_status()
    over_table = client.post("/namespaces/db/views", json=create_body("t"))
    assert over_table.status_code == 409 and error_type(over_table) == "AlreadyExistsException"
    assert "Table with same name already exists: db.t" in over_table.json()["error"]["message"]
    again = client.post("/namespaces/db/views", json=create_body("shared"))
    assert again.status_code == 409 and "View already exists: db.shared" in again.json()["error"]["message"]
    # The reference's words, which Iceberg's ViewCatalogTests match on.
    table_over_view = client.post("/namespaces/db/tables", json={"name": "shared", "schema": ONE_COLUMN_SCHEMA})
    assert table_over_view.status_code == 409 and error_type(table_over_view) == "AlreadyExistsException"
    assert table_over_view.json()["error"]["message"] == "View with same name already exists: db.shared"
    staged_over_view = client.post("/namespaces/db/tables/shared", json={
        "requirements": [{"type": "assert-create"}],
        "updates": [{"action": "add-schema", "schema": ONE_COLUMN_SCHEMA},
                    {"action": "set-current-schema", "schema-id": -1}]})
    assert staged_over_view.status_code == 409 and error_type(staged_over_view) == "AlreadyExistsException"
    assert staged_over_view.json()["error"]["message"] == "View with same name already exists: db.shared"

    as_table = client.get("/namespaces/db/tables/shared")
    assert as_table.status_code == 404 and error_type(as_table) == "NoSuchTableException"
    assert as_table.json()["error"]["message"] == "Table does not exist: db.shared"
    as_view = client.get("/namespaces/db/views/t")
    assert as_view.status_code == 404 and error_type(as_view) == "NoSuchViewException"
    assert client.delete("/namespaces/db/views/t").status_code == 404
    assert client.delete("/namespaces/db/tables/shared").status_code == 404
    rename_over_table = client.post("/views/rename", json={"source": {"namespace": ["db"], "name": "shared"},
                                                           "destination": {"namespace": ["db"], "name": "t"}})
    assert rename_over_table.status_code == 409
    assert "Table already exists" in rename_over_table.json()["error"]["message"]
    table_over_view = client.post("/tables/rename", json={"source": {"namespace": ["db"], "name": "t"},
                                                          "destination": {"namespace": ["db"], "name": "shared"}})
    assert table_over_view.status_code == 409
    assert table_over_view.json()["error"]["message"] == "Cannot rename db.t to db.shared. View already exists"
    client.delete("/namespaces/db/views/shared").raise_for_status()


def test_requirements_and_a_concurrent_replace(client: httpx.Client, server: RunningServer) -> None:
    view_uuid = client.post("/namespaces/db/views", json=create_body("race")).json()["metadata"]["view-uuid"]
    wrong = client.post("/namespaces/db/views/race", json=replace_body("00000000-0000-0000-0000-000000000000", "x"))
    assert wrong.status_code == 409 and error_type(wrong) == "CommitFailedException"

    # Two clients replace from the same base, each asserting the uuid it read (as clients do). The loser of the
    # pointer race is re-checked and re-applied by the server (its requirement still holds), so both land, in
    # some order, and nothing is lost; the 409 for a failed requirement is the test below.
    results: list[httpx.Response] = []

    def replace(sql: str) -> None:
        with httpx.Client(base_url=f"{server.iceberg_uri}/v1/main",
                          headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30) as c:
            results.append(c.post("/namespaces/db/views/race", json=replace_body(view_uuid, sql)))

    threads = [threading.Thread(target=replace, args=(f"SELECT {i} AS x, 'b' y",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.status_code for r in results) == [200, 200]
    final = client.get("/namespaces/db/views/race").json()["metadata"]
    assert len(final["versions"]) == 3 and final["current-version-id"] == 3


def test_a_dropped_and_recreated_view_fails_the_stale_replace(client: httpx.Client) -> None:
    """Two clients from the same base: one drops and recreates the view (a new uuid); the other's replace, which
    asserts the uuid it read, gets 409 and changes nothing."""
    old = client.post("/namespaces/db/views", json=create_body("stale")).json()["metadata"]["view-uuid"]
    client.delete("/namespaces/db/views/stale").raise_for_status()
    client.post("/namespaces/db/views", json=create_body("stale", "SELECT 2 AS x")).raise_for_status()
    before = client.get("/namespaces/db/views/stale").json()
    late = client.post("/namespaces/db/views/stale", json=replace_body(old, "SELECT 3 AS x, 'c' y"))
    assert late.status_code == 409 and error_type(late) == "CommitFailedException"
    assert client.get("/namespaces/db/views/stale").json() == before


# The reference answers a broken rule of its metadata builders as IllegalArgumentException (Java clients raise it
# again as such), a malformed or refused request as BadRequestException.
BAD, ARG = "BadRequestException", "IllegalArgumentException"


@pytest.mark.parametrize("body,fragment,kind", [
    ({"updates": [{"action": "no-such-update"}]}, "unknown view update action", BAD),
    ({"updates": [{"action": "add-snapshot", "snapshot": {}}]}, "unknown view update action", BAD),
    ({"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}]}, "unknown view requirement", BAD),
    ({"updates": [{"action": "add-view-version", "view-version": {**version("x"), "representations": []}}]},
     "without specifying a query", ARG),
    ({"updates": [{"action": "add-view-version", "view-version": {
        **version("x"), "representations": [{"type": "sql", "sql": "a", "dialect": "trino"},
                                            {"type": "sql", "sql": "b", "dialect": "Trino"}]}}]},
     "Cannot add multiple queries for dialect trino", ARG),
    ({"updates": [{"action": "set-location", "location": "file:///elsewhere"}]}, "set-location", BAD),
    ({"updates": [{"action": "set-current-view-version", "view-version-id": 42}]}, "unknown version", ARG),
    ({"updates": [{"action": "add-view-version", "view-version": version("x", schema_id=7)}]}, "unknown schema", ARG),
    ({"updates": [{"action": "upgrade-format-version", "format-version": 2}]}, "Unsupported format version", ARG),
    ({"updates": [{"action": "set-properties", "updates": {"arco.owner": "me"}}]}, "reserved", BAD),
    ({"updates": [{"action": "add-view-version", "view-version": version("x", dialect="trino")},
                  {"action": "set-current-view-version", "view-version-id": -1}]}, "loss of view dialects", ARG),
])
def test_bad_replace_is_400_and_changes_nothing(client: httpx.Client, body: dict, fragment: str, kind: str) -> None:
    if client.head("/namespaces/db/views/bad").status_code == 404:
        client.post("/namespaces/db/views", json=create_body("bad")).raise_for_status()
    before = client.get("/namespaces/db/views/bad").json()
    response = client.post("/namespaces/db/views/bad", json=body)
    assert response.status_code == 400, response.text
    assert error_type(response) == kind and fragment in response.json()["error"]["message"]
    assert client.get("/namespaces/db/views/bad").json() == before


@pytest.mark.parametrize("body,fragment", [
    (create_body("bad_create", **{"view-version": {**version("x"), "representations": []}}), "query"),
    (create_body("bad_create", **{"view-version": {**version("x"), "representations": [
        {"type": "sql", "sql": "a", "dialect": "spark"}, {"type": "sql", "sql": "b", "dialect": "spark"}]}}),
     "multiple queries for dialect spark"),
    (create_body("bad_create", **{"view-version": {**version("x"), "representations": [
        {"type": "sql", "sql": "a", "dialect": ""}]}}), "Invalid dialect"),
    ({"name": "bad_create", "view-version": version("x")}, "schema"),
    (create_body("bad_create", **{"schema": {"type": "struct", "fields": "nope"}}), "invalid schema"),
    (create_body("bad.name"), "period"),
    (create_body("bad/name"), "slash"),
    (create_body("bad\u0000name"), "control"),
    (create_body("x" * 300), "limit"),
    (create_body("bad_create", properties={"arco.x": "1"}), "reserved"),
    (create_body("bad_create", location="file:///tmp/elsewhere"), "let Arco place the view"),
])
def test_bad_create_is_400_and_creates_nothing(client: httpx.Client, body: dict, fragment: str) -> None:
    response = client.post("/namespaces/db/views", json=body)
    assert response.status_code in (400, 403), response.text
    if fragment in ("query", "multiple queries for dialect spark", "Invalid dialect"):  # as Java's ViewMetadata
        assert error_type(response) == ARG
    assert fragment.lower() in response.json()["error"]["message"].lower()
    names = {i["name"] for i in client.get("/namespaces/db/views").json()["identifiers"]}
    assert not any(n.startswith("bad_create") or n.startswith("bad") and n != "bad" for n in names)


def test_malformed_json_and_hostile_paths(client: httpx.Client) -> None:
    response = client.post("/namespaces/db/views", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and error_type(response) == "BadRequestException"
    response = client.post("/namespaces/db/views", json=[1, 2])
    assert response.status_code == 400
    for unstorable in ("a%2Fb", "a%20b"):  # names Arco never stores: looking them up finds nothing, writing is 400
        found = client.get(f"/namespaces/db/views/{unstorable}")
        assert found.status_code == 404 and error_type(found) == "NoSuchViewException"
        assert client.head(f"/namespaces/db/views/{unstorable}").status_code == 404
        assert client.post(f"/namespaces/db/views/{unstorable}", json={"requirements": [], "updates": []}
                           ).status_code == 400
    response = client.post("/views/rename", json={"source": {"namespace": ["db"], "name": "x"}})
    assert response.status_code == 400 and "a view identifier" in response.json()["error"]["message"]
    response = client.post("/views/rename", json={"source": {"namespace": ["db"], "name": "x"},
                                                  "destination": {"namespace": ["db"], "name": "a.b"}})
    assert response.status_code == 400 and "view name 'a.b'" in response.json()["error"]["message"]
    response = client.post("/namespaces/db/register-view", json={"name": "r", "metadata-location": "/etc/passwd"})
    assert response.status_code == 400 and "passwd" not in response.text.replace("/etc/passwd", "")


def test_idempotency_key_replays_create_and_replace(client: httpx.Client) -> None:
    headers = {"Idempotency-Key": str(uuid7())}
    first = client.post("/namespaces/db/views", json=create_body("idem"), headers=headers)
    assert first.status_code == 200
    again = client.post("/namespaces/db/views", json=create_body("idem"), headers=headers)
    assert (again.status_code, again.content) == (first.status_code, first.content)
    view_uuid = first.json()["metadata"]["view-uuid"]

    headers = {"Idempotency-Key": str(uuid7())}
    body = replace_body(view_uuid, "SELECT 9 AS x, 'z' y")
    first = client.post("/namespaces/db/views/idem", json=body, headers=headers)
    assert first.status_code == 200
    again = client.post("/namespaces/db/views/idem", json=body, headers=headers)
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert client.get("/namespaces/db/views/idem").json()["metadata"]["current-version-id"] == 2
    reused = client.post("/namespaces/db/views/idem", json={"updates": []}, headers=headers)
    assert reused.status_code in (409, 422)

    for method, path, payload in [
        ("POST", "/views/rename", {"source": {"namespace": ["db"], "name": "idem"},
                                   "destination": {"namespace": ["db"], "name": "idem2"}}),
        ("DELETE", "/namespaces/db/views/idem2", None),
    ]:
        headers = {"Idempotency-Key": str(uuid7())}
        first = client.request(method, path, json=payload, headers=headers)
        assert first.status_code == 204, first.text
        again = client.request(method, path, json=payload, headers=headers)
        assert again.status_code == 204


def test_a_replace_s_key_names_one_request_whatever_view_the_name_names_now(client: httpx.Client) -> None:
    view_uuid = client.post("/namespaces/db/views", json=create_body("keyed")).json()["metadata"]["view-uuid"]
    headers = {"Idempotency-Key": str(uuid7())}
    body = replace_body(view_uuid, "SELECT 7 AS x, 'k' y")
    first = client.post("/namespaces/db/views/keyed", json=body, headers=headers)
    assert first.status_code == 200, first.text
    client.post("/views/rename", json={"source": {"namespace": ["db"], "name": "keyed"},
                                       "destination": {"namespace": ["db"], "name": "keyed_old"}}).raise_for_status()
    fresh = client.post("/namespaces/db/views", json=create_body("keyed")).json()
    again = client.post("/namespaces/db/views/keyed", json=body, headers=headers)
    assert (again.status_code, again.content) == (first.status_code, first.content)  # the first answer
    assert client.get("/namespaces/db/views/keyed").json()["metadata-location"] == fresh["metadata-location"]
    other = client.post("/namespaces/db/views", json=create_body("keyed_other")).json()["metadata"]["view-uuid"]
    reused = client.post("/namespaces/db/views/keyed_other", json=replace_body(other, "SELECT 1 AS x, 'o' y"),
                         headers=headers)
    assert reused.status_code == 409, reused.text  # the same key, another view's request


def test_register_view_follows_the_register_table_rules(client: httpx.Client) -> None:
    created = client.post("/namespaces/db/views", json=create_body("reg")).json()
    location = created["metadata-location"]
    taken = client.post("/namespaces/db/register-view", json={"name": "reg", "metadata-location": location})
    assert taken.status_code == 409 and "View already exists" in taken.json()["error"]["message"]
    client.delete("/namespaces/db/views/reg").raise_for_status()
    # a view dropped without purge: its metadata may be registered again, under its old or a new name
    again = client.post("/namespaces/db/register-view", json={"name": "reg_again", "metadata-location": location})
    assert again.status_code == 200, again.text
    assert again.json()["metadata"]["view-uuid"] == created["metadata"]["view-uuid"]
    assert client.get("/namespaces/db/views/reg_again").json()["metadata-location"] == location
    outside = client.post("/namespaces/db/register-view",
                          json={"name": "reg3", "metadata-location": "file:///tmp/x/metadata/00000-a.metadata.json"})
    assert outside.status_code in (400, 403)
    client.delete("/namespaces/db/views/reg_again").raise_for_status()


def test_paging_and_unity_catalog(client: httpx.Client, server: RunningServer) -> None:
    client.post("/namespaces", json={"namespace": ["paged"]}).raise_for_status()
    for i in range(5):
        body = create_body(f"p{i}")
        body["view-version"]["representations"] = [{"type": "sql", "sql": f"SELECT {i} AS x", "dialect": "trino"},
                                                   {"type": "sql", "sql": f"SELECT {i} x", "dialect": "spark"}]
        client.post("/namespaces/paged/views", json=body).raise_for_status()
    seen, token = [], None
    while True:
        params = {"pageSize": "2", **({"pageToken": token} if token else {})}
        page = client.get("/namespaces/paged/views", params=params).json()
        seen += [i["name"] for i in page["identifiers"]]
        token = page.get("next-page-token")
        if not token:
            break
    assert seen == [f"p{i}" for i in range(5)]

    info = httpx.get(f"{server.base_url}/api/2.1/unity-catalog/tables/main.paged.p3",
                     headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).json()
    assert info["table_type"] == "VIEW" and info["view_definition"] == "SELECT 3 x"
    assert [c["name"] for c in info["columns"]] == ["x"] and info["columns"][0]["type_name"] == "LONG"


def test_two_concurrent_creates_of_one_view_exactly_one_wins(server: RunningServer, client: httpx.Client) -> None:
    results: list[httpx.Response] = []
    barrier = threading.Barrier(2)

    def create(sql: str) -> None:
        with httpx.Client(base_url=f"{server.iceberg_uri}/v1/main",
                          headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30) as c:
            barrier.wait()
            results.append(c.post("/namespaces/db/views", json=create_body("both", sql)))

    threads = [threading.Thread(target=create, args=(f"SELECT {i} AS x",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.status_code for r in results) == [200, 409]
    loser = next(r for r in results if r.status_code == 409)
    assert error_type(loser) == "AlreadyExistsException"
    winner = next(r for r in results if r.status_code == 200)
    assert client.get("/namespaces/db/views/both").json()["metadata-location"] == winner.json()["metadata-location"]


def test_views_follow_the_grants_of_tables(server: RunningServer, client: httpx.Client) -> None:
    """A stranger may do nothing with a view; SELECT loads it but neither replaces nor drops it; MODIFY replaces;
    creating needs CREATE_TABLE on the schema."""
    warehouse = server.warehouse_dir  # type: ignore[attr-defined]
    client.post("/namespaces", json={"namespace": ["perm"]}).raise_for_status()
    view_uuid = client.post("/namespaces/perm/views", json=create_body("pv")).json()["metadata"]["view-uuid"]
    tokens = {}
    for user in ("vera@x.com", "sam@x.com"):
        run_cli(warehouse, "user", "create", user)
        tokens[user] = run_cli(warehouse, "token", "create", user).strip()

    def as_user(user: str) -> httpx.Client:
        return httpx.Client(base_url=f"{server.iceberg_uri}/v1/main", timeout=30,
                            headers={"Authorization": f"Bearer {tokens[user]}"})

    def grant(kind: str, name: str, *privileges: str) -> None:
        httpx.patch(f"{server.base_url}/api/2.1/unity-catalog/permissions/{kind}/{name}", timeout=30,
                    headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                    json={"changes": [{"principal": "vera@x.com", "add": list(privileges)}]}).raise_for_status()

    vera, sam = as_user("vera@x.com"), as_user("sam@x.com")
    for stranger_call in (lambda: sam.get("/namespaces/perm/views/pv"),
                          lambda: sam.post("/namespaces/perm/views/pv", json=replace_body(view_uuid, "SELECT 1")),
                          lambda: sam.delete("/namespaces/perm/views/pv"),
                          lambda: sam.post("/namespaces/perm/views", json=create_body("mine"))):
        assert stranger_call().status_code == 403
    grant("catalog", "main", "USE_CATALOG")
    grant("schema", "main.perm", "USE_SCHEMA")
    grant("table", "main.perm.pv", "SELECT")
    assert vera.get("/namespaces/perm/views/pv").status_code == 200
    assert vera.post("/namespaces/perm/views/pv", json=replace_body(view_uuid, "SELECT 2")).status_code == 403
    assert vera.delete("/namespaces/perm/views/pv").status_code == 403
    assert vera.post("/namespaces/perm/views", json=create_body("mine")).status_code == 403
    grant("table", "main.perm.pv", "MODIFY")
    assert vera.post("/namespaces/perm/views/pv", json=replace_body(view_uuid, "SELECT 3")).status_code == 200
    grant("schema", "main.perm", "CREATE_TABLE")
    assert vera.post("/namespaces/perm/views", json=create_body("mine")).status_code == 200
    assert vera.delete("/namespaces/perm/views/mine").status_code == 204  # her own view
    assert sam.get("/namespaces/perm/views").status_code == 403  # a stranger cannot even list
    assert [i["name"] for i in vera.get("/namespaces/perm/views").json()["identifiers"]] == ["pv"]


def test_dropping_an_iceberg_view_through_unity_catalog_marks_its_pointer(server: RunningServer,
                                                                          client: httpx.Client) -> None:
    from arco.iceberg.pointer import PointerStore
    from arco.storage.factory import open_storage

    client.post("/namespaces", json={"namespace": ["ucdrop"]}).raise_for_status()
    view_uuid = client.post("/namespaces/ucdrop/views", json=create_body("gone")).json()["metadata"]["view-uuid"]
    deleted = httpx.delete(f"{server.base_url}/api/2.1/unity-catalog/tables/main.ucdrop.gone",
                           headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30)
    assert deleted.status_code == 200, deleted.text
    assert client.get("/namespaces/ucdrop/views/gone").status_code == 404
    pointer = PointerStore(open_storage(server.warehouse_dir)).load(view_uuid)  # type: ignore[attr-defined]
    assert pointer is not None and pointer.pointer.dropped
