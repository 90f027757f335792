"""Storage ownership as a decision table (arco.catalog.locations): which location a caller may name for a new
table or external location, what a purge may delete, where write paths may point. Pure: state in, decision out."""

from __future__ import annotations

import pytest

from arco.auth.decisions import Subject
from arco.catalog import locations
from arco.catalog.locations import LocationRefused
from arco.catalog.model import TableEntry
from arco.catalog.state import CatalogState
from support.tier1 import commit

WH = "file:///srv/wh"
MAIN_ROOT = f"{WH}/main"
LANDING = f"{WH}/landing"  # an external location inside the warehouse, outside every managed root
ANN = Subject("ann@x")  # holds CREATE_EXTERNAL_TABLE on "landing"
BOB = Subject("bob@x")  # holds nothing on it
ADMIN = Subject("admin", metastore_admin=True)
VICTIM_ID = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def state() -> CatalogState:
    s = CatalogState(WH)
    for user in ("ann@x", "bob@x"):
        commit(s, {"op": "create_principal", "kind": "user", "name": user, "id": user})
    commit(s, {"op": "create_catalog", "id": "c1", "name": "main", "storage_root": MAIN_ROOT, "owner": "admin"})
    commit(s, {"op": "create_namespace", "id": "n1", "catalog_id": "c1", "path": ["db"], "owner": "admin"})
    victim = locations.allocate_table_location(s, s.catalogs["c1"], ("db",), "victim", VICTIM_ID)
    commit(s, {"op": "create_table", "id": VICTIM_ID, "catalog_id": "c1", "namespace": ["db"], "name": "victim",
               "location": victim, "owner": "admin", "managed": True})
    commit(s, {"op": "create_securable", "id": "loc1", "type": "external_location", "name": "landing",
               "owner": "admin", "fields": {"url": LANDING, "credential_name": "cred"}})
    commit(s, {"op": "create_securable", "id": "loc2", "type": "external_location", "name": "archive",
               "owner": "admin", "fields": {"url": f"{WH}/archive", "credential_name": "cred", "read_only": True}})
    commit(s, {"op": "create_table", "id": "ext-1", "catalog_id": "c1", "namespace": ["db"], "name": "ext",
               "location": f"{LANDING}/ext", "owner": "ann@x", "managed": False})
    commit(s, {"op": "update_grants", "securable_type": "external_location", "securable_id": "loc1",
               "changes": [{"principal": "ann@x", "add": ["CREATE_EXTERNAL_TABLE"], "remove": []}]})
    return s


def victim_location(state: CatalogState) -> str:
    return state.tables[VICTIM_ID].location


def decide(state: CatalogState, who: Subject, raw: object, *, writable: bool = True,
           inside_warehouse: bool = True) -> str:
    try:
        return locations.check_external_table_location(state, who, raw, WH, None, must_be_writable=writable,
                                                       inside_warehouse=inside_warehouse)
    except LocationRefused as refused:
        return f"refused:{refused.rule}"


