"""Chunked Tier 1 snapshots: a small root, one file per namespace's tables, and the id index in buckets.

    _catalog/core/snapshots/{seq:020d}.json               the root: catalogs, namespaces, principals, grants,
                                                          securables, external tables' locations, and where
                                                          each chunk and id bucket is
    _catalog/core/chunks/{namespace id}/{seq:020d}.json   one namespace's tables as of seq
    _catalog/core/ids/{digits}/{bucket}/{seq:020d}.json   table id -> namespace id, for ids starting with bucket

A snapshot writes the root, and a file only for each chunk and bucket that changed since the snapshot its state
came from; the others are referred to where they already are. So writing one costs what changed, not what the
catalog holds, and a new process reads the root and then only the chunks its requests need
(:mod:`arco.catalog.table_index`). Every file is immutable and named by the snapshot's position; two processes
writing the snapshot at the same position write the same bytes (the state at a position is deterministic), so
losing that race changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson

from arco.catalog.log import CORE, CatalogLog
from arco.catalog.model import TableEntry, name_key
from arco.catalog.state import CatalogState
from arco.catalog.table_index import TableIndex, bucket_digits, bucket_of
from arco.storage.base import DoesNotExist, StorageBackend

CHUNKS = f"{CORE}/chunks"
IDS = f"{CORE}/ids"
FORMAT = 2
_WRITERS = 8  # files of one snapshot written at once (object stores answer each put in milliseconds)


def chunk_key(ns_id: str, seq: int) -> str:
    return f"{CHUNKS}/{ns_id}/{seq:020d}.json"


def id_bucket_key(digits: int, bucket: str, seq: int) -> str:
    return f"{IDS}/{digits}/{bucket or 'all'}/{seq:020d}.json"


class SnapshotFiles:
    """Reads chunk and id-bucket files for :class:`TableIndex` (its ``ChunkSource``)."""

    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage

    def read_chunk(self, key: str) -> list[dict[str, Any]]:
        return orjson.loads(self.storage.get(key).data)["tables"]

    def read_id_bucket(self, key: str) -> dict[str, str]:
        return orjson.loads(self.storage.get(key).data)["ids"]


@dataclass(frozen=True)
class PreparedSnapshot:
    seq: int
    root: dict[str, Any]
    files: dict[str, bytes]  # chunk and bucket files this snapshot adds

    @property
    def chunks(self) -> dict[str, dict[str, Any]]:
        return self.root["chunks"]

    @property
    def ids(self) -> dict[str, Any]:
        return self.root["ids"]


def chunk_file(seq: int, ns_id: str, tables: Sequence[TableEntry] | Sequence[dict[str, Any]]) -> bytes:
    # orjson encodes the dataclasses itself, field by field as ``asdict`` would, some 80 times faster: a snapshot
    # is prepared while writers and readers of this process wait.
    return orjson.dumps({"seq": seq, "ns_id": ns_id, "tables": tables})


def id_bucket_file(seq: int, ids: dict[str, str]) -> bytes:
    return orjson.dumps({"seq": seq, "ids": ids})


def root_document(root: dict[str, Any], chunks: dict[str, dict[str, Any]], digits: int, buckets: dict[str, str],
                  external: dict[str, list[str]]) -> dict[str, Any]:
    """A snapshot's root: ``root`` (the state without its tables) and where the tables are."""
    return {**root, "format": FORMAT, "chunks": chunks, "ids": {"digits": digits, "buckets": buckets},
            "external": external}


def dirty_table_count(index: TableIndex) -> int:
    """How many tables the next snapshot rewrites (what it costs)."""
    return sum(chunk.count for chunk in index.dirty_chunks())


