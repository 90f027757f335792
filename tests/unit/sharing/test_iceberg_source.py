"""Iceberg tables as Delta Sharing versions (arco.sharing.iceberg_source), on real PyIceberg tables in a SQLite
catalog over a local warehouse.

The decisive check is ``read_as_delta``: it reads the listed files as a Delta reader does (Parquet columns by
name, partition columns from the file actions' string values, absent columns as nulls) and the rows must be the
ones PyIceberg's own scan of the same snapshot returns. ``as_delta_table`` goes one step further: it writes the
version as a Delta log next to the Iceberg table and reads it with a real Delta reader (delta-rs), whose data
skipping also uses the stats.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, QueryBuilder
from deltalake import Schema as DeltaSchema
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestWriterV2,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from arco.sharing.actions import SharedFile, SharedVersion
from arco.sharing.iceberg_source import (
    UnsharableTable,
    delta_schema_string,
    iceberg_files_since,
    iceberg_table_changes,
    iceberg_version,
    iceberg_version_at,
    iceberg_version_at_or_after,
)

EVENTS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("day", pa.date32()),
    pa.field("at", pa.timestamp("us")),
    pa.field("count", pa.int32()),
])


# The same columns with the field ids PyIceberg gives them, for creating tables with a partition spec.
EVENTS_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType()),
    NestedField(3, "day", DateType()),
    NestedField(4, "at", TimestampType()),
    NestedField(5, "count", IntegerType()),
)


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    catalog = SqlCatalog("test", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("ns")
    return catalog


def events(ids: list[int], *, name: str = "n", day: date = date(2024, 3, 1), count: int | None = 7) -> pa.Table:
    return pa.Table.from_pylist([
        {"id": i, "name": f"{name}{i}", "day": day, "at": datetime(2024, 3, 1, 12, 0, i % 60, 250_000), "count": count}
        for i in ids
    ], schema=EVENTS)


def snapshot_files(table: Table, snapshot_id: int) -> set[str]:
    return {task.file.file_path for task in table.scan(snapshot_id=snapshot_id).plan_files()}


def file_paths(files: list[SharedFile]) -> set[str]:
    return {file.url for file in files}


def _partition_value(text: str | None, delta_type: Any) -> Any:
    # The Delta partition value decoding of the types these tests partition by.
    if text is None:
        return None
    if delta_type in ("integer", "long"):
        return int(text)
    if delta_type == "date":
        return date.fromisoformat(text)
    if delta_type == "boolean":
        return text == "true"
    if delta_type == "timestamp_ntz":
        return datetime.fromisoformat(text)
    return text


def read_as_delta(version: SharedVersion) -> list[dict[str, Any]]:
    """The rows a Delta reader reads from the version's files: Parquet columns by name, partition columns from the
    file actions, absent columns as nulls."""
    schema = json.loads(version.metadata["schemaString"])
    partition_columns = version.metadata["partitionColumns"]
    rows: list[dict[str, Any]] = []
    for file in version.files:
        assert file.url.startswith("file://")
        data = pq.read_table(file.url.removeprefix("file://"))
        columns = {name: data.column(name).to_pylist() for name in data.column_names}
        for index in range(data.num_rows):
            row = {}
            for field in schema["fields"]:
                name = field["name"]
                if name in partition_columns:
                    row[name] = _partition_value(file.partition_values[name], field["type"])
                else:
                    row[name] = columns[name][index] if name in columns else None
            rows.append(row)
    return rows


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


def key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def assert_same_rows(version: SharedVersion, table: Table, snapshot_id: int | None) -> None:
    expected = table.scan(snapshot_id=snapshot_id).to_arrow() if snapshot_id is not None else None
    assert sorted(map(key, read_as_delta(version))) == sorted(map(key, rows_of(expected) if expected else []))


def as_delta_table(table: Table, version: SharedVersion) -> DeltaTable:
    """The version written as the first commit of a Delta log in the Iceberg table's directory (delta-rs wants the
    files' paths relative to the table), read back by delta-rs."""
    root = Path(table.location().removeprefix("file://"))
    protocol: dict[str, Any] = {"minReaderVersion": 1, "minWriterVersion": 2}
    if version.min_reader_version == 3:
        protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"],
                    "writerFeatures": ["timestampNtz"]}
    actions: list[dict[str, Any]] = [{"protocol": protocol}, {"metaData": {**version.metadata, "createdTime": 0}}]
    actions += [{"add": {"path": quote(str(Path(file.url.removeprefix("file://")).relative_to(root))),
                         "partitionValues": file.partition_values, "size": file.size, "stats": file.stats,
                         "modificationTime": version.timestamp_ms, "dataChange": True}} for file in version.files]
    (root / "_delta_log").mkdir(exist_ok=True)
    (root / "_delta_log" / "00000000000000000000.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    return DeltaTable(str(root))


def delta_query(delta: DeltaTable, where: str) -> list[int]:
    """The ids a DataFusion query over the Delta table finds; its file pruning uses the stats."""
    result = QueryBuilder().register("t", delta).execute(f"select id from t where {where}").read_all()
    return sorted(pa.table(result).column("id").to_pylist())


def snapshot_ids(table: Table) -> list[int]:
    return [snapshot.snapshot_id for snapshot in table.metadata.snapshots]


# Versions


def test_versions_are_sequence_numbers_and_each_lists_its_snapshot_files(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    for batch in ([1, 2], [3], [4, 5, 6]):
        table.append(events(batch))
    ids = snapshot_ids(table)
    assert [snapshot.sequence_number for snapshot in table.metadata.snapshots] == [1, 2, 3]

    current = iceberg_version(table.metadata, table.io)
    assert current.version == 3
    assert current.timestamp_ms == table.metadata.snapshots[-1].timestamp_ms
    for number, snapshot_id in enumerate(ids, start=1):
        shared = iceberg_version(table.metadata, table.io, version=number)
        assert shared.version == number
        assert file_paths(shared.files) == snapshot_files(table, snapshot_id)
        assert_same_rows(shared, table, snapshot_id)

    # Every file an append added, with that append's version and timestamp, and nothing else.
    since = iceberg_files_since(table.metadata, table.io, 1, None)
    assert len(since) == 3
    for number, snapshot in enumerate(table.metadata.snapshots, start=1):
        added = [file for file in since if file.version == number]
        assert len(added) == 1
        assert added[0].timestamp_ms == snapshot.timestamp_ms
        assert added[0].change_type is None
        parent = snapshot_files(table, ids[number - 2]) if number > 1 else set()
        assert {added[0].url} == snapshot_files(table, snapshot.snapshot_id) - parent
    assert [file.version for file in iceberg_files_since(table.metadata, table.io, 2, 2)] == [2]
    assert [file.version for file in iceberg_files_since(table.metadata, table.io, 0, 2)] == [1, 2]
    assert iceberg_files_since(table.metadata, table.io, 3, 3) == [f for f in since if f.version == 3]


def test_a_schema_change_is_a_table_change_at_the_first_version_that_shows_it(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1]))
    table.append(events([2]))
    with table.update_schema() as update:
        update.add_column("extra", StringType())
    assert iceberg_table_changes(table.metadata, 1, None)[0].version == 2  # the latest shows the current schema
    table.append(events([3]).append_column("extra", pa.array(["x"])))
    table.append(events([4]).append_column("extra", pa.array(["y"])))
    changes = iceberg_table_changes(table.metadata, 1, None)
    assert [change.version for change in changes] == [3]
    (change,) = changes
    assert change.protocol is None and change.metadata is not None
    assert [f["name"] for f in json.loads(change.metadata["schemaString"])["fields"]][-1] == "extra"
    assert change.metadata == iceberg_version(table.metadata, table.io, version=3).metadata
    assert iceberg_table_changes(table.metadata, 3, None) == []  # the first version is the answer's own
    assert iceberg_table_changes(table.metadata, 1, 2) == []


