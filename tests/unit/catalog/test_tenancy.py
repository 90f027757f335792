"""Metastores and workspaces in the pure Tier 1 rules: scoping, assignments, and dropping a metastore."""

from __future__ import annotations

import pytest

from arco.auth.principals import Principal
from arco.auth.subjects import subject_of
from arco.catalog.errors import AlreadyExistsError, InvalidRequestError, NotEmptyError, NotFoundError
from arco.catalog.state import CatalogState
from arco.catalog.tenancy import MetastoreNotAssigned
from support.tier1 import commit


def metastore(state: CatalogState, metastore_id: str, owner: str = "admin", primary: bool = False) -> None:
    commit(state, {"op": "create_securable", "id": f"e-{metastore_id}", "type": "metastore", "name": metastore_id,
                   "owner": owner, "fields": {"primary": True} if primary else {}})


def assign(state: CatalogState, workspace: int, metastore_id: str | None) -> None:
    commit(state, {"op": "create_securable", "id": f"w{workspace}", "type": "workspace", "name": str(workspace),
                   "owner": "admin", "fields": {"metastore_id": metastore_id, "default_catalog_name": "main"}})


def catalog(state: CatalogState, catalog_id: str, name: str, metastore_id: str | None) -> None:
    commit(state, {"op": "create_catalog", "id": catalog_id, "name": name, "storage_root": f"file:///{catalog_id}",
                   "owner": "admin", "metastore_id": metastore_id})


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState()
    metastore(s, "p", primary=True)
    metastore(s, "emea", owner="emma@x.com")
    catalog(s, "c-main", "main", None)
    catalog(s, "c-emea-main", "Main", "emea")
    commit(s, {"op": "create_principal", "kind": "user", "name": "emma@x.com", "id": "u1"})
    return s


def test_workspace_zero_works_in_the_primary_metastore_and_others_in_none_until_assigned(state: CatalogState) -> None:
    assert state.tenant_of_workspace(0).id == "p" and state.tenant_of_workspace(0).scope is None
    with pytest.raises(MetastoreNotAssigned):
        state.tenant_of_workspace(7)
    assign(state, 7, "emea")
    assert state.tenant_of_workspace(7).scope == "emea"
    assign(state, 0, None)  # unassigning workspace 0 is remembered, not reverted to the primary
    with pytest.raises(MetastoreNotAssigned):
        state.tenant_of_workspace(0)


def test_catalog_names_are_unique_per_metastore(state: CatalogState) -> None:
    assert state.catalog("MAIN").id == "c-main"
    assert state.catalog("main", "emea").id == "c-emea-main"
    with pytest.raises(AlreadyExistsError):
        catalog(state, "c-dup", "MAIN", "emea")
    with pytest.raises(NotFoundError):
        catalog(state, "c-x", "x", "no-such-metastore")
    commit(state, {"op": "update_catalog", "id": "c-emea-main", "new_name": "renamed"})
    assert state.catalog("renamed", "emea").id == "c-emea-main" and state.catalog("main").id == "c-main"


def test_named_securables_are_scoped_to_their_metastore(state: CatalogState) -> None:
    for scope in (None, "emea"):
        commit(state, {"op": "create_securable", "id": f"sc-{scope}", "type": "storage_credential", "name": "cred",
                       "owner": "admin", "metastore_id": scope})
    assert state.securable("storage_credential", "CRED").id == "sc-None"
    assert state.securable("storage_credential", "cred", "emea").id == "sc-emea"
    assert [e.id for e in state.securables_in_every_metastore("storage_credential")] == ["sc-None", "sc-emea"]
    commit(state, {"op": "drop_securable", "type": "storage_credential", "name": "cred", "metastore_id": "emea"})
    assert state.securable("storage_credential", "cred").id == "sc-None"


def test_metastore_admin_follows_the_workspace(state: CatalogState) -> None:
    assign(state, 7, "emea")
    assert subject_of(state, Principal("emma@x.com", workspace_id=7)).metastore_admin
    assert not subject_of(state, Principal("emma@x.com", workspace_id=0)).metastore_admin
    assert not subject_of(state, Principal("emma@x.com", workspace_id=9)).metastore_admin  # unassigned


def test_dropping_a_metastore(state: CatalogState) -> None:
    assign(state, 7, "emea")
    commit(state, {"op": "create_securable", "id": "loc", "type": "external_location", "name": "l", "owner": "a",
                   "metastore_id": "emea", "fields": {"url": "file:///x"}})
    commit(state, {"op": "update_grants", "securable_type": "metastore", "securable_id": "emea",
                   "changes": [{"principal": "emma@x.com", "add": ["CREATE_CATALOG"]}]})
    with pytest.raises(InvalidRequestError):
        commit(state, {"op": "drop_metastore", "metastore_id": "p", "force": True})
    with pytest.raises(NotEmptyError):
        commit(state, {"op": "drop_metastore", "metastore_id": "emea"})
    assert state.catalog("main", "emea").id == "c-emea-main"

    commit(state, {"op": "drop_metastore", "metastore_id": "emea", "force": True})
    assert "c-emea-main" not in state.catalogs and state.catalog("main").id == "c-main"
    assert state.securables_of("external_location", "emea") == []
    assert state.grants_on("metastore", "emea") == {}
    with pytest.raises(MetastoreNotAssigned):
        state.tenant_of_workspace(7)
    with pytest.raises(NotFoundError):
        commit(state, {"op": "drop_metastore", "metastore_id": "emea", "force": True})


def test_snapshots_keep_metastores_and_scopes(state: CatalogState) -> None:
    assign(state, 7, "emea")
    restored = CatalogState.from_snapshot(state.to_snapshot())
    assert restored.primary_metastore_id == "p"
    assert restored.catalog("main", "emea").id == "c-emea-main"
    assert restored.tenant_of_workspace(7).id == "emea"
