"""Who may share what, and for how long: a share gives recipients what its owner may read (USE on the table's
catalog and schema, and SELECT), and stops giving a table once the owner may not; a share's grant belongs to the
recipient it was made to, not to whoever takes the recipient's name later."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from support.arco_server import ARCO_TOKEN, RunningServer, arco_server, run_cli
from support.sharing import ROWS, activate, ds

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("sharing-governance")
    warehouse = root / "warehouse"
    with arco_server(warehouse, root, admin_token=ARCO_TOKEN) as server:
        tokens = {"admin": ARCO_TOKEN}
        for user in ("ann@x.com", "eve@x.com"):
            run_cli(warehouse, "user", "create", user)
            tokens[user] = run_cli(warehouse, "token", "create", user).strip()
        catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
        catalog.create_namespace("gov")
        catalog.create_table("gov.orders", schema=ROWS.schema).append(ROWS)
        metastore = call(server, tokens, "admin", "GET", "/metastore_summary").json()["metastore_id"]
        for user in ("ann@x.com", "eve@x.com"):
            grant(server, tokens, "metastore", metastore, user, ["CREATE_SHARE", "CREATE_RECIPIENT"])
        yield {"server": server, "tokens": tokens, "root": root}


def call(server: RunningServer, tokens: dict[str, str], who: str, method: str, path: str,
         **kwargs: Any) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}", timeout=30,
                         headers={"Authorization": f"Bearer {tokens[who]}"}, **kwargs)


def grant(server: RunningServer, tokens: dict[str, str], kind: str, name: str, principal: str,
          privileges: list[str], action: str = "add") -> None:
    changed = call(server, tokens, "admin", "PATCH", f"/permissions/{kind}/{name}",
                   json={"changes": [{"principal": principal, action: privileges}]})
    assert changed.status_code == 200, changed.text


def add_table(world: dict[str, Any], who: str, share: str) -> httpx.Response:
    return call(world["server"], world["tokens"], who, "PATCH", f"/shares/{share}", json={"updates": [
        {"action": "ADD", "data_object": {"name": "main.gov.orders", "data_object_type": "TABLE"}}]})


def recipient_of(world: dict[str, Any], who: str, share: str, name: str) -> dict[str, Any]:
    server, tokens = world["server"], world["tokens"]
    made = call(server, tokens, who, "POST", "/recipients", json={"name": name, "authentication_type": "TOKEN"})
    assert made.status_code == 200, made.text
    granted = call(server, tokens, who, "PATCH", f"/shares/{share}/permissions",
                   json={"changes": [{"principal": name, "add": ["SELECT"]}]})
    assert granted.status_code == 200, granted.text
    return activate(made.json(), Path(world["root"]))[1]


def shared_tables(world: dict[str, Any], profile: dict[str, Any]) -> list[str]:
    """Every table the recipient's profile reaches, through the listings a client walks."""
    shares = ds(world["server"], profile, "GET", "/shares").json().get("items", [])
    return [t["name"] for share in shares
            for t in ds(world["server"], profile, "GET", f"/shares/{share['name']}/all-tables").json()["items"]]


def test_a_share_gives_what_its_owner_may_read_and_no_longer(world: dict[str, Any]) -> None:
    server, tokens = world["server"], world["tokens"]
    assert call(server, tokens, "ann@x.com", "POST", "/shares", json={"name": "anns"}).status_code == 200
    grant(server, tokens, "table", "main.gov.orders", "ann@x.com", ["SELECT"])
    bare = add_table(world, "ann@x.com", "anns")  # SELECT without USE on the catalog and schema reads nothing
    assert bare.status_code == 403 and "use catalog main (needs USE_CATALOG)" in bare.json()["message"]
    grant(server, tokens, "catalog", "main", "ann@x.com", ["USE_CATALOG"])
    grant(server, tokens, "schema", "main.gov", "ann@x.com", ["USE_SCHEMA"])
    assert add_table(world, "ann@x.com", "anns").status_code == 200
    profile = recipient_of(world, "ann@x.com", "anns", "anns_partner")
    query = "/shares/anns/schemas/gov/tables/orders/query"
    assert shared_tables(world, profile) == ["orders"]
    assert ds(server, profile, "POST", query, json={}).status_code == 200
    grant(server, tokens, "table", "main.gov.orders", "ann@x.com", ["SELECT"], action="remove")
    assert shared_tables(world, profile) == []  # the owner may not read it now: nor may the share's recipients
    assert ds(server, profile, "POST", query, json={}).status_code == 404
    # The provider is told why: the object's status, as Databricks shows it.
    objects = call(server, tokens, "ann@x.com", "GET", "/shares/anns").json()["objects"]
    assert [(o["name"], o["status"]) for o in objects] == [("main.gov.orders", "PERMISSION_DENIED")]
    grant(server, tokens, "table", "main.gov.orders", "ann@x.com", ["SELECT"])
    objects = call(server, tokens, "ann@x.com", "GET", "/shares/anns").json()["objects"]
    assert [(o["name"], o["status"]) for o in objects] == [("main.gov.orders", "ACTIVE")]


