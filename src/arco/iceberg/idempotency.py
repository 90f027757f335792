"""Durable Idempotency-Key markers (seed section 3), for every mutation route.

    _catalog/iceberg_idempotency/{scope}/{h[:2]}/{h}.json      h = SHA-256 of the raw key

``scope`` is the table uuid for a table commit (as in the seed) and ``catalog-{catalog id}`` for the other
mutations, whose target may not exist yet (create) or any more (a retried drop).

A marker is claimed ``IN_PROGRESS`` with a create-only put before any work (a table commit's or a table create's
claim runs beside its work up to the commit point, or the pointer, instead: :mod:`arco.iceberg.claim_beside`), and
finalized ``COMMITTED`` (2xx) or ``FAILED`` (a deterministic 4xx, with the error) by a version-matched put. A
``FAILED`` marker is written before the answer (nothing landed, so only the marker remembers the refusal); a
``COMMITTED`` one just after it, like the committed receipt (:mod:`arco.events.after_answer`): the change it records
has landed, and a retry that finds the marker still in progress learns that from ``recover`` below and answers the
same. The work is tagged with ``h`` where it lands (the metadata file name of a commit, the Tier 1 operation of a
namespace or table change), so whoever asks the mutation's ``recover`` function learns whether the tagged change
landed.

What happens when the work fails is :mod:`arco.iceberg.run_once`'s.

A retry that finds an ``IN_PROGRESS`` marker asks ``recover``: if the change landed, the marker is finalized from
it and its answer returned (crash recovery); if not, a released marker (or one this process knows ended) is taken
over at once; otherwise the request is in flight. A live request ends within moments, so the retry waits for the
marker to change (up to ``in_flight_wait_s``, polling it) and then answers as that request was answered, or takes a
released marker over; only a marker still in progress after that wait (its server likely died) makes the answer a
503, whose Retry-After is the time left until the marker is older than the in-progress timeout, after which the
retry takes the marker over with a compare-and-swap and does the work itself. The wait happens where the request
holds nothing another request waits for (:func:`arco.iceberg.run_once.run_once`, before the work; a commit whose
claim ran beside its work, after that work was refused: :mod:`arco.iceberg.claim_beside`).

While storage refuses writes, a retry still gets the answer of a request that finished or whose change landed:
the claim's put fails, and the answer is read instead (a marker that is the failed claim itself is released).

"Did not land" is decided by reading where the change would be. A write that failed at the storage client but is
still delivered later by the storage service would escape this check; object stores apply a request before they
answer it, and the window is the client's own timeout.

Responses are small or rebuilt: a table result keeps only its metadata location, and the reply is rehydrated from
that immutable file.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, ParamSpec, TypeVar

import orjson
import rfc8785

from arco.api.faults import report_storage_fault
from arco.iceberg.errors import BadRequest, CommitFailed, IcebergError, ServiceUnavailable
from arco.iceberg.late_claims import LateChecks
from arco.lru import Lru
from arco.optimistic import unconfirmed_writes_allowed
from arco.storage.base import DoesNotExist, MatchesVersion, StorageBackend, StorageError

MarkerStatus = Literal["IN_PROGRESS", "COMMITTED", "FAILED"]
_UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
MAX_CLAIM_ATTEMPTS = 5
RETRY_AFTER_FAULT_S = 2
# How long a request waits for another one with its key, still in flight, to end; a commit takes milliseconds to
# a second or so, and a longer wait would hold a worker thread for a request whose server likely died.
IN_FLIGHT_WAIT_S = 2.0
_IN_FLIGHT_POLL_S = (0.01, 0.25)  # first and longest pause between reads of the marker while waiting
ENDED_ATTEMPTS_REMEMBERED = 10_000
# Claims that got no answer, watched in the background for a late apply: how many at most, and for how long (a
# store applies what it queued when it resumes; after minutes a marker appearing is another request's matter).
LATE_CLAIMS_WATCHED = 1_000
LATE_CLAIM_WATCH_S = 300.0


def check_key(raw: str) -> str:
    """The key if it is a UUIDv7 in canonical form (RFC 9562: 8-4-4-4-12 hex digits), else 400."""
    if len(raw) != 36 or not _UUID7.match(raw.lower()):
        shown = raw if len(raw) <= 64 else raw[:64] + "..."
        raise BadRequest(f"Idempotency-Key must be a UUIDv7 in canonical form (8-4-4-4-12 hex), got {shown!r}")
    return raw.lower()


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def request_hash(operation: str, target: str, body: Any) -> str:
    """SHA-256 of the operation, its target (the path) and the RFC 8785 canonical form of the body."""
    try:
        try:
            canonical = rfc8785.dumps(body)
        except rfc8785.IntegerDomainError:
            canonical = rfc8785.dumps(_long_integers_spelled(body))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise BadRequest(f"the request body cannot be canonicalized (RFC 8785): {exc}") from None
    return hashlib.sha256(f"{operation}\n{target}\n".encode() + canonical).hexdigest()


_EXACT_INTEGERS = 2**53 - 1  # RFC 8785 numbers are IEEE doubles: integers beyond this have no exact form
_LONG_INTEGER_MARK = "\x00long:"  # no client sends a string with a NUL in it where a name or a value is expected


def _long_integers_spelled(value: Any) -> Any:
    """``value`` with each integer RFC 8785 cannot hold exactly (Iceberg's snapshot ids are random 63-bit longs) as
    a marked string of its digits, so two bodies that differ in such an id hash apart, as the rest of the body
    does. Only a body holding such an integer is rewritten: every other body hashes as RFC 8785 has it."""
    if isinstance(value, dict):
        return {k: _long_integers_spelled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_long_integers_spelled(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _EXACT_INTEGERS:
        return f"{_LONG_INTEGER_MARK}{value}"
    return value


def marker_key(scope: str, hashed_key: str) -> str:
    return f"_catalog/iceberg_idempotency/{scope}/{hashed_key[:2]}/{hashed_key}.json"


P = ParamSpec("P")
R = TypeVar("R")


def _before_confirmation(method: Callable[P, R]) -> Callable[P, R]:
    """Marker writes that may precede the confirmation of a request's catalog view (:mod:`arco.optimistic`): a
    claim is released, and nothing else done, if the view turns out stale."""

    @functools.wraps(method)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> R:
        with unconfirmed_writes_allowed():
            return method(*args, **kwargs)

    return wrapped


@dataclass(frozen=True)
class Outcome:
    """A mutation's successful answer, as a marker keeps it: a small body, or the metadata file to rebuild it."""

    status: int = 200
    body: dict[str, Any] | None = None
    metadata_location: str | None = None


@dataclass(frozen=True)
class Marker:
    status: MarkerStatus
    idempotency_key: str
    operation: str
    request_hash: str
    started_at_ms: int
    tier1_seq: int | None = None  # the Tier 1 log position when claimed: a tagged operation lands after it
    outcome: Outcome | None = None
    error_status: int | None = None
    error_payload: dict[str, Any] | None = None
    finished_at_ms: int | None = None
    retryable_at_ms: int | None = None  # the attempt ended without landing: a retry may take over at once
    principal: str | None = None  # who claimed it (None: a marker written before callers were recorded)
    # The table whose history holds the change when it lands (a commit's marker is the catalog's, like every
    # other, so that a retry after the name moved to another table finds it): where recovery looks.
    subject: str | None = None

    def to_bytes(self) -> bytes:
        # orjson writes the nested Outcome dataclass itself: no deep copy through dataclasses.asdict per write.
        return orjson.dumps({**self.__dict__, "written_at_ns": time.time_ns()})

    @classmethod
    def from_bytes(cls, data: bytes) -> Marker:
        raw = orjson.loads(data)
        fields = {k: raw.get(k) for k in cls.__dataclass_fields__}
        if fields["outcome"] is not None:
            fields["outcome"] = Outcome(**fields["outcome"])
        return cls(**fields)

    @property
    def hashed_key(self) -> str:
        return key_hash(self.idempotency_key)


@dataclass(frozen=True)
class Keyed:
    """A request made under an Idempotency-Key: where its marker lives and what it must match."""

    markers: IdempotencyMarkers
    scope: str
    key: str
    operation: str
    request_hash: str
    tier1_seq: int | None = None
    principal: str | None = None  # the caller: a key is one caller's; another's same key is not a replay
    subject: str | None = None  # the table whose history the work lands in (Marker.subject)

    @property
    def tag(self) -> str:
        """What the work carries where it lands, so that recovery can find it."""
        return key_hash(self.key)


@dataclass(frozen=True)
class Claim:
    """Either go ahead (``version`` to finalize with, ``marker`` as claimed) or answer ``replay``."""

    storage_key: str
    version: str | None = None
    marker: Marker | None = None
    replay: Marker | None = None
    # The marker was another request's, taken over (it timed out, or its attempt ended): that request may have
    # landed the change meanwhile (arco.iceberg.claim_beside.ClaimGate.shared).
    took_over: bool = False


Recover = Callable[[Marker], Outcome | None]


class KeyInFlight(ServiceUnavailable):
    """Another request with this Idempotency-Key is in flight: answered 503 with Retry-After, unless the caller
    waits for it to end (:meth:`IdempotencyMarkers.claim` with ``wait``)."""


class IdempotencyMarkers:
    def __init__(self, storage: StorageBackend, in_progress_timeout_s: float,
                 in_flight_wait_s: float = IN_FLIGHT_WAIT_S) -> None:
        self.storage = storage
        self.in_progress_timeout_s = in_progress_timeout_s
        self.in_flight_wait_s = min(in_flight_wait_s, in_progress_timeout_s)
        # (marker key, marker version) of attempts of this process that ended without landing but whose marker
        # could not be released: a retry reaching this process need not wait for the timeout.
        self._ended: Lru[tuple[str, str], bool] = Lru(ENDED_ATTEMPTS_REMEMBERED)
        # Claims of this process whose put got no answer, by marker key: if the store applies one later, the marker
        # is this process's, and its attempt ended (late_claims).
        self._unanswered: Lru[str, Marker] = Lru(ENDED_ATTEMPTS_REMEMBERED)
        self.late = LateChecks()

    def _remember_ended(self, storage_key: str, version: str) -> None:
        self._ended.put((storage_key, version), True)

    def _known_ended(self, storage_key: str, version: str) -> bool:
        return (storage_key, version) in self._ended

    @_before_confirmation
    def claim(self, keyed: Keyed, recover: Recover, *, wait: bool = True) -> Claim:
        """Claim the key's marker, or the answer to give instead. A marker of another request still in flight is
        waited for (up to ``in_flight_wait_s``) if ``wait``, else :class:`KeyInFlight` is raised at once."""
        storage_key = marker_key(keyed.scope, keyed.tag)
        fresh = Marker("IN_PROGRESS", keyed.key, keyed.operation, keyed.request_hash, _now_ms(), keyed.tier1_seq,
                       principal=keyed.principal, subject=keyed.subject)
        waited = not wait
        for _ in range(MAX_CLAIM_ATTEMPTS):
            try:
                written = self.storage.put(storage_key, fresh.to_bytes(), DoesNotExist())
            except StorageError:
                replay = self._claim_failed(storage_key, fresh, keyed, recover)
                if replay is None:
                    self._unanswered_claim(storage_key, fresh)
                    raise
                return Claim(storage_key, replay=replay)
            if written.ok:
                return Claim(storage_key, version=written.version, marker=fresh)  # type: ignore[union-attr]
            found = self.storage.get_or_none(storage_key)
            if found is None:
                continue  # garbage-collected between the two calls: claim again
            existing = Marker.from_bytes(found.data)
            if not _same_caller(existing, keyed):
                # Its answer is not this caller's to see (it may hold a table it cannot read): no replay.
                raise CommitFailed("Idempotency-Key already used by another caller; send a key of your own")
            if existing.request_hash != keyed.request_hash:
                raise CommitFailed("Idempotency-Key reused with a different request payload")
            if existing.status != "IN_PROGRESS":
                return Claim(storage_key, replay=existing)
            landed = recover(existing)
            if landed is not None:  # the work landed; the server died before finalizing
                try:
                    return Claim(storage_key, replay=self._finish(storage_key, found.version, existing,
                                                                  outcome=landed))
                except StorageError as exc:  # the answer is known even if it cannot be recorded now
                    report_storage_fault(f"{keyed.operation} (Idempotency-Key {keyed.key})", exc)
                    return Claim(storage_key, replay=replace(existing, status="COMMITTED", outcome=landed))
            ended = (existing.retryable_at_ms is not None or self._known_ended(storage_key, found.version)
                     or self._was_unanswered(storage_key, existing))
            takeover_in_s = existing.started_at_ms / 1000 + self.in_progress_timeout_s - time.time()
            if not ended and takeover_in_s > 0:
                if not waited:
                    # Then everything again: the answer that request left, a released marker to take over, or
                    # its change landed (recover) though its marker could not be finalized.
                    waited = True
                    self._await_change(storage_key, found.version)
                    fresh = replace(fresh, started_at_ms=_now_ms())  # a takeover's timeout runs from now
                    continue
                # Capped: the marker's start is another server's clock.
                retry_after = max(1, math.ceil(min(takeover_in_s, self.in_progress_timeout_s)))
                raise KeyInFlight("a request with this Idempotency-Key is in progress; retry later",
                                  headers={"Retry-After": str(retry_after)})
            taken = self.storage.put(storage_key, fresh.to_bytes(), MatchesVersion(found.version))
            if taken.ok:
                return Claim(storage_key, version=taken.version, marker=fresh,  # type: ignore[union-attr]
                             took_over=True)
        raise ServiceUnavailable("the Idempotency-Key marker is contended; retry", headers={"Retry-After": "1"})

    def _unanswered_claim(self, storage_key: str, fresh: Marker) -> None:
        """The claim's put got no answer and its attempt ends here: should the store apply it later, a retry
        reaching this process takes the marker over at once, and the marker is released as soon as storage shows
        it (for retries reaching other servers); until the in-progress timeout, after which anyone may."""
        self._unanswered.put(storage_key, fresh)
        if self.late.pending() < LATE_CLAIMS_WATCHED:  # past that, in a long outage, only this process knows
            self.late.add(functools.partial(self._release_if_applied, storage_key, fresh),
                          min(self.in_progress_timeout_s, LATE_CLAIM_WATCH_S))

    def _was_unanswered(self, storage_key: str, existing: Marker) -> bool:
        return self._unanswered.get(storage_key) == existing

    def _release_if_applied(self, storage_key: str, fresh: Marker) -> bool:
        """One look for a claim that got no answer: released if the store applied it; done if another marker is
        there. False (look again) while there is none: the store may apply the put yet."""
        found = self.storage.get_or_none(storage_key)
        if found is None:
            return False
        if Marker.from_bytes(found.data) == fresh:
            self.release(Claim(storage_key, version=found.version, marker=fresh))
        self._unanswered.pop(storage_key, only=fresh)
        return True

    def _await_change(self, storage_key: str, version: str) -> None:
        """Return once the marker is no longer at ``version`` (finalized, released, taken over or collected), or
        after ``in_flight_wait_s``."""
        deadline = time.monotonic() + self.in_flight_wait_s
        pause, longest = _IN_FLIGHT_POLL_S
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(pause, left))
            pause = min(pause * 2, longest)
            found = self.storage.get_or_none(storage_key)
            if found is None or found.version != version:
                return

    def _claim_failed(self, storage_key: str, fresh: Marker, keyed: Keyed, recover: Recover) -> Marker | None:
        """The claim's put failed: what can still be answered by reading (storage may refuse only writes).

        A marker that is this very claim (same bytes: the put landed but its reply was lost) is released, so that
        the retry need not wait for the in-progress timeout. A finished marker of an earlier request, or one whose
        change is found landed, is the answer (returned); anything else is left to the retry (None).
        """
        try:
            found = self.storage.get_or_none(storage_key)
            if found is None:
                return None
            existing = Marker.from_bytes(found.data)
            if existing == fresh:
                self.release(Claim(storage_key, version=found.version, marker=fresh))
                return None
            if existing.request_hash != keyed.request_hash or not _same_caller(existing, keyed):
                return None  # the retry answers the 409 once storage can be claimed again
            if existing.status != "IN_PROGRESS":
                return existing
            landed = recover(existing)
            return replace(existing, status="COMMITTED", outcome=landed) if landed is not None else None
        except StorageError:
            return None  # reads fail too: nothing can be answered

    def committed(self, claim: Claim, outcome: Outcome) -> None:
        assert claim.marker is not None
        self._finish(claim.storage_key, claim.version, claim.marker, outcome=outcome)

    @_before_confirmation
    def release(self, claim: Claim) -> bool:
        """The attempt ended without landing: let a retry with the same key take the marker over at once."""
        assert claim.marker is not None and claim.version is not None
        released = replace(claim.marker, retryable_at_ms=_now_ms())
        try:
            if self.storage.put(claim.storage_key, released.to_bytes(), MatchesVersion(claim.version)).ok:
                return True
        except StorageError:
            pass
        self._remember_ended(claim.storage_key, claim.version)
        return False

    @_before_confirmation
    def ended_unknown(self, claim: Claim) -> None:
        """The attempt ended and whether it landed could not be checked: the retry's recovery decides; this
        process at least knows no part of the attempt is running any more."""
        assert claim.version is not None
        self._remember_ended(claim.storage_key, claim.version)

    def failed(self, claim: Claim, error: IcebergError) -> None:
        assert claim.marker is not None
        payload = {"error": {"message": error.message, "type": error.error_type, "code": error.status}}
        self._finish(claim.storage_key, claim.version, claim.marker, error=(error.status, payload))

    def _finish(self, storage_key: str, version: str | None, existing: Marker, *, outcome: Outcome | None = None,
                error: tuple[int, dict[str, Any]] | None = None) -> Marker:
        done = replace(existing, status="FAILED" if error else "COMMITTED", outcome=outcome,
                       error_status=error[0] if error else None, error_payload=error[1] if error else None,
                       finished_at_ms=_now_ms())
        if version is not None:
            # Losing this race is harmless: whoever won recorded the same outcome, decided by where the work landed.
            self.storage.put(storage_key, done.to_bytes(), MatchesVersion(version))
        return done


def _same_caller(marker: Marker, keyed: Keyed) -> bool:
    """Whether the marker was claimed by this request's caller (or either is unknown: a marker written before
    callers were recorded, or a request made inside the server)."""
    if marker.principal is None or keyed.principal is None:
        return True
    return marker.principal.casefold() == keyed.principal.casefold()


def _now_ms() -> int:
    return int(time.time() * 1000)