def test_file_actions_carry_url_id_size_and_the_table_metadata(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1, 2]))
    shared = iceberg_version(table.metadata, table.io)
    (file,) = shared.files
    data_file = next(iter(table.scan().plan_files())).file
    assert file.url == data_file.file_path
    assert file.size == data_file.file_size_in_bytes == Path(file.url.removeprefix("file://")).stat().st_size
    # Stable: the same file has the same id in every answer, and ids differ between files.
    assert file.id == iceberg_version(table.metadata, table.io, version=1).files[0].id
    table.append(events([3]))
    assert len({f.id for f in iceberg_version(table.metadata, table.io).files}) == 2
    assert shared.metadata == {
        "id": str(table.metadata.table_uuid),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": delta_schema_string(table.schema()),
        "partitionColumns": [],
        "configuration": {},
    }


def test_time_travel_by_timestamp(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    for batch in ([1], [2], [3]):
        time.sleep(0.005)  # commits in distinct milliseconds
        table.append(events(batch))
    first, second, third = (snapshot.timestamp_ms for snapshot in table.metadata.snapshots)
    metadata = table.metadata
    assert iceberg_version_at(metadata, first) == 1
    assert iceberg_version_at(metadata, second) == 2
    assert iceberg_version_at(metadata, third - 1) == 2
    assert iceberg_version_at(metadata, third) == 3
    with pytest.raises(ValueError, match="after the table's latest version"):  # as Delta (and the reference) refuse
        iceberg_version_at(metadata, third + 60_000)
    with pytest.raises(ValueError, match="before the table's first retained version"):
        iceberg_version_at(metadata, first - 1)
    at_second = iceberg_version(metadata, table.io, timestamp_ms=third - 1)
    assert (at_second.version, at_second.timestamp_ms) == (2, second)
    assert file_paths(at_second.files) == snapshot_files(table, metadata.snapshots[1].snapshot_id)
    with pytest.raises(ValueError, match="not both"):
        iceberg_version(metadata, table.io, version=2, timestamp_ms=second)


def test_a_starting_timestamp_is_the_earliest_version_at_or_after_it(catalog: SqlCatalog) -> None:
    """startingTimestamp (version endpoint, change data feed): "the earliest table version at or after the provided
    timestamp, can be earlier than the timestamp of table version 0"; time travel keeps at or before."""
    table = catalog.create_table("ns.events", schema=EVENTS)
    for batch in ([1], [2], [3]):
        time.sleep(0.005)  # commits in distinct milliseconds
        table.append(events(batch))
    first, second, third = (snapshot.timestamp_ms for snapshot in table.metadata.snapshots)
    metadata = table.metadata
    assert iceberg_version_at_or_after(metadata, first - 60_000) == 1  # before the first version: the first
    assert iceberg_version_at_or_after(metadata, first) == 1
    assert iceberg_version_at_or_after(metadata, first + 1) == 2
    assert iceberg_version_at_or_after(metadata, second) == 2
    assert iceberg_version_at_or_after(metadata, third - 1) == 3
    assert iceberg_version_at_or_after(metadata, third) == 3
    assert iceberg_version_at(metadata, third - 1) == 2  # time travel: the version current then
    with pytest.raises(ValueError, match="after the table's latest version"):
        iceberg_version_at_or_after(metadata, third + 1)


def test_a_starting_timestamp_of_an_empty_table(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS, properties={"format-version": "2"})
    updated = table.metadata.last_updated_ms
    assert iceberg_version_at_or_after(table.metadata, updated - 60_000) == 0
    assert iceberg_version_at_or_after(table.metadata, updated) == 0
    with pytest.raises(ValueError, match="after the table's latest version"):
        iceberg_version_at_or_after(table.metadata, updated + 1)


def test_unknown_and_out_of_range_versions_are_value_errors(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1]))
    table.append(events([2]))
    with pytest.raises(ValueError, match="version 7 does not exist"):
        iceberg_version(table.metadata, table.io, version=7)
    with pytest.raises(ValueError, match="version 0 does not exist"):
        iceberg_version(table.metadata, table.io, version=0)
    # An ending version past the latest is capped at the latest (as for Delta); a starting one is refused.
    assert [f.version for f in iceberg_files_since(table.metadata, table.io, 1, 5)] == \
        [f.version for f in iceberg_files_since(table.metadata, table.io, 1, None)] == [1, 2]
    with pytest.raises(ValueError, match="startingVersion 3 is after the latest version 2"):
        iceberg_files_since(table.metadata, table.io, 3, 9)
    with pytest.raises(ValueError, match="not a range"):
        iceberg_files_since(table.metadata, table.io, 2, 1)


