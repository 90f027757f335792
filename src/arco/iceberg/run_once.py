"""Running a mutation at most once per Idempotency-Key: claim its marker, do the work, finalize the marker from
the work's outcome (:mod:`arco.iceberg.idempotency` keeps the markers).

A deterministic 4xx is finalized ``FAILED`` before its answer and replayed to every retry; a success is finalized
``COMMITTED`` just after its answer (:mod:`arco.events.after_answer`).

When the work ends in an error that is not a deterministic 4xx (storage unavailable, a bug), the server asks
``recover`` at once, while it still knows that nothing of the attempt is running any more:

* landed: the marker is finalized ``COMMITTED`` and the request answered with its success;
* not landed: the marker is released (``retryable_at_ms`` set, still ``IN_PROGRESS`` so that an older server
  keeps treating it as in flight), and the answer is a 503 the client may retry with the same key at once;
  a work that stopped before its commit point (:class:`NotLanded`) is known not to have landed without a check,
  so this holds even while storage is still down;
* the check itself fails (storage still unavailable; checked again for a few seconds when a compare-and-swap went
  unanswered): the outcome is truly unknown, the answer is
  ``CommitStateUnknownException`` on commit routes (503 elsewhere), and the marker stays for the retry.

If even the release cannot be written, this process remembers that the attempt ended, so a retry reaching it
proceeds at once; other servers treat the marker as in flight.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TypeVar

from arco.api.faults import report_storage_fault
from arco.catalog.errors import CatalogError
from arco.events import after_answer
from arco.iceberg.errors import CommitStateUnknown, IcebergError, ServiceUnavailable, from_catalog_error
from arco.iceberg.idempotency import RETRY_AFTER_FAULT_S, Claim, Keyed, Marker, Outcome, Recover
from arco.optimistic import StaleView
from arco.storage.base import CommitPointUnanswered, StorageError

T = TypeVar("T")


# Waits between checks of where a commit whose compare-and-swap went unanswered landed, when storage fails them: a
# blip (a store restarting, a connection reset) is waited out, so the client gets the real outcome; an outage is not
# (about 4 s in all, then the outcome is unknown). Iceberg's own catalogs check a commit's status again the same way.
# Other faults are checked once: a request must not hold a worker for seconds on every fault of an outage.
STATUS_CHECK_WAITS_S = (0.25, 0.5, 1.0, 2.0)


def check_landed(recover: Callable[[], T | None], error: BaseException) -> T | None:
    """``recover()`` for an attempt that ended in ``error``: tried again after each of :data:`STATUS_CHECK_WAITS_S`
    while storage fails it if ``error`` left the commit point unanswered, else once. An unanswered write is fenced
    first (:class:`CommitPointUnanswered`), so that "not landed" is final; should the fence fail, only "landed" is
    an answer (the write may still arrive), and the fence's failure is raised in place of "not landed"."""
    fence = error.fence if isinstance(error, CommitPointUnanswered) else None

    def check() -> T | None:
        unfenced: StorageError | None = None
        if fence is not None:
            try:
                fence()
            except StorageError as exc:
                unfenced = exc
        found = recover()
        if found is None and unfenced is not None:
            raise unfenced
        return found

    if isinstance(error, CommitPointUnanswered):
        for wait in STATUS_CHECK_WAITS_S:
            try:
                return check()
            except StorageError:
                time.sleep(wait)
    return check()


def run_once(keyed: Keyed | None, work: Callable[[str | None], Outcome], recover: Recover, *,
             commit_route: bool = False) -> Outcome:
    """Run ``work(tag)`` at most once per key: claim, work, finalize; or answer as the first request was answered.

    ``work`` gets the tag to leave where its change lands (None without a key). Deterministic 4xx errors are
    finalized and replayed; any other error is settled by :func:`_settle` (see the module docstring); a crash
    leaves the marker for the retry to resolve. ``commit_route``: the route answers an unknown outcome with
    ``CommitStateUnknownException``, as the REST spec defines for table and transaction commits.
    """
    if keyed is None:
        return work(None)
    claim = keyed.markers.claim(keyed, recover)
    if claim.replay is not None:
        return replayed(claim.replay)
    return conclude(keyed, claim, recover, lambda: work(keyed.tag), commit_route=commit_route)


def conclude(keyed: Keyed, claim: Claim, recover: Recover, work: Callable[[], Outcome], *,
             commit_route: bool = False) -> Outcome:
    """The rest of :func:`run_once` once ``claim`` is this request's: the work's outcome finalizes the marker."""
    try:
        outcome = work()
    except (NotStarted, StaleView):
        keyed.markers.release(claim)  # nothing was done: nothing to look for
        raise
    except NotLanded as exc:
        keyed.markers.release(claim)  # nothing can land: a retry takes over at once (remembered here if unwritable)
        raise not_landed(exc, _where(keyed), keyed=True) from exc.fault
    except CatalogError as exc:
        error = from_catalog_error(exc)
        if not is_deterministic(error):
            return _settle(keyed, claim, recover, error, commit_route)
        _finalize_failed(keyed, claim, error)
        raise error from None
    except IcebergError as exc:
        if not is_deterministic(exc):
            return _settle(keyed, claim, recover, exc, commit_route)
        _finalize_failed(keyed, claim, exc)
        raise
    except Exception as exc:  # noqa: BLE001 - storage unavailable, or a bug: the attempt has ended either way
        return _settle(keyed, claim, recover, exc, commit_route)
    after_answer.write_later(functools.partial(_finalize_committed, keyed, claim, outcome))
    return outcome


