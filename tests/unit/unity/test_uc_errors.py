"""Catalog errors as Unity Catalog answers them (arco.unity.errors): the code Databricks clients map to an
exception class, and the full three-part name, where Iceberg REST names the same thing inside its warehouse."""

from __future__ import annotations

import pytest

from arco.catalog.errors import AlreadyExistsError, CatalogError
from arco.catalog.state import CatalogState
from arco.iceberg import errors as iceberg_errors
from arco.unity.errors import from_catalog_error
from support.tier1 import commit


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState("file:///srv/wh")
    commit(s, {"op": "create_catalog", "id": "c1", "name": "sales", "storage_root": "file:///srv/wh/sales",
               "owner": "admin"})
    commit(s, {"op": "create_namespace", "id": "n1", "catalog_id": "c1", "path": ["s1"], "owner": "admin"})
    commit(s, {"op": "create_table", "id": "t1", "catalog_id": "c1", "namespace": ["s1"], "name": "t1",
               "location": "file:///srv/wh/sales/s1/t1", "owner": "admin", "managed": True})
    return s


def caught(action) -> CatalogError:  # type: ignore[no-untyped-def]
    with pytest.raises(CatalogError) as raised:
        action()
    return raised.value


def test_missing_schemas_and_tables_are_named_with_their_catalog(state: CatalogState) -> None:
    table = caught(lambda: state.table("c1", ("s1",), "t4"))
    answer = from_catalog_error(table)
    assert (answer.status, answer.error_type, answer.message) == (
        404, "TABLE_DOES_NOT_EXIST", "Table 'sales.s1.t4' does not exist.")
    schema = from_catalog_error(caught(lambda: state.namespace("c1", ("s9",))))
    assert (schema.error_type, schema.message) == ("SCHEMA_DOES_NOT_EXIST", "Schema 'sales.s9' does not exist.")
    # Iceberg REST serves one catalog as its warehouse: its message names the table inside it.
    assert "s1.t4" in str(iceberg_errors.from_catalog_error(table)) and "sales" not in str(
        iceberg_errors.from_catalog_error(table))


def test_duplicates_are_named_with_their_catalog(state: CatalogState) -> None:
    table = caught(lambda: commit(state, {"op": "create_table", "id": "t2", "catalog_id": "c1", "namespace": ["s1"],
                                          "name": "T1", "location": "file:///srv/wh/x", "owner": "admin"}))
    answer = from_catalog_error(table)
    assert (answer.status, answer.error_type, answer.message) == (
        409, "TABLE_ALREADY_EXISTS", "Table 'sales.s1.T1' already exists.")
    schema = from_catalog_error(caught(lambda: commit(state, {"op": "create_namespace", "id": "n2",
                                                              "catalog_id": "c1", "path": ["s1"], "owner": "a"})))
    assert (schema.error_type, schema.message) == ("SCHEMA_ALREADY_EXISTS", "Schema 'sales.s1' already exists.")


@pytest.mark.parametrize("kind", ["volume", "function", "registered_model"])
def test_other_securables_take_the_generic_codes_the_sdk_maps(kind: str) -> None:
    # RESOURCE_ALREADY_EXISTS is the SDK's ResourceAlreadyExists (a ResourceConflict), as the specific codes are.
    assert from_catalog_error(AlreadyExistsError(kind, "v")).error_type == "RESOURCE_ALREADY_EXISTS"


def test_a_schema_holding_nested_namespaces_is_refused_with_advice_that_can_be_followed(state: CatalogState) -> None:
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["s1", "deep"], "owner": "admin"})
    refused = caught(lambda: commit(state, {"op": "drop_namespace", "id": "n1", "force": True}))
    answer = from_catalog_error(refused)
    assert answer.error_type == "SCHEMA_NOT_EMPTY" and "force=true does not drop" in answer.message
    assert "through Iceberg REST" in answer.message and "pass force=true" not in answer.message
    commit(state, {"op": "drop_namespace", "id": "n2"})
    tables = from_catalog_error(caught(lambda: commit(state, {"op": "drop_namespace", "id": "n1"})))
    assert "pass force=true" in tables.message  # tables: force does drop them