def test_a_branch_commit_is_not_a_version_and_leaves_a_gap(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1]))
    table.manage_snapshots().create_branch(table.metadata.current_snapshot_id, "audit").commit()
    table.append(events([2]), branch="audit")  # sequence number 2, off main
    table.append(events([3]))  # sequence number 3, on main
    assert iceberg_version(table.metadata, table.io).version == 3
    with pytest.raises(ValueError, match="version 2 does not exist"):
        iceberg_version(table.metadata, table.io, version=2)
    assert [file.version for file in iceberg_files_since(table.metadata, table.io, 0, None)] == [1, 3]
    assert_same_rows(iceberg_version(table.metadata, table.io), table, table.metadata.current_snapshot_id)


def test_versions_stay_put_when_older_snapshots_expire(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    for batch in ([1], [2], [3]):
        table.append(events(batch))
    before = {number: iceberg_version(table.metadata, table.io, version=number).files for number in (2, 3)}
    table.maintenance.expire_snapshots().by_id(table.metadata.snapshots[0].snapshot_id).commit()
    assert len(table.metadata.snapshots) == 2
    for number, files in before.items():
        assert iceberg_version(table.metadata, table.io, version=number).files == files
    with pytest.raises(ValueError, match="version 1 does not exist"):
        iceberg_version(table.metadata, table.io, version=1)
    # The files version 1 added are no longer knowable as changes.
    with pytest.raises(ValueError, match="version 1 has expired: the oldest retained version is 2"):
        iceberg_files_since(table.metadata, table.io, 1, None)
    assert [file.version for file in iceberg_files_since(table.metadata, table.io, 2, None)] == [2, 3]


def test_an_empty_table_is_version_zero_without_files(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS, properties={"format-version": "2"})
    shared = iceberg_version(table.metadata, table.io)
    assert (shared.version, shared.files, shared.timestamp_ms) == (0, [], table.metadata.last_updated_ms)
    assert json.loads(shared.metadata["schemaString"])["type"] == "struct"
    assert iceberg_version(table.metadata, table.io, version=0) == shared
    assert iceberg_version_at(table.metadata, table.metadata.last_updated_ms) == 0
    assert iceberg_files_since(table.metadata, table.io, 0, None) == []
    with pytest.raises(ValueError, match="no snapshot"):
        iceberg_version(table.metadata, table.io, version=1)


def test_format_v1_versions_are_positions_in_the_history(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS, properties={"format-version": "1"})
    for batch in ([1], [2, 3]):
        table.append(events(batch))
    assert {snapshot.sequence_number for snapshot in table.metadata.snapshots} == {0}
    for number, snapshot in enumerate(table.metadata.snapshots, start=1):
        shared = iceberg_version(table.metadata, table.io, version=number)
        assert file_paths(shared.files) == snapshot_files(table, snapshot.snapshot_id)
        assert_same_rows(shared, table, snapshot.snapshot_id)
    assert [file.version for file in iceberg_files_since(table.metadata, table.io, 0, None)] == [1, 2]


def test_a_table_upgraded_from_v1_has_its_v1_history_as_version_zero(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS, properties={"format-version": "1"})
    table.append(events([1]))
    table.append(events([2]))
    with table.transaction() as transaction:
        transaction.upgrade_table_version(format_version=2)
    table.append(events([3]))
    v1_last = table.metadata.snapshots[1]
    zero = iceberg_version(table.metadata, table.io, version=0)
    assert file_paths(zero.files) == snapshot_files(table, v1_last.snapshot_id)
    assert zero.timestamp_ms == v1_last.timestamp_ms
    assert iceberg_version(table.metadata, table.io).version == 1
    since = iceberg_files_since(table.metadata, table.io, 0, None)
    assert sorted(file.version for file in since) == [0, 0, 1]
    assert file_paths(since) == snapshot_files(table, table.metadata.current_snapshot_id)


# Partitions


def test_identity_partitions_added_to_an_unpartitioned_table_stay_data_columns(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    with table.update_spec() as spec:
        spec.add_identity("name")
        spec.add_identity("day")
        spec.add_identity("count")
    table.append(events([1, 2], name="a", day=date(2024, 3, 1), count=None))
    table.append(events([3], name="b", day=date(2024, 3, 2), count=5))
    table.append(pa.concat_tables([events([4], name="c", count=5), events([5], name="c", count=6)]))

    shared = iceberg_version(table.metadata, table.io)
    # The creation spec (unpartitioned) wrote no file, but a column is a partition column only if every spec has it;
    # the columns are read from the data files instead, and keep their stats.
    assert shared.metadata["partitionColumns"] == []
    assert all(file.partition_values == {} for file in shared.files)
    min_names = sorted(json.loads(file.stats)["minValues"]["name"] for file in shared.files)
    assert min_names == ["a1", "a2", "b3", "c4", "c5"]
    assert_same_rows(shared, table, table.metadata.current_snapshot_id)


def test_identity_partition_values_are_delta_strings(catalog: SqlCatalog) -> None:
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name"),
        PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="day"),
        PartitionField(source_id=5, field_id=1002, transform=IdentityTransform(), name="count"),
    )
    table = catalog.create_table("ns.events", schema=EVENTS_SCHEMA, partition_spec=spec)
    table.append(pa.Table.from_pylist([
        {"id": 1, "name": "a", "day": date(2024, 3, 1), "at": None, "count": None},
        {"id": 2, "name": "a", "day": date(2024, 3, 1), "at": None, "count": None},
        {"id": 3, "name": "b", "day": date(2024, 12, 31), "at": datetime(2024, 1, 1), "count": 5},
    ], schema=EVENTS))
    shared = iceberg_version(table.metadata, table.io)
    assert shared.metadata["partitionColumns"] == ["name", "day", "count"]
    assert sorted((f.partition_values for f in shared.files), key=lambda values: values["name"]) == [
        {"name": "a", "day": "2024-03-01", "count": None},
        {"name": "b", "day": "2024-12-31", "count": "5"},
    ]
    # Delta keeps no stats for partition columns.
    for file in shared.files:
        stats = json.loads(file.stats)
        assert set(stats["minValues"]) <= {"id", "at"} and set(stats["nullCount"]) == {"id", "at"}
    assert_same_rows(shared, table, table.metadata.current_snapshot_id)
    assert len(iceberg_files_since(table.metadata, table.io, 1, 1)) == 2


