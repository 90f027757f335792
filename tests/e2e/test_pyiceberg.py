"""PyIceberg's RestCatalog against Arco: what a Python data engineer does."""

from __future__ import annotations

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, IdentityTransform
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from support.arco_server import ARCO_TOKEN, RunningServer

pytestmark = pytest.mark.timeout(300)

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "city", StringType(), required=False),
)


@pytest.fixture
def catalog(arco: RunningServer) -> RestCatalog:
    return RestCatalog("arco", uri=arco.iceberg_uri, warehouse="main", token=ARCO_TOKEN)


def rows(table) -> list[tuple]:  # type: ignore[no-untyped-def]
    data = table.scan().to_arrow().sort_by("id")
    return list(zip(*[data.column(n).to_pylist() for n in data.column_names], strict=True))


def test_namespaces(catalog: RestCatalog) -> None:
    catalog.create_namespace("py_ns", {"owner": "team"})
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("py_ns")
    catalog.create_namespace(("py_ns", "inner"))
    assert ("py_ns", "inner") in catalog.list_namespaces("py_ns")
    loaded = catalog.load_namespace_properties("py_ns")
    assert loaded.pop("location").endswith("/main/py_ns") and loaded == {"owner": "team"}  # where its tables go
    summary = catalog.update_namespace_properties("py_ns", removals={"owner", "absent"}, updates={"k": "v"})
    assert summary.removed == ["owner"] and summary.updated == ["k"] and summary.missing == ["absent"]
    # Nothing missing: PyIceberg's model requires the list, so an empty one (it failed on a null or absent one).
    summary = catalog.update_namespace_properties("py_ns", removals={"k"}, updates={"j": "w"})
    assert (summary.removed, summary.updated, summary.missing) == (["k"], ["j"], [])
    assert catalog.namespace_exists("py_ns") and not catalog.namespace_exists("nope")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("py_ns")
    catalog.drop_namespace(("py_ns", "inner"))
    catalog.drop_namespace("py_ns")
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("py_ns")


def test_table_lifecycle(catalog: RestCatalog) -> None:
    catalog.create_namespace_if_not_exists("py")
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "city"))
    table = catalog.create_table("py.cities", SCHEMA, partition_spec=spec, properties={"format-version": "2"})
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("py.cities", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "city": ["Oslo", "Lima"]}))
    table.append(pa.table({"id": pa.array([3], pa.int64()), "city": ["Pune"]}))
    assert rows(catalog.load_table("py.cities")) == [(1, "Oslo"), (2, "Lima"), (3, "Pune")]

    table = catalog.load_table("py.cities")
    table.overwrite(pa.table({"id": pa.array([10], pa.int64()), "city": ["Oslo"]}),
                    overwrite_filter=EqualTo("city", "Oslo"))
    table.delete(EqualTo("city", "Lima"))
    table = catalog.load_table("py.cities")
    assert rows(table) == [(3, "Pune"), (10, "Oslo")]
    assert [r for r in table.scan(row_filter=GreaterThanOrEqual("id", 5)).to_arrow().column("id").to_pylist()] == [10]

    with table.update_schema() as update:
        update.add_column("population", IntegerType())
        update.rename_column("city", "name")
    with table.update_spec() as update:
        update.add_field("id", BucketTransform(4), "id_bucket")
    table = catalog.load_table("py.cities")
    assert [f.name for f in table.schema().fields] == ["id", "name", "population"]
    assert len(table.metadata.partition_specs) == 2
    table.append(pa.table({"id": pa.array([11], pa.int64()), "name": ["Kyiv"],
                           "population": pa.array([3], pa.int32())}))
    assert rows(catalog.load_table("py.cities"))[-1] == (11, "Kyiv", 3)
    assert len(catalog.load_table("py.cities").metadata.snapshots) >= 5

    catalog.rename_table("py.cities", "py.towns")
    assert catalog.table_exists("py.towns") and not catalog.table_exists("py.cities")
    assert ("py", "towns") in catalog.list_tables("py")
    catalog.drop_table("py.towns")
    with pytest.raises(NoSuchTableError):
        catalog.load_table("py.towns")