@pytest.mark.parametrize("who, raw, expected", [
    (ANN, f"{LANDING}/orders", f"{LANDING}/orders"),                 # inside a location ann may use
    (ANN, "file:/srv/wh/landing/orders/", f"{LANDING}/orders"),     # Hadoop's spelling, trailing slash
    (ADMIN, f"{LANDING}/orders", f"{LANDING}/orders"),               # metastore admins need no grant
    (BOB, f"{LANDING}/orders", "refused:privilege"),                 # no CREATE_EXTERNAL_TABLE
    (ANN, f"{WH}/elsewhere/t", "refused:no-external-location"),      # in the warehouse, in no location
    (ANN, "file:///etc", "refused:no-external-location"),
    (ANN, WH, "refused:warehouse-root"),
    (ANN, "file:///srv", "refused:warehouse-root"),                  # contains the warehouse
    (ANN, f"{WH}/_catalog", "refused:taken"),                        # Arco's own files
    (ANN, f"{WH}/_catalog/principals", "refused:taken"),
    (ANN, MAIN_ROOT, "refused:taken"),                               # a managed root
    (ANN, f"{MAIN_ROOT}/db", "refused:taken"),
    (ANN, f"{LANDING}/ext", "refused:taken"),                        # another external table
    (ANN, f"{LANDING}/ext/sub", "refused:taken"),                    # inside it
    (ANN, LANDING, "refused:taken"),                                 # around it
    (ANN, f"{LANDING}/ext2", f"{LANDING}/ext2"),                     # a sibling with a shared name prefix
    (ANN, f"{LANDING}/a/../ext", "refused:malformed"),               # '..' is never resolved
    (ANN, f"{LANDING}/a%2F..%2F..%2Fmain", "refused:malformed"),
    (ANN, "relative/dir", "refused:malformed"),
    (ANN, f"{WH}/archive/t", "refused:privilege"),                   # ann holds nothing on archive
    (ADMIN, f"{WH}/archive/t", "refused:read-only"),                 # Arco must write Iceberg metadata
])
def test_who_may_name_which_location_for_an_external_iceberg_table(state: CatalogState, who: Subject, raw: str,
                                                                   expected: str) -> None:
    assert decide(state, who, raw) == expected


def test_a_managed_tables_prefix_is_never_an_external_location(state: CatalogState) -> None:
    assert decide(state, ADMIN, victim_location(state)) == "refused:taken"
    assert decide(state, ADMIN, victim_location(state) + "/data") == "refused:taken"


def test_uc_external_tables_may_live_outside_the_warehouse_but_not_in_read_only_locations_for_iceberg(
        state: CatalogState) -> None:
    commit(state, {"op": "create_securable", "id": "loc3", "type": "external_location", "name": "lake",
                   "owner": "ann@x", "fields": {"url": "s3://lake/raw", "credential_name": "cred"}})
    assert decide(state, ANN, "s3://lake/raw/t", inside_warehouse=False) == "s3://lake/raw/t"
    assert decide(state, ANN, "s3://lake/raw/t") == "refused:outside-warehouse"  # Iceberg: Arco writes there
    assert decide(state, ADMIN, f"{WH}/archive/t", writable=False) == f"{WH}/archive/t"


@pytest.mark.parametrize("raw, expected", [
    (f"{WH}/ext2", f"{WH}/ext2"),
    (WH, "refused:warehouse-root"),
    ("file:///", "refused:warehouse-root"),
    (f"{WH}/_catalog", "refused:managed"),
    (MAIN_ROOT, "refused:managed"),
    (f"{MAIN_ROOT}/db/x", "refused:managed"),
    (f"{LANDING}/inner", "refused:overlap"),
    (f"{WH}/landing2", f"{WH}/landing2"),
    ("s3://Bucket/Data/", "s3://bucket/Data"),
    ("s3://bucket/a/../b", "refused:malformed"),
])
def test_where_an_external_location_may_be(state: CatalogState, raw: str, expected: str) -> None:
    try:
        assert locations.check_external_location_url(state, raw, WH) == expected
    except LocationRefused as refused:
        assert f"refused:{refused.rule}" == expected


def test_an_external_location_may_move_over_itself(state: CatalogState) -> None:
    assert locations.check_external_location_url(state, f"{LANDING}/", WH, exclude_id="loc1") == LANDING


def _dropped(state: CatalogState, table_id: str) -> TableEntry:
    entry = state.tables[table_id]
    commit(state, {"op": "drop_table", "id": table_id})
    return entry


def test_purge_deletes_the_allocated_prefix_of_a_managed_table(state: CatalogState) -> None:
    entry = _dropped(state, VICTIM_ID)
    assert locations.purge_prefix(state, entry, state.catalogs["c1"], WH) == entry.location


def test_purge_deletes_nothing_of_an_external_table(state: CatalogState) -> None:
    entry = _dropped(state, "ext-1")
    assert locations.purge_prefix(state, entry, state.catalogs["c1"], WH) is None