def test_other_transforms_are_not_partition_columns_but_files_are_listed(catalog: SqlCatalog) -> None:
    spec = PartitionSpec(
        PartitionField(source_id=1, field_id=1000, transform=BucketTransform(4), name="id_bucket"),
        PartitionField(source_id=4, field_id=1001, transform=DayTransform(), name="at_day"),
    )
    table = catalog.create_table("ns.events", schema=EVENTS_SCHEMA, partition_spec=spec)
    table.append(events(list(range(20))))
    table.append(events([40, 41]))
    shared = iceberg_version(table.metadata, table.io)
    assert shared.metadata["partitionColumns"] == []
    assert all(file.partition_values == {} for file in shared.files)
    assert file_paths(shared.files) == snapshot_files(table, table.metadata.current_snapshot_id)
    assert len(shared.files) > 2  # several buckets
    assert_same_rows(shared, table, table.metadata.current_snapshot_id)


def test_a_partition_column_must_be_identity_in_every_spec(catalog: SqlCatalog) -> None:
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name"))
    table = catalog.create_table("ns.events", schema=EVENTS_SCHEMA, partition_spec=spec)
    table.append(events([1], name="a"))
    assert iceberg_version(table.metadata, table.io).metadata["partitionColumns"] == ["name"]
    with table.update_spec() as update:
        update.add_identity("day")
    table.append(events([2], name="b", day=date(2024, 5, 5)))
    shared = iceberg_version(table.metadata, table.io)
    # name is identity in both specs; day only in the new one, so the first file has no day value to give.
    assert shared.metadata["partitionColumns"] == ["name"]
    assert sorted(file.partition_values["name"] for file in shared.files) == ["a1", "b2"]
    assert_same_rows(shared, table, table.metadata.current_snapshot_id)


