"""The Iceberg table pointer (seed section 2): one small object per table, changed only by compare-and-swap.

    _catalog/iceberg_pointers/{table_uuid}.json

It names the table's current metadata file and denormalizes what a commit checks first (current snapshot,
refs, last sequence number). A dropped table's pointer becomes a *tombstone*, written with a version-matched
put rather than deleted, because a conditional delete is not enforced by every store (fake-gcs-server ignores it)
and an in-flight commit holding the old version must fail either way. Every write carries a fresh ``write_id``,
so two writes never have the same bytes (an S3 version is a hash of the content).

Each process keeps the pointers it read or wrote, with their versions (:class:`PointerStore`). A read revalidates
its copy with one conditional read (``get_if_changed``: on S3 a GET with ``If-None-Match`` answered 304), so an
unchanged pointer costs a round trip but no bytes or parsing; a read inside a request given a validity window
(:func:`read_window`, ``--read-freshness-ms``) uses a copy checked within that window without asking storage. A
successful swap replaces the copy, so this process sees its own commits at once. Writers may start from the
copy (:meth:`PointerStore.cached`): their compare-and-swap is the check, and a stale copy fails it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import orjson

from arco import metrics
from arco.lru import Lru
from arco.storage.base import DoesNotExist, MatchesVersion, NotFound, StorageBackend, StorageError, WriteResult

POINTER_FORMAT_VERSION = 1
POINTERS = "_catalog/iceberg_pointers"
CACHE_ENTRIES = 4096
# A table whose swap was lost less than this long ago is contended: another server commits to it
# (arco.iceberg.commit.yield_to_other_servers).
CONTENDED_FOR_S = 10.0
_METER = metrics.CacheMeter("table_pointers")
# How old (seconds) a pointer copy this process checked may be for the current request to use it unchecked.
_WINDOW: ContextVar[float] = ContextVar("arco_pointer_read_window", default=0.0)


@contextmanager
def read_window(window_s: float) -> Iterator[None]:
    """Inside the block, :meth:`PointerStore.load` may answer from a copy checked at most ``window_s`` ago."""
    token = _WINDOW.set(max(0.0, window_s))
    try:
        yield
    finally:
        _WINDOW.reset(token)


def in_read_window() -> bool:
    """Whether this request may be answered from copies checked up to a window ago (:func:`read_window`)."""
    return _WINDOW.get() > 0.0


def pointer_key(table_uuid: str) -> str:
    return f"{POINTERS}/{table_uuid}.json"


@dataclass(frozen=True)
class TablePointer:
    table_uuid: str
    current_metadata_location: str
    current_snapshot_id: int | None = None
    refs: dict[str, Any] = field(default_factory=dict)
    last_sequence_number: int = 0
    previous_metadata_location: str | None = None
    updated_at_ms: int = 0
    updated_by: dict[str, Any] = field(default_factory=dict)
    dropped: bool = False
    # Set while a multi-table transaction holds this table (see arco.iceberg.transactions): the transaction id
    # and the pointer fields this table gets if, and only if, that transaction commits.
    pending_txn: str | None = None
    proposed: dict[str, Any] | None = None
    write_id: str = ""
    version: int = POINTER_FORMAT_VERSION

    def to_bytes(self) -> bytes:
        # Shallow: orjson writes nested dataclasses and containers itself (dataclasses.asdict deep-copies them).
        return orjson.dumps({**self.__dict__, "write_id": uuid.uuid4().hex, "updated_at_ms": int(time.time() * 1000)})

    @classmethod
    def from_bytes(cls, data: bytes) -> TablePointer:
        raw = orjson.loads(data)
        if not raw.keys() <= _POINTER_FIELDS:  # written by a newer format: its extra fields are not ours to keep
            raw = {k: v for k, v in raw.items() if k in _POINTER_FIELDS}
        return cls(**raw)


    def with_changes(self, **changes: Any) -> TablePointer:
        return TablePointer(**{**self.__dict__, **changes})

    def rolled_forward(self) -> TablePointer:
        """The pointer after its pending transaction committed: the proposal becomes current."""
        assert self.proposed is not None
        return self.with_changes(**self.proposed, pending_txn=None, proposed=None)

    def rolled_back(self) -> TablePointer:
        return self.with_changes(pending_txn=None, proposed=None)


_POINTER_FIELDS = frozenset(TablePointer.__dataclass_fields__)


@dataclass(frozen=True)
class VersionedPointer:
    pointer: TablePointer
    version: str


class PointerStore:
    def __init__(self, storage: StorageBackend, cache_entries: int = CACHE_ENTRIES) -> None:
        self.storage = storage
        # table uuid -> (the pointer as last read or written here, when storage last confirmed it: monotonic)
        self._cache: Lru[str, tuple[VersionedPointer, float]] = Lru(cache_entries)
        self._lost_at: Lru[str, float] = Lru(cache_entries)  # table uuid -> when a swap of it was last lost
        self._won_in_a_row: Lru[str, int] = Lru(cache_entries)  # table uuid -> swaps won since the last lost one

    def load(self, table_uuid: str) -> VersionedPointer | None:
        """The pointer and its storage version, or None if there is none (tombstones are returned as such).

        One conditional read when this process has a copy (unless the request's window covers the copy's age),
        else one plain read."""
        started = time.monotonic()
        held = self._cache.get(table_uuid)
        if held is not None:
            copy, checked_at = held
            window = _WINDOW.get()
            if window > 0 and started - checked_at <= window and copy.pointer.pending_txn is None:
                _METER.hit()
                return copy
            try:
                found = self.storage.get_if_changed(pointer_key(table_uuid), copy.version)
            except NotFound:
                self.forget(table_uuid)
                return None
            if found is None:
                self._remember(copy, started)
                _METER.hit()
                return copy
        else:
            try:
                found = self.storage.get(pointer_key(table_uuid))
            except NotFound:
                return None
        _METER.miss()
        loaded = VersionedPointer(TablePointer.from_bytes(found.data), found.version)
        self._remember(loaded, started)
        return loaded

    def cached(self, table_uuid: str) -> VersionedPointer | None:
        """This process's copy, unchecked: for a writer whose compare-and-swap against it is the check."""
        held = self._cache.get(table_uuid)
        return held[0] if held is not None else None

    def forget(self, table_uuid: str) -> None:
        self._cache.pop(table_uuid)

    def _remember(self, pointer: VersionedPointer, checked_at: float) -> None:
        # A newer confirmation (another thread's read or swap) stays.
        self._cache.put(pointer.pointer.table_uuid, (pointer, checked_at), unless=lambda held: held[1] > checked_at)

    def create(self, pointer: TablePointer) -> WriteResult:
        written = self.storage.put(pointer_key(pointer.table_uuid), pointer.to_bytes(), DoesNotExist())
        if written.ok:
            self._remember(VersionedPointer(pointer, written.version), time.monotonic())  # type: ignore[union-attr]
        return written

    def swap(self, expected_version: str, pointer: TablePointer) -> WriteResult:
        written = self.storage.put(pointer_key(pointer.table_uuid), pointer.to_bytes(),
                                   MatchesVersion(expected_version))
        metrics.cas("table_pointer", written.ok)  # a lost swap means a concurrent commit: the caller retries
        self._won_in_a_row.put(pointer.table_uuid, self.won_in_a_row(pointer.table_uuid) + 1 if written.ok else 0)
        if written.ok:
            # Stamped when the write is known to have landed, so a read that started before (and may have seen the
            # old version) never replaces it; a read stamps the time it started, for the same reason.
            self._remember(VersionedPointer(pointer, written.version), time.monotonic())  # type: ignore[union-attr]
        else:
            self._lost_at.put(pointer.table_uuid, time.monotonic())
            self.forget(pointer.table_uuid)  # it changed under us: the next reader reads it afresh
        return written

    def won_in_a_row(self, table_uuid: str) -> int:
        """How many swaps of the table this process has won since it last lost one."""
        return self._won_in_a_row.get(table_uuid) or 0

    def contended(self, table_uuid: str) -> bool:
        """Whether this process lost a swap of the table in the last :data:`CONTENDED_FOR_S` seconds: another
        server commits to it."""
        lost_at = self._lost_at.get(table_uuid)
        return lost_at is not None and time.monotonic() - lost_at < CONTENDED_FOR_S

    def fence(self, expected_version: str, pointer: TablePointer) -> bool:
        """Write ``pointer`` (the pointer as it was at ``expected_version``) again, if it is still at that version:
        its bytes get a fresh ``write_id``, so its version changes and a compare-and-swap against
        ``expected_version`` still in flight to the store can no longer land. True if it was rewritten (nothing
        against that version had landed); False if the pointer had moved on. Raises :class:`StorageError`."""
        return self.swap(expected_version, pointer).ok

    def create_or_revive(self, pointer: TablePointer,
                         orphaned: Callable[[VersionedPointer], bool] = lambda _: False) -> str | None:
        """Create the pointer, or replace by CAS a tombstone of the same uuid (the files of a dropped table or view
        registered again) or a live pointer ``orphaned`` says nothing names; the version written, or None if a
        live pointer of that uuid exists, or the one replaced changed under us."""
        created = self.create(pointer)
        if created.ok:
            return created.version
        existing = self.load(pointer.table_uuid)
        if existing is None or not (existing.pointer.dropped or orphaned(existing)):
            return None
        swapped = self.swap(existing.version, pointer)
        return swapped.version if swapped.ok else None

    def withdraw(self, pointer: TablePointer, version: str) -> None:
        """Mark dropped a pointer this process wrote at ``version`` for a registration the catalog then refused
        (nothing names it, and a live pointer would refuse every later registration of its files): only if it is
        still at that version, and best effort (a pointer left live is one :meth:`create_or_revive` may take over
        once it is old)."""
        try:
            self.swap(version, pointer.with_changes(dropped=True))
        except StorageError:
            pass