@pytest.mark.parametrize("location", [
    WH, f"{WH}/_catalog", MAIN_ROOT, f"{MAIN_ROOT}/db", "file:///etc", f"{LANDING}/ext",
    f"{MAIN_ROOT}/db/victim-{VICTIM_ID.replace('-', '')}",  # another table's allocation, not this one's
])
def test_purge_refuses_any_location_not_allocated_to_that_table(state: CatalogState, location: str) -> None:
    # A "managed" entry carrying a location it was not allocated (as register used to allow).
    rogue = TableEntry(id="99999999-0000-0000-0000-000000000000", catalog_id="c1", namespace=("db",), name="rogue",
                       kind="TABLE", format="ICEBERG", location=location, owner="bob@x", managed=True)
    assert locations.purge_prefix(state, rogue, state.catalogs["c1"], WH) is None


def test_purge_refuses_a_prefix_that_another_live_table_lies_inside(state: CatalogState) -> None:
    entry = state.tables[VICTIM_ID]
    commit(state, {"op": "create_table", "id": "inner-1", "catalog_id": "c1", "namespace": ["db"], "name": "inner",
                   "location": entry.location + "/nested", "owner": "bob@x", "managed": False})
    commit(state, {"op": "drop_table", "id": VICTIM_ID})
    assert locations.purge_prefix(state, entry, state.catalogs["c1"], WH) is None


def test_purge_deletes_nothing_in_a_location_made_read_only_since(state: CatalogState) -> None:
    root, where = locations.check_managed_storage_root(state, ADMIN, f"{LANDING}/sales", WH, None, "schemas", "n2")
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["sales"], "owner": "admin",
                   "storage_location": where, "requested_root": root})
    table_id = "44444444-0000-0000-0000-000000000000"
    table = locations.allocate_table_location(state, state.catalogs["c1"], ("sales",), "orders", table_id)
    dropped = TableEntry(id=table_id, catalog_id="c1", namespace=("sales",), name="orders", kind="TABLE",
                         format="ICEBERG", location=table, owner="admin")
    assert locations.purge_prefix(state, dropped, state.catalogs["c1"], WH) == table
    commit(state, {"op": "update_securable", "type": "external_location", "name": "landing", "at_ms": 1,
                   "fields": {"read_only": True}})
    assert locations.purge_prefix(state, dropped, state.catalogs["c1"], WH) is None


def test_allocation_cannot_nest_one_table_inside_another(state: CatalogState) -> None:
    victim_folder = victim_location(state).rsplit("/", 1)[1]
    # A namespace named like the victim's folder gets a folder of its own.
    nested = locations.allocate_table_location(state, state.catalogs["c1"], ("db", victim_folder), "x",
                                               "22222222-0000-0000-0000-000000000000")
    assert not locations.overlaps(nested, victim_location(state))


def test_reregistration_is_for_the_dropped_tables_own_folder(state: CatalogState) -> None:
    location = victim_location(state)
    assert locations.check_reregistration(state, location, state.catalogs["c1"], VICTIM_ID) is None  # still live
    commit(state, {"op": "drop_table", "id": VICTIM_ID})
    assert locations.check_reregistration(state, location, state.catalogs["c1"], VICTIM_ID) == location
    other_id = "33333333-0000-0000-0000-000000000000"
    assert locations.check_reregistration(state, location, state.catalogs["c1"], other_id) is None
    assert locations.check_reregistration(state, MAIN_ROOT, state.catalogs["c1"], VICTIM_ID) is None


