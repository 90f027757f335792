"""The pure Tier 1 rules: each operation's check and apply, without storage."""

from __future__ import annotations

import pytest

from arco.catalog import state as rules
from arco.catalog.errors import (
    AlreadyExistsError,
    CatalogNotFound,
    InvalidRequestError,
    NamespaceNotFound,
    NotEmptyError,
    TableNotFound,
)
from arco.catalog.state import CatalogState
from support.tier1 import commit


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState()
    commit(s, {"op": "create_catalog", "id": "c1", "name": "Main", "storage_root": "file:///wh/main", "owner": "a"})
    commit(s, {"op": "create_namespace", "id": "n1", "catalog_id": "c1", "path": ["db"], "owner": "a"})
    return s


def create_table(state: CatalogState, name: str, ns: tuple[str, ...] = ("db",), table_id: str | None = None) -> None:
    commit(state, {"op": "create_table", "id": table_id or f"t-{name}", "catalog_id": "c1", "namespace": list(ns),
                   "name": name, "location": f"file:///wh/{name}", "owner": "a"})


def test_names_are_case_insensitive_and_case_preserving(state: CatalogState) -> None:
    assert state.catalog("main").name == "Main"
    create_table(state, "Orders")
    assert state.table("c1", ("DB",), "orders").name == "Orders"
    with pytest.raises(AlreadyExistsError):
        create_table(state, "ORDERS", table_id="other")


def test_nested_namespaces_need_their_parent(state: CatalogState) -> None:
    with pytest.raises(NamespaceNotFound):
        commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["x", "y"], "owner": "a"})
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["db", "inner"], "owner": "a"})
    assert [n.path for n in state.child_namespaces("c1", ("db",))] == [("db", "inner")]
    assert [n.path for n in state.child_namespaces("c1", ())] == [("db",)]
    with pytest.raises(NotEmptyError):
        commit(state, {"op": "drop_namespace", "id": "n1"})


def test_drop_namespace_with_tables_is_refused_unless_forced(state: CatalogState) -> None:
    create_table(state, "t")
    with pytest.raises(NotEmptyError):
        commit(state, {"op": "drop_namespace", "id": "n1"})
    commit(state, {"op": "drop_namespace", "id": "n1", "force": True})
    assert not state.has_namespace("c1", ("db",))
    assert len(state.tables) == 0 and state.tables.values() == [] and "t1" not in state.tables


def test_namespace_properties_updates_and_removals(state: CatalogState) -> None:
    commit(state, {"op": "update_namespace", "id": "n1", "updates": {"a": "1", "b": "2"}})
    commit(state, {"op": "update_namespace", "id": "n1", "updates": {"c": "3"}, "removals": ["a", "missing"]})
    assert state.namespace("c1", ("db",)).properties == {"b": "2", "c": "3"}


def test_rename_table_across_namespaces_keeps_its_id(state: CatalogState) -> None:
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["other"], "owner": "a"})
    create_table(state, "t")
    create_table(state, "taken", ns=("other",))
    with pytest.raises(AlreadyExistsError):
        commit(state, {"op": "rename_table", "id": "t-t", "namespace": ["other"], "name": "TAKEN"})
    with pytest.raises(NamespaceNotFound):
        commit(state, {"op": "rename_table", "id": "t-t", "namespace": ["nope"], "name": "x"})
    commit(state, {"op": "rename_table", "id": "t-t", "namespace": ["other"], "name": "renamed"})
    assert state.table("c1", ("other",), "renamed").id == "t-t"
    with pytest.raises(TableNotFound):
        state.table("c1", ("db",), "t")
    assert [t.name for t in state.tables_of("c1", ("other",))] == ["renamed", "taken"]


