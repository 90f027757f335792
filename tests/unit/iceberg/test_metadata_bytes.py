"""A metadata file's JSON is assembled from the metadata without its snapshots and each snapshot's JSON kept by
object (arco.iceberg.metadata_files.metadata_bytes): it must be the document PyIceberg's own serializer makes, for
every format version, and a snapshot must never be written with another snapshot's JSON."""

from __future__ import annotations

import gc

import orjson
import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, new_table_metadata
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import AddSnapshotUpdate, RemoveSnapshotsUpdate, SetPropertiesUpdate, SetSnapshotRefUpdate
from pyiceberg.typedef import IcebergBaseModel
from pyiceberg.types import LongType, NestedField, StringType

from arco.iceberg.commit_rules import apply_updates
from arco.iceberg.metadata_files import SPLICED_FROM, metadata_bytes

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False))


def pydantic_bytes(metadata: TableMetadata) -> bytes:
    return IcebergBaseModel.model_dump_json(metadata, exclude_none=True, by_alias=True).encode()


def snapshot(snapshot_id: int, parent: int | None, sequence: int, **summary: str) -> Snapshot:
    return Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent, sequence_number=sequence,
                    timestamp_ms=1_700_000_000_000 + sequence, schema_id=0,
                    first_row_id=10 * sequence, added_rows=10,  # format v3 needs them; v1 and v2 ignore them
                    manifest_list=f"file:///w/t/metadata/snap-{snapshot_id}.avro",
                    summary=Summary(Operation.APPEND, **summary))


def with_snapshots(version: str, count: int) -> TableMetadata:
    metadata = new_table_metadata(SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///w/t",
                                  {"format-version": version, "owner": "ünïcode \"quoted\""})
    parent = None
    for n in range(count):
        added = snapshot(1000 + n, parent, n + 1, **{"added-records": str(n), "total-records": str(n * n)})
        metadata = apply_updates(metadata, (
            AddSnapshotUpdate(snapshot=added),
            SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=added.snapshot_id)), None)
        parent = added.snapshot_id
    return metadata


@pytest.mark.parametrize("version", ["1", "2", "3"])
@pytest.mark.parametrize("count", [0, SPLICED_FROM - 1, SPLICED_FROM, 40])
def test_the_document_is_pydantics(version: str, count: int) -> None:
    metadata = with_snapshots(version, count)
    for _ in range(2):  # built, then from the snapshots' kept JSON
        data = metadata_bytes(metadata)
        assert orjson.loads(data) == orjson.loads(pydantic_bytes(metadata))
        assert TableMetadataUtil.parse_raw(data) == TableMetadataUtil.parse_raw(pydantic_bytes(metadata))


def test_a_commit_reuses_its_bases_snapshots_and_adds_its_own() -> None:
    base = with_snapshots("2", 10)
    metadata_bytes(base)
    newer = apply_updates(base, (SetPropertiesUpdate(updates={"k": "v"}),), "file:///w/t/metadata/00010-a.metadata.json")
    assert newer.snapshots[0] is base.snapshots[0]  # what makes keeping JSON by object pay
    assert orjson.loads(metadata_bytes(newer)) == orjson.loads(pydantic_bytes(newer))


def test_a_snapshot_id_made_again_is_written_with_its_own_summary() -> None:
    """A client may remove a snapshot and add another with the same id, timestamp and manifest list: the
    JSON kept for the first object must not stand for the second."""
    base = with_snapshots("2", 10)
    metadata_bytes(base)
    first = base.snapshots[-1]
    removed = apply_updates(base, (RemoveSnapshotsUpdate(snapshot_ids=[first.snapshot_id]),), None)
    again = snapshot(first.snapshot_id, first.parent_snapshot_id, base.last_sequence_number + 1,
                     **{"added-records": "other"})
    remade = apply_updates(removed, (
        AddSnapshotUpdate(snapshot=again),
        SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=again.snapshot_id)), None)
    del base, removed, first
    gc.collect()  # object ids may now be reused: the kept JSON is matched by object, not id
    written = orjson.loads(metadata_bytes(remade))
    assert written["snapshots"][-1]["summary"]["added-records"] == "other"
    assert written == orjson.loads(pydantic_bytes(remade))