# Stats


def test_stats_decode_iceberg_bounds_as_delta_writes_them(catalog: SqlCatalog) -> None:
    schema = pa.schema([
        pa.field("i", pa.int32()), pa.field("l", pa.int64()), pa.field("d", pa.float64()),
        pa.field("s", pa.string()), pa.field("day", pa.date32()), pa.field("ts", pa.timestamp("us")),
        pa.field("tz", pa.timestamp("us", tz="UTC")), pa.field("b", pa.bool_()), pa.field("dec", pa.decimal128(9, 2)),
    ])
    table = catalog.create_table("ns.stats", schema=schema)
    long_text = "abcdefghijklmnopqrstuvwxyz"  # longer than Iceberg's 16-character default truncation
    table.append(pa.Table.from_pylist([
        {"i": -3, "l": 10**12, "d": 1.5, "s": long_text, "day": date(2024, 1, 2),
         "ts": datetime(2024, 1, 2, 3, 4, 5, 678901), "tz": datetime(2024, 1, 2, 3, 4, 5, 1000, tzinfo=UTC),
         "b": True, "dec": Decimal("1.25")},
        {"i": 8, "l": -1, "d": None, "s": "b", "day": date(2023, 12, 31),
         "ts": datetime(2020, 1, 1), "tz": None, "b": False, "dec": Decimal("-3.50")},
        {"i": None, "l": 5, "d": -0.25, "s": None, "day": None, "ts": None, "tz": None, "b": None, "dec": None},
    ], schema=schema))
    (file,) = iceberg_version(table.metadata, table.io).files
    stats = json.loads(file.stats)
    assert stats["numRecords"] == 3
    assert stats["nullCount"] == {"i": 1, "l": 0, "d": 1, "s": 1, "day": 1, "ts": 1, "tz": 2, "b": 1, "dec": 1}
    assert stats["minValues"] == {"i": -3, "l": -1, "d": -0.25, "s": long_text[:16], "day": "2023-12-31",
                                  "ts": "2020-01-01T00:00:00.000", "tz": "2024-01-02T03:04:05.001Z"}
    assert stats["maxValues"] == {"i": 8, "l": 10**12, "d": 1.5, "s": "b", "day": "2024-01-02",
                                  "ts": "2024-01-02T03:04:05.678", "tz": "2024-01-02T03:04:05.001Z"}


