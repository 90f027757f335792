"""Deleting a dropped table's files (``purgeRequested``), after its drop has been answered: only what the
governance rules say is the table's alone (:func:`arco.catalog.locations.purge_prefix`); an external table's files
are never deleted."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from arco.catalog import locations
from arco.catalog.model import TableEntry
from arco.iceberg.tables import TableService


@dataclass(frozen=True)
class DroppedTable:
    """What a purge needs to know of a table after its entry is gone (kept in the drop's operation and outcome)."""

    id: str
    catalog_id: str
    location: str
    managed: bool

    @classmethod
    def from_op(cls, op: dict[str, Any]) -> DroppedTable:
        # Drops logged before ownership was recorded carry no "managed": their files are not deleted.
        return cls(op["id"], op.get("catalog_id", ""), op.get("location") or "", bool(op.get("managed", False)))


def purge_later(tables: TableService, dropped: DroppedTable) -> threading.Thread:
    """Delete a dropped table's files in the background: a big table must not hold the request open.

    A purge cut short (the process ends) leaves files under a location no table refers to any more, which
    garbage collection finds by the tombstoned pointer.
    """
    thread = threading.Thread(target=purge, args=(tables, dropped), name="purge-table", daemon=True)
    thread.start()
    return thread


def purge(tables: TableService, dropped: DroppedTable) -> int:
    """Delete the files under a dropped table's prefix, if it is the table's alone; the number deleted."""
    with tables.store.read() as state:
        if dropped.id in state.tables:
            return 0  # registered again since: its files are in use
        entry = TableEntry(id=dropped.id, catalog_id=dropped.catalog_id, namespace=(), name=dropped.id,
                           kind="TABLE", format="ICEBERG", location=dropped.location, owner="",
                           managed=dropped.managed)
        prefix = locations.purge_prefix(state, entry, state.catalogs.get(dropped.catalog_id), tables.storage.url)
    return 0 if prefix is None else delete_prefix(tables, prefix)


def delete_prefix(tables: TableService, prefix: str) -> int:
    """Delete every object under ``prefix`` (a canonical URL that governance gave to one owner alone)."""
    deleted = 0
    for meta in list(tables.storage.list(tables.files.key_of(prefix + "/"))):
        tables.storage.delete(meta.key)
        deleted += 1
    return deleted