def _finalize_committed(keyed: Keyed, claim: Claim, outcome: Outcome) -> None:
    """Step 11, written just after the answer (:mod:`arco.events.after_answer`; at once outside a server). The
    change has landed, so the answer does not wait for its record: a retry that comes first (or after a crash in
    between, or after this write failed) finds the marker in progress, and recovery finds the change where it
    landed and answers the same (the module docstring)."""
    try:
        keyed.markers.committed(claim, outcome)
    except StorageError as exc:
        _report(keyed, exc)


class NotStarted(Exception):
    """Raised by ``work`` before it did anything: the attempt certainly did not land."""


class NotLanded(Exception):
    """Raised by ``work`` that a storage fault stopped before its commit point: it may have written (files that
    nothing names, left to GC), but nothing of it is visible or can become so. No check of where it landed is
    needed, so the answer is a 503 to retry with the same key even while storage is still down."""

    def __init__(self, fault: StorageError) -> None:
        super().__init__(str(fault))
        self.fault = fault


def not_landed(exc: NotLanded, operation: str, *, keyed: bool) -> ServiceUnavailable:
    """The 503 for an attempt that certainly did not land (the fault is reported, summarized)."""
    report_storage_fault(operation, exc.fault)
    retry = "with the same Idempotency-Key" if keyed else "as it is"
    return ServiceUnavailable(f"storage is unavailable ({type(exc.fault).__name__}); the request did not take effect "
                              f"and may be retried {retry}", headers={"Retry-After": str(RETRY_AFTER_FAULT_S)})


def settle_unkeyed(recover: Callable[[], Outcome | None], error: StorageError, operation: str) -> Outcome:
    """A commit without an Idempotency-Key that storage failed: tell the client what happened, if it can be read.

    The work carried an internal tag, so ``recover`` finds whether it landed: landed -> its success; not landed ->
    503, safe to retry; the check fails too -> ``CommitStateUnknownException``, the one answer that tells a client
    not to retry blindly.
    """
    report_storage_fault(operation, error)
    try:
        landed = check_landed(recover, error)
    except Exception as exc:  # the check failed: the outcome is unknown, whatever the reason
        raise CommitStateUnknown(f"the outcome of this commit is unknown ({type(error).__name__}); check the table "
                                 "before retrying", headers={"Retry-After": str(RETRY_AFTER_FAULT_S)}) from exc
    if landed is not None:
        return landed
    raise ServiceUnavailable(f"storage is unavailable ({type(error).__name__}); the commit did not take effect and "
                             "may be retried", headers={"Retry-After": str(RETRY_AFTER_FAULT_S)}) from error


def _finalize_failed(keyed: Keyed, claim: Claim, error: IcebergError) -> None:
    try:
        keyed.markers.failed(claim, error)
    except StorageError as exc:
        # Nothing landed (a deterministic refusal); the retry finds nothing and this process knows it ended.
        _report(keyed, exc)
        keyed.markers.ended_unknown(claim)


def _settle(keyed: Keyed, claim: Claim, recover: Recover, error: Exception, commit_route: bool) -> Outcome:
    """An attempt that ended in an error that is not a deterministic refusal: finalize it by where its change is."""
    assert claim.marker is not None
    try:
        landed = check_landed(functools.partial(recover, claim.marker), error)
    except Exception as exc:  # noqa: BLE001 - the check failed: the outcome is unknown, whatever the reason
        # The attempt's own failure is what says why the outcome is unknown; the check's is likely the same outage.
        report_storage_fault(f"{_where(keyed)}, the check of where it landed failing too ({type(exc).__name__})",
                             error, kind="outcome unknown")
        keyed.markers.ended_unknown(claim)
        message = (f"the outcome of this request is unknown ({type(error).__name__}); retry with the same "
                   "Idempotency-Key to learn it")
        headers = {"Retry-After": str(RETRY_AFTER_FAULT_S)}
        if commit_route:
            raise CommitStateUnknown(message, headers=headers) from error
        raise ServiceUnavailable(message, headers=headers) from error
    if landed is not None:
        try:
            keyed.markers.committed(claim, landed)
        except StorageError as exc:
            _report(keyed, exc)
        return landed
    keyed.markers.release(claim)
    if isinstance(error, IcebergError):
        raise error
    if isinstance(error, StorageError):
        _report(keyed, error)
        raise ServiceUnavailable(f"storage is unavailable ({type(error).__name__}); the request did not take effect "
                                 "and may be retried with the same Idempotency-Key",
                                 headers={"Retry-After": str(RETRY_AFTER_FAULT_S)}) from error
    raise error  # a bug: answered 500 (and logged) by the application


def _where(keyed: Keyed) -> str:
    return f"{keyed.operation} (Idempotency-Key {keyed.key})"


def _report(keyed: Keyed, exc: BaseException) -> None:
    report_storage_fault(_where(keyed), exc)


def replayed(marker: Marker) -> Outcome:
    if marker.status == "FAILED":
        raise ReplayedError(marker)
    assert marker.outcome is not None
    return marker.outcome


def is_deterministic(error: IcebergError) -> bool:
    """4xx answers are final for a request and replayed; 5xx (state unknown, unavailable) are not."""
    return 400 <= error.status < 500 and error.status not in (408, 429)


class ReplayedError(IcebergError):
    """A deterministic error answered before for the same key and request, returned again as it was."""

    def __init__(self, marker: Marker) -> None:
        error = (marker.error_payload or {}).get("error", {})
        super().__init__(str(error.get("message", "")))
        self.status = int(marker.error_status or 409)
        self.error_type = str(error.get("type", "CommitFailedException"))