def test_a_truncated_string_max_is_still_an_upper_bound(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.strings", schema=pa.schema([pa.field("s", pa.string())]))
    values = ["abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopz"]
    table.append(pa.table({"s": values}))
    (file,) = iceberg_version(table.metadata, table.io).files
    stats = json.loads(file.stats)
    assert stats["minValues"]["s"] <= min(values)
    assert stats["maxValues"]["s"] >= max(values)
    assert len(stats["maxValues"]["s"]) == 16


def test_bounds_of_a_promoted_column_decode_with_their_written_width(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.promoted", schema=pa.schema([pa.field("n", pa.int32())]))
    table.append(pa.table({"n": pa.array([2, 9], pa.int32())}))
    with table.update_schema() as update:
        update.update_column("n", field_type=LongType())
    (file,) = iceberg_version(table.metadata, table.io).files
    assert json.loads(file.stats)["minValues"] == {"n": 2}
    assert json.loads(file.stats)["maxValues"] == {"n": 9}


# Schemas


NESTED = Schema(
    NestedField(1, "id", LongType(), required=True, doc="the key"),
    NestedField(2, "flag", BooleanType()),
    NestedField(3, "small", IntegerType(), required=True),
    NestedField(4, "price", DecimalType(10, 2)),
    NestedField(5, "ratio", DoubleType()),
    NestedField(6, "born", DateType()),
    NestedField(7, "local", TimestampType()),
    NestedField(8, "instant", TimestamptzType()),
    NestedField(9, "raw", BinaryType()),
    NestedField(10, "address", StructType(
        NestedField(11, "street", StringType(), required=True),
        NestedField(12, "geo", StructType(NestedField(13, "lat", DoubleType()))),
    )),
    NestedField(14, "tags", ListType(15, StringType(), element_required=True), required=True),
    NestedField(16, "scores", MapType(17, StringType(), 18, ListType(19, LongType(), element_required=False),
                                      value_required=False)),
)


def test_schema_string_is_delta_schema_json() -> None:
    schema = json.loads(delta_schema_string(NESTED))
    fields = {field["name"]: field for field in schema["fields"]}
    assert schema["type"] == "struct"
    assert [field["name"] for field in schema["fields"]] == [field.name for field in NESTED.fields]
    assert fields["id"] == {"name": "id", "type": "long", "nullable": False, "metadata": {"comment": "the key"}}
    assert {name: field["type"] for name, field in fields.items() if isinstance(field["type"], str)} == {
        "id": "long", "flag": "boolean", "small": "integer", "price": "decimal(10,2)", "ratio": "double",
        "born": "date", "local": "timestamp_ntz", "instant": "timestamp", "raw": "binary",
    }
    assert (fields["flag"]["nullable"], fields["small"]["nullable"]) == (True, False)
    assert fields["address"]["type"] == {"type": "struct", "fields": [
        {"name": "street", "type": "string", "nullable": False, "metadata": {}},
        {"name": "geo", "type": {"type": "struct", "fields": [
            {"name": "lat", "type": "double", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}},
    ]}
    assert fields["tags"] == {"name": "tags", "nullable": False, "metadata": {},
                              "type": {"type": "array", "elementType": "string", "containsNull": False}}
    assert fields["scores"]["type"] == {
        "type": "map", "keyType": "string", "valueContainsNull": True,
        "valueType": {"type": "array", "elementType": "long", "containsNull": True},
    }
    # A Delta implementation (delta-rs's kernel) reads it as the same schema.
    delta = DeltaSchema.from_json(delta_schema_string(NESTED))
    assert [field.name for field in delta.fields] == [field.name for field in NESTED.fields]


@pytest.mark.parametrize(("field_type", "shown"), [
    (UUIDType(), "uuid"), (TimeType(), "time"), (FixedType(16), "fixed[16]"),
])
def test_types_without_a_delta_type_are_refused_naming_the_column(field_type: Any, shown: str) -> None:
    schema = Schema(NestedField(1, "id", LongType()),
                    NestedField(2, "outer", StructType(NestedField(3, "inner", field_type))))
    with pytest.raises(UnsharableTable, match=re.escape(f"column 'outer.inner' has the Iceberg type {shown},")):
        delta_schema_string(schema)


def test_timestamp_without_zone_needs_reader_version_three(catalog: SqlCatalog) -> None:
    with_ntz = catalog.create_table("ns.ntz", schema=EVENTS)
    without = catalog.create_table("ns.plain", schema=pa.schema([pa.field("id", pa.int64()),
                                                                 pa.field("tz", pa.timestamp("us", tz="UTC"))]))
    assert iceberg_version(with_ntz.metadata, with_ntz.io).min_reader_version == 3
    assert iceberg_version(without.metadata, without.io).min_reader_version == 1


def test_each_version_has_the_schema_of_its_snapshot_and_added_columns_read_as_nulls(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1, 2]))
    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.delete_column("count")
    later = pa.schema([*(EVENTS.field(name) for name in ("id", "name", "day", "at")), pa.field("note", pa.string())])
    table.append(pa.Table.from_pylist([{"id": 3, "name": "x", "day": date(2024, 1, 1), "at": datetime(2024, 1, 1),
                                        "note": "hello"}], schema=later))
    old = json.loads(iceberg_version(table.metadata, table.io, version=1).metadata["schemaString"])
    new = json.loads(iceberg_version(table.metadata, table.io, version=2).metadata["schemaString"])
    assert [field["name"] for field in old["fields"]] == ["id", "name", "day", "at", "count"]
    assert [field["name"] for field in new["fields"]] == ["id", "name", "day", "at", "note"]
    shared = iceberg_version(table.metadata, table.io)
    assert_same_rows(shared, table, table.metadata.current_snapshot_id)
    assert sorted(row["note"] or "" for row in read_as_delta(shared)) == ["", "", "hello"]


def test_a_renamed_column_is_refused_naming_it(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1]))
    with table.update_schema() as update:
        update.rename_column("name", "label")
    with pytest.raises(UnsharableTable, match="column 'label' was renamed \\(it is 'name' in the table's schema 0\\)"):
        iceberg_version(table.metadata, table.io)
    # Also the version written before the rename: its files are read under the same rule.
    with pytest.raises(UnsharableTable, match="renamed"):
        iceberg_files_since(table.metadata, table.io, 1, None)


