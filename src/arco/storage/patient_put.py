"""A conditional write that stops waiting for an answer it can already know.

Some stores serialise conditional writes to one key behind a lock that a waiting writer retries about once a
second (SeaweedFS 4.48: ``bench/storage_latency.py``, "raced cas"): the loser of a race is answered correctly, but a
second or more late, and everything queued behind it waits too. Such a write is sent as usual; when no answer has
come after ``patience_s``, the object is read:

- its bytes are the write's own: it landed, and only its answer is late (:class:`Written`);
- its version is no longer the one the write expects (or, for a create-only write, the object exists): the write
  can never land, because a version never comes back (every write that uses this carries bytes no other write has,
  and stores version by content hash or by counter), so it is answered as lost at once (:class:`LostWhileWaiting`)
  and left to fail in the store. This relies on the read seeing the object as it is now, never an older version,
  which every store Arco supports guarantees (S3, GCS and Azure Blob reads are strongly consistent);
- otherwise it may still land, and its answer is waited for (and the object read again each ``patience_s``).

A read that fails tells nothing, so the answer is waited for. What the store answers a write given up on is checked
when it comes: a write answered lost that landed all the same would break the rule above, and is logged as an
error and counted (``arco_storage_writes_answered_early_total{outcome="landed_after_all"}``; the tests hold it at 0).
"""

from __future__ import annotations

import contextvars
import logging
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as NoAnswerYet
from dataclasses import dataclass

from arco.metrics import EARLY_ANSWERS
from arco.storage.base import (
    DoesNotExist,
    MatchesVersion,
    PreconditionFailed,
    StorageBackend,
    StorageError,
    WriteResult,
    Written,
)

log = logging.getLogger(__name__)

# Writes in flight, and writes given up on until the store answers them (a second or a few on the stores above).
_IN_FLIGHT = ThreadPoolExecutor(max_workers=256, thread_name_prefix="arco-patient-put")


@dataclass(frozen=True, slots=True)
class LostWhileWaiting(PreconditionFailed):
    """Answered lost before the store answered: the object moved on from the version the write expects. The write
    is still in flight, so what it wrote alongside (a metadata file) is left for garbage collection rather than
    deleted at once."""


def put_with_patience(storage: StorageBackend, key: str, data: bytes, precondition: MatchesVersion | DoesNotExist,
                      patience_s: float) -> WriteResult:
    """``storage.put(key, data, precondition)``, answered as soon as its outcome is known (see the module).
    ``data`` must be bytes no other write to ``key`` ever carries. Raises what the put raises, when it answers."""
    answer = _IN_FLIGHT.submit(contextvars.copy_context().run, storage.put, key, data, precondition)
    while True:
        try:
            return answer.result(timeout=patience_s)
        except NoAnswerYet:
            pass
        known = _outcome_without_answer(storage, key, data, precondition)
        if known is not None:
            EARLY_ANSWERS.labels("landed" if known.ok else "lost").inc()
            if not known.ok:
                answer.add_done_callback(lambda late: _check_late_answer(key, late))
            return known


def _outcome_without_answer(storage: StorageBackend, key: str, data: bytes,
                            precondition: MatchesVersion | DoesNotExist) -> WriteResult | None:
    try:
        current = storage.get_or_none(key)
    except (StorageError, OSError):
        return None  # nothing learnt: wait for the answer
    if current is not None and current.data == data:
        return Written(version=current.version)
    if isinstance(precondition, MatchesVersion):
        if current is None or current.version != precondition.version:
            return LostWhileWaiting(current_version=current.version if current is not None else None)
        return None
    if current is not None:
        return LostWhileWaiting(current_version=current.version)
    return None


def _check_late_answer(key: str, late: Future[WriteResult]) -> None:
    if late.cancelled() or late.exception() is not None or not late.result().ok:
        return
    EARLY_ANSWERS.labels("landed_after_all").inc()
    log.error("a conditional write to %s answered as lost while it waited for the store was applied by the store "
              "after all; the store broke the version rule the early answer relies on", key)
