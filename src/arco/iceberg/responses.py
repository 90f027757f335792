"""Serialized Iceberg responses, cached by the immutable metadata location they are built from."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from pyiceberg.table.metadata import TableMetadata

from arco.iceberg.metadata_files import DEFAULT_BUDGETS, metadata_bytes
from arco.lru import Lru
from arco.metrics import CacheMeter

CACHE_ENTRIES = 256
FORMAT_VERSIONS = (1, 2, 3)


def metadata_json(metadata: TableMetadata, snapshots: str = "all") -> dict[str, Any]:
    """The metadata as the REST spec's TableMetadata object; ``snapshots=refs`` keeps referenced snapshots only."""
    return _only_referenced(orjson.loads(metadata_bytes(metadata)), snapshots)


def _only_referenced(body: dict[str, Any], snapshots: str) -> dict[str, Any]:
    if snapshots == "refs" and body.get("snapshots"):
        referenced = {ref["snapshot-id"] for ref in body.get("refs", {}).values()}
        body["snapshots"] = [s for s in body["snapshots"] if s["snapshot-id"] in referenced]
    return body


def table_etag(metadata_location: str, snapshots: str, access_part: str = "") -> str:
    """The ETag of an answer carrying a table's metadata (load, create, register, commit): the metadata file it
    names (immutable, one per version of the table), the ``snapshots`` mode it was sent in, and what storage access
    it carries (:meth:`arco.iceberg.access.TableAccess.etag_part`). So a commit's answer and a later load of the
    same version, in the same mode and with the same access, have the same tag, as the spec's If-None-Match
    expects of a CommitTableResponse."""
    digest = hashlib.blake2b(metadata_location.encode(), digest_size=12).hexdigest()
    return f'"{digest}-{snapshots}{access_part}"'


@dataclass(frozen=True)
class LoadResult:
    """A ``LoadTableResult`` body (ending with an empty ``config``) and the table location its metadata names."""

    body: bytes
    table_location: str


def load_result_from_file(location: str, data: bytes, snapshots: str) -> LoadResult | None:
    """The answer built from a metadata file's bytes, without PyIceberg's models: a metadata file *is* the REST
    spec's TableMetadata object, so it is sent as stored (parsing it into models and back took 0.2 ms of a cold
    ``loadTable``'s 0.8 ms, by profile). None if the bytes are not a metadata document (the caller then parses
    them, and that reports the fault as every other read of the file does)."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if (not isinstance(document, dict) or not isinstance(document.get("location"), str)
            or document.get("format-version") not in FORMAT_VERSIONS):
        return None
    if snapshots == "refs" and document.get("snapshots"):
        data = orjson.dumps(_only_referenced(document, snapshots))
    return LoadResult(load_result_body(location, data.strip()), document["location"])


def load_result_body(location: str, metadata: bytes) -> bytes:
    """A ``LoadTableResult`` around a metadata document's JSON, ending with the empty ``config`` that a caller's
    storage access is put into (:func:`arco.iceberg.storage_routes.with_access`)."""
    return b'{"metadata-location":' + orjson.dumps(location) + b',"metadata":' + metadata + b',"config":{}}'


_METER = CacheMeter("load_table_responses")


class LoadResultCache:
    """``LoadTableResult`` bodies keyed by (metadata location, snapshots mode): built once per process."""

    def __init__(self, entries: int = CACHE_ENTRIES, budget: int = DEFAULT_BUDGETS.answers) -> None:
        # By size too: a long-lived table's answer is its whole metadata, and grows with every snapshot.
        self._cache: Lru[tuple[str, str], LoadResult] = Lru(entries, budget=budget,
                                                             weigh=lambda result: len(result.body))

    @property
    def cached_bytes(self) -> int:
        return self._cache.weight

    def holds(self, location: str, snapshots: str) -> bool:
        """Whether the answer for this file and mode is in memory (:meth:`get` would not read the file)."""
        return (location, snapshots) in self._cache

    def get(self, location: str, snapshots: str, read_file: Callable[[str], bytes],
            parse_file: Callable[[str], TableMetadata]) -> LoadResult:
        """The answer for the metadata file at ``location``: from the cache, or built from the file's bytes
        (``read_file``); a file that is no metadata document is left to ``parse_file`` to report."""
        key = (location, snapshots)
        result = self._cache.get(key)
        if result is not None:
            _METER.hit()
            return result
        _METER.miss()
        result = load_result_from_file(location, read_file(location), snapshots)
        if result is None:
            metadata = parse_file(location)
            result = LoadResult(load_result_body(location, orjson.dumps(metadata_json(metadata, snapshots))),
                                metadata.location)
        self._cache.put(key, result)
        return result