@pytest.mark.parametrize("properties, refused", [
    ({"write.data.path": f"{MAIN_ROOT}/db/t/data"}, False),
    ({"write.data.path": "file:/srv/wh/main/db/t/data/"}, False),
    ({"write.metadata.path": f"{MAIN_ROOT}/db/t/meta"}, False),
    ({"write.data.path": f"{MAIN_ROOT}/db/other"}, True),
    ({"write.metadata.path": f"{WH}/_catalog"}, True),
    ({"write.object-storage.path": "s3://elsewhere/x"}, True),
    ({"write.folder-storage.path": f"{MAIN_ROOT}/db/t/../other"}, True),
    ({"write.data.path": f"{MAIN_ROOT}/db/t10"}, True),
    ({"owner": "me", "write.format.default": "parquet"}, False),
    # Inside, but spelled so that the canonical form names another path than the spelling does.
    ({"write.metadata.path": f"{MAIN_ROOT}/db/t/./meta"}, True),
    ({"write.metadata.path": f"{MAIN_ROOT}/db/t//meta"}, True),
    ({"write.metadata.path": f"{MAIN_ROOT}/db/t/%6Deta"}, True),
    ({"write.data.path": "/srv/wh/main/db/t/data"}, False),
])
def test_write_paths_stay_inside_the_table(properties: dict[str, str], refused: bool) -> None:
    if refused:
        with pytest.raises(LocationRefused):
            locations.check_write_paths(properties, f"{MAIN_ROOT}/db/t")
    else:
        locations.check_write_paths(properties, f"{MAIN_ROOT}/db/t")


def _table(table_id: str, location: str) -> TableEntry:
    return TableEntry(id=table_id, catalog_id="c1", namespace=("db",), name=table_id, kind="TABLE", format="ICEBERG",
                      location=location, owner="admin")


def test_tables_sharing_storage_are_found_in_one_pass() -> None:
    tables = [_table("a", "s3://b/wh/t"), _table("b", "s3://b/wh/t-2"), _table("c", "s3://b/wh/t/inner"),
              _table("d", "s3://b/wh/u"), _table("e", "s3://b/wh/u/"), _table("f", "s3://b/wh/v/x"),
              _table("g", "s3://b/wh/v/y"), _table("h", "file:///srv/t"), _table("i", "s3://b/wh/t/inner/deep")]
    assert locations.tables_sharing_storage(tables) == {"a", "c", "i", "d", "e"}


# -- volumes and registered models claim storage like tables --------------------------------------------------


def add_volume(state: CatalogState, name: str, location: str, volume_id: str, managed: bool) -> None:
    commit(state, {"op": "create_schema_object", "type": "volume", "id": volume_id, "schema_id": "n1",
                   "name": name, "owner": "ann@x",
                   "fields": {"volume_type": "MANAGED" if managed else "EXTERNAL", "storage_location": location}})


def decide_volume(state: CatalogState, who: Subject, raw: object) -> str:
    try:
        return locations.check_external_volume_location(state, who, raw, WH, None)
    except LocationRefused as refused:
        return f"refused:{refused.rule}"


def test_external_volumes_need_create_external_volume_on_the_location(state: CatalogState) -> None:
    assert decide_volume(state, ANN, f"{LANDING}/vol") == "refused:privilege"  # CREATE_EXTERNAL_TABLE is not it
    commit(state, {"op": "update_grants", "securable_type": "external_location", "securable_id": "loc1",
                   "changes": [{"principal": "bob@x", "add": ["CREATE_EXTERNAL_VOLUME"], "remove": []}]})
    assert decide_volume(state, BOB, f"{LANDING}/vol") == f"{LANDING}/vol"
    assert decide_volume(state, ADMIN, f"{WH}/archive/vol") == f"{WH}/archive/vol"  # read-only: Arco writes nothing
    assert decide_volume(state, ADMIN, f"{WH}/elsewhere/vol") == "refused:no-external-location"
    assert decide_volume(state, ADMIN, f"{LANDING}/ext/inner") == "refused:taken"  # inside an external table
    assert decide_volume(state, ADMIN, victim_location(state)) == "refused:taken"
    assert decide_volume(state, ADMIN, f"{MAIN_ROOT}/db/v") == "refused:taken"  # managed storage
    assert decide_volume(state, ADMIN, f"{WH}/_catalog/v") == "refused:taken"
    assert decide_volume(state, ADMIN, "file:///srv") == "refused:warehouse-root"


