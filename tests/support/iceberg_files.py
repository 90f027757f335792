"""Commit what PyIceberg cannot write itself: position and equality delete files (it writes copy-on-write only),
and many manifests at once (a big table for planning, without writing its data files).

Both go through PyIceberg's own snapshot producer and a table commit, so the table is as an engine leaves it:
delete files in delete manifests with fresh sequence numbers, manifests in the snapshot's manifest list.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriterV2,
)
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.typedef import Record

PATH_FIELD_ID, POS_FIELD_ID = 2147483546, 2147483545


class _DeleteManifestWriter(ManifestWriterV2):
    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _Producer(_FastAppendFiles):
    """A fast append whose new files go into manifests of ``per_manifest`` entries, as delete manifests when
    ``deletes``."""

    def __init__(self, *args: Any, deletes: bool, per_manifest: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deletes, self.per_manifest = deletes, per_manifest

    def _manifests(self) -> list[ManifestFile]:
        by_spec: dict[int, list[DataFile]] = defaultdict(list)
        for data_file in self._added_data_files:
            by_spec[data_file.spec_id].append(data_file)
        written = []
        for spec_id, files in by_spec.items():
            for start in range(0, len(files), self.per_manifest):
                writer_type = _DeleteManifestWriter if self.deletes else ManifestWriterV2
                writer = writer_type(self.spec(spec_id), self.schema(), self.new_manifest_output(), self._snapshot_id,
                                     self._compression)
                with writer:
                    for data_file in files[start:start + self.per_manifest]:
                        writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED,
                                                           snapshot_id=self._snapshot_id, sequence_number=None,
                                                           file_sequence_number=None, data_file=data_file))
                written.append(writer.to_manifest_file())
        return written + self._existing_manifests()


def commit_files(table: Table, files: Sequence[DataFile], *, deletes: bool, per_manifest: int = 10**9) -> None:
    """One snapshot adding ``files`` (delete files when ``deletes``: a "delete" snapshot, as Iceberg's row
    deltas that only delete), ``per_manifest`` of them per manifest."""
    with table.transaction() as tx:
        producer = _Producer(Operation.DELETE if deletes else Operation.APPEND, tx, table.io,
                             deletes=deletes, per_manifest=per_manifest)
        for data_file in files:
            producer.append_data_file(data_file)
        producer.commit()


def position_deletes(table: Table, like: DataFile, positions: Sequence[int], *, scoped_to_file: bool) -> DataFile:
    """A position delete file (a real Parquet file) for rows of ``like``, in ``like``'s partition; scoped to
    that one file by its path bounds when ``scoped_to_file`` (as Iceberg Java writes one per data file)."""
    path = f"{table.location()}/data/deletes-{uuid.uuid4().hex}.parquet"
    schema = pa.schema([pa.field("file_path", pa.string(), nullable=False,
                                 metadata={b"PARQUET:field_id": str(PATH_FIELD_ID).encode()}),
                        pa.field("pos", pa.int64(), nullable=False,
                                 metadata={b"PARQUET:field_id": str(POS_FIELD_ID).encode()})])
    rows = pa.table({"file_path": [like.file_path] * len(positions), "pos": list(positions)}, schema=schema)
    size = _write(table, path, rows)
    bounds = {PATH_FIELD_ID: like.file_path.encode()} if scoped_to_file else {}
    delete = DataFile.from_args(content=DataFileContent.POSITION_DELETES, file_path=path,
                                file_format=FileFormat.PARQUET, partition=like.partition,
                                record_count=len(positions), file_size_in_bytes=size,
                                lower_bounds=bounds or None, upper_bounds=bounds or None)
    delete.spec_id = like.spec_id
    return delete


def equality_deletes(table: Table, column: str, values: Sequence[Any], partition: Record, spec_id: int) -> DataFile:
    """An equality delete file deleting the rows whose ``column`` is one of ``values``, in ``partition``."""
    field = table.schema().find_field(column)
    path = f"{table.location()}/data/eq-deletes-{uuid.uuid4().hex}.parquet"
    arrow_field = pa.field(column, pa.int64(), metadata={b"PARQUET:field_id": str(field.field_id).encode()})
    size = _write(table, path, pa.table({column: list(values)}, schema=pa.schema([arrow_field])))
    delete = DataFile.from_args(content=DataFileContent.EQUALITY_DELETES, file_path=path,
                                file_format=FileFormat.PARQUET, partition=partition, record_count=len(values),
                                file_size_in_bytes=size, equality_ids=[field.field_id])
    delete.spec_id = spec_id
    return delete


def fake_data_file(path: str, partition: Record, spec_id: int, rows: int = 100) -> DataFile:
    """A data file entry with no file behind it: planning reads manifests only."""
    data_file = DataFile.from_args(content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
                                   partition=partition, record_count=rows, file_size_in_bytes=4096)
    data_file.spec_id = spec_id
    return data_file


def _write(table: Table, path: str, rows: pa.Table) -> int:
    output = table.io.new_output(path)
    with output.create() as stream:
        pq.write_table(rows, stream)
    return len(table.io.new_input(path))
