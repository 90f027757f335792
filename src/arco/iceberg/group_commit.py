"""Group commit: commits to one table that meet in one server process share one metadata file and one CAS.

Why: every commit of a table is a compare-and-swap of one pointer, so writers of a hot table race. Without
grouping, N concurrent writers make N metadata files per round and N-1 of them lose; with it, the requests that
arrive while a commit is in flight wait for it and then go together as the next batch. Between servers the
pointer CAS still decides, and a leader that loses backs off with full jitter before redoing its batch. A leader
that wins twice in a row on a table another server commits to holds the table's next batch for one to one and a
half of its tries (:func:`arco.iceberg.commit.yield_to_other_servers`), so that server's try gets through.

How, inside one process (:class:`Coalescer`): per table, a queue and at most one *leader*. A request joins the
queue; if no leader is running, it becomes the leader, takes the queue (up to ``max_batch`` requests, its own
among them) and runs the batch; the others wait until their answer is set. The leader never runs batches other
than the one it took, so nobody waits for more than the commit in flight and their own.

What a batch does (:func:`arco.iceberg.commit.commit_batch`): read the pointer and the base once; for each request
in arrival order check its own requirements against the metadata as the earlier requests left it, and apply its
updates; write ONE metadata file and do ONE pointer CAS. A request whose requirement fails is answered 409 alone,
with the reference implementation's words, and the others go on. A failure found against an earlier member's
change is only final once that change has landed: if the CAS is lost, every member is checked again against the
new base.

What the outside world sees:

* Every member's answer names the same new metadata file, which holds every member's change (as if the members
  had committed one after another and a reader had looked only at the end). The metadata log gains ONE entry
  (the base) for the whole group, so a client comparing metadata versions sees one version step for N commits;
  its own change is always in the version it is answered with.
* The file's name carries no single request's tag; instead a *group record* is written create-only before the
  CAS (:func:`group_record_key`), listing every member (its Idempotency-Key tag, principal and source, and the
  update actions it applied). Crash recovery of any member's Idempotency-Key reads it, and the reconciler
  backfills one committed receipt per member from it. Clients never see it. A group of one is an ordinary commit
  (the tag in the file name, no record).
* Receipts and audit: each member writes its own committed receipt (:func:`arco.events.receipts.iceberg_receipt_key`
  with ``member``), each with its own source and principal and the shared metadata location, so the timeline has
  one row per acknowledged request: N rows with the same ``metadata_location`` for a group of N.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import orjson

from arco.lru import Lru
from arco.storage.base import DoesNotExist, StorageBackend, StorageError

GROUPS = "_catalog/iceberg_groups"
MAX_BATCH = 64

T = TypeVar("T")


@dataclass(eq=False)
class Pending(Generic[T]):
    """One request waiting in a table's queue: its input and, once decided, its answer (a value or an error)."""

    item: T
    done: bool = False
    value: Any = None
    error: BaseException | None = None

    def succeed(self, value: Any) -> None:
        self.value, self.done = value, True

    def fail(self, error: BaseException) -> None:
        self.error, self.done = error, True

    def answer(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


@dataclass
class _Slot:
    cond: threading.Condition = field(default_factory=threading.Condition)
    queue: list[Pending[Any]] = field(default_factory=list)
    leading: bool = False
    users: int = 0
    not_before: float = 0.0  # monotonic time the next batch may start (Coalescer.delay_next_batch)


class Coalescer:
    """Per key, a queue and one leader at a time; see the module docstring."""

    def __init__(self, max_batch: int = MAX_BATCH, sleep: Callable[[float], None] = time.sleep) -> None:
        self.max_batch = max_batch
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self._sleep = sleep

    @contextmanager
    def _slot(self, key: str) -> Iterator[_Slot]:
        with self._lock:
            slot = self._slots.setdefault(key, _Slot())
            slot.users += 1
        try:
            yield slot
        finally:
            with self._lock:
                slot.users -= 1
                if slot.users == 0:
                    del self._slots[key]

    def submit(self, key: str, item: T, run_batch: Callable[[list[Pending[T]]], None]) -> Any:
        """Queue ``item`` for ``key`` and return its answer once a batch containing it has run (as leader or not).

        ``run_batch`` must decide every member it is given (``succeed`` or ``fail``); one it leaves undecided, or
        an exception it raises, fails the undecided members with that exception (a crash fails them all)."""
        pending: Pending[T] = Pending(item)
        with self._slot(key) as slot:
            with slot.cond:
                slot.queue.append(pending)
            while True:
                with slot.cond:
                    while not pending.done and slot.leading:
                        slot.cond.wait()
                    if pending.done:
                        break
                    slot.leading = True
                    held_for = slot.not_before - time.monotonic()
                batch: list[Pending[T]] = []
                try:
                    if held_for > 0:
                        self._sleep(held_for)  # as leader: what arrives meanwhile joins this batch
                    with slot.cond:
                        batch = slot.queue[:self.max_batch]
                        del slot.queue[:self.max_batch]
                    run_batch(batch)
                except BaseException as exc:  # noqa: BLE001 - handed to every member: each re-raises it
                    for member in batch:
                        if not member.done:
                            member.fail(exc)
                finally:
                    for member in batch:
                        if not member.done:
                            member.fail(RuntimeError("the batch ended without deciding this request"))
                    with slot.cond:
                        slot.leading = False
                        slot.cond.notify_all()
        return pending.answer()

    def delay_next_batch(self, key: str, seconds: float) -> None:
        """The next batch for ``key`` starts no sooner than ``seconds`` from now (if a request is queued or
        arrives while this batch runs; a key nobody waits on is forgotten)."""
        with self._lock:
            slot = self._slots.get(key)
        if slot is not None:
            with slot.cond:
                slot.not_before = max(slot.not_before, time.monotonic() + seconds)

    def queued(self, key: str) -> int:
        """How many requests wait for ``key`` (not counting a batch in flight); for tests and metrics."""
        with self._lock:
            slot = self._slots.get(key)
        if slot is None:
            return 0
        with slot.cond:
            return len(slot.queue)

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Keep ``key``'s leader seat taken, so requests queue up; they go as one batch when the block ends.
        Tests use it to form a group deterministically."""
        with self._slot(key) as slot:
            with slot.cond:
                while slot.leading:
                    slot.cond.wait()
                slot.leading = True
            try:
                yield
            finally:
                with slot.cond:
                    slot.leading = False
                    slot.cond.notify_all()


# -- the group record ----------------------------------------------------------------------------------------


def group_record_key(table_uuid: str, metadata_location: str) -> str:
    digest = hashlib.sha256(metadata_location.encode()).hexdigest()
    return f"{GROUPS}/{table_uuid}/{digest}.json"


@dataclass(frozen=True)
class GroupMember:
    """One request of a group, as the group record keeps it."""

    tag: str | None  # the Idempotency-Key hash, or None for a request sent without a key
    principal: str
    source: dict[str, Any]
    actions: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"tag": self.tag, "principal": self.principal, "source": self.source, "actions": self.actions}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> GroupMember:
        return cls(raw.get("tag"), str(raw.get("principal") or ""), dict(raw.get("source") or {}),
                   [str(a) for a in raw.get("actions") or []])


@dataclass(frozen=True)
class GroupRecord:
    table_uuid: str
    metadata_location: str
    base_metadata_location: str
    members: list[GroupMember]

    def to_bytes(self) -> bytes:
        return orjson.dumps({"table_uuid": self.table_uuid, "metadata_location": self.metadata_location,
                             "base_metadata_location": self.base_metadata_location,
                             "members": [m.to_json() for m in self.members],
                             "written_at_ms": int(time.time() * 1000)})

    @classmethod
    def from_bytes(cls, data: bytes) -> GroupRecord:
        raw = orjson.loads(data)
        return cls(str(raw["table_uuid"]), str(raw["metadata_location"]), str(raw["base_metadata_location"]),
                   [GroupMember.from_json(m) for m in raw.get("members") or []])

    def member_of(self, tag: str) -> int | None:
        for index, member in enumerate(self.members):
            if member.tag == tag:
                return index
        return None


class GroupRecords:
    """Group records in storage, with the ones read cached (they are immutable once written)."""

    def __init__(self, storage: StorageBackend, cache_entries: int = 1024) -> None:
        self.storage = storage
        self._cache: Lru[str, GroupRecord] = Lru(cache_entries)

    def write(self, record: GroupRecord) -> None:
        """Create-only; the commit does not go ahead without it (a failure raises)."""
        key = group_record_key(record.table_uuid, record.metadata_location)
        if not self.storage.put(key, record.to_bytes(), DoesNotExist()).ok:
            raise StorageError(f"a group record already exists at {key}")  # names are unique per attempt
        self._remember(key, record)

    def read(self, table_uuid: str, metadata_location: str) -> GroupRecord | None:
        key = group_record_key(table_uuid, metadata_location)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        found = self.storage.get_or_none(key)
        if found is None:
            return None
        record = GroupRecord.from_bytes(found.data)
        self._remember(key, record)
        return record

    def delete(self, table_uuid: str, metadata_location: str) -> None:
        key = group_record_key(table_uuid, metadata_location)
        self._cache.pop(key)
        self.storage.delete(key)

    def _remember(self, key: str, record: GroupRecord) -> None:
        self._cache.put(key, record)