def test_volumes_and_tables_never_overlap(state: CatalogState) -> None:
    add_volume(state, "vol", f"{LANDING}/vol", "vol-1", managed=False)
    for raw in (f"{LANDING}/vol", f"{LANDING}/vol/x", LANDING + "/"):
        assert decide(state, ANN, raw, inside_warehouse=False).startswith("refused:"), raw
    assert decide(state, ANN, f"{LANDING}/vol/t", inside_warehouse=False) == "refused:taken"
    assert decide_volume(state, ADMIN, f"{LANDING}/vol/inner") == "refused:taken"
    assert decide_volume(state, ADMIN, f"{LANDING}/volume2") == f"{LANDING}/volume2"  # a sibling, not inside


def test_an_external_location_cannot_sit_inside_an_external_volume(state: CatalogState) -> None:
    add_volume(state, "vol", f"{WH}/outside/vol", "vol-1", managed=False)
    with pytest.raises(LocationRefused) as refused:
        locations.check_external_location_url(state, f"{WH}/outside/vol/sub", WH)
    assert refused.value.rule == "inside-volume"


def test_purge_of_a_managed_volume_is_its_allocated_prefix_alone(state: CatalogState) -> None:
    catalog = state.catalogs["c1"]
    volume_id = "99999999-2222-3333-4444-555555555555"
    where = locations.allocate_table_location(state, catalog, ("db",), "vol", volume_id)
    assert locations.owned_prefix(state, volume_id, where, True, catalog, WH) == where  # dropped: nothing else there
    assert locations.owned_prefix(state, volume_id, where, False, catalog, WH) is None  # external: never
    assert locations.owned_prefix(state, volume_id, f"{LANDING}/x", True, catalog, WH) is None  # not allocated
    add_volume(state, "vol", where, volume_id, managed=True)
    # a table's purge considers live volumes: a (legacy) table around the volume's prefix is not purged
    around = TableEntry(id="77777777-2222-3333-4444-555555555555", catalog_id="c1", namespace=("db",), name="t",
                        kind="TABLE", format="ICEBERG", location=where.rsplit("/", 1)[0], owner="a")
    assert locations.purge_prefix(state, around, catalog, WH) is None
    assert locations.owned_prefix(state, "other-id", where, True, catalog, WH) is None


def test_model_version_files_live_under_the_models_prefix(state: CatalogState) -> None:
    catalog = state.catalogs["c1"]
    model_id = "88888888-2222-3333-4444-555555555555"
    where = locations.allocate_table_location(state, catalog, ("db",), "m", model_id)
    commit(state, {"op": "create_schema_object", "type": "registered_model", "id": model_id, "schema_id": "n1",
                   "name": "m", "owner": "a", "fields": {"storage_location": where}})
    model = state.securables_in_every_metastore("registered_model")[0]
    assert locations.model_version_location(where, 3) == f"{where}/versions/3"
    assert locations.model_version_purge_prefix(state, model, 3, catalog) == f"{where}/versions/3"
    assert decide(state, ADMIN, f"{where}/versions/3", inside_warehouse=False) == "refused:taken"
    model.fields = {**model.fields, "storage_location": f"{LANDING}/m"}  # not one Arco allocated: never purged
    assert locations.model_version_purge_prefix(state, model, 3, catalog) is None


def test_a_folder_inside_another_tables_folder_is_never_allocated(state: CatalogState) -> None:
    # Registering "its own folder" inside a dropped table's folder would let one purge delete the other's files.
    victim = victim_location(state)
    inner_id = "44444444-0000-0000-0000-000000000000"
    nested = f"{victim}/x-{inner_id.replace('-', '')}"
    assert not locations.is_allocated(state, nested, state.catalogs["c1"], inner_id)
    commit(state, {"op": "drop_table", "id": VICTIM_ID})
    assert locations.check_reregistration(state, nested, state.catalogs["c1"], inner_id) is None
    rogue = TableEntry(id=inner_id, catalog_id="c1", namespace=("db",), name="x", kind="TABLE", format="ICEBERG",
                       location=nested, owner="bob@x", managed=True)
    assert locations.purge_prefix(state, rogue, state.catalogs["c1"], WH) is None


