"""Iceberg tables shared as Delta Sharing tables: a table version becomes Delta file actions and Delta metadata.

A recipient reads the listed Parquet files with a Delta reader, so everything here is about making an Iceberg
snapshot look like a Delta table version that a Delta reader reads correctly, and refusing (``UnsharableTable``,
with the reason and what the owner can do) where it would not.

Versions
    The versions of a table are the snapshots of the main branch's ancestry (the current snapshot back through
    its parents, as far as the metadata keeps them), in commit order. Branches, tags and rolled-back snapshots
    are not versions.

    * Format v2 and later: a snapshot's version is its ``sequence-number``. Sequence numbers increase along the
      ancestry and never change, so a version keeps its number when older snapshots expire. Versions may skip
      numbers (a commit to another branch also takes a sequence number); asking for a skipped number is an
      unknown version.
    * Format v1 (no sequence numbers): a snapshot's version is its position in the retained ancestry, the oldest
      retained snapshot being version 1. Expiring snapshots renumbers the versions of a v1 table; upgrade the
      table to format v2 for stable versions.
    * A table upgraded from v1 to v2: the snapshots committed before the upgrade (sequence number 0) are one
      version, 0, which is the last of them and, as a table's first Delta version does, adds all its live files.
    * A table without a current snapshot is version 0 with no files; its timestamp is the metadata's last update.

    The timestamp of a version is its snapshot's ``timestamp-ms``; the version at a timestamp (time travel by
    ``timestamp``, ``endingTimestamp``) is the highest version committed at or before it, the version from a
    timestamp (``startingTimestamp``) the lowest committed at or after it. The latest version has the table's
    current schema (schema changes commit no snapshot); an older version has the schema its snapshot was committed
    with.

Files
    The files of a version come from PyIceberg's scan planning of that snapshot. Delta has no row-level delete
    files, so a version whose data files have Iceberg delete files (position deletes, deletion vectors, equality
    deletes) is refused: compacting the table (rewriting the affected data files) makes it sharable again.
    Only Parquet data files are shared. A file's ``url`` is its ``file_path`` (a bare absolute path becomes a
    ``file://`` URL), its ``id`` the SHA-1 of that path, its ``size`` the ``file_size_in_bytes``.

    The changes from a version on (``iceberg_files_since``) are the data files each version's snapshot added, read
    from the manifests that snapshot wrote. Files a version removed (a copy-on-write delete or overwrite) are not
    listed, and a version that added delete files is refused like a version that has them.

How a version's schema, partition values and stats look to a Delta reader: :mod:`arco.sharing.delta_shape`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, DataFileContent, ManifestContent, ManifestEntryStatus
from pyiceberg.schema import Schema
from pyiceberg.table import DataScan
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot, ancestors_of

from arco.sharing.actions import SharedFile, SharedVersion, TableChange, iceberg_protocol, table_changes
from arco.sharing.delta_shape import DeltaShape, UnsharableTable, delta_schema_string

__all__ = [
    "UnsharableTable",
    "delta_schema_string",
    "iceberg_files_since",
    "iceberg_table_changes",
    "iceberg_version",
    "iceberg_version_at",
    "iceberg_version_at_or_after",
]


@dataclass(frozen=True)
class _Version:
    number: int
    snapshot: Snapshot
    # Version 0 of a table upgraded from format v1 stands for all the snapshots before the upgrade, so it "adds"
    # every file live in it rather than the files its own snapshot added.
    whole_state: bool = False


def _versions(metadata: TableMetadata) -> list[_Version]:
    """The versions of the table, oldest first (see the module docstring for the mapping)."""
    chain = list(ancestors_of(metadata.current_snapshot(), metadata))
    chain.reverse()
    if metadata.format_version == 1:
        return [_Version(position, snapshot) for position, snapshot in enumerate(chain, start=1)]
    legacy = [snapshot for snapshot in chain if not snapshot.sequence_number]
    versions = [_Version(0, legacy[-1], whole_state=True)] if legacy else []
    versions += [_Version(snapshot.sequence_number, snapshot) for snapshot in chain if snapshot.sequence_number]
    numbers = [version.number for version in versions]
    if numbers != sorted(set(numbers)):
        # The spec guarantees increasing sequence numbers along an ancestry; anything else is damaged metadata, and
        # versions derived from it would not be stable.
        raise UnsharableTable("the sequence numbers of the table's main branch do not increase along its history, "
                              "so its snapshots cannot be numbered as versions")
    return versions


def _find(versions: list[_Version], version: int) -> _Version:
    for candidate in versions:
        if candidate.number == version:
            return candidate
    if not versions:
        raise ValueError(f"version {version} does not exist: the table has no snapshot, its only version is 0")
    raise ValueError(f"version {version} does not exist: it is not a snapshot of the main branch's retained history "
                     f"(versions {versions[0].number} to {versions[-1].number}; older snapshots may have expired)")


def iceberg_version_at(metadata: TableMetadata, timestamp_ms: int) -> int:
    """The latest version committed at or before ``timestamp_ms``; ValueError if that is before the first one, or
    if ``timestamp_ms`` is after the latest (as for a Delta table: :func:`arco.sharing.delta_source.version_as_of`)."""
    versions = _versions(metadata)
    if not versions:
        if timestamp_ms >= metadata.last_updated_ms:
            return 0
        raise ValueError(f"timestamp {timestamp_ms} is before the table's first version (0, at "
                         f"{metadata.last_updated_ms})")
    if timestamp_ms > max(version.snapshot.timestamp_ms for version in versions):
        raise ValueError(f"timestamp {timestamp_ms} is after the table's latest version ({versions[-1].number})")
    committed = [version.number for version in versions if version.snapshot.timestamp_ms <= timestamp_ms]
    if not committed:
        first = versions[0]
        raise ValueError(f"timestamp {timestamp_ms} is before the table's first retained version ({first.number}, "
                         f"committed at {first.snapshot.timestamp_ms})")
    # max, not the last: clock skew between writers can make timestamps go back along the history.
    return max(committed)


def iceberg_version_at_or_after(metadata: TableMetadata, timestamp_ms: int) -> int:
    """The earliest version committed at or after ``timestamp_ms`` (``startingTimestamp``, of the version endpoint
    and of the change data feed: the protocol's "earliest table version at or after the provided timestamp, can be
    earlier than the timestamp of table version 0", so a time before the first retained version is that version);
    ValueError if ``timestamp_ms`` is after the latest (as :func:`arco.sharing.delta_source.version_at_or_after`)."""
    versions = _versions(metadata)
    if not versions:
        if timestamp_ms <= metadata.last_updated_ms:
            return 0
        raise ValueError(f"timestamp {timestamp_ms} is after the table's latest version (0, at "
                         f"{metadata.last_updated_ms})")
    later = [version.number for version in versions if version.snapshot.timestamp_ms >= timestamp_ms]
    if not later:
        raise ValueError(f"timestamp {timestamp_ms} is after the table's latest version ({versions[-1].number})")
    # min, not the first: clock skew between writers can make timestamps go back along the history.
    return min(later)


def iceberg_version(metadata: TableMetadata, io: FileIO, *, version: int | None = None,
                    timestamp_ms: int | None = None) -> SharedVersion:
    """A version of the table (the current one unless ``version`` or ``timestamp_ms`` asks for another) as Delta
    metadata and file actions. ValueError for an unknown version; UnsharableTable when a Delta reader could not
    read it correctly."""
    if version is not None and timestamp_ms is not None:
        raise ValueError("ask for a version or a timestamp, not both")
    if timestamp_ms is not None:
        version = iceberg_version_at(metadata, timestamp_ms)
    versions = _versions(metadata)
    if version is None:
        target = versions[-1] if versions else None
    elif not versions and version == 0:
        target = None
    else:
        target = _find(versions, version)

    # The latest version shows the table's current schema (a schema change commits no snapshot, and Iceberg readers
    # of the current table see it); an older one the schema its snapshot was committed with, as Iceberg time travel.
    if target is None or target is versions[-1]:
        schema = metadata.schema()
    else:
        schema = _snapshot_schema(metadata, target.snapshot)
    shape = DeltaShape.of(metadata, schema)
    files = [] if target is None else [shape.file(data_file) for data_file in _live_files(metadata, io, target)]
    return SharedVersion(
        version=target.number if target else 0,
        timestamp_ms=target.snapshot.timestamp_ms if target else metadata.last_updated_ms,
        min_reader_version=shape.min_reader_version,
        metadata=shape.delta_metadata(),
        files=files,
    )


def iceberg_files_since(metadata: TableMetadata, io: FileIO, starting_version: int,
                        ending_version: int | None) -> list[SharedFile]:
    """The files added by each version from ``starting_version`` to ``ending_version`` (the current one if None),
    both included, with their version and its timestamp. Versions that removed files contribute nothing (there is
    no remove action here); versions that added delete files are refused, as their deletes could not be shown."""
    versions = _versions(metadata)
    latest = versions[-1].number if versions else 0
    if starting_version > latest:
        raise ValueError(f"startingVersion {starting_version} is after the latest version {latest}")
    # An ending version past the latest is capped at the latest, as for Delta tables: the protocol makes
    # endingVersion a hint, and a streaming client asks for versions that do not exist yet.
    ending = latest if ending_version is None else min(ending_version, latest)
    if starting_version < 0 or ending < starting_version:
        raise ValueError(f"versions {starting_version} to {ending} are not a range of versions")
    if versions and starting_version < versions[0].number and _history_expired(io, versions[0]):
        raise ValueError(f"version {starting_version} has expired: the oldest retained version is "
                         f"{versions[0].number}")

    # Files of several versions are described under the current schema, as the latest version is.
    shape = DeltaShape.of(metadata, metadata.schema())
    files: list[SharedFile] = []
    for current in versions:
        if not starting_version <= current.number <= ending:
            continue
        added = _live_files(metadata, io, current) if current.whole_state else _added_files(io, current)
        files.extend(shape.file(data_file, version=current.number, timestamp_ms=current.snapshot.timestamp_ms)
                     for data_file in added)
    return files


def iceberg_table_changes(metadata: TableMetadata, starting_version: int,
                          ending_version: int | None) -> list[TableChange]:
    """The versions in ``(starting_version, ending_version]`` (to the latest if None) whose Delta metadata or
    protocol differs from the version before: a schema change shows at the first version committed with the new
    schema (at the latest version, as the table's current schema: a schema change commits no snapshot), as each
    version alone shows it."""
    versions = _versions(metadata)
    states = []
    for current in versions:
        if current.number < starting_version or (ending_version is not None and current.number > ending_version):
            continue
        schema = metadata.schema() if current is versions[-1] else _snapshot_schema(metadata, current.snapshot)
        shape = DeltaShape.of(metadata, schema)
        states.append((current.number, shape.delta_metadata(), iceberg_protocol(shape.min_reader_version)))
    return table_changes(states)


def _history_expired(io: FileIO, oldest: _Version) -> bool:
    """Whether versions before the oldest retained one added files that are gone from the history: its parent is
    known to be expired, or it has live files it did not add itself. (PyIceberg's expiry clears the parent id, Java's
    keeps it, so the files tell.)"""
    if oldest.whole_state:
        return False
    snapshot = oldest.snapshot
    if snapshot.parent_snapshot_id is not None:
        return True
    return any(entry.snapshot_id != snapshot.snapshot_id
               for manifest in snapshot.manifests(io)
               for entry in manifest.fetch_manifest_entry(io, discard_deleted=True))


def _snapshot_schema(metadata: TableMetadata, snapshot: Snapshot) -> Schema:
    """The schema a snapshot was committed with (the current one when it does not say)."""
    if snapshot.schema_id is not None:
        schema = metadata.schema_by_id(snapshot.schema_id)
        if schema is not None:
            return schema
    return metadata.schema()


def _delete_refusal(count: int, what: str, where: str) -> UnsharableTable:
    return UnsharableTable(
        f"{where} has {count} {what} (merge-on-read deletes), which Delta readers cannot apply; compact the table "
        "(rewrite the affected data files, e.g. Spark's rewrite_data_files with delete-file-threshold=1) before "
        "sharing it")


def _live_files(metadata: TableMetadata, io: FileIO, version: _Version) -> list[DataFile]:
    """The data files of a version, from PyIceberg's planning; refused if any has delete files."""
    snapshot = version.snapshot
    where = f"version {version.number} (snapshot {snapshot.snapshot_id})"
    # PyIceberg's planning fails on equality deletes with its own message; count them first to refuse clearly.
    equality = sum(1 for manifest in snapshot.manifests(io) if manifest.content == ManifestContent.DELETES
                   for entry in manifest.fetch_manifest_entry(io, discard_deleted=True)
                   if entry.data_file.content == DataFileContent.EQUALITY_DELETES)
    if equality:
        raise _delete_refusal(equality, "equality delete files", where)
    tasks = list(DataScan(table_metadata=metadata, io=io, snapshot_id=snapshot.snapshot_id).plan_files())
    deletes = {delete.file_path for task in tasks for delete in task.delete_files}
    if deletes:
        raise _delete_refusal(len(deletes), "delete files", where)
    return [task.file for task in tasks]


def _added_files(io: FileIO, version: _Version) -> Iterable[DataFile]:
    """The data files a version's snapshot added (its own new manifest entries)."""
    snapshot = version.snapshot
    added: list[DataFile] = []
    deletes = 0
    for manifest in snapshot.manifests(io):
        # Entries a snapshot added are in manifests it wrote; the others only carry older entries forward.
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
            if entry.status != ManifestEntryStatus.ADDED or entry.snapshot_id != snapshot.snapshot_id:
                continue
            if manifest.content == ManifestContent.DELETES:
                deletes += 1
            else:
                added.append(entry.data_file)
    if deletes:
        raise _delete_refusal(deletes, "added delete files", f"version {version.number} "
                                                              f"(snapshot {snapshot.snapshot_id})")
    return added
