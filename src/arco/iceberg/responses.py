"""Serialized Iceberg responses, cached by the immutable metadata location they are built from."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import orjson
from pyiceberg.table.metadata import TableMetadata

from arco.iceberg.metadata_files import metadata_bytes
from arco.metrics import CacheMeter

CACHE_ENTRIES = 256


def metadata_json(metadata: TableMetadata, snapshots: str = "all") -> dict[str, Any]:
    """The metadata as the REST spec's TableMetadata object; ``snapshots=refs`` keeps referenced snapshots only."""
    body: dict[str, Any] = orjson.loads(metadata_bytes(metadata))
    if snapshots == "refs" and body.get("snapshots"):
        referenced = {ref["snapshot-id"] for ref in body.get("refs", {}).values()}
        body["snapshots"] = [s for s in body["snapshots"] if s["snapshot-id"] in referenced]
    return body


_METER = CacheMeter("load_table_responses")


class LoadResultCache:
    """``LoadTableResult`` bodies keyed by (metadata location, snapshots mode): built once per process."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self._cache: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._entries = entries
        self._lock = threading.Lock()

    def get(self, location: str, metadata: TableMetadata, snapshots: str) -> bytes:
        key = (location, snapshots)
        with self._lock:
            body = self._cache.get(key)
            if body is not None:
                self._cache.move_to_end(key)
                _METER.hit()
                return body
        _METER.miss()
        body = orjson.dumps({"metadata-location": location, "metadata": metadata_json(metadata, snapshots),
                             "config": {}})
        with self._lock:
            self._cache[key] = body
            while len(self._cache) > self._entries:
                self._cache.popitem(last=False)
        return body