def test_purge_of_a_dropped_table_registered_again_deletes_nothing(state: CatalogState) -> None:
    entry = _dropped(state, VICTIM_ID)
    commit(state, {"op": "create_table", "id": VICTIM_ID, "catalog_id": "c1", "namespace": ["db"], "name": "back",
                   "location": entry.location, "owner": "admin", "managed": True})
    assert locations.purge_prefix(state, entry, state.catalogs["c1"], WH) is None


def test_only_external_tables_claim_storage_of_their_own(state: CatalogState) -> None:
    # Managed tables are covered by their catalog's managed root, so no check reads a catalog's every table.
    claimed = {claim.table_id for claim in locations.table_claims(state)}
    assert claimed == {"ext-1"}
    assert decide(state, ADMIN, victim_location(state)) == "refused:taken"
    commit(state, {"op": "rename_table", "id": "ext-1", "namespace": ["db"], "name": "ext2"})
    assert [c.what for c in locations.table_claims(state)] == ["table ext2"]
    commit(state, {"op": "drop_namespace", "id": "n1", "force": True})
    assert list(locations.table_claims(state)) == []


@pytest.mark.parametrize("raw, plain", [
    ("file:/srv/t", True), ("/srv/t/", True), ("file:///srv/t", True), ("file://localhost/srv/t", True),
    ("s3a://b/t", True), ("/srv/./t", False), ("/srv//t", False), ("/srv/%74", False),
])
def test_a_spelling_is_plain_when_it_names_its_canonical_path(raw: str, plain: bool) -> None:
    canonical = locations.canonical(raw)
    assert locations.spelled_plainly(raw, canonical) is plain


def test_a_views_location_takes_a_tables_privilege_and_is_named_a_view(state: CatalogState) -> None:
    def refusal(who: Subject, raw: str) -> str:
        with pytest.raises(LocationRefused) as refused:
            locations.check_external_table_location(state, who, raw, WH, None, must_be_writable=True,
                                                    inside_warehouse=True, kind="view")
        return str(refused.value)

    assert locations.check_external_table_location(state, ANN, f"{LANDING}/v", WH, None, must_be_writable=True,
                                                   inside_warehouse=True, kind="view") == f"{LANDING}/v"
    assert "needs CREATE_EXTERNAL_TABLE" in refusal(BOB, f"{LANDING}/v")
    assert "let Arco place the view" in refusal(ADMIN, f"{WH}/elsewhere/v")


def root_decision(state: CatalogState, who: Subject, raw: object) -> str:
    try:
        root, location = locations.check_managed_storage_root(state, who, raw, WH, None, "catalogs", "c9")
    except LocationRefused as refused:
        return f"refused:{refused.rule}"
    assert location == f"{root}/__unitystorage/catalogs/c9"
    return root


@pytest.mark.parametrize("who, raw, expected", [
    (ADMIN, f"{LANDING}/managed", f"{LANDING}/managed"),            # metastore admins need no grant
    (ADMIN, f"{LANDING}/managed/", f"{LANDING}/managed"),           # canonical
    (ADMIN, LANDING, LANDING),                                       # the location itself: the catalog's folder
    (ANN, f"{LANDING}/managed", "refused:privilege"),                # CREATE_EXTERNAL_TABLE is not managed storage
    (ADMIN, f"{LANDING}/ext", "refused:taken"),                      # inside an external table
    (ADMIN, f"{WH}/archive/m", "refused:read-only"),                 # Arco writes the tables' metadata there
    (ADMIN, f"{WH}/elsewhere", "refused:no-external-location"),
    (ADMIN, MAIN_ROOT, "refused:no-external-location"),              # another catalog's managed storage
    (ADMIN, WH, "refused:warehouse-root"),
    (ADMIN, "file:///etc/x", "refused:outside-warehouse"),
    (ADMIN, f"{LANDING}/../main", "refused:malformed"),
    (ADMIN, 7, "refused:malformed"),
])
def test_who_may_name_which_storage_root_for_a_catalog(state: CatalogState, who: Subject, raw: object,
                                                       expected: str) -> None:
    assert root_decision(state, who, raw) == expected


