"""The system catalog's rules (pure): who may change it, which batches are published, and when."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest

from arco.catalog.errors import ReadOnlyCatalogError
from arco.catalog.model import CatalogEntry
from arco.catalog.system import PIPELINE_PRINCIPAL, check_writable, is_system
from arco.pipeline.checkpoint import CompactState
from arco.pipeline.system_tables import HISTORY_TABLES, as_iceberg, system_only, to_publish


def catalog(name: str, properties: dict[str, str] | None = None, metastore_id: str | None = None) -> CatalogEntry:
    return CatalogEntry(id=f"id-{name}", name=name, storage_root="file:///w", owner="o",
                        properties=properties or {}, metastore_id=metastore_id)


SYSTEM = catalog("system", {"arco.system": "true"})
MAIN = catalog("main")
STATE = SimpleNamespace(
    catalogs={SYSTEM.id: SYSTEM, MAIN.id: MAIN},
    namespaces={"ns-sys": SimpleNamespace(catalog_id=SYSTEM.id), "ns-main": SimpleNamespace(catalog_id=MAIN.id)},
    tables={"t-sys": SimpleNamespace(catalog_id=SYSTEM.id), "t-main": SimpleNamespace(catalog_id=MAIN.id)},
)


def test_only_the_marked_catalog_of_the_primary_metastore_is_the_system_catalog() -> None:
    assert is_system(SYSTEM)
    assert not is_system(catalog("system")) and not is_system(catalog("system", {"arco.system": "true"}, "m2"))


@pytest.mark.parametrize("op", [
    {"op": "create_namespace", "catalog_id": SYSTEM.id, "path": ["x"]},
    {"op": "create_table", "catalog_id": SYSTEM.id, "namespace": ["history"], "name": "x"},
    {"op": "update_namespace", "id": "ns-sys"}, {"op": "drop_namespace", "id": "ns-sys"},
    {"op": "update_table", "id": "t-sys"}, {"op": "rename_table", "id": "t-sys"}, {"op": "drop_table", "id": "t-sys"},
    {"op": "update_catalog", "id": SYSTEM.id}, {"op": "drop_catalog", "id": SYSTEM.id},
    {"op": "create_schema_object", "type": "volume", "schema_id": "ns-sys"},
    {"op": "create_catalog", "name": "other", "properties": {"arco.system": "true"}},
])
def test_changes_of_the_system_catalog_are_the_pipelines_alone(op: dict) -> None:
    with pytest.raises(ReadOnlyCatalogError):
        check_writable(STATE, op, "admin")
    check_writable(STATE, op, PIPELINE_PRINCIPAL)


@pytest.mark.parametrize("op", [
    {"op": "update_grants", "securable_type": "table", "securable_id": "t-sys", "changes": []},
    {"op": "create_table", "catalog_id": MAIN.id, "namespace": ["raw"], "name": "x"},
    {"op": "drop_table", "id": "t-main"}, {"op": "create_token", "id": "k"},
])
def test_grants_and_other_catalogs_are_untouched(op: dict) -> None:
    check_writable(STATE, op, "admin")


def batch(batch_id: str, kinds: tuple[str, ...], own: bool = False) -> dict:
    return {"batch_id": batch_id, "system_only": own, "files": {kind: [f"{batch_id}/{kind}"] for kind in kinds}}


def test_each_history_table_gets_the_batches_it_lacks_and_only_those_with_its_rows() -> None:
    state = CompactState([batch("b1", ("timeline", "audit")), batch("b2", ("timeline", "runs"))])
    work = to_publish(state, {("history", "timeline"): {"b1"}})
    assert {k: [b["batch_id"] for b in v] for k, v in work.items()} == {
        ("history", "timeline"): ["b2"], ("access", "audit"): ["b1"], ("history", "runs"): ["b2"]}
    done = {key: {"b1", "b2"} for key in HISTORY_TABLES}
    assert to_publish(state, done) == {}


def test_a_batch_of_publishing_s_own_commits_starts_no_publication_but_goes_along_with_the_next() -> None:
    own = CompactState([batch("b1", ("timeline",)), batch("b2", ("timeline", "audit"), own=True)])
    published = {("history", "timeline"): {"b1"}, ("access", "audit"): set()}
    assert to_publish(own, published) == {}
    more = CompactState([*own.batches, batch("b3", ("reports",))])
    work = to_publish(more, published)
    assert [b["batch_id"] for b in work[("history", "timeline")]] == ["b2"]
    assert [b["batch_id"] for b in work[("history", "reports")]] == ["b3"]


def test_what_counts_as_publishing_s_own() -> None:
    assert system_only([{"catalog": "system"}], [{"principal": "arco-pipeline"}], [{"job": "compact"}], 0, 0)
    assert not system_only([{"catalog": "main"}], [], [], 0, 0)
    assert not system_only([], [{"principal": "admin"}], [], 0, 0)  # a grant on a system table is history
    assert not system_only([], [], [{"job": "maintain"}], 0, 0)
    assert not system_only([], [], [], 1, 0)  # an engine's read


def test_rows_are_published_with_microsecond_timestamps() -> None:
    schema = pa.schema([("at", pa.timestamp("ms", tz="UTC")), ("x", pa.string())])
    table = pa.table({"x": ["a"], "at": pa.array([1000], pa.timestamp("ms", tz="UTC"))})
    converted = as_iceberg(table, schema)
    assert converted.schema.names == ["at", "x"] and converted.schema.field("at").type == pa.timestamp("us", "UTC")


def test_no_principal_can_be_made_with_the_pipeline_s_name() -> None:
    from arco.catalog.access import ACCESS_RULES
    from arco.catalog.errors import AlreadyExistsError
    from arco.catalog.state import CatalogState

    check, _ = ACCESS_RULES["create_principal"]
    with pytest.raises(AlreadyExistsError):
        check(CatalogState("file:///w"), {"op": "create_principal", "kind": "service_principal",
                                          "name": "Arco-Pipeline", "id": "x"})