def prepare(state: CatalogState) -> PreparedSnapshot:
    """The snapshot of ``state`` as of its position, encoded: call with the state held still (reads the chunks
    that changed and are not in memory)."""
    index, seq = state.tables, state.seq
    files: dict[str, bytes] = {}
    chunks: dict[str, dict[str, Any]] = {}
    for chunk in list(index.chunks.values()):
        if chunk.count == 0:
            continue
        if chunk.dirty or chunk.base_key is None:
            key = chunk_key(chunk.ns_id, seq)
            files[key] = chunk_file(seq, chunk.ns_id, index.entries_of(chunk))
            chunks[chunk.ns_id] = {"key": key, "count": chunk.count}
        else:
            chunks[chunk.ns_id] = {"key": chunk.base_key, "count": chunk.count}
    digits = bucket_digits(len(index))
    buckets = dict(index.id_base) if digits == index.id_digits else {}
    for bucket, rows in index.changed_id_buckets(digits).items():
        if rows:
            key = id_bucket_key(digits, bucket, seq)
            files[key] = id_bucket_file(seq, rows)
            buckets[bucket] = key
        else:
            buckets.pop(bucket, None)
    external = {table_id: list(found) for table_id, found in index.external.items()}
    return PreparedSnapshot(seq, root_document(state.root_snapshot(), chunks, digits, buckets, external), files)


def write(log: CatalogLog, snapshot: PreparedSnapshot) -> None:
    """Store the snapshot's files, then its root, then move the manifest to it (the root is written last, so a
    root never refers to a file that is not there)."""
    storage = log.storage

    def put(item: tuple[str, bytes]) -> None:
        storage.put(item[0], item[1], DoesNotExist())  # taken already: the same bytes, by another writer

    if len(snapshot.files) > 1:
        with ThreadPoolExecutor(_WRITERS) as pool:
            list(pool.map(put, snapshot.files.items()))
    else:
        for item in snapshot.files.items():
            put(item)
    log.write_snapshot(snapshot.root)


def write_bulk(log: CatalogLog, root: dict[str, Any], namespace_ids: Sequence[str],
               rows_of: Callable[[str], list[dict[str, Any]]],
               progress: Callable[[int, int], None] | None = None) -> None:
    """Store a snapshot at ``root["seq"]`` in which each namespace holds the table entries (as JSON) that
    ``rows_of`` gives for it, and move the manifest to it: the bulk path that fills a warehouse without logging
    an operation per table (the benchmarks' million tables). ``root`` is the state without its tables
    (``CatalogState.root_snapshot``); ``rows_of`` is called on writer threads, so rows never all live at once.
    ``progress(namespaces written, tables written)`` is called as chunks are stored. Chunk and bucket files of
    a snapshot already at that position are replaced; its root is not (delete it first to replace it)."""
    storage, seq = log.storage, int(root["seq"])

    def put_chunk(ns_id: str) -> tuple[str, dict[str, str], dict[str, list[str]]]:
        rows = sorted(rows_of(ns_id), key=lambda row: name_key(row["name"]))
        if rows:
            storage.put(chunk_key(ns_id, seq), chunk_file(seq, ns_id, rows))
        external = {row["id"]: [row["name"], row["location"]] for row in rows
                    if not row.get("managed", True) and row.get("location")}
        return ns_id, {row["id"]: ns_id for row in rows}, external

    chunks: dict[str, dict[str, Any]] = {}
    ids: dict[str, str] = {}
    external: dict[str, list[str]] = {}
    with ThreadPoolExecutor(_WRITERS) as pool:
        for done, (ns_id, held, unplaced) in enumerate(pool.map(put_chunk, namespace_ids), 1):
            if held:
                chunks[ns_id] = {"key": chunk_key(ns_id, seq), "count": len(held)}
            ids.update(held)
            external.update(unplaced)
            if progress is not None:
                progress(done, len(ids))
        digits = bucket_digits(len(ids))
        buckets: dict[str, dict[str, str]] = {}
        for table_id, ns_id in ids.items():
            buckets.setdefault(bucket_of(table_id, digits), {})[table_id] = ns_id

        def put_bucket(item: tuple[str, dict[str, str]]) -> tuple[str, str]:
            key = id_bucket_key(digits, item[0], seq)
            storage.put(key, id_bucket_file(seq, item[1]))
            return item[0], key

        bucket_keys = dict(pool.map(put_bucket, buckets.items()))
    log.write_snapshot(root_document(root, chunks, digits, bucket_keys, external))