def test_a_rename_carrying_other_changes_makes_them_all_or_none(state: CatalogState) -> None:
    """Unity Catalog's update with a new_name is one operation (rename_with_changes): were it two, a rename the
    state refuses could leave the comment made, and another rename could land between the two."""
    from arco.catalog.table_index import rename_with_changes

    create_table(state, "t")
    create_table(state, "taken")
    update = {"op": "update_table", "id": "t-t", "comment": "renamed", "updates": {"k": "v"}}
    with pytest.raises(AlreadyExistsError):
        commit(state, rename_with_changes(update, ["db"], "TAKEN"))
    entry = state.table("c1", ("db",), "t")
    assert (entry.comment, entry.properties) == (None, {})
    commit(state, rename_with_changes(update, ["db"], "done"))
    entry = state.table("c1", ("db",), "done")
    assert (entry.id, entry.comment, entry.properties) == ("t-t", "renamed", {"k": "v"})
    with pytest.raises(TableNotFound):
        state.table("c1", ("db",), "t")
    # Across namespaces too (the entry travels whole, changes made on arrival).
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["other"], "owner": "a"})
    commit(state, rename_with_changes({"op": "update_table", "id": "t-t", "comment": "moved"}, ["other"], "far"))
    assert state.table("c1", ("other",), "far").comment == "moved"


def test_drop_table_then_recreate_gets_a_new_id(state: CatalogState) -> None:
    create_table(state, "t", table_id="first")
    commit(state, {"op": "drop_table", "id": "first"})
    with pytest.raises(TableNotFound):
        commit(state, {"op": "drop_table", "id": "first"})
    create_table(state, "t", table_id="second")
    assert state.table("c1", ("db",), "t").id == "second"


def test_catalog_rename_and_drop(state: CatalogState) -> None:
    commit(state, {"op": "create_catalog", "id": "c2", "name": "other", "storage_root": "x", "owner": "a"})
    with pytest.raises(AlreadyExistsError):
        commit(state, {"op": "update_catalog", "id": "c2", "new_name": "MAIN"})
    with pytest.raises(NotEmptyError):
        commit(state, {"op": "drop_catalog", "id": "c1"})
    create_table(state, "t")
    commit(state, {"op": "drop_catalog", "id": "c1", "force": True})
    with pytest.raises(CatalogNotFound):
        state.catalog("main")
    assert state.namespaces == {} and len(state.tables) == 0 and state.children == {}


def test_snapshot_round_trip_preserves_everything(state: CatalogState) -> None:
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["db", "x"], "owner": "a",
                   "properties": {"k": "v"}})
    create_table(state, "t")
    restored = CatalogState.from_snapshot(state.to_snapshot())
    assert restored.to_snapshot() == state.to_snapshot()
    assert restored.table("c1", ("db",), "T").location == "file:///wh/t"
    assert [n.path for n in restored.child_namespaces("c1", ("db",))] == [("db", "x")]


def test_unknown_operations_and_out_of_order_entries_are_refused(state: CatalogState) -> None:
    with pytest.raises(InvalidRequestError):
        rules.check(state, {"op": "format_disk"})
    with pytest.raises(ValueError):
        rules.apply(state, {"op": "drop_namespace", "id": "n1"}, state.seq + 2)


def test_a_fence_holds_its_position_and_changes_nothing_else(state: CatalogState) -> None:
    before = state.to_snapshot()
    rules.apply(state, {"op": "fence", "at_ms": 1}, state.seq + 1)
    assert state.seq == before["seq"] + 1 and {**state.to_snapshot(), "seq": before["seq"]} == before
    with pytest.raises(InvalidRequestError):  # only the log writes one, never a request's change
        rules.check(state, {"op": "fence"})


def test_error_messages_cut_names_no_catalog_could_hold() -> None:
    from arco.catalog.errors import SHOWN_NAME_LIMIT, TableNotFound, shown

    storable = ".".join(["a" * 255] * 3)
    assert shown(storable) == storable and str(TableNotFound(storable)).endswith(storable)
    long = "y" * 50_000
    message = str(TableNotFound(long))
    assert len(message) < SHOWN_NAME_LIMIT + 100 and message.endswith("... (50,000 characters)")
    assert TableNotFound(long).name == long  # the error keeps the whole name for whoever handles it
