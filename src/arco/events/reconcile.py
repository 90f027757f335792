"""The anti-entropy reconciler (seed section 4.5): backfill every missing committed receipt, without listing.

For an Iceberg table, the history is its metadata log: the current metadata file (from the pointer) and the
files its ``metadata-log`` names. Each has a deterministic receipt path (:mod:`arco.events.receipts`; one per
request for the file of a group commit, whose group record lists its members), so the reconciler checks each one
and writes the missing ones create-only. For Tier 1, the history is the operation log.

:func:`reconcile_table` is the per-table unit of work: a plain function of its inputs, so a Spark job can run it
over many tables in parallel. Unreadable metadata files are skipped and counted, never fatal; the walk stops after
``max_depth`` versions (a table whose log is longer is counted as truncated).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, fields
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from arco.catalog.log import CatalogLog, is_fence
from arco.catalog.model import TableEntry
from arco.catalog.store import CatalogStore
from arco.events.receipts import (
    catalog_event,
    catalog_receipt_key,
    iceberg_event,
    iceberg_receipt_key,
    write_receipt,
)
from arco.iceberg.file_names import is_group_file
from arco.iceberg.group_commit import GroupRecords
from arco.iceberg.metadata_files import MetadataFiles
from arco.iceberg.transactions import PointerResolver
from arco.storage.base import StorageBackend

DEFAULT_MAX_DEPTH = 10_000
UNKNOWN_SOURCE = {"kind": "iceberg_rest", "client_info": None, "principal": None}


@dataclass
class ReconcileCounts:
    tables: int = 0
    versions: int = 0  # metadata versions examined
    present: int = 0  # committed receipts already there
    backfilled: int = 0  # committed receipts written now
    unreadable: int = 0  # metadata files that could not be read or parsed (skipped)
    truncated: int = 0  # tables whose history was longer than max_depth
    catalog_ops: int = 0  # Tier 1 operations examined
    catalog_backfilled: int = 0  # Tier 1 receipts written now

    def add(self, other: ReconcileCounts) -> ReconcileCounts:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self


def iceberg_tables(store: CatalogStore, catalog: str | None = None,
                   table: str | None = None) -> list[tuple[TableEntry, dict[str, Any]]]:
    """The Iceberg tables of the warehouse (or of one catalog, or one ``namespace.table``), with their
    identifiers, in a stable order: what the reconciler, GC and maintenance walk."""
    with store.read() as state:
        catalog_id = state.catalog(catalog).id if catalog else None
        chosen = []
        for entry in state.tables.values():
            if entry.kind != "TABLE" or entry.format != "ICEBERG":
                continue
            if catalog_id is not None and entry.catalog_id != catalog_id:
                continue
            dotted = ".".join((*entry.namespace, entry.name))
            if table is not None and dotted.casefold() != table.casefold():
                continue
            identifier = {"catalog": state.catalogs[entry.catalog_id].name, "namespace": list(entry.namespace),
                          "name": entry.name}
            chosen.append((entry, identifier))
    return sorted(chosen, key=lambda item: (item[1]["catalog"], item[1]["namespace"], item[1]["name"]))


def table_history(files: MetadataFiles, current_location: str) -> list[tuple[str, int]]:
    """``(metadata location, last-updated-ms)`` of every version in the log, newest first, in the log's own order:
    not by time, which can go back from one version to the next (an append keeps the writer's snapshot timestamp,
    as the reference implementation does, and writers' clocks differ)."""
    current = files.read(current_location)
    versions = {current_location: current.last_updated_ms}
    for entry in reversed(current.metadata_log):
        versions.setdefault(entry.metadata_file, entry.timestamp_ms)
    return list(versions.items())


def reconcile_table(storage: StorageBackend, files: MetadataFiles, resolver: PointerResolver, table: TableEntry,
                    identifier: dict[str, Any], max_depth: int = DEFAULT_MAX_DEPTH,
                    compacted: Container[str] = frozenset()) -> ReconcileCounts:
    """Backfill the committed receipts of one Iceberg table's history. ``compacted``: receipt keys the compacted
    history holds, present whether or not gc has deleted the receipt since (writing it again would count as a
    backfill what was never lost)."""
    counts = ReconcileCounts(tables=1)
    pointer = resolver.for_read(table.id)
    if pointer is None or pointer.pointer.dropped:
        return counts
    try:
        history = table_history(files, pointer.pointer.current_metadata_location)
    except Exception:  # noqa: BLE001 - a corrupt current file is counted, and the run goes on
        counts.unreadable += 1
        return counts
    if len(history) > max_depth:
        counts.truncated += 1
        history = history[:max_depth]
    groups = GroupRecords(storage)
    for index, (location, last_updated_ms) in enumerate(history):
        counts.versions += 1
        # A group commit's file holds several requests, each with its own receipt (arco.iceberg.group_commit).
        record = groups.read(table.id, location) if is_group_file(location) else None
        members = record.members if record is not None else [None]
        keys = [iceberg_receipt_key("committed", location, last_updated_ms, member) for member in range(len(members))]
        missing = [(member, key) for member, key in enumerate(keys)
                   if key not in compacted and storage.head(key) is None]
        counts.present += len(keys) - len(missing)
        if not missing:
            continue
        try:
            metadata = files.read(location)
        except Exception:  # noqa: BLE001 - expired or corrupt: skipped and counted
            counts.unreadable += 1
            continue
        previous = history[index + 1][0] if index + 1 < len(history) else None
        base = _readable(files, previous)  # makes the receipt's operation exact; without it, it is inferred
        is_current = index == 0
        for member, key in missing:
            grouped = members[member]
            if grouped is not None:
                source = grouped.source
                group = {"index": member, "size": len(members), "actions": grouped.actions}
            else:
                source = pointer.pointer.updated_by if is_current and pointer.pointer.updated_by else UNKNOWN_SOURCE
                group = None
            event = iceberg_event("committed", table_uuid=table.id, metadata_location=location, metadata=metadata,
                                  previous_metadata_location=previous, source=source, identifier=identifier,
                                  recorded_by="reconciler", group=group, base=base)
            if write_receipt(storage, key, event):
                counts.backfilled += 1
            else:
                counts.present += 1
    return counts


def _readable(files: MetadataFiles, location: str | None) -> TableMetadata | None:
    if location is None:
        return None
    try:
        return files.read(location)
    except Exception:  # noqa: BLE001 - expired or corrupt: the operation is inferred from the newer file alone
        return None


def reconcile_catalog_log(storage: StorageBackend, log: CatalogLog, after_seq: int = 0,
                          compacted: Container[str] = frozenset()) -> ReconcileCounts:
    """Backfill the receipts of Tier 1 operations still in the log (old entries may have been collected);
    ``compacted`` as for :func:`reconcile_table`."""
    counts = ReconcileCounts()
    seq = after_seq + 1
    if log.read_entry(seq) is None:  # collected up to the newest snapshot: start after it
        seq = max(seq, log.read_manifest().snapshot_seq + 1)
    while (ops := log.read_ops(seq)) is not None:
        for position, op in enumerate(ops, start=seq):  # a batch entry's operations hold the positions after it
            if is_fence(op):
                continue  # it changed nothing: no receipt
            counts.catalog_ops += 1
            key = catalog_receipt_key(position, int(op.get("at_ms") or 0))
            if key in compacted or storage.head(key) is not None:
                continue
            if write_receipt(storage, key, catalog_event(position, op, recorded_by="reconciler")):
                counts.catalog_backfilled += 1
        seq += len(ops)
    return counts


def reconcile_tables(storage: StorageBackend, files: MetadataFiles, resolver: PointerResolver,
                     tables: Iterable[tuple[TableEntry, dict[str, Any]]], max_depth: int = DEFAULT_MAX_DEPTH,
                     on_table: Callable[[TableEntry, ReconcileCounts], None] | None = None,
                     compacted: Container[str] = frozenset()) -> ReconcileCounts:
    """Reconcile tables one after another (the Spark pipeline runs :func:`reconcile_table` in parallel)."""
    total = ReconcileCounts()
    for table, identifier in tables:
        counts = reconcile_table(storage, files, resolver, table, identifier, max_depth, compacted)
        total.add(counts)
        if on_table is not None:
            on_table(table, counts)
    return total
