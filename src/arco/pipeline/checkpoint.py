"""What the compactor has produced: the list of committed batches, moved forward by compare-and-swap.

    _catalog/pipeline/compact/state.json     {"batches": [{"batch_id", "files": {kind: [keys]}, ...}, ...]}

A batch's Parquet files are written first, then the batch is added here with a version-matched put: that put is
the commit point of a compaction. Files of a run that crashed before it (or lost the race to a concurrent run)
are listed nowhere; readers go through this state (:func:`history_keys`), and the next run removes them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from arco.pipeline import rows
from arco.pipeline.parquet_io import read_many
from arco.storage.base import DoesNotExist, MatchesVersion, StorageBackend

STATE_KEY = "_catalog/pipeline/compact/state.json"
HISTORY = "_catalog/history"
KINDS = ("timeline", "audit", "runs")
# Engines' scan and commit reports (for lineage), and the lineage edges the compactor derives from them and the
# timeline: kept apart from KINDS, whose tables every history reader has always found non-empty.
EXTRA_KINDS = ("reports", "lineage")
ALL_KINDS = KINDS + EXTRA_KINDS


@dataclass
class CompactState:
    batches: list[dict[str, Any]] = field(default_factory=list)
    version: str | None = None

    def files(self, kind: str) -> list[str]:
        return [key for batch in self.batches for key in batch["files"].get(kind, [])]


class ConcurrentCompaction(Exception):
    """Another compaction committed first; this run's batch is dropped (its receipts are that run's to count)."""


def load_state(storage: StorageBackend) -> CompactState:
    found = storage.get_or_none(STATE_KEY)
    if found is None:
        return CompactState()
    return CompactState(orjson.loads(found.data)["batches"], found.version)


def commit_batch(storage: StorageBackend, state: CompactState, batch: dict[str, Any]) -> CompactState:
    """The run's commit point: its batch joins the state by compare-and-swap, if every file it lists is there (a
    batch naming a missing file would make the whole history unreadable)."""
    missing = [key for keys in batch["files"].values() for key in keys if storage.head(key) is None]
    if missing:
        raise ConcurrentCompaction(f"{len(missing)} of this run's files are gone (first: {missing[0]}), deleted "
                                   "while it ran; nothing was committed: run again")
    batches = [*state.batches, {**batch, "committed_at_ms": int(time.time() * 1000)}]
    precondition = MatchesVersion(state.version) if state.version else DoesNotExist()
    written = storage.put(STATE_KEY, orjson.dumps({"batches": batches}), precondition)
    if not written.ok:
        raise ConcurrentCompaction("another compaction committed while this one ran; run again to continue")
    return CompactState(batches, written.version)  # type: ignore[union-attr]


def compacted_receipt_keys(storage: StorageBackend, state: CompactState | None = None,
                           kinds: tuple[str, ...] = ALL_KINDS) -> set[str]:
    """The storage keys of every receipt a committed batch holds (its ``receipt_key`` column)."""
    state = state if state is not None else load_state(storage)
    keys: set[str] = set()
    for kind in kinds:
        table = read_many(storage, state.files(kind), rows.SCHEMAS_BY_KIND[kind], columns=["receipt_key"])
        keys.update(table.column("receipt_key").to_pylist())
    return keys


def batch_prefix(kind: str, batch_id: str) -> str:
    return f"{HISTORY}/{kind}/batch={batch_id}/"


def history_keys(storage: StorageBackend, kind: str) -> list[str]:
    """The Parquet files of one history table (timeline, audit, runs): what readers should read."""
    return load_state(storage).files(kind)