def test_create_managed_storage_on_the_location_lets_a_catalog_root_in_it(state: CatalogState) -> None:
    commit(state, {"op": "update_grants", "securable_type": "external_location", "securable_id": "loc1",
                   "changes": [{"principal": "bob@x", "add": ["CREATE_MANAGED_STORAGE"], "remove": []}]})
    assert root_decision(state, BOB, f"{LANDING}/managed") == f"{LANDING}/managed"
    # The catalog made there owns its folder: no external table may be placed in or around it afterwards.
    commit(state, {"op": "create_catalog", "id": "c9", "name": "lake", "owner": "bob@x",
                   "storage_root": f"{LANDING}/managed/__unitystorage/catalogs/c9",
                   "requested_root": f"{LANDING}/managed"})
    assert decide(state, ANN, f"{LANDING}/managed/__unitystorage/catalogs/c9/db/t") == "refused:taken"
    assert decide(state, ANN, f"{LANDING}/managed") == "refused:taken"
    assert decide(state, ANN, f"{LANDING}/managed2") == f"{LANDING}/managed2"
    # Two catalogs may name one root: each has a folder of its own.
    root, location = locations.check_managed_storage_root(state, BOB, f"{LANDING}/managed", WH, None, "catalogs",
                                                          "c10")
    assert location == f"{LANDING}/managed/__unitystorage/catalogs/c10"


def test_a_schema_with_a_storage_root_keeps_its_managed_objects_in_its_own_folder(state: CatalogState) -> None:
    root, where = locations.check_managed_storage_root(state, ADMIN, f"{LANDING}/sales", WH, None, "schemas", "n2")
    assert where == f"{LANDING}/sales/__unitystorage/schemas/n2"
    commit(state, {"op": "create_namespace", "id": "n2", "catalog_id": "c1", "path": ["sales"], "owner": "admin",
                   "storage_location": where, "requested_root": root})
    table_id = "33333333-0000-0000-0000-000000000000"
    table = locations.allocate_table_location(state, state.catalogs["c1"], ("sales",), "orders", table_id)
    assert table == f"{where}/orders-{table_id.replace('-', '')}"
    nested = locations.allocate_table_location(state, state.catalogs["c1"], ("sales", "eu"), "orders", table_id)
    assert nested == f"{where}/eu/orders-{table_id.replace('-', '')}"
    # Its tables are Arco's to purge, as a catalog root's are; nothing else may be placed in or around the folder.
    assert locations.is_allocated(state, table, state.catalogs["c1"], table_id)
    dropped = TableEntry(id=table_id, catalog_id="c1", namespace=("sales",), name="orders", kind="TABLE",
                         format="ICEBERG", location=table, owner="admin")
    assert locations.purge_prefix(state, dropped, state.catalogs["c1"], WH) == table
    assert decide(state, ADMIN, f"{where}/x", inside_warehouse=False) == "refused:taken"
    assert decide(state, ADMIN, f"{LANDING}/sales", inside_warehouse=False) == "refused:taken"
    assert root_decision(state, ADMIN, f"{where}/inner") == "refused:taken"  # no managed storage inside another


def test_an_external_location_holding_managed_storage_may_be_written_again_but_none_made_inside_it(
        state: CatalogState) -> None:
    commit(state, {"op": "create_catalog", "id": "c9", "name": "lake", "owner": "admin",
                   "storage_root": f"{LANDING}/m/__unitystorage/catalogs/c9", "requested_root": f"{LANDING}/m"})
    assert locations.check_external_location_url(state, LANDING, WH, exclude_id="loc1") == LANDING
    with pytest.raises(LocationRefused) as refused:
        locations.check_external_location_url(state, f"{LANDING}/m/__unitystorage/catalogs/c9/x", WH,
                                              exclude_id="loc1")
    assert refused.value.rule == "managed"
    with pytest.raises(LocationRefused):  # a managed root Arco placed may be inside no external location
        locations.check_external_location_url(state, WH + "/main", WH, exclude_id="loc1")
