"""Volumes, functions and registered models in Tier 1 (arco.catalog.schema_objects): keyed by schema id so
catalog and schema renames keep them, refused drops of non-empty schemas, cascades, model version numbering."""

from __future__ import annotations

import pytest

from arco.catalog.errors import AlreadyExistsError, InvalidRequestError, NamespaceNotFound, NotEmptyError, NotFoundError
from arco.catalog.schema_objects import objects_in_schema, schema_object
from arco.catalog.state import CatalogState
from support.tier1 import commit


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState("file:///wh")
    commit(s, {"op": "create_principal", "kind": "user", "name": "ann@x", "id": "ann"})
    commit(s, {"op": "create_catalog", "id": "c1", "name": "main", "storage_root": "file:///wh/main", "owner": "a"})
    commit(s, {"op": "create_namespace", "id": "n1", "catalog_id": "c1", "path": ["db"], "owner": "a"})
    return s


def create(state: CatalogState, kind: str, name: str, object_id: str, schema_id: str = "n1", **fields: object) -> None:
    commit(state, {"op": "create_schema_object", "type": kind, "id": object_id, "schema_id": schema_id,
                   "name": name, "owner": "a", "fields": dict(fields)})


def test_objects_are_unique_per_schema_and_type(state: CatalogState) -> None:
    create(state, "volume", "v", "v1", volume_type="MANAGED", storage_location="file:///wh/main/db/v-1")
    with pytest.raises(AlreadyExistsError):
        create(state, "volume", "V", "v2")
    with pytest.raises(AlreadyExistsError):  # ids are unique too
        create(state, "function", "f", "v1")
    create(state, "function", "v", "f1")  # another type may use the name
    with pytest.raises(NamespaceNotFound):
        create(state, "volume", "w", "v3", schema_id="missing")
    with pytest.raises(InvalidRequestError):
        create(state, "table", "w", "v4")
    assert [e.fields["name"] for e in objects_in_schema(state, "n1")] == ["v", "v"]


def test_renames_of_the_object_its_schema_and_catalog(state: CatalogState) -> None:
    create(state, "volume", "v", "v1")
    create(state, "volume", "w", "v2")
    with pytest.raises(AlreadyExistsError):
        commit(state, {"op": "update_schema_object", "type": "volume", "schema_id": "n1", "name": "v",
                       "new_name": "w"})
    commit(state, {"op": "update_schema_object", "type": "volume", "schema_id": "n1", "name": "v", "new_name": "x",
                   "owner": "ann@x", "comment": "c"})
    commit(state, {"op": "update_namespace", "id": "n1", "new_name": "db2"})
    commit(state, {"op": "update_catalog", "id": "c1", "new_name": "main2"})
    moved = schema_object(state, "volume", "n1", "X", None)
    assert (moved.id, moved.owner, moved.comment, moved.fields["name"]) == ("v1", "ann@x", "c", "x")
    with pytest.raises(NotFoundError):
        schema_object(state, "volume", "n1", "v", None)
    with pytest.raises(InvalidRequestError):  # bookkeeping fields change only through their own operations
        commit(state, {"op": "update_schema_object", "type": "volume", "schema_id": "n1", "name": "x",
                       "fields": {"schema_id": "n2"}})


def test_a_schema_with_objects_drops_only_with_force_and_takes_them_and_their_grants(state: CatalogState) -> None:
    create(state, "function", "f", "f1")
    commit(state, {"op": "update_grants", "securable_type": "function", "securable_id": "f1",
                   "changes": [{"principal": "ann@x", "add": ["EXECUTE"], "remove": []}]})
    with pytest.raises(NotEmptyError):
        commit(state, {"op": "drop_namespace", "id": "n1"})
    commit(state, {"op": "drop_namespace", "id": "n1", "force": True})
    assert objects_in_schema(state, "n1") == [] and ("function", "f1") not in state.grants
    assert not [k for k in state.securables if k[0] == "function"]


def test_a_forced_catalog_drop_takes_its_schemas_objects(state: CatalogState) -> None:
    create(state, "registered_model", "m", "m1", storage_location="file:///wh/main/db/m-1")
    commit(state, {"op": "drop_catalog", "id": "c1", "force": True})
    assert not [k for k in state.securables if k[0] == "registered_model"]


def test_model_versions_count_up_finalize_once_and_block_a_plain_drop(state: CatalogState) -> None:
    create(state, "registered_model", "m", "m1")
    base = {"schema_id": "n1", "name": "m"}
    commit(state, {"op": "create_model_version", **base, "version": 1, "id": "v1", "fields": {"source": "s"}})
    with pytest.raises(InvalidRequestError):  # a version number is given once, in order
        commit(state, {"op": "create_model_version", **base, "version": 1, "id": "v1b"})
    commit(state, {"op": "create_model_version", **base, "version": 2, "id": "v2"})
    commit(state, {"op": "update_model_version", **base, "version": 1, "fields": {"status": "READY"},
                   "expect_status": "PENDING_REGISTRATION"})
    with pytest.raises(InvalidRequestError):
        commit(state, {"op": "update_model_version", **base, "version": 1, "fields": {"status": "READY"},
                       "expect_status": "PENDING_REGISTRATION"})
    with pytest.raises(InvalidRequestError):
        commit(state, {"op": "update_model_version", **base, "version": 2, "fields": {"status": "DONE"}})
    commit(state, {"op": "drop_model_version", **base, "version": 2})
    with pytest.raises(NotFoundError):
        commit(state, {"op": "drop_model_version", **base, "version": 2})
    commit(state, {"op": "create_model_version", **base, "version": 3, "id": "v3"})  # 2 is not reused
    model = schema_object(state, "registered_model", "n1", "m", None)
    assert sorted(model.fields["versions"]) == ["1", "3"] and model.fields["versions"]["1"]["status"] == "READY"
    with pytest.raises(InvalidRequestError):
        commit(state, {"op": "drop_schema_object", "type": "registered_model", **base})
    commit(state, {"op": "drop_schema_object", "type": "registered_model", **base, "force": True})


def test_snapshot_round_trip_keeps_objects(state: CatalogState) -> None:
    create(state, "registered_model", "m", "m1")
    commit(state, {"op": "create_model_version", "schema_id": "n1", "name": "m", "version": 1, "id": "v1"})
    again = CatalogState.from_snapshot(state.to_snapshot(), "file:///wh")
    assert schema_object(again, "registered_model", "n1", "m", None).fields == \
        schema_object(state, "registered_model", "n1", "m", None).fields
