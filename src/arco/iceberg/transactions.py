"""Atomic multi-table commits on compare-and-swap alone (``POST /v1/{prefix}/transactions/commit``).

The design (written down in full in ``docs/transactions.md``), in the style of Percolator:

1. For every table: resolve it, check its requirements against its current metadata, compute and write the new
   metadata file (create-only). Nothing is visible yet.
2. Write the transaction record ``_catalog/iceberg_txns/{id}.json`` as ``PENDING`` with a deadline.
3. Mark every pointer, in table-uuid order, with a version-matched put: the pointer keeps its current metadata and
   gains ``pending_txn`` and ``proposed`` (the fields it will have after the commit). A pointer that changed since
   step 1 fails the put: the transaction aborts and is retried from step 1.
4. **Commit point:** compare-and-swap the record from ``PENDING`` to ``COMMITTED``. If someone else moved it to
   ``ABORTED`` first (its deadline passed), the transaction did not happen.
5. Roll every pointer forward (proposal becomes current, mark cleared). Best effort: anyone who meets a mark
   does the same.

Whoever meets a marked pointer resolves it by the record: ``COMMITTED`` -> the proposal is current (and is rolled
forward); ``ABORTED`` or no record -> the current value stands (and the mark is cleared); ``PENDING`` -> readers
use the current value (the commit point has not happened), writers wait, and once the deadline has passed abort
the record with a compare-and-swap. So every reader sees all of a transaction's tables changed, or none, and a
crash at any step leaves a state that the next reader resolves the same way as every other.
"""

from __future__ import annotations

import functools
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from arco.catalog.model import NamespacePath, TableEntry
from arco.iceberg import commit_rules, table_requirements
from arco.iceberg.errors import BadRequest, CommitFailed
from arco.iceberg.pointer import PointerStore, TablePointer, VersionedPointer
from arco.storage.base import CommitPointUnanswered, DoesNotExist, MatchesVersion, StorageBackend, StorageError

TxnState = Literal["PENDING", "COMMITTED", "ABORTED"]
TXN_DEADLINE_S = 15.0
WAIT_STEP_S = 0.02
MAX_TXN_ATTEMPTS = 5


def txn_key(txn_id: str) -> str:
    return f"_catalog/iceberg_txns/{txn_id}.json"


@dataclass(frozen=True)
class TxnRecord:
    txn_id: str
    state: TxnState
    deadline_ms: int
    tables: list[str]
    version: str | None = None

    def body(self, state: TxnState) -> bytes:
        return orjson.dumps({"txn_id": self.txn_id, "state": state, "deadline_ms": self.deadline_ms,
                             "tables": self.tables, "changed_at_ms": int(time.time() * 1000)})


class TxnRecords:
    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage

    def create(self, tables: list[str]) -> TxnRecord:
        record = TxnRecord(uuid.uuid4().hex, "PENDING", int((time.time() + TXN_DEADLINE_S) * 1000), tables)
        written = self.storage.put(txn_key(record.txn_id), record.body("PENDING"), DoesNotExist())
        if not written.ok:
            raise CommitFailed("transaction id collision; retry")
        return TxnRecord(record.txn_id, "PENDING", record.deadline_ms, tables, written.version)  # type: ignore[union-attr]

    def load(self, txn_id: str) -> TxnRecord | None:
        found = self.storage.get_or_none(txn_key(txn_id))
        if found is None:
            return None
        raw = orjson.loads(found.data)
        return TxnRecord(raw["txn_id"], raw["state"], raw["deadline_ms"], raw["tables"], found.version)

    def finish(self, record: TxnRecord, state: TxnState) -> TxnState:
        """Move a PENDING record to ``state``; return the state it ends in (someone else may have decided)."""
        assert record.version is not None
        if self.storage.put(txn_key(record.txn_id), record.body(state), MatchesVersion(record.version)).ok:
            return state
        current = self.load(record.txn_id)
        return current.state if current is not None else "ABORTED"


class PointerResolver:
    """Reads pointers the way everyone must once transactions exist: resolving any mark by its record."""

    def __init__(self, pointers: PointerStore, records: TxnRecords) -> None:
        self.pointers = pointers
        self.records = records

    def for_read(self, table_uuid: str) -> VersionedPointer | None:
        """The pointer as of now; a mark of a committed transaction is rolled forward (so the caller sees it)."""
        current = self.pointers.load(table_uuid)
        if current is None or current.pointer.pending_txn is None:
            return current
        record = self.records.load(current.pointer.pending_txn)
        if record is not None and record.state == "COMMITTED":
            rolled = current.pointer.rolled_forward()
            try:
                return self._settle(current, rolled) or self.pointers.load(table_uuid)
            except StorageError:
                # Storage refuses writes: a read still sees the committed transaction; a later reader settles it.
                return VersionedPointer(rolled, current.version)
        # PENDING (the commit point has not been reached), ABORTED or gone: the current value stands, and the
        # next writer clears the mark.
        return current

    def for_write(self, table_uuid: str) -> VersionedPointer | None:
        """An unmarked pointer to compare-and-swap against: resolves marks, waiting out live transactions."""
        while True:
            current = self.pointers.load(table_uuid)
            if current is None or current.pointer.pending_txn is None:
                return current
            record = self.records.load(current.pointer.pending_txn)
            if record is None or record.state == "ABORTED":
                self._settle(current, current.pointer.rolled_back())
            elif record.state == "COMMITTED":
                self._settle(current, current.pointer.rolled_forward())
            elif _expired(record):
                if self.records.finish(record, "ABORTED") == "COMMITTED":
                    self._settle(current, current.pointer.rolled_forward())
            else:
                time.sleep(WAIT_STEP_S)

    def _settle(self, current: VersionedPointer, settled: TablePointer) -> VersionedPointer | None:
        written = self.pointers.swap(current.version, settled)
        return VersionedPointer(settled, written.version) if written.ok else None  # type: ignore[union-attr]


