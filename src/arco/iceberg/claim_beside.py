"""A table commit's (or create's) Idempotency-Key claim made beside its first writes rather than before them.

The seed claims the marker (step 4) before it writes the new metadata file (step 7), which puts two sequential
writes ahead of the commit point. Neither depends on the other: the metadata file's name carries the key's tag and
is unique to the attempt, and nothing of the attempt is visible until the pointer's compare-and-swap (step 9). So
the claim's create-only put runs on a side thread while the work reads its base and writes its file, and the work
asks :class:`ClaimGate` before its compare-and-swap. What the seed's order guarantees still holds:

* nothing lands unless the marker is this request's: the gate refuses the compare-and-swap otherwise, and the
  attempt's file is deleted (garbage collection removes it after a crash, as any lost race's);
* the answer is the claim's whenever the marker is not this request's (the cached answer of an earlier request
  with the key, 409 for another payload), whatever the work found meanwhile;
* a request with the key still in flight is waited for once the work was refused (not beside it: the work may be
  part of a group commit, whose other members would wait too), then answered as it was answered; if its marker
  was released instead, the work runs again under the marker this request then holds;
* once the marker is this request's, the work's outcome finalizes it exactly as :func:`run_once` does.

A request whose key was used before therefore writes a metadata file it then deletes: retries are rare, and the
common first attempt waits for two sequential writes (metadata file, pointer) instead of the seed's four (the
marker's finalization follows the answer: :mod:`arco.iceberg.idempotency`).

A keyed ``createTable`` runs the same way: its claim beside the new table's reads and metadata file, the gate asked
before the pointer (:meth:`arco.iceberg.tables.TableService.register_new`), so it waits for the three writes a
create without a key waits for (file, pointer, Tier 1 entry), and a replay leaves neither file nor pointer.
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from arco.iceberg.idempotency import Claim, Keyed, KeyInFlight, Outcome, Recover
from arco.iceberg.run_once import conclude, replayed

# One thread per keyed commit in flight (threads start on demand). A claim never waits for another task here.
_CLAIMS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="arco-marker-claim")


class ClaimNotOwned(Exception):
    """The marker is not this request's (or its claim failed): the attempt must not land, and the request's answer
    is the claim's (:func:`run_beside_claim` gives it)."""

    runs_again = True  # not a commit's outcome (arco.metrics.counted_commit): the claim answers the request


class ClaimGate:
    """The claim running beside the work, asked before the work's commit point."""

    def __init__(self, claiming: Future[Claim], in_progress_timeout_s: float) -> None:
        self._claiming = claiming
        self._started = time.monotonic()
        self._suspect_after_s = in_progress_timeout_s / 2

    def wait(self) -> None:
        """Return once the marker is this request's; raise :class:`ClaimNotOwned` if it is not."""
        try:
            claim = self._claiming.result()
        except Exception as exc:  # noqa: BLE001 - the claim's error is the request's answer, given by its runner
            raise ClaimNotOwned() from exc
        if claim.replay is not None:
            raise ClaimNotOwned()

    def holds(self) -> bool:
        try:
            self.wait()
        except ClaimNotOwned:
            return False
        return True

    def shared(self) -> bool:
        """Whether another request with the key may have held its marker while this work ran, and so may have
        landed the change (the commit then looks for it in the base it would swap against, which is atomic with
        the swap: :func:`arco.iceberg.commit._landed_elsewhere`). So it is when the claim took over a marker, and
        once the work has run for half the in-progress timeout: a paused process (a stop, a VM freeze) may find
        its marker taken over when it resumes. That assumes the servers' clocks agree within that half, since a
        takeover reads the time the marker was claimed at. Ask it only once the claim holds."""
        return self._claiming.result().took_over or time.monotonic() - self._started >= self._suspect_after_s


def run_beside_claim(keyed: Keyed, work: Callable[[str, ClaimGate], Outcome], recover: Recover, *,
                     commit_route: bool = False) -> Outcome:
    """:func:`arco.iceberg.run_once.run_once` with the claim beside the work. ``work(tag, gate)`` must call
    ``gate.wait()`` before anything of it can land; a work that fails earlier is answered as the claim decides."""
    claiming = _CLAIMS.submit(contextvars.copy_context().run, functools.partial(keyed.markers.claim, wait=False),
                              keyed, recover)
    try:
        outcome = work(keyed.tag, ClaimGate(claiming, keyed.markers.in_progress_timeout_s))
    except Exception as exc:  # noqa: BLE001 - decided below, once the claim is known
        failure: Exception | None = exc
    except BaseException:
        wait([claiming])  # the process "dies" (a test's crash): nothing of this request runs on after it
        raise
    else:
        failure = None
    try:
        claim = claiming.result()  # its error (409 another payload, storage) is the answer: nothing landed
    except KeyInFlight:
        claim = keyed.markers.claim(keyed, recover)  # waits for it; its error (503 still in flight) is the answer
        if claim.replay is None:  # the other request's marker was released (it did not land): this one's now
            gate = ClaimGate(_resolved(claim), keyed.markers.in_progress_timeout_s)
            return conclude(keyed, claim, recover, lambda: work(keyed.tag, gate), commit_route=commit_route)
    if claim.replay is not None:
        return replayed(claim.replay)
    assert not isinstance(failure, ClaimNotOwned)  # the claim is this request's

    def result() -> Outcome:
        if failure is not None:
            raise failure
        return outcome

    return conclude(keyed, claim, recover, result, commit_route=commit_route)


def _resolved(claim: Claim) -> Future[Claim]:
    done: Future[Claim] = Future()
    done.set_result(claim)
    return done
