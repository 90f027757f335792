"""Identity and grant operations on the Tier 1 state, applied directly (no storage)."""

from __future__ import annotations

import pytest

from arco.auth.identity import principal_for_token
from arco.auth.tokens import hash_token
from arco.catalog import state as rules
from arco.catalog.errors import InvalidRequestError, NotFoundError
from arco.catalog.state import CatalogState


def apply(state: CatalogState, op: dict) -> None:
    op = {"at_ms": 1000, "principal": "admin", **op}
    rules.check(state, op)
    rules.apply(state, op, state.seq + 1)


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState()
    for name in ("ann@x", "bob@x"):
        apply(s, {"op": "create_principal", "kind": "user", "name": name, "id": name})
    apply(s, {"op": "create_principal", "kind": "group", "name": "inner", "id": "g1", "members": ["ann@x"]})
    apply(s, {"op": "create_principal", "kind": "group", "name": "outer", "id": "g2", "members": ["inner"]})
    return s


def test_nested_groups_and_account_users(state: CatalogState) -> None:
    assert state.groups_of("ann@x") == {"account users", "inner", "outer"}
    assert state.groups_of("bob@x") == {"account users"}


def test_a_group_cycle_is_refused(state: CatalogState) -> None:
    with pytest.raises(InvalidRequestError, match="cycle"):
        apply(state, {"op": "update_principal", "name": "inner", "add_members": ["outer"]})


def test_grants_are_deltas_in_any_spelling(state: CatalogState) -> None:
    change = {"op": "update_grants", "securable_type": "catalog", "securable_id": "c"}
    apply(state, {**change, "changes": [{"principal": "ann@x", "add": ["USE CATALOG"], "remove": []}]})
    apply(state, {**change, "changes": [{"principal": "bob@x", "add": ["CREATE"], "remove": []}]})
    assert state.grants_on("catalog", "c") == {"ann@x": ["USE CATALOG"], "bob@x": ["CREATE"]}
    apply(state, {**change, "changes": [{"principal": "ann@x", "add": [], "remove": ["USE_CATALOG"]}]})
    assert state.grants_on("catalog", "c") == {"bob@x": ["CREATE"]}
    with pytest.raises(NotFoundError):
        apply(state, {**change, "changes": [{"principal": "nobody@x", "add": ["CREATE"], "remove": []}]})


def test_tokens_expire_and_revoke(state: CatalogState) -> None:
    apply(state, {"op": "create_token", "id": "t1", "token_hash": hash_token("secret"), "principal": "ann@x",
                  "expires_at_ms": 5000})
    assert principal_for_token(state, "secret", now_ms=4999).name == "ann@x"
    assert principal_for_token(state, "secret", now_ms=5000) is None
    assert principal_for_token(state, "wrong", now_ms=0) is None
    apply(state, {"op": "revoke_token", "id": "t1"})
    assert principal_for_token(state, "secret", now_ms=0) is None


def test_access_survives_a_snapshot(state: CatalogState) -> None:
    apply(state, {"op": "update_grants", "securable_type": "table", "securable_id": "t",
                  "changes": [{"principal": "outer", "add": ["SELECT"], "remove": []}]})
    again = CatalogState.from_snapshot(state.to_snapshot())
    assert again.grants_on("table", "t") == {"outer": ["SELECT"]}
    assert again.groups_of("ann@x") == state.groups_of("ann@x")


def test_one_privilege_per_meaning_whatever_the_spelling(state: CatalogState) -> None:
    on_catalog = {"op": "update_grants", "securable_type": "catalog", "securable_id": "c"}
    apply(state, {**on_catalog, "changes": [{"principal": "ann@x", "add": ["USAGE", "CREATE"], "remove": []}]})
    apply(state, {**on_catalog, "changes": [{"principal": "ann@x", "add": ["USE CATALOG"], "remove": []}]})
    assert state.grants_on("catalog", "c") == {"ann@x": ["CREATE", "USE CATALOG"]}  # replaced, not added beside
    apply(state, {**on_catalog, "changes": [{"principal": "ann@x", "add": [], "remove": ["create_schema"]}]})
    assert state.grants_on("catalog", "c") == {"ann@x": ["USE CATALOG"]}
    on_schema = {"op": "update_grants", "securable_type": "schema", "securable_id": "s"}
    apply(state, {**on_schema, "changes": [{"principal": "ann@x", "add": ["USAGE", "USE_SCHEMA", "CREATE"],
                                            "remove": []}]})
    assert state.grants_on("schema", "s") == {"ann@x": ["USE_SCHEMA", "CREATE"]}
    apply(state, {**on_schema, "changes": [{"principal": "ann@x", "add": [], "remove": ["USAGE", "CREATE_TABLE"]}]})
    assert state.grants_on("schema", "s") == {}
