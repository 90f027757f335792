"""The requests the storage-fault tests send through a harness's mutations, and how they read a table's history."""

from __future__ import annotations

from arco.iceberg.mutations import Caller
from support.iceberg_harness import Harness

SOURCE = {"kind": "iceberg_rest", "client_info": "test", "principal": "admin"}
LONG_TIMEOUT = 600.0  # a retry that had to wait for the in-progress timeout would fail these tests


def caller(key: str | None) -> Caller:
    return Caller("admin", SOURCE, key)


def body(value: str = "1") -> dict:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": {"counter": value}}]}


def history(h: Harness, name: str = "t") -> list[str]:
    """The table's metadata files, newest first: the current one, then its metadata log's."""
    loaded = h.tables.load(h.catalog, ("db",), name)
    return [loaded.pointer.pointer.current_metadata_location, *[e.metadata_file for e in loaded.metadata.metadata_log]]