def test_a_stale_commit_is_rejected_and_the_client_retry_lands(catalog: RestCatalog, arco: RunningServer) -> None:
    catalog.create_namespace_if_not_exists("py")
    first = catalog.create_table("py.stale", SCHEMA)
    second = catalog.load_table("py.stale")
    first.append(pa.table({"id": pa.array([1], pa.int64()), "city": ["A"]}))
    stale = httpx.post(
        f"{arco.iceberg_uri}/v1/main/namespaces/py/tables/stale",
        headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
        json={"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
              "updates": [{"action": "set-properties", "updates": {"stale": "yes"}}]},
    )
    assert stale.status_code == 409 and stale.json()["error"]["type"] == "CommitFailedException"
    assert "stale" not in catalog.load_table("py.stale").properties
    # PyIceberg meets the same 409, refreshes and retries on top of the new snapshot.
    second.append(pa.table({"id": pa.array([2], pa.int64()), "city": ["B"]}))
    assert rows(catalog.load_table("py.stale")) == [(1, "A"), (2, "B")]
    catalog.drop_table("py.stale")


def test_register_table(catalog: RestCatalog) -> None:
    catalog.create_namespace_if_not_exists("py")
    original = catalog.create_table("py.orig", SCHEMA)
    original.append(pa.table({"id": pa.array([7], pa.int64()), "city": ["X"]}))
    location = catalog.load_table("py.orig").metadata_location
    catalog.drop_table("py.orig")  # without purge: the files stay and can be registered again
    registered = catalog.register_table("py.copy", location)
    assert rows(registered) == [(7, "X")]
    assert registered.metadata_location == location


@pytest.mark.parametrize("version", ["1", "2", "3"])
def test_every_format_version(catalog: RestCatalog, version: str) -> None:
    catalog.create_namespace_if_not_exists("fv")
    table = catalog.create_table(f"fv.t{version}", SCHEMA, properties={"format-version": version})
    assert table.metadata.format_version == int(version)
    if version == "3":
        # PyIceberg 0.12 cannot write v3 manifests; Spark's test writes to a v3 table through Arco.
        assert table.metadata.next_row_id == 0
        return
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "city": ["a", "b"]}))
    table.append(pa.table({"id": pa.array([3], pa.int64()), "city": ["c"]}))
    loaded = catalog.load_table(f"fv.t{version}")
    assert rows(loaded) == [(1, "a"), (2, "b"), (3, "c")]
    if version != "1":
        assert [s.sequence_number for s in loaded.metadata.snapshots] == [1, 2]
        assert loaded.metadata.last_sequence_number == 2


def test_drop_with_purge_deletes_the_files_and_metrics_are_kept(catalog: RestCatalog, arco: RunningServer) -> None:
    from pathlib import Path
    from urllib.parse import urlsplit

    catalog.create_namespace_if_not_exists("purge")
    table = catalog.create_table("purge.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64()), "city": ["a"]}))
    location = Path(urlsplit(catalog.load_table("purge.t").metadata.location).path)
    assert any(location.rglob("*.parquet"))
    report = {"report-type": "scan-report", "table-name": "purge.t", "snapshot-id": 1, "filter": True,
              "schema-id": 0, "projected-field-ids": [1], "projected-field-names": ["id"], "metrics": {}}
    r = httpx.post(f"{arco.iceberg_uri}/v1/main/namespaces/purge/tables/t/metrics", json=report,
                   headers={"Authorization": f"Bearer {ARCO_TOKEN}"})
    assert r.status_code == 204
    warehouse = location.parents[2]
    events = list((warehouse / "_catalog" / "events").rglob("metrics/*.json"))
    assert any(b'"scan-report"' in e.read_bytes() for e in events)
    catalog.purge_table("purge.t")
    deadline = __import__("time").monotonic() + 30
    while any(p.is_file() for p in location.rglob("*")) and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.1)
    assert not any(p.is_file() for p in location.rglob("*"))
    assert not catalog.table_exists("purge.t")
