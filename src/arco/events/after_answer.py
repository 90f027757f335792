"""Writes made after a request has been answered: committed receipts (seed step 10) of table commits, creates and
multi-table transactions, the catalog receipt of every Tier 1 change (all best effort), and the COMMITTED
finalization of an Idempotency-Key marker (seed step 11; recovery stands in for it until it lands:
:mod:`arco.iceberg.idempotency`).

A committed receipt records a commit that has landed; the answer does not depend on it, and a missing one is
rebuilt from the metadata log by the reconciler (seed section 4; a catalog receipt, from the catalog log). Written
before the answer it cost every commit: without an Idempotency-Key a storage round trip of its own after the CAS;
with one, a write beside the marker's finalization, which a store sharing the server's cores serves more slowly
(SeaweedFS on 2 cores: the seed's four sequential writes took 9.4 ms with the receipt beside the last and 8.4 ms
without it, p50 of 140). So a commit queues it here once its own writes are done, and it starts once the answer
has been sent (:class:`arco.api.after_answer.WritesAfterAnswer`).

What this changes for readers: a committed receipt appears a few milliseconds after the commit's answer rather
than before it (the pipeline reads receipts in batches, long after). A process that stops in between loses the
write and the reconciler backfills it, as it always did for a crash right after the CAS; a server that shuts down
cleanly writes what is queued first (:func:`drain`). The queue is bounded: past :data:`MAX_BACKLOG` queued
writes, a commit writes its receipt itself, so a store slower than the commit rate slows commits down instead of
filling memory.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar

log = logging.getLogger(__name__)
MAX_BACKLOG = 1000

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="arco-after-answer")
_lock = threading.Lock()
_queued = 0
_idle = threading.Condition(_lock)
# A context variable, not a thread-local: an HTTP request opens the block in its event-loop task and its handler
# runs on a worker thread that inherits the context, so both see the same list.
_held: ContextVar[list[Callable[[], object]] | None] = ContextVar("arco_writes_after_answer", default=None)


def write_later(write: Callable[[], object]) -> None:
    """Write after the enclosing :func:`answer_first` block (at once outside one), without waiting for it."""
    held = _held.get()
    if held is None:
        _run(write)
    else:
        held.append(write)


@contextmanager
def answer_first() -> Iterator[None]:
    """Writes asked for inside the block start when it ends (whether or not it raised: what was asked for landed)
    and are not waited for. Blocks nest: the outermost one releases them. The server holds each request's writes
    until its answer is sent (:class:`arco.api.after_answer.WritesAfterAnswer`); a commit opens a block of its
    own, for callers outside a server."""
    if _held.get() is not None:
        yield
        return
    with holding() as writes:
        try:
            yield
        finally:
            run_now(release(writes))


@contextmanager
def holding() -> Iterator[list[Callable[[], object]]]:
    """Collect the writes asked for inside the block (and in threads started from its context) into the list it
    yields, for :func:`release`."""
    writes: list[Callable[[], object]] = []
    token = _held.set(writes)
    try:
        yield writes
    finally:
        _held.reset(token)


def release(writes: list[Callable[[], object]]) -> list[Callable[[], object]]:
    """Queue ``writes``; return those the queue has no room for, which the caller makes itself (off an event loop):
    a store slower than the commits slows the commits, instead of filling memory."""
    global _queued
    overflow: list[Callable[[], object]] = []
    for write in writes:
        with _lock:
            full = _queued >= MAX_BACKLOG
            if not full:
                _queued += 1
        if full:
            overflow.append(write)
        else:
            _POOL.submit(_run_queued, write)
    return overflow


def run_now(writes: list[Callable[[], object]]) -> None:
    """Make ``writes`` on this thread, each best effort."""
    for write in writes:
        _run(write)


def _run_queued(write: Callable[[], object]) -> None:
    global _queued
    try:
        _run(write)
    finally:
        with _lock:
            _queued -= 1
            if _queued == 0:
                _idle.notify_all()


def _run(write: Callable[[], object]) -> None:
    try:
        write()
    except Exception:  # best effort: the reconciler backfills; never fail the caller or the pool
        log.exception("a write after the answer failed (the reconciler will backfill it)")


def drain(timeout: float | None = None) -> bool:
    """Wait until every queued write is done; whether they all were within ``timeout`` seconds."""
    with _lock:
        return _idle.wait_for(lambda: _queued == 0, timeout)


def queued() -> int:
    with _lock:
        return _queued
