"""A request's grant checks are made again on the catalog state its change lands on (arco.catalog.landing): a
revoke another server appends after the check and before the change is not jumped over."""

from __future__ import annotations

import contextvars
from pathlib import Path

import pytest

from arco.auth.principals import Principal
from arco.catalog.landing import on_landing, require_on_landing
from arco.catalog.store import CatalogStore
from arco.iceberg.authz import IcebergGuard
from arco.iceberg.errors import Forbidden
from arco.storage.local import LocalBackend

ANN = Principal("ann@x.com")
GRANTS = {"op": "update_grants", "securable_type": "schema", "securable_id": "n1"}


def setup(root: Path) -> CatalogStore:
    store = CatalogStore(LocalBackend(str(root)))
    ops = [
        {"op": "create_catalog", "id": "c1", "name": "main", "storage_root": f"{root.as_uri()}/main", "owner": "admin"},
        {"op": "create_namespace", "id": "n1", "catalog_id": "c1", "path": ["db"], "owner": "admin"},
        {"op": "create_principal", "kind": "user", "name": ANN.name, "id": "u1"},
        {"op": "update_grants", "securable_type": "catalog", "securable_id": "c1",
         "changes": [{"principal": ANN.name, "add": ["USE_CATALOG"], "remove": []}]},
        {**GRANTS, "changes": [{"principal": ANN.name, "add": ["USE_SCHEMA", "CREATE_TABLE"], "remove": []}]},
    ]
    for op in ops:
        store.execute(lambda state, op=op: op, principal="admin")
    return store


def create(name: str) -> dict:
    return {"op": "create_table", "id": f"id-{name}", "catalog_id": "c1", "namespace": ["db"], "name": name,
            "location": f"file:///wh/main/db/{name}", "owner": ANN.name}


def test_a_create_checked_before_a_revoke_another_server_appends_does_not_land_after_it(tmp_path: Path) -> None:
    here, elsewhere = setup(tmp_path), CatalogStore(LocalBackend(str(tmp_path)))
    guard = IcebergGuard(here)

    def request(name: str, revoke_between: bool) -> None:
        with here.read() as state:
            catalog = state.catalog("main")
        guard.create_table(ANN, catalog, ("db",))  # the check on arrival: allowed
        require_on_landing(lambda state: guard.decide(state, ANN, "create_table", catalog, ("db",)))
        if revoke_between:  # another server's revoke lands before this request's append
            elsewhere.execute(lambda state: {**GRANTS, "changes": [
                {"principal": ANN.name, "add": [], "remove": ["CREATE_TABLE"]}]}, principal="admin")
        here.execute(lambda state: create(name), principal=ANN.name)

    contextvars.copy_context().run(request, "before", False)
    with pytest.raises(Forbidden, match="create tables in db"):
        contextvars.copy_context().run(request, "after", True)
    fresh = CatalogStore(LocalBackend(str(tmp_path)))
    with fresh.read() as state:
        assert [t.name for t in state.tables_of("c1", ("db",))] == ["before"]


def test_conditions_belong_to_their_request_and_block(tmp_path: Path) -> None:
    store = setup(tmp_path)

    def refuse(state: object) -> None:
        raise Forbidden("Forbidden: not on this state")

    with on_landing(refuse), pytest.raises(Forbidden):
        store.execute(lambda state: create("inside"), principal=ANN.name)
    store.execute(lambda state: create("outside"), principal=ANN.name)  # the block's condition is gone
    with store.read() as state:
        assert [t.name for t in state.tables_of("c1", ("db",))] == ["outside"]
