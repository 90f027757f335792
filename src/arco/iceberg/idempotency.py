"""Durable Idempotency-Key markers for table commits (seed section 3).

    _catalog/iceberg_idempotency/{table_uuid}/{h[:2]}/{h}.json      h = SHA-256 of the raw key

A marker is claimed ``IN_PROGRESS`` with a create-only put before any work, and finalized ``COMMITTED`` (2xx) or
``FAILED`` (a deterministic 4xx, with the error) by a version-matched put. A 5xx leaves it ``IN_PROGRESS``: the
commit's fate is unknown, and the retry resolves it.

The metadata file a keyed commit writes is named ``{sequence}-{h}.metadata.json``, so whether a commit with this
key landed can be told from the table itself: it did if the current metadata file, or one in its metadata log,
carries ``h``. That is the crash recovery of an ``IN_PROGRESS`` marker; a marker older than the in-progress timeout
whose commit did not land may be taken over by a compare-and-swap. Responses are not stored: a committed marker
keeps the metadata location, and the response is rebuilt from that immutable file.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from typing import Any, Literal

import orjson
import rfc8785

from arco.iceberg.errors import BadRequest, CommitFailed, IcebergError, ServiceUnavailable
from arco.storage.base import DoesNotExist, MatchesVersion, StorageBackend

MarkerStatus = Literal["IN_PROGRESS", "COMMITTED", "FAILED"]
_UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def check_key(raw: str) -> str:
    """The key if it is a UUIDv7 in canonical form (RFC 9562), else 400."""
    if not _UUID7.match(raw.lower()) or len(raw) != 36:
        shown = raw if len(raw) <= 64 else raw[:64] + "..."
        raise BadRequest(f"Idempotency-Key must be a UUIDv7 in canonical form (8-4-4-4-12 hex), got {shown!r}")
    return raw.lower()


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def request_hash(route: str, body: Any) -> str:
    """SHA-256 of the route and the RFC 8785 canonical form of the body (array order kept)."""
    try:
        canonical = rfc8785.dumps(body)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise BadRequest(f"the request body cannot be canonicalized (RFC 8785): {exc}") from None
    return hashlib.sha256(route.encode() + b"\n" + canonical).hexdigest()


def marker_key(scope: str, hashed_key: str) -> str:
    return f"_catalog/iceberg_idempotency/{scope}/{hashed_key[:2]}/{hashed_key}.json"


@dataclass(frozen=True)
class Marker:
    status: MarkerStatus
    idempotency_key: str
    request_hash: str
    started_at_ms: int
    metadata_location: str | None = None
    error_status: int | None = None
    error_payload: dict[str, Any] | None = None
    finished_at_ms: int | None = None

    def to_bytes(self) -> bytes:
        return orjson.dumps({**self.__dict__, "written_at_ns": time.time_ns()})

    @classmethod
    def from_bytes(cls, data: bytes) -> Marker:
        raw = orjson.loads(data)
        return cls(**{k: raw.get(k) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Claim:
    """The outcome of claiming a key: either go ahead (``version`` to finalize with) or replay ``marker``."""

    key: str
    storage_key: str
    version: str | None = None
    replay: Marker | None = None
    marker: Marker | None = None  # the marker as claimed, for finalizing without reading it again


class IdempotencyMarkers:
    def __init__(self, storage: StorageBackend, in_progress_timeout_s: float) -> None:
        self.storage = storage
        self.in_progress_timeout_s = in_progress_timeout_s

    def claim(self, scope: str, key: str, req_hash: str, landed: Any) -> Claim:
        """Claim ``key`` for this request; ``landed(hashed_key)`` returns the metadata location if the commit
        with this key already reached the table (crash recovery), else None."""
        hashed = key_hash(key)
        storage_key = marker_key(scope, hashed)
        fresh = Marker("IN_PROGRESS", key, req_hash, int(time.time() * 1000))
        for _ in range(5):
            written = self.storage.put(storage_key, fresh.to_bytes(), DoesNotExist())
            if written.ok:
                return Claim(key, storage_key, version=written.version, marker=fresh)  # type: ignore[union-attr]
            found = self.storage.get_or_none(storage_key)
            if found is None:
                continue  # garbage-collected between the two calls: claim again
            existing = Marker.from_bytes(found.data)
            if existing.request_hash != req_hash:
                raise CommitFailed("Idempotency-Key reused with a different request payload")
            if existing.status != "IN_PROGRESS":
                return Claim(key, storage_key, replay=existing)
            location = landed(hashed)
            if location is not None:  # the commit landed; the server died before finalizing
                done = self._finish(storage_key, found.version, existing, "COMMITTED", location=location)
                return Claim(key, storage_key, replay=done)
            if existing.started_at_ms / 1000 + self.in_progress_timeout_s > time.time():
                raise ServiceUnavailable(
                    "a request with this Idempotency-Key is in progress; retry later",
                    headers={"Retry-After": str(max(1, int(self.in_progress_timeout_s)))},
                )
            taken = self.storage.put(storage_key, fresh.to_bytes(), MatchesVersion(found.version))
            if taken.ok:
                return Claim(key, storage_key, version=taken.version, marker=fresh)  # type: ignore[union-attr]
        raise ServiceUnavailable("the Idempotency-Key marker is contended; retry", headers={"Retry-After": "1"})

    def committed(self, claim: Claim, location: str) -> None:
        assert claim.marker is not None
        self._finish(claim.storage_key, claim.version, claim.marker, "COMMITTED", location=location)

    def failed(self, claim: Claim, error: IcebergError) -> None:
        assert claim.marker is not None
        payload = {"error": {"message": error.message, "type": error.error_type, "code": error.status}}
        self._finish(claim.storage_key, claim.version, claim.marker, "FAILED", error=(error.status, payload))

    def _finish(self, storage_key: str, version: str | None, existing: Marker, status: MarkerStatus, *,
                location: str | None = None, error: tuple[int, dict[str, Any]] | None = None) -> Marker:
        done = Marker(status, existing.idempotency_key, existing.request_hash, existing.started_at_ms,
                      metadata_location=location, error_status=error[0] if error else None,
                      error_payload=error[1] if error else None, finished_at_ms=int(time.time() * 1000))
        if version is not None:
            # Losing this race is harmless: whoever won wrote the same outcome (it is decided by the pointer).
            self.storage.put(storage_key, done.to_bytes(), MatchesVersion(version))
        return done


def is_deterministic(error: IcebergError) -> bool:
    """4xx answers are final for a request and replayed; 5xx (state unknown, unavailable) are not."""
    return 400 <= error.status < 500


class ReplayedError(IcebergError):
    """A deterministic error answered before for the same key and request, returned again as it was."""

    def __init__(self, marker: Marker) -> None:
        error = (marker.error_payload or {}).get("error", {})
        super().__init__(str(error.get("message", "")))
        self.status = int(marker.error_status or 409)
        self.error_type = str(error.get("type", "CommitFailedException"))