def test_a_renamed_nested_field_is_refused_naming_its_path(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.nested", schema=NESTED)
    with table.update_schema() as update:
        update.rename_column(("address", "street"), "road")
    with pytest.raises(UnsharableTable, match="column 'address.road' was renamed"):
        iceberg_version(table.metadata, table.io)


# Deletes


def test_a_copy_on_write_delete_lists_the_rewritten_files(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1, 2, 3]))
    table.append(events([10]))
    table.delete("id = 2 or id = 10")
    # Two commits: dropping the file that only held 10 (version 3), rewriting the other without 2 (version 4).
    shared = iceberg_version(table.metadata, table.io)
    assert shared.version == 4
    assert file_paths(shared.files) == snapshot_files(table, table.metadata.current_snapshot_id)
    assert sorted(row["id"] for row in read_as_delta(shared)) == [1, 3]
    assert_same_rows(shared, table, table.metadata.current_snapshot_id)
    # The rewrite added one file; the removals are not changes this source lists.
    assert [(file.version, file.url in file_paths(shared.files))
            for file in iceberg_files_since(table.metadata, table.io, 3, 4)] == [(4, True)]


class _DeleteManifestWriter(ManifestWriterV2):
    """PyIceberg 0.12 writes data manifests only (its deletes are copy-on-write even when merge-on-read is asked
    for), so the tests write the delete manifest a merge-on-read writer (Spark, Java) would write."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


def commit_delete_file(table: Table, content: DataFileContent, rows: pa.Table, **fields: Any) -> None:
    """Commit one delete file (position or equality) to main, as a merge-on-read delete would."""
    location = f"{table.location()}/data/delete-{uuid.uuid4()}.parquet"
    pq.write_table(rows, location.removeprefix("file://"))
    delete_file = DataFile.from_args(
        content=content, file_path=location, file_format=FileFormat.PARQUET, partition=Record(),
        record_count=rows.num_rows, file_size_in_bytes=Path(location.removeprefix("file://")).stat().st_size,
        **fields,
    )
    delete_file.spec_id = 0
    parent = table.metadata.current_snapshot()
    assert parent is not None
    snapshot_id = random.getrandbits(62)
    manifest_path = f"{table.location()}/metadata/delete-{uuid.uuid4()}-m0.avro"
    with _DeleteManifestWriter(table.spec(), table.schema(), table.io.new_output(manifest_path), snapshot_id,
                               "deflate") as writer:
        writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                           data_file=delete_file))
    sequence_number = table.metadata.next_sequence_number()
    list_path = f"{table.location()}/metadata/snap-{snapshot_id}-{uuid.uuid4()}.avro"
    with write_manifest_list(2, table.io.new_output(list_path), snapshot_id, parent.snapshot_id, sequence_number,
                             "deflate") as manifests:
        manifests.add_manifests([*parent.manifests(table.io), writer.to_manifest_file()])
    snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id, manifest_list=list_path,
                        sequence_number=sequence_number, summary=Summary(Operation.DELETE),
                        schema_id=table.schema().schema_id)
    with table.transaction() as transaction:
        transaction._apply(
            (AddSnapshotUpdate(snapshot=snapshot),
             SetSnapshotRefUpdate(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id, ref_name="main",
                                  type=SnapshotRefType.BRANCH)),
            (AssertRefSnapshotId(snapshot_id=parent.snapshot_id, ref="main"),),
        )


def test_position_deletes_are_refused_with_the_remedy(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS,
                                 properties={"write.delete.mode": "merge-on-read"})
    table.append(events([1, 2, 3]))
    data_path = next(iter(table.scan().plan_files())).file.file_path
    commit_delete_file(table, DataFileContent.POSITION_DELETES,
                       pa.table({"file_path": [data_path], "pos": pa.array([1], pa.int64())}))
    # PyIceberg's own reader applies it: the delete is real.
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 3]
    with pytest.raises(UnsharableTable, match=r"version 2 \(snapshot \d+\) has 1 delete files \(merge-on-read "
                                              r"deletes\).*compact the table"):
        iceberg_version(table.metadata, table.io)
    with pytest.raises(UnsharableTable, match="has 1 added delete files"):
        iceberg_files_since(table.metadata, table.io, 1, None)
    # The version before the delete is still shared, and so are the changes up to it.
    assert_same_rows(iceberg_version(table.metadata, table.io, version=1), table,
                     table.metadata.snapshots[0].snapshot_id)
    assert len(iceberg_files_since(table.metadata, table.io, 1, 1)) == 1


def test_equality_deletes_are_refused_before_pyiceberg_fails_on_them(catalog: SqlCatalog) -> None:
    table = catalog.create_table("ns.events", schema=EVENTS)
    table.append(events([1, 2, 3]))
    commit_delete_file(table, DataFileContent.EQUALITY_DELETES, pa.table({"id": pa.array([2], pa.int64())}),
                       equality_ids=[1])
    with pytest.raises(UnsharableTable, match="has 1 equality delete files"):
        iceberg_version(table.metadata, table.io)


# A real Delta reader


def test_delta_rs_reads_a_partitioned_version_as_pyiceberg_does(catalog: SqlCatalog) -> None:
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name"),
        PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="day"),
        PartitionField(source_id=4, field_id=1002, transform=IdentityTransform(), name="at"),
        PartitionField(source_id=5, field_id=1003, transform=IdentityTransform(), name="count"),
    )
    table = catalog.create_table("ns.events", schema=EVENTS_SCHEMA, partition_spec=spec)
    table.append(events([1, 2], name="a", count=None))
    table.append(events([3], name="b", day=date(2025, 2, 28), count=-4))
    shared = iceberg_version(table.metadata, table.io)
    assert shared.metadata["partitionColumns"] == ["name", "day", "at", "count"]
    delta = as_delta_table(table, shared)
    delta_rows = sorted(map(key, delta.to_pyarrow_table().to_pylist()))
    assert delta_rows == sorted(map(key, table.scan().to_arrow().to_pylist()))
    assert delta_query(delta, "day = '2025-02-28'") == [3]
    assert delta_query(delta, "count is null") == [1, 2]


def test_delta_rs_skips_files_by_the_stats_without_losing_rows(catalog: SqlCatalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("at", pa.timestamp("us")),
                        pa.field("tz", pa.timestamp("us", tz="UTC")), pa.field("s", pa.string()),
                        pa.field("day", pa.date32())])
    table = catalog.create_table("ns.stats", schema=schema)
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    for i in range(3):
        # Microseconds beyond the millisecond Delta keeps, strings beyond the 16 characters Iceberg keeps.
        table.append(pa.Table.from_pylist([{"id": i, "at": datetime(2024, 1, 1, 0, 0, i, 999_999),
                                            "tz": datetime(2024, 1, 1, 0, 0, i, 999_999, tzinfo=UTC),
                                            "s": alphabet[:10 + i * 8], "day": date(2024, 1, 1 + i)}], schema=schema))
    delta = as_delta_table(table, iceberg_version(table.metadata, table.io))
    for i in range(3):
        assert delta_query(delta, f"at = '2024-01-01 00:00:0{i}.999999'") == [i]
        assert delta_query(delta, f"tz = '2024-01-01T00:00:0{i}.999999Z'") == [i]
        assert delta_query(delta, f"s = '{alphabet[:10 + i * 8]}'") == [i]
        assert delta_query(delta, f"day = '2024-01-0{1 + i}'") == [i]
        assert delta_query(delta, f"id >= {i}") == list(range(i, 3))
    assert delta_query(delta, "at > '2024-01-01 00:00:01.999999'") == [2]


def test_delta_rs_reads_the_partition_values_of_every_encodable_type(catalog: SqlCatalog) -> None:
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "flag", BooleanType()),
        NestedField(3, "ratio", FloatType()),
        NestedField(4, "amount", DecimalType(9, 3)),
        NestedField(5, "instant", TimestamptzType()),
        NestedField(6, "big", LongType()),
        NestedField(7, "weight", DoubleType()),
    )
    spec = PartitionSpec(*(PartitionField(source_id=field_id, field_id=999 + field_id, transform=IdentityTransform(),
                                          name=f"p{field_id}") for field_id in range(2, 8)))
    table = catalog.create_table("ns.typed", schema=schema, partition_spec=spec)
    arrow = table.schema().as_arrow()
    table.append(pa.Table.from_pylist([
        {"id": 1, "flag": True, "ratio": 1.1, "amount": Decimal("12.500"),
         "instant": datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC), "big": 2**40, "weight": 0.1},
        {"id": 2, "flag": False, "ratio": -0.5, "amount": Decimal("-0.001"),
         "instant": datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC), "big": -1, "weight": 1e300},
        {"id": 3, "flag": None, "ratio": None, "amount": None, "instant": None, "big": None, "weight": None},
    ], schema=arrow))
    shared = iceberg_version(table.metadata, table.io)
    # Floating-point partitions stay data columns: PyIceberg 0.12 records 0.1 in a double partition as
    # 0.10000000149011612 and 1e300 as infinity, while the data files hold the values written.
    assert shared.metadata["partitionColumns"] == ["flag", "amount", "instant", "big"]
    assert [task.file.partition[5] for task in table.scan(row_filter="id = 2").plan_files()] == [math.inf]
    values = {json.loads(file.stats)["minValues"]["id"]: file.partition_values for file in shared.files}
    assert values == {
        1: {"flag": "true", "amount": "12.500", "instant": "2024-05-06T07:08:09.123456Z", "big": str(2**40)},
        2: {"flag": "false", "amount": "-0.001", "instant": "1999-12-31T23:59:59Z", "big": "-1"},
        3: dict.fromkeys(["flag", "amount", "instant", "big"]),
    }
    delta = as_delta_table(table, shared)
    # Through DataFusion: delta-rs's own to_pyarrow_table misparses negative decimal partition values ("-0.001").
    rows = pa.table(QueryBuilder().register("t", delta).execute("select * from t").read_all()).to_pylist()
    assert sorted(map(key, rows)) == sorted(map(key, table.scan().to_arrow().to_pylist()))
