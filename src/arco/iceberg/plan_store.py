"""The state of server-side scan plans, in storage, so any server process can answer for any plan:

    _catalog/iceberg_plans/{plan id}/plan.json            the plan record (status, table, planner, expiry)
    _catalog/iceberg_plans/{plan id}/tasks/{n:06d}.json   one plan task's ScanTasks, immutable once written

A plan id is 192 random bits (unguessable) and the record binds it to one table uuid: asked for under another
table's path it does not exist (404). A plan task is ``{plan id}.{n}``.

Lifecycle: ``submitted`` (created create-only) -> ``completed`` / ``failed`` / ``cancelled``, each step a
version-matched put, so a cancel racing the planner's completion has one winner; the loser cleans up after
itself (a planner that loses to a cancel deletes the task files it wrote). A planner heartbeats into the record
while it works; a ``submitted`` plan whose heartbeat is older than the stale timeout belongs to a server that
died, and the first reader to see it marks it ``failed`` (the client plans again), so a fetch never waits on a
dead server. Every plan expires: after ``expires_at_ms`` it answers 404 and its objects are deleted by the
reader that finds it expired, else by ``arco pipeline gc`` (:func:`arco.pipeline.gc_rules.scan_plan`).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import orjson

from arco.storage.base import DoesNotExist, MatchesVersion, StorageBackend

PLANS = "_catalog/iceberg_plans/"
PlanStatus = Literal["submitted", "completed", "failed", "cancelled"]
_PLAN_ID = re.compile(r"^[A-Za-z0-9_-]{32}$")
_PLAN_TASK = re.compile(r"^([A-Za-z0-9_-]{32})\.(0|[1-9][0-9]{0,8})$")
STALE_AFTER_S = 60.0
BEATS_PER_TIMEOUT = 6  # a planner beats this often per stale timeout: a few missed beats never fail a live plan
MAX_CAS_ATTEMPTS = 10


def record_key(plan_id: str) -> str:
    return f"{PLANS}{plan_id}/plan.json"


def chunk_key(plan_id: str, n: int) -> str:
    return f"{PLANS}{plan_id}/tasks/{n:06d}.json"


def plan_task(plan_id: str, n: int) -> str:
    return f"{plan_id}.{n}"


def parse_plan_task(token: str) -> tuple[str, int] | None:
    """``(plan id, chunk)`` of a plan task this server issued, or None for anything else."""
    found = _PLAN_TASK.match(token) if isinstance(token, str) else None
    return (found.group(1), int(found.group(2))) if found else None


def valid_plan_id(plan_id: str) -> bool:
    return bool(_PLAN_ID.match(plan_id))


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class PlanRecord:
    plan_id: str
    table_uuid: str
    principal: str
    status: PlanStatus
    created_at_ms: int
    expires_at_ms: int
    heartbeat_at_ms: int
    first_chunk: int = 0  # chunks before it were answered inline and never stored
    chunk_count: int = 0  # chunks first_chunk .. chunk_count - 1 are stored
    error: dict[str, Any] | None = None

    def to_bytes(self) -> bytes:
        # A version names content (an S3 ETag is an MD5): the write time keeps every write distinct.
        return orjson.dumps({**asdict(self), "written_at_ns": time.time_ns()})

    @classmethod
    def from_bytes(cls, data: bytes) -> PlanRecord:
        raw = orjson.loads(data)
        return cls(**{k: raw.get(k) for k in cls.__dataclass_fields__ if k in raw})

    def expired(self, at_ms: int) -> bool:
        return at_ms >= self.expires_at_ms

    def stale(self, at_ms: int, stale_after_s: float) -> bool:
        return self.status == "submitted" and at_ms - self.heartbeat_at_ms > stale_after_s * 1000

    @property
    def plan_tasks(self) -> list[str]:
        return [plan_task(self.plan_id, n) for n in range(self.first_chunk, self.chunk_count)]


class PlanStore:
    def __init__(self, storage: StorageBackend, lifetime_s: float, stale_after_s: float = STALE_AFTER_S) -> None:
        self.storage = storage
        self.lifetime_s = lifetime_s
        self.stale_after_s = stale_after_s

    def new_record(self, table_uuid: str, principal: str, status: PlanStatus = "submitted") -> PlanRecord:
        at = now_ms()
        return PlanRecord(secrets.token_urlsafe(24), table_uuid, principal, status, at,
                          at + int(self.lifetime_s * 1000), at)

    def create(self, record: PlanRecord) -> str:
        written = self.storage.put(record_key(record.plan_id), record.to_bytes(), DoesNotExist())
        if not written.ok:  # 192 random bits do not collide; a retry of the same put might
            raise RuntimeError(f"plan {record.plan_id} exists already")
        return written.version  # type: ignore[union-attr]

    def load(self, plan_id: str) -> tuple[PlanRecord, str] | None:
        """The live record and its version; None for an id that does not exist or expired (whose objects are
        deleted now). A ``submitted`` plan whose planner stopped heartbeating is marked ``failed`` first."""
        if not valid_plan_id(plan_id):
            return None
        for _ in range(MAX_CAS_ATTEMPTS):
            found = self.storage.get_or_none(record_key(plan_id))
            if found is None:
                return None
            try:
                record = PlanRecord.from_bytes(found.data)
            except (ValueError, TypeError):
                return None
            at = now_ms()
            if record.expired(at):
                self.delete(plan_id)
                return None
            if not record.stale(at, self.stale_after_s):
                return record, found.version
            failed = replace(record, status="failed", error=_error(
                500, "ServiceUnavailableException",
                f"the server planning this scan stopped (no heartbeat for {self.stale_after_s:.0f} s); plan again"))
            written = self.storage.put(record_key(plan_id), failed.to_bytes(), MatchesVersion(found.version))
            if written.ok:
                return failed, written.version  # type: ignore[union-attr]
        return None

    def update(self, plan_id: str, change: Callable[[PlanRecord], PlanRecord | None]) -> PlanRecord | None:
        """Apply ``change`` to the current record with a compare-and-swap, retrying on a lost race; ``change``
        returns None to leave it as it is. The record as it is afterwards (None if it is gone)."""
        for _ in range(MAX_CAS_ATTEMPTS):
            found = self.storage.get_or_none(record_key(plan_id))
            if found is None:
                return None
            record = PlanRecord.from_bytes(found.data)
            new = change(record)
            if new is None:
                return record
            if self.storage.put(record_key(plan_id), new.to_bytes(), MatchesVersion(found.version)).ok:
                return new
        raise RuntimeError(f"plan {plan_id}: the record is contended")

    def write_chunk(self, plan_id: str, n: int, data: bytes) -> None:
        self.storage.put(chunk_key(plan_id, n), data)

    def read_chunk(self, plan_id: str, n: int) -> bytes | None:
        found = self.storage.get_or_none(chunk_key(plan_id, n))
        return None if found is None else found.data

    def delete_chunks(self, plan_id: str) -> None:
        for meta in list(self.storage.list(f"{PLANS}{plan_id}/tasks/")):
            self.storage.delete(meta.key)

    def delete(self, plan_id: str) -> None:
        """Every object of a plan, the record last (so a half-deleted plan is still found and finished)."""
        self.delete_chunks(plan_id)
        self.storage.delete(record_key(plan_id))

    def cancel(self, plan_id: str) -> PlanRecord | None:
        """Mark a plan cancelled (unless it failed already) and release its task files; the record stays until
        it expires, so a fetch answers ``cancelled``."""
        record = self.update(plan_id, lambda r: None if r.status in ("cancelled", "failed")
                             else replace(r, status="cancelled", error=None))
        if record is not None:
            self.delete_chunks(plan_id)
        return record


def _error(status: int, error_type: str, message: str) -> dict[str, Any]:
    return {"message": message, "type": error_type, "code": status}


class Heartbeat:
    """Keeps a submitted plan's record fresh while its planner works, and notices a cancel."""

    def __init__(self, store: PlanStore, plan_id: str) -> None:
        self.store, self.plan_id = store, plan_id
        self.every_s = store.stale_after_s / BEATS_PER_TIMEOUT
        self.cancelled = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"plan-heartbeat-{plan_id[:8]}", daemon=True)

    def __enter__(self) -> Heartbeat:  # noqa: PYI034 - not subclassed
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                record = self.store.update(self.plan_id, lambda r: replace(r, heartbeat_at_ms=now_ms())
                                           if r.status == "submitted" else None)
            except Exception:  # noqa: BLE001, S112 - a missed beat is retried; staleness needs many in a row
                continue
            if record is None or record.status != "submitted":
                self.cancelled.set()
                return


def finish(store: PlanStore, plan_id: str, done: Callable[[PlanRecord], PlanRecord]) -> bool:
    """Move a submitted plan to its final state; False if it was cancelled (or marked failed as stale)
    meanwhile, and then its task files are deleted here: a cancel may have deleted before they were written."""
    applied = False

    def change(record: PlanRecord) -> PlanRecord | None:
        nonlocal applied
        applied = record.status == "submitted"
        return done(record) if applied else None

    store.update(plan_id, change)
    if not applied:
        store.delete_chunks(plan_id)
    return applied
