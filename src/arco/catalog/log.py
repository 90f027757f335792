"""Where Tier 1 lives in storage: an append-only log of operations, periodic snapshots, and a manifest.

    _catalog/core/log/{seq:020d}.json        one operation, or {"batch": [op, ...]} for the k operations at
                                             seq .. seq+k-1 (:mod:`arco.catalog.batching`); written create-only,
                                             so exactly one writer wins seq
    _catalog/core/snapshots/{seq:020d}.json  the state as of seq (immutable; its tables in chunk files)
    _catalog/core/manifest.json              which snapshot is newest (a hint that only moves forward)

Appending entry ``n+1`` with ``DoesNotExist`` is the commit point of a catalog change: one conditional write per
operation, whatever the catalog's size, and two writers racing for the same position cannot both win. A reader
is current when entry ``n+1`` does not exist; catching up reads the entries after its own position. A batch
entry at ``n`` holding ``k`` operations is followed by the entry at ``n+k``: positions inside it have no file of
their own, and no writer ever tries them, since a writer appends right after the state it has applied, and a
state always ends where an entry's operations end.

An append that gets no answer may still reach the store later (a store can apply a request its client gave up
on). So before its writer says it did not land, the position it tried is *fenced*: a ``fence`` operation, which
changes nothing, is appended there create-only (:meth:`CatalogLog.fence`), after which the late write can only be
refused. Every reader of the log steps over fences (:func:`is_fence`): they hold a position and nothing else.

Snapshots bound the catch-up of a new process: every ``SNAPSHOT_EVERY`` entries (at least, and more for big
catalogs so that writing one stays a small share of the work) the writer of that position stores the state and
moves the manifest forward (:meth:`arco.catalog.store.CatalogStore._snapshot_to_store`). Garbage collection
(:func:`arco.pipeline.gc.tier1_deletions`) deletes superseded snapshot files and the entries a kept snapshot covers
after a long grace period; a process re-reads the manifest at least every ``MANIFEST_RECHECK_S`` seconds, far
shorter than that grace, and one that finds its next entry gone while the manifest names a snapshot past it
starts again from that snapshot, so it never mistakes a deleted old entry for the end of the log.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from arco.storage.base import DoesNotExist, MatchesVersion, NotFound, StorageBackend

CORE = "_catalog/core"
MANIFEST_KEY = f"{CORE}/manifest.json"
SNAPSHOT_EVERY = 256
MANIFEST_RECHECK_S = 60.0


BATCH = "batch"
FENCE = "fence"


def ops_of(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The operations of a log entry, the first at the entry's own position and each next one at the next."""
    batch = entry.get(BATCH)
    return batch if isinstance(batch, list) else [entry]


def entry_of(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """The log entry for ``ops`` (a lone operation is its own entry, as it always was)."""
    if not ops or any(BATCH in op for op in ops):
        raise ValueError("a log entry holds one or more operations, none of them named 'batch'")
    return ops[0] if len(ops) == 1 else {BATCH: ops}


def is_fence(op: dict[str, Any]) -> bool:
    """Whether ``op`` only holds its position (an unanswered append's, so that it cannot land there late)."""
    return op.get("op") == FENCE


def log_key(seq: int) -> str:
    return f"{CORE}/log/{seq:020d}.json"


def snapshot_key(seq: int) -> str:
    return f"{CORE}/snapshots/{seq:020d}.json"


@dataclass(frozen=True)
class Manifest:
    snapshot_seq: int  # 0: no snapshot yet, replay from the first entry
    version: str | None  # storage version, for the compare-and-swap that moves it forward


class CatalogLog:
    """The storage side of Tier 1; knows keys and encodings, nothing about what operations mean."""

    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage
        self.manifest_read_at = 0.0

    def read_manifest(self) -> Manifest:
        found = self.storage.get_or_none(MANIFEST_KEY)
        self.manifest_read_at = time.monotonic()
        if found is None:
            return Manifest(snapshot_seq=0, version=None)
        return Manifest(snapshot_seq=int(orjson.loads(found.data)["snapshot_seq"]), version=found.version)

    def manifest_is_due(self) -> bool:
        return time.monotonic() - self.manifest_read_at > MANIFEST_RECHECK_S

    def read_snapshot(self, seq: int) -> dict[str, Any]:
        return orjson.loads(self.storage.get(snapshot_key(seq)).data)

    def read_entry(self, seq: int) -> dict[str, Any] | None:
        try:
            return orjson.loads(self.storage.get(log_key(seq)).data)
        except NotFound:
            return None

    def read_ops(self, seq: int) -> list[dict[str, Any]] | None:
        """The operations of the entry at ``seq`` (at ``seq``, ``seq+1`` ...); None if there is no entry there."""
        entry = self.read_entry(seq)
        return None if entry is None else ops_of(entry)

    def operations(self, first: int, last: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(position, operation)`` for the positions ``first .. last`` the log still has, in order."""
        seq = first
        while seq <= last:
            ops = self.read_ops(seq)
            if ops is None:  # inside a batch entry, or collected: the next position is looked at
                seq += 1
                continue
            for position, op in enumerate(ops, start=seq):
                if first <= position <= last:
                    yield position, op
            seq += len(ops)

    def append(self, seq: int, ops: list[dict[str, Any]]) -> bool:
        """Try to write the entry of ``ops`` at ``seq``; False if another writer took that position first."""
        return self.storage.put(log_key(seq), orjson.dumps(entry_of(ops)), DoesNotExist()).ok

    def fence(self, seq: int) -> bool:
        """Take position ``seq`` with a fence, if it is free, so that an append there that got no answer can no
        longer land; False if it is taken (by that append, or another writer's)."""
        return self.append(seq, [{"op": FENCE, "at_ms": int(time.time() * 1000)}])

    def write_snapshot(self, snapshot: dict[str, Any]) -> None:
        seq = int(snapshot["seq"])
        self.storage.put(snapshot_key(seq), orjson.dumps(snapshot), DoesNotExist())
        # Move the manifest forward only; losing this race to a newer snapshot is fine.
        for _ in range(5):
            manifest = self.read_manifest()
            if manifest.snapshot_seq >= seq:
                return
            body = orjson.dumps({"snapshot_seq": seq, "written_at_ms": int(time.time() * 1000)})
            precondition = MatchesVersion(manifest.version) if manifest.version else DoesNotExist()
            if self.storage.put(MANIFEST_KEY, body, precondition).ok:
                return
