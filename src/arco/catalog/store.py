"""Tier 1 as a service: a fresh view of the catalog for readers, and one-write-per-change for writers.

Readers call :meth:`CatalogStore.read`, which first makes sure this process has applied every log entry that
existed when the call began (one storage read that finds nothing, in the common case), then hands out the
state under a lock. Concurrent readers share one freshness check: a check that *started* after a reader arrived
answers for it too.

Writers call :meth:`CatalogStore.execute` with a function that builds the operation from the current state (it
may raise a catalog error: the name exists, the namespace is missing). The operation is checked against that
state and appended at the next log position; if another process took the position first, the writer catches up
and builds again, so the operation is always validated against the state it lands on. Once appended, the
operation's receipt is written for the pipeline, after the request's answer (best effort, as
:mod:`arco.events.after_answer` says; the reconciler backfills it from the log). The names of what the
operation is about go into the log entry too (``audit``, :mod:`arco.catalog.audit`).

Within one request, the freshness check is made once (:meth:`CatalogStore.fresh_as_of`): authentication, the
catalog lookup, the grant checks and the service all need a view at least as new as the request's arrival, and a
check that started after the request arrived is exactly that. Read-only requests may also be given a short
validity window (``--read-freshness-ms``, default 0): a check that started at most that long before the request
arrived answers for it, so another server's catalog change shows within that window; this process's own changes
are applied to its state as they are made, so a client always sees them on the server that made them.

An operation may carry the hash of the Idempotency-Key it was made under (``request``): after a crash, the
retry finds out whether the operation landed with :meth:`CatalogStore.find_request`.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import orjson

from arco import metrics, optimistic
from arco.catalog import log as catalog_log
from arco.catalog import snapshots
from arco.catalog import state as rules
from arco.catalog.batching import Batch, Pending
from arco.catalog.errors import ConflictError, NotFoundError
from arco.catalog.landing import landing_conditions
from arco.catalog.log import CatalogLog
from arco.catalog.snapshots import SnapshotFiles
from arco.catalog.state import CatalogState, Operation
from arco.catalog.table_index import MAX_LOADED_TABLES
from arco.events import after_answer
from arco.events.receipts import catalog_event, catalog_receipt_key, write_receipt
from arco.inline import WouldWait, is_inline, refuse_to_wait
from arco.storage.backoff import backoff_delay
from arco.storage.base import (
    CommitPointUnanswered,
    StorageBackend,
    StorageError,
    StorageUnavailable,
    WriteNotApplied,
)

_log = logging.getLogger("arco.catalog")

MAX_APPEND_ATTEMPTS = 50
RECENT_OPS_REMEMBERED = 4096  # a view this many operations behind is stale, whatever they were
# A hit: this process's state was current (the freshness check found no new log entry, or another thread's
# check answered for it); a miss: entries (or a newer snapshot) had to be read and applied first.
_STATE_METER = metrics.CacheMeter("catalog_state")
# The monotonic time a freshness check must have started at or after to answer for the current request (None: the
# caller is not inside a request scope, and every check is its own).
_ANSWERS_FROM: ContextVar[float | None] = ContextVar("arco_catalog_answers_from", default=None)
_ARRIVED: ContextVar[float | None] = ContextVar("arco_catalog_request_arrived", default=None)
T = TypeVar("T")


class _StateHold:
    """``with`` the state's lock; inside an inline attempt (:mod:`arco.inline`), only if nobody holds it (a writer,
    a catch-up or a snapshot may hold it while storage answers)."""

    __slots__ = ("_lock",)

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        if is_inline():
            if not self._lock.acquire(blocking=False):
                raise WouldWait
        else:
            self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class CatalogStore:
    def __init__(self, storage: StorageBackend, max_loaded_tables: int = MAX_LOADED_TABLES) -> None:
        self.storage = storage
        self.log = CatalogLog(storage)
        self.files = SnapshotFiles(storage)
        self.max_loaded_tables = max_loaded_tables  # tables kept in memory (the rest are read again when asked for)
        self._state = CatalogState(storage.url, self.files, max_loaded_tables)
        self._snapshot_seq = 0
        self._snapshotting = False  # a snapshot is being written: one at a time per process
        self._manifest_checked = False
        self._half_applied = False  # an entry's operations failed to apply part way (see _apply_entry)
        self._apply_lock = threading.RLock()  # guards the state; held while applying and while reading it
        self._held = _StateHold(self._apply_lock)  # the same, for readers that may be inline attempts
        # One appender per process at a time (two would only race for the same position); the changes queued
        # for it, oldest first (arco.catalog.batching). A change waits on _decided until it is decided or nobody
        # appends, and then appends itself: a decided change does not wait for the next append.
        self._queue_lock = threading.Lock()
        self._queue: list[Pending] = []
        self._decided = threading.Condition(self._queue_lock)
        self._appending = False
        self._fresh = threading.Condition()
        # (log position, operation kind) of the operations applied lately, for optimistic views (_confirm).
        self._recent_ops: deque[tuple[int, str | None]] = deque(maxlen=RECENT_OPS_REMEMBERED)
        self._refreshing = False
        self._last_refresh_started = -1.0

    # -- freshness -------------------------------------------------------------------------------------------

    @staticmethod
    @contextmanager
    def fresh_as_of(arrived: float | None = None, window_s: float = 0.0) -> Iterator[None]:
        """Inside the block, one freshness check that started at or after ``arrived - window_s`` (monotonic; now by
        default) answers every :meth:`ensure_fresh`: one request, one check, however many parts of it ask."""
        if arrived is None and _ANSWERS_FROM.get() is not None:
            yield  # already inside a request's scope: it stands
            return
        start = time.monotonic() if arrived is None else arrived
        token = _ANSWERS_FROM.set(start - max(0.0, window_s))
        arrival = _ARRIVED.set(start)
        try:
            yield
        finally:
            _ARRIVED.reset(arrival)
            _ANSWERS_FROM.reset(token)

    def ensure_fresh(self, since: float | None = None) -> None:
        """Return once this process has applied every entry that existed at ``since`` (monotonic): by default when
        the enclosing request scope began (:meth:`fresh_as_of`), else when the call began."""
        if since is None and (view := optimistic.current()) is not None:
            self._unchecked_read(view)
            return
        arrived = since if since is not None else _ANSWERS_FROM.get()
        if arrived is None:
            arrived = time.monotonic()
        with self._fresh:
            while True:
                if not self._refreshing and self._last_refresh_started >= arrived:
                    _STATE_METER.hit()
                    return
                if not self._refreshing:
                    self._refreshing = True
                    started = time.monotonic()
                    break
                refuse_to_wait()  # another thread is checking: an inline attempt does not wait for it
                self._fresh.wait()
        caught_up = False
        try:
            (_STATE_METER.miss if self._catch_up() else _STATE_METER.hit)()
            caught_up = True
        finally:
            with self._fresh:
                self._refreshing = False
                if caught_up:  # a check that failed answers nobody: the next caller checks again
                    self._last_refresh_started = started
                self._fresh.notify_all()

    def _unchecked_read(self, view: optimistic.OptimisticView) -> None:
        """A read under an optimistic view: a check that already answers for the request confirms the view now;
        otherwise the read uses this process's state as it is, and the position it is at is noted."""
        with self._fresh:
            checked = not self._refreshing and self._last_refresh_started >= view.arrived
        if checked:
            self._confirm(view)
        elif view.seen_seq is None:
            view.seen_seq = self._state.seq

    def confirm_view(self) -> None:
        """Outside an optimistic view, :meth:`ensure_fresh`. Inside one, the request's check (a real one, started
        after it arrived), which confirms the view if it finds the log where the request's unchecked reads saw it,
        and raises :class:`arco.optimistic.StaleView` otherwise (see :mod:`arco.optimistic`)."""
        view = optimistic.current()
        if view is None:
            self.ensure_fresh()
            return
        self.ensure_fresh(view.arrived)
        self._confirm(view)

    def view_holds(self, view: optimistic.OptimisticView) -> bool:
        """After a check that started at or after ``view.arrived`` has completed (:meth:`ensure_fresh` with that
        time): whether the log is where the view's unchecked reads saw it. If so, the view is confirmed."""
        try:
            self._confirm(view)
        except optimistic.StaleView:
            return False
        return True

    def _confirm(self, view: optimistic.OptimisticView) -> None:
        if view.seen_seq is not None and self._state.seq != view.seen_seq:
            if not optimistic.still_holds(view, self._applied_since(view.seen_seq)):
                raise optimistic.StaleView(f"the catalog moved from {view.seen_seq} to {self._state.seq}")
        view.confirmed = True

    def _applied_since(self, seq: int) -> list[str | None] | None:
        """The kinds of the operations this process applied after log position ``seq``, up to its state's; None if
        it does not remember them all."""
        state_seq = self._state.seq
        ops = [op for at, op in list(self._recent_ops) if seq < at <= state_seq]  # list(): one step, in C
        return ops if len(ops) == state_seq - seq else None

    def _applied(self, op: Operation, seq: int) -> None:
        rules.apply(self._state, op, seq)
        self._recent_ops.append((seq, op.get("op")))

    def _apply_entry(self, seq: int, ops: list[Operation]) -> None:
        """Apply the operations of the entry at ``seq``, all of them or none: an operation that fails to apply (a
        read it needed failed, or a bug) may have changed part of the state before it failed, and a state left
        inside a batch entry would take the position after it for the end of the log (it has no file), so this
        process starts again from a snapshot, and replays the entry then."""
        try:
            for position, op in enumerate(ops, start=seq):
                self._applied(op, position)
        except BaseException:
            self._half_applied = True  # no append from this state; the next catch-up starts again
            try:
                self._restart_state()
            except Exception:  # noqa: BLE001 - the original error is the one to raise; retried later
                _log.exception("Tier 1 state not restarted after a failed application (retried)")
            raise

    def _restart_state(self) -> None:
        """Start this process's state again from the manifest's snapshot (or from nothing), to replay the log."""
        snapshot_seq = self.log.read_manifest().snapshot_seq
        if snapshot_seq:
            self._load_snapshot(snapshot_seq)
        else:
            self._state = CatalogState(self.storage.url, self.files, self.max_loaded_tables)
            self._recent_ops.clear()
        self._half_applied = False

    def _catch_up(self) -> bool:
        """Apply what the log has beyond this process's state; whether anything was."""
        changed = False
        rebase_to = 0
        with self._held:
            if self._half_applied:
                self._restart_state()
                changed = True
            if not self._manifest_checked or self.log.manifest_is_due():
                manifest = self.log.read_manifest()
                self._manifest_checked = True
                far_behind = manifest.snapshot_seq > self._state.seq + catalog_log.SNAPSHOT_EVERY
                if manifest.snapshot_seq > self._state.seq and (far_behind or self._state.seq == 0):
                    self._load_snapshot(manifest.snapshot_seq)
                    changed = True
                elif manifest.snapshot_seq > self._snapshot_seq:
                    rebase_to = manifest.snapshot_seq  # once the state has reached it
                self._snapshot_seq = max(self._snapshot_seq, manifest.snapshot_seq)
            while True:
                ops = self.log.read_ops(self._state.seq + 1)
                if ops is None:
                    if self._snapshot_seq > self._state.seq:
                        # Gone although a snapshot past it exists: collected (arco.pipeline.gc), after this
                        # server last looked. Start again from that snapshot.
                        self._load_snapshot(self._snapshot_seq)
                        changed = True
                        continue
                    break
                self._apply_entry(self._state.seq + 1, ops)
                changed = True
            if rebase_to and self._state.seq >= rebase_to:
                self._rebase(rebase_to)
            return changed

    def _load_snapshot(self, snapshot_seq: int) -> None:
        """Replace this process's state with the snapshot's (its tables are read as they are asked for)."""
        self._state = CatalogState.from_snapshot(self.log.read_snapshot(snapshot_seq), self.storage.url, self.files,
                                                 self.max_loaded_tables)
        self._recent_ops.clear()  # the operations up to the snapshot were not seen one by one

    def _rebase(self, snapshot_seq: int) -> None:
        """Another process stored a snapshot this state has reached: start the tables from its files, so the
        operations kept for chunks not in memory stay few and this process's next snapshot rewrites only what
        changed after it."""
        root = self.log.read_snapshot(snapshot_seq)
        if "chunks" in root:
            self._state.tables.rebase(root["chunks"], root["ids"], snapshot_seq)

    @contextmanager
    def read(self) -> Iterator[CatalogState]:
        """A current view of the catalog; do not keep references to it past the ``with`` block."""
        self.ensure_fresh()
        with self._held:
            yield self._state

    @staticmethod
    def scope_start() -> float:
        """The time a check must have started at or after to answer for the current request (now, outside one)."""
        start = _ANSWERS_FROM.get()
        return start if start is not None else time.monotonic()

    def is_fresh(self) -> bool:
        """Whether :meth:`ensure_fresh` would return without asking storage (the request's check is done)."""
        arrived = _ANSWERS_FROM.get()
        with self._fresh:
            return arrived is not None and not self._refreshing and self._last_refresh_started >= arrived

    def find(self, lookup: Callable[[CatalogState], T]) -> T:
        """``lookup`` against a current view; a lookup that finds nothing in a view older than the request (a read
        window) is asked again of a view checked now, so a window never hides a name made elsewhere."""
        try:
            with self.read() as state:
                return lookup(state)
        except NotFoundError:
            arrived = _ARRIVED.get()
            if arrived is None or self._last_refresh_started >= arrived:
                raise
        self.ensure_fresh(time.monotonic())
        with self._held:
            return lookup(self._state)

    @contextmanager
    def read_cached(self) -> Iterator[CatalogState]:
        """This process's view without a freshness check: for callers that validate by other means."""
        with self._held:
            yield self._state

    # -- writing ---------------------------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        """The log position this process has applied (call :meth:`ensure_fresh` first for a current one)."""
        return self._state.seq

    def find_request(self, after_seq: int, request: str) -> tuple[int, Operation] | None:
        """The operation tagged with ``request`` appended after ``after_seq``, if there is one."""
        self.ensure_fresh(time.monotonic())  # recovery decides by it: never from an older check
        for position, op in self.log.operations(after_seq + 1, self._state.seq):
            if op.get("request") == request:
                return position, op
        return None

    def execute(self, build: Callable[[CatalogState], Operation], *, principal: str, request: str | None = None,
                source: dict[str, Any] | None = None) -> Operation:
        """Build an operation against the current state, check it, and commit it with one conditional write.

        ``request`` tags the operation with an Idempotency-Key hash; ``source`` says who made it (seed section 8).
        The write may carry other requests' operations too (group commit, :mod:`arco.catalog.batching`): the
        caller that gets to append takes the changes queued behind it, and the others find theirs done.
        """
        refuse_to_wait()  # a change always waits for storage
        self.confirm_view()  # never built on grants or names that were not checked
        mine = Pending(build, principal, request, source, landing_conditions())
        prepared = None
        with self._decided:
            self._queue.append(mine)
            while self._appending and not mine.done:
                self._decided.wait()
            lead = not mine.done
            self._appending = self._appending or lead
        if lead:
            try:
                while not mine.done:
                    prepared = self._append_queued() or prepared
            finally:
                with self._decided:
                    if mine in self._queue:  # the round failed before deciding it: it is this caller's error
                        self._queue.remove(mine)
                    self._appending = False
                    self._decided.notify_all()
        # Past the commit point, and outside the locks, so that this process's other requests go on meanwhile: the
        # snapshot only speeds up catch-up. The receipt waits for the answer (in a server; at once elsewhere): it
        # is backfilled by the reconciler should it be lost, and the change's latency need not include it.
        if prepared is not None:
            self._store_snapshot(prepared)
        if mine.error is not None:
            raise mine.error
        assert mine.result is not None
        op, seq = mine.result
        after_answer.write_later(functools.partial(write_receipt, self.storage, catalog_receipt_key(seq, op["at_ms"]),
                                                   catalog_event(seq, op)))
        return {**op, "seq": seq}

    def _append_queued(self) -> snapshots.PreparedSnapshot | None:
        """Append the next batch of queued changes (the oldest, and what may join it) and apply it; the snapshot
        to store, if it is due. Each change in the batch ends decided: its operation and position, or its error.
        Only the appender calls it (execute's ``lead``)."""
        batch = Batch()
        try:
            seq = self._append(batch)
        except BaseException as exc:
            # Not known to have landed (or known not to have): as for a lone operation, its callers get the error.
            # This caller goes on with its own change if the batch was others' (a crash stops everything).
            for pending, _ in batch.members:
                pending.fail(exc)
            if batch.members and isinstance(exc, Exception):
                return None
            raise
        finally:
            with self._decided:  # the batch's changes leave the queue (decided once applied), as do refused ones
                taken = {pending for pending, _ in batch.members}
                self._queue[:] = [p for p in self._queue if not p.done and p not in taken]
                self._decided.notify_all()  # refused and failed changes go back to their callers
        try:
            with self._apply_lock:
                if self._state.seq == seq - 1:
                    self._apply_entry(seq, batch.ops)
                else:
                    self._catch_up()  # a reader's catch-up applied it (or more) meanwhile, or storage is behind
                prepared = self._snapshot_to_store(seq)
        except BaseException as exc:
            # Landed, but this process's state could not follow (a read of the log failed): answered as a lone
            # change was, with the error; a retry with the same key finds it landed (find_request).
            with self._decided:
                for pending, _ in batch.members:
                    pending.fail(exc)
                self._decided.notify_all()
            raise
        with self._decided:  # applied first: a caller that reads after its answer sees its own change
            for position, (pending, op) in enumerate(batch.members, start=seq):
                pending.succeed(op, position)
            self._decided.notify_all()
        return prepared

    def _append(self, batch: Batch) -> int:
        """Build and check the queued changes that make the next batch (into ``batch``), and append it at the next
        log position (the commit point); that position. A change its build or check refuses is decided with that
        error and left out. Only the appender calls it."""
        for lost in range(MAX_APPEND_ATTEMPTS):
            # After a lost append the state is known to be behind: catch up now, whatever the request scope.
            self.ensure_fresh(None if lost == 0 else time.monotonic())
            batch.clear()
            with self._apply_lock:
                if self._half_applied:  # its next position may lie inside an entry: never append from it
                    self._restart_state()
                with self._decided:
                    queued = [p for p in self._queue if not p.done]
                for pending in queued:
                    try:
                        op = pending.operation(self._state)
                    except Exception as exc:  # noqa: BLE001 - the change's own refusal is its caller's answer
                        if batch.members:
                            break  # refused by the state before the batch: the batch may change that, so it waits
                        pending.fail(exc)  # refused by the state it would land on
                        continue
                    if not batch.take(pending, op):
                        break  # it waits for the next entry, as does everything queued after it (in order)
                seq = self._state.seq + 1
            if not batch.members:
                return seq
            try:
                appended = self.log.append(seq, batch.ops)
            except StorageUnavailable as exc:
                appended = self._landed_anyway(seq, batch.ops, exc)
            metrics.cas("catalog_log", appended)
            if appended:
                return seq
            # Another process took this position: wait a jittered while, so that the writers that lost to it do
            # not all race again at once, then catch up and build again.
            time.sleep(backoff_delay(lost))
        raise ConflictError("the catalog is changing too fast to apply this change; retry")

    def _landed_anyway(self, seq: int, ops: list[Operation], error: StorageUnavailable) -> bool:
        """After an append that failed (it may have been written, or may be still): look. True if the entry at
        ``seq`` is this one, False if it is another writer's (a lost race). Else it raises: the append certainly
        did not land (refused in its answer, or its position now fenced: :meth:`CatalogLog.fence`), or
        :class:`CommitPointUnanswered` when storage answered neither the look nor the fence; whoever checks where
        the change landed fences the position first then (``fence``)."""
        if isinstance(error, WriteNotApplied):
            raise error
        found, fenced = None, False
        try:
            found = self.log.read_entry(seq)
            fenced = found is None and self.log.fence(seq)
            if found is None and not fenced:
                found = self.log.read_entry(seq)  # taken meanwhile: by that append, late, or by another writer
        except StorageError:
            pass  # not known: said below
        if fenced:
            raise WriteNotApplied(f"{error}; its log position is fenced, so it did not take effect") from error
        if found is None:
            raise CommitPointUnanswered(f"a catalog log append got no answer: {error}",
                                        fence=functools.partial(self.log.fence, seq)) from error
        return found == orjson.loads(orjson.dumps(catalog_log.entry_of(ops)))

    # -- snapshots -------------------------------------------------------------------------------------------

    def _snapshot_to_store(self, appended_at: int) -> snapshots.PreparedSnapshot | None:
        """The snapshot this process should store now that it appended the entry at ``appended_at``, encoded from
        the state as it stands, or None. Call with the state held still.

        Every ``SNAPSHOT_EVERY`` positions at least, and more when the changed namespaces are big, so that
        rewriting them stays a small share of the work. Writers in other processes reach that point together, and
        one snapshot is enough: only the writer whose entry covers a multiple of ``SNAPSHOT_EVERY`` stores it (each
        position has exactly one writer; should it die first, the next multiple's writer stores it), and a
        snapshot another process stored meanwhile is built on instead.
        """
        every = catalog_log.SNAPSHOT_EVERY
        covers_multiple = self._state.seq // every * every >= appended_at
        if self._snapshotting or not covers_multiple or not self._snapshot_due():
            return None
        try:
            manifest = self.log.read_manifest()
            if manifest.snapshot_seq > self._state.seq:
                return None  # newer than this state: the next look at the manifest, in a catch-up, rebases
            if manifest.snapshot_seq > self._snapshot_seq:
                self._rebase(manifest.snapshot_seq)
                self._snapshot_seq = manifest.snapshot_seq
                if not self._snapshot_due():
                    return None
            prepared = snapshots.prepare(self._state)
        except StorageError as exc:
            _log.warning("Tier 1 snapshot at %d not prepared (a later writer tries again): %s", self._state.seq, exc)
            return None
        self._snapshotting = True
        return prepared

    def _store_snapshot(self, prepared: snapshots.PreparedSnapshot) -> None:
        """Write a prepared snapshot's files and move the manifest; then build this process's tables on them."""
        try:
            snapshots.write(self.log, prepared)
            with self._apply_lock:
                if prepared.seq > self._snapshot_seq:  # not overtaken by a newer one read meanwhile
                    self._state.tables.rebase(prepared.chunks, prepared.ids, prepared.seq)
                    self._snapshot_seq = prepared.seq
        except StorageError as exc:
            _log.warning("Tier 1 snapshot at %d not written (a later writer tries again): %s", prepared.seq, exc)
        finally:
            self._snapshotting = False

    def _snapshot_threshold(self) -> int:
        return max(catalog_log.SNAPSHOT_EVERY, snapshots.dirty_table_count(self._state.tables) // 64)

    def _snapshot_due(self) -> bool:
        behind = self._state.seq - self._snapshot_seq
        return behind >= catalog_log.SNAPSHOT_EVERY and behind >= self._snapshot_threshold()