def test_a_share_holds_tables_not_names_and_shows_them_as_they_are_now(world: dict[str, Any]) -> None:
    server, tokens = world["server"], world["tokens"]
    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    catalog.create_table("gov.moving", schema=ROWS.schema).append(ROWS)
    assert call(server, tokens, "admin", "POST", "/shares", json={"name": "moves"}).status_code == 200

    def update(action: str, name: str, **fields: Any) -> httpx.Response:
        return call(server, tokens, "admin", "PATCH", "/shares/moves", json={"updates": [
            {"action": action, "data_object": {"name": name, "data_object_type": "TABLE", **fields}}]})

    def listed() -> list[tuple[str, str]]:
        return [(o["name"], o["shared_as"]) for o in call(server, tokens, "admin", "GET", "/shares/moves").json()
                .get("objects", [])]

    assert update("ADD", "main.gov.moving").status_code == 200
    catalog.rename_table("gov.moving", "gov.moved")  # the share keeps the table, shown under its name now
    assert listed() == [("main.gov.moved", "gov.moving")]
    catalog.create_table("gov.moving", schema=ROWS.schema)  # a new table takes the old name: not in the share
    again = update("ADD", "main.gov.moved")  # the renamed table is there already, under its new name
    assert again.status_code == 409, again.text
    assert update("ADD", "main.gov.moving", shared_as="gov.newcomer").status_code == 200
    assert sorted(listed()) == [("main.gov.moved", "gov.moving"), ("main.gov.moving", "gov.newcomer")]
    twice = update("ADD", "main.gov.moved", shared_as="gov.twice")
    assert twice.status_code == 409, twice.text  # one table is in a share once, whatever it is shared as
    assert update("REMOVE", "main.gov.moved").status_code == 200  # removed by the name the provider sees
    assert listed() == [("main.gov.moving", "gov.newcomer")]
    catalog.drop_table("gov.moving")  # a dropped table leaves the share
    assert listed() == []
    catalog.create_table("gov.moving", schema=ROWS.schema)
    assert update("ADD", "main.gov.moving", shared_as="gov.newcomer").status_code == 200  # its shared_as is free


def test_a_share_s_grant_does_not_pass_to_a_new_recipient_of_the_same_name(world: dict[str, Any]) -> None:
    server, tokens = world["server"], world["tokens"]
    assert call(server, tokens, "admin", "POST", "/shares", json={"name": "admins"}).status_code == 200
    assert add_table(world, "admin", "admins").status_code == 200
    profile = recipient_of(world, "admin", "admins", "vendor")
    assert shared_tables(world, profile) == ["orders"]
    renamed = call(server, tokens, "admin", "PATCH", "/recipients/vendor", json={"new_name": "vendor_eu"})
    assert renamed.status_code == 200, renamed.text
    assert shared_tables(world, profile) == ["orders"]  # the grant went with the recipient
    taken = call(server, tokens, "eve@x.com", "POST", "/recipients", json={"name": "vendor",
                                                                          "authentication_type": "TOKEN"})
    assert taken.status_code == 200, taken.text
    eves = activate(taken.json(), Path(world["root"]))[1]
    assert shared_tables(world, eves) == []
    assert call(server, tokens, "admin", "DELETE", "/recipients/vendor_eu").status_code == 200
    again = call(server, tokens, "eve@x.com", "POST", "/recipients", json={"name": "vendor_eu",
                                                                          "authentication_type": "TOKEN"})
    assert again.status_code == 200, again.text
    assert shared_tables(world, activate(again.json(), Path(world["root"]))[1]) == []
    holders = call(server, tokens, "admin", "GET", "/shares/admins/permissions").json()
    assert holders.get("privilege_assignments", []) == []


@pytest.mark.parametrize("changes", [[1], [{"principal": 5}], [{"principal": "x", "add": "SELECT"}],
                                     [{"principal": "x", "remove": True}], [{"principal": "x", "add": [1]}]])
def test_malformed_share_permission_changes_are_refused(world: dict[str, Any], changes: list[Any]) -> None:
    server, tokens = world["server"], world["tokens"]
    call(server, tokens, "admin", "POST", "/shares", json={"name": "malformed"})
    refused = call(server, tokens, "admin", "PATCH", "/shares/malformed/permissions", json={"changes": changes})
    assert refused.status_code == 400 and refused.json()["error_code"] == "INVALID_PARAMETER_VALUE", refused.text
    for bad in ({"add": 1}, {"remove": True}):
        wrong = call(server, tokens, "admin", "PATCH", "/permissions/table/main.gov.orders",
                     json={"changes": [{"principal": "eve@x.com", **bad}]})
        assert wrong.status_code == 400 and wrong.json()["error_code"] == "INVALID_PARAMETER_VALUE", wrong.text
