"""Where creates and registers may put a table or view (arco.iceberg.placement): pure decisions, state in, placement
or refusal out, with the warehouse's real location-to-key mapping."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arco.auth.principals import BOOTSTRAP_ADMIN, Principal
from arco.catalog import locations
from arco.catalog.locations import LocationRefused
from arco.catalog.state import CatalogState
from arco.iceberg.errors import BadRequest, Forbidden
from arco.iceberg.metadata_files import MetadataFiles
from arco.iceberg.placement import Placement, Placements
from arco.storage.local import LocalBackend
from support.tier1 import commit

ANN = Principal("ann@x")  # holds CREATE_EXTERNAL_TABLE on "landing"
BOB = Principal("bob@x")  # holds nothing there
LIVE_ID = "11111111-2222-3333-4444-555555555555"
DROPPED_ID = "66666666-7777-8888-9999-000000000000"


@pytest.fixture
def world(tmp_path: Path) -> tuple[CatalogState, Placements]:
    storage = LocalBackend(tmp_path / "wh")
    wh = storage.url
    state = CatalogState(wh)
    for user in ("ann@x", "bob@x"):
        commit(state, {"op": "create_principal", "kind": "user", "name": user, "id": user})
    commit(state, {"op": "create_catalog", "id": "c1", "name": "main", "storage_root": f"{wh}/main",
                   "owner": "admin"})
    commit(state, {"op": "create_namespace", "id": "n1", "catalog_id": "c1", "path": ["db"], "owner": "admin"})
    live = locations.allocate_table_location(state, state.catalogs["c1"], ("db",), "live", LIVE_ID)
    commit(state, {"op": "create_table", "id": LIVE_ID, "catalog_id": "c1", "namespace": ["db"], "name": "live",
                   "location": live, "owner": "admin", "managed": True})
    commit(state, {"op": "create_securable", "id": "loc1", "type": "external_location", "name": "landing",
                   "owner": "admin", "fields": {"url": f"{wh}/landing", "credential_name": "cred"}})
    commit(state, {"op": "update_grants", "securable_type": "external_location", "securable_id": "loc1",
                   "changes": [{"principal": "ann@x", "add": ["CREATE_EXTERNAL_TABLE"], "remove": []}]})
    return state, Placements(wh, MetadataFiles(storage).key_of)


def allocated(state: CatalogState, name: str, object_uuid: str) -> str:
    return locations.allocate_table_location(state, state.catalogs["c1"], ("db",), name, object_uuid)


def test_a_new_table_without_a_location_gets_the_prefix_arco_allocates(world: tuple[CatalogState, Placements]) -> None:
    state, placements = world
    placed = placements.for_new(state, state.catalogs["c1"], ("db",), "t", DROPPED_ID, None, None)
    assert placed == Placement(allocated(state, "t", DROPPED_ID), True)


def test_asking_for_the_allocated_prefix_in_another_spelling_is_still_managed(
        world: tuple[CatalogState, Placements]) -> None:
    state, placements = world
    own = allocated(state, "t", DROPPED_ID)
    placed = placements.for_new(state, state.catalogs["c1"], ("db",), "t", DROPPED_ID, own + "/", None)
    assert placed == Placement(own, True)


@pytest.mark.parametrize("kind", ["table", "view"])
def test_a_caller_without_an_identity_may_not_choose_a_location(world: tuple[CatalogState, Placements],
                                                                 kind: str) -> None:
    state, placements = world
    with pytest.raises(BadRequest, match=f"Arco assigns {kind} locations"):
        placements.for_new(state, state.catalogs["c1"], ("db",), "t", DROPPED_ID,
                           f"{placements.warehouse_url}/landing/t", None, kind=kind)


def test_a_location_inside_an_external_location_goes_to_whoever_may_create_there(
        world: tuple[CatalogState, Placements]) -> None:
    state, placements = world
    wanted = f"{placements.warehouse_url}/landing/orders"
    placed = placements.for_new(state, state.catalogs["c1"], ("db",), "t", DROPPED_ID, wanted, ANN)
    assert placed == Placement(wanted, False)
    with pytest.raises(LocationRefused):
        placements.for_new(state, state.catalogs["c1"], ("db",), "t", DROPPED_ID, wanted, BOB)


@pytest.mark.parametrize("spelling", ["landing/%6Frders", "landing/./orders", "landing//orders"])
def test_a_location_must_be_spelled_plainly(world: tuple[CatalogState, Placements], spelling: str) -> None:
    state, placements = world
    with pytest.raises(BadRequest, match="plainly"):
        placements.for_new(state, state.catalogs["c1"], ("db",), "t", DROPPED_ID,
                           f"{placements.warehouse_url}/{spelling}", ANN)


def test_only_metadata_files_are_registrable(world: tuple[CatalogState, Placements]) -> None:
    state, placements = world
    with pytest.raises(BadRequest, match=r"\*\.metadata\.json"):
        placements.check_registrable(state, state.catalogs["c1"], ("db",),
                                     f"{placements.warehouse_url}/landing/t/x.json", ANN)


@pytest.mark.parametrize("outside", ["file:///elsewhere/t/metadata/v1.metadata.json",
                                     "file:/elsewhere/t/metadata/v1.metadata.json"])
def test_a_metadata_file_outside_the_warehouse_is_refused_for_that(world: tuple[CatalogState, Placements],
                                                                  outside: str) -> None:
    """Not as a spelling to correct: the message says where the file is not."""
    state, placements = world
    with pytest.raises(BadRequest, match="is outside this server's warehouse") as refused:
        placements.check_registrable(state, state.catalogs["c1"], ("db",), outside, ANN)
    assert "plainly" not in str(refused.value)


def test_a_dropped_tables_own_folder_is_registrable_again_where_it_was_by_those_who_had_it(
        world: tuple[CatalogState, Placements]) -> None:
    """Back in its own namespace, by the one who last committed to it, the schema's or catalog's owner or an admin
    (or inside the server): not by someone else who merely may create tables there, nor into another namespace."""
    state, placements = world
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["other"], "owner": "bob@x"})
    folder = allocated(state, "gone", DROPPED_ID)
    file = f"{folder}/metadata/00001-a.metadata.json"
    placements.check_registrable(state, state.catalogs["c1"], ("db",), file, None)
    assert placements.for_registered(state, state.catalogs["c1"], ("db",), folder, DROPPED_ID, None) == \
        Placement(folder, True)
    with pytest.raises(Forbidden, match="may not register a dropped table's files again"):
        placements.check_registrable(state, state.catalogs["c1"], ("db",), file, BOB)
    with pytest.raises(Forbidden):
        placements.for_registered(state, state.catalogs["c1"], ("db",), folder, DROPPED_ID, BOB)
    with pytest.raises(LocationRefused):  # bob owns "other": the folder is db's, so it is in no external location
        placements.check_registrable(state, state.catalogs["c1"], ("other",), file, BOB)
    committed = dataclasses.replace(placements, last_committer=lambda uuid: "BOB@x" if uuid == DROPPED_ID else None)
    assert committed.for_registered(state, state.catalogs["c1"], ("db",), folder, DROPPED_ID, BOB) == \
        Placement(folder, True)
    assert placements.for_registered(state, state.catalogs["c1"], ("db",), folder, DROPPED_ID,
                                     BOOTSTRAP_ADMIN) == Placement(folder, True)


def test_a_live_tables_files_are_not_registrable(world: tuple[CatalogState, Placements]) -> None:
    state, placements = world
    folder = state.tables[LIVE_ID].location
    with pytest.raises(LocationRefused, match="overlaps the managed storage"):
        placements.check_registrable(state, state.catalogs["c1"], ("db",), f"{folder}/metadata/00001-a.metadata.json",
                                     BOB)
    with pytest.raises(LocationRefused, match="overlaps the managed storage"):
        placements.for_registered(state, state.catalogs["c1"], ("db",), folder, LIVE_ID, ANN)


@pytest.mark.parametrize("kind", ["table", "view"])
def test_a_registered_location_elsewhere_needs_a_caller(world: tuple[CatalogState, Placements], kind: str) -> None:
    state, placements = world
    with pytest.raises(BadRequest, match=f"the {kind}'s location is not registrable here"):
        placements.for_registered(state, state.catalogs["c1"], ("db",), f"{placements.warehouse_url}/landing/t",
                                  DROPPED_ID, None, kind=kind)


def test_a_registered_tables_write_paths_must_stay_inside_it(world: tuple[CatalogState, Placements]) -> None:
    state, placements = world
    location = f"{placements.warehouse_url}/landing/t"
    assert placements.for_registered(state, state.catalogs["c1"], ("db",), location, DROPPED_ID, ANN,
                                     write_paths={"write.data.path": f"{location}/data"}) == Placement(location, False)
    with pytest.raises(LocationRefused, match="write.data.path must lie inside"):
        placements.for_registered(state, state.catalogs["c1"], ("db",), location, DROPPED_ID, ANN,
                                  write_paths={"write.data.path": f"{placements.warehouse_url}/main/db"})