def _expired(record: TxnRecord) -> bool:
    return record.state == "PENDING" and time.time() * 1000 > record.deadline_ms


@dataclass
class PreparedChange:
    entry: TableEntry
    base: VersionedPointer
    proposed: TablePointer


def parse_table_changes(body: Any) -> list[tuple[NamespacePath, str, dict[str, Any]]]:
    from arco.catalog.names import check_name, check_namespace

    if not isinstance(body, dict) or not isinstance(body.get("table-changes"), list) or not body["table-changes"]:
        raise BadRequest("'table-changes' must be a non-empty list")
    changes = []
    seen: set[tuple[tuple[str, ...], str]] = set()
    for change in body["table-changes"]:
        if not isinstance(change, dict) or not isinstance(change.get("identifier"), dict):
            raise BadRequest("every table change must have an 'identifier'")
        ident = change["identifier"]
        namespace = check_namespace(ident.get("namespace"))
        name = check_name("table", ident.get("name"))
        key = (tuple(p.casefold() for p in namespace), name.casefold())
        if key in seen:
            raise BadRequest(f"table {'.'.join((*namespace, name))} appears twice in one transaction")
        seen.add(key)
        commit_rules.parse_updates(change.get("updates", []))
        table_requirements.parse_requirements(change.get("requirements"))
        changes.append((namespace, name, change))
    return changes


def mark_and_commit(resolver: PointerResolver, prepared: list[PreparedChange]) -> bool:
    """Steps 2-5 for changes whose metadata files are written; False if a pointer moved (retry from step 1)."""
    prepared = sorted(prepared, key=lambda p: p.entry.id)
    record = resolver.records.create([p.entry.id for p in prepared])
    marked: list[tuple[PreparedChange, str]] = []
    try:
        committed = _mark_and_decide(resolver, record, prepared, marked)
    except StorageError as exc:
        # Storage failed before or at the commit point. Deciding now spares every later writer of these tables
        # the wait for the record's deadline: abort it, unless the commit-point write did land after all. The
        # abort is also what fences a commit-point write still on its way: it moves the record from the version
        # that write expects. If storage is still unavailable, the check of where the transaction landed aborts it
        # first (else the deadline decides: whoever meets a mark resolves it by the record).
        try:
            decided = _abort_unless_committed(resolver, record, marked)
        except StorageError:
            fence = functools.partial(_abort_unless_committed, resolver, record, marked)
            raise CommitPointUnanswered(f"a transaction's commit point may be on its way: {exc}", fence) from exc
        if decided != "COMMITTED":
            raise
        committed = True
    if not committed:
        return False
    for change, version in marked:
        resolver.pointers.swap(version, change.proposed)  # best effort: readers roll forward what is left
    return True


def _mark_and_decide(resolver: PointerResolver, record: TxnRecord, prepared: list[PreparedChange],
                     marked: list[tuple[PreparedChange, str]]) -> bool:
    """Steps 3-4: mark every pointer, then the commit point; False (all undone) if a pointer moved."""
    for change in prepared:
        proposal = {k: v for k, v in change.proposed.__dict__.items()
                    if k in ("current_metadata_location", "current_snapshot_id", "refs", "last_sequence_number",
                             "previous_metadata_location", "updated_by")}
        mark = change.base.pointer.with_changes(pending_txn=record.txn_id, proposed=proposal)
        written = resolver.pointers.swap(change.base.version, mark)
        if not written.ok:
            _abort_unless_committed(resolver, record, marked)  # only this writer commits it: it ends aborted
            return False
        marked.append((change, written.version))  # type: ignore[union-attr]
    if resolver.records.finish(record, "COMMITTED") != "COMMITTED":
        _abort_unless_committed(resolver, record, marked)
        return False
    return True


def _abort_unless_committed(resolver: PointerResolver, record: TxnRecord,
                            marked: list[tuple[PreparedChange, str]]) -> TxnState:
    """Abort the record (and undo the marks) unless it is committed; the state it ends in."""
    decided = resolver.records.finish(record, "ABORTED")
    if decided != "COMMITTED":
        _undo_marks(resolver, marked)
    return decided


def _undo_marks(resolver: PointerResolver, marked: list[tuple[PreparedChange, str]]) -> None:
    for change, version in marked:
        resolver.pointers.swap(version, change.base.pointer.rolled_back())
