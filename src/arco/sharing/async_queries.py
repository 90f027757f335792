"""Asynchronous Query Table requests (the protocol's ``asyncquery`` capability and Get Query Info), kept in
storage so that any server of the warehouse answers the poll of a query another one accepted:

    _catalog/sharing/queries/{query id}.json    what the query asks, for whom, and what its submission pinned

A submission checks the query and fixes what it reads (:meth:`arco.sharing.table_reads.TableReads.pin`), writes
the record create-only and answers ``pending``; a poll reads the record and answers the query at that pin, so a
poll always finds it done. A submission with an ``idempotencyKey`` has a query id derived from the recipient, the
table and the key: a retried submission finds its own record and gets the same id (with other parameters, a
400). A record lives :data:`QUERY_LIFETIME_MS`; after that its id is unknown (404) and ``arco pipeline gc``
deletes it. What a recipient may store this way is bounded in size and rate (:data:`MAX_RECORD_BYTES`,
:data:`SUBMISSIONS_PER_S`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from arco.sharing.errors import bad_request
from arco.sharing.paging import Pin
from arco.storage.base import DoesNotExist, MatchesVersion, StorageBackend

QUERIES = "_catalog/sharing/queries/"
QUERY_LIFETIME_MS = 24 * 3600 * 1000
# What one recipient may make the warehouse keep: records of at most this size (a query's own fields; a real one
# is a few hundred bytes), at this rate per server process (arco.api.rate_limit), beyond which 429 Retry-After.
MAX_RECORD_BYTES = 64 * 1024
SUBMISSIONS_PER_S = 2.0
SUBMISSION_BURST = 100
_QUERY_ID = re.compile(r"[0-9a-f]{32}")
MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class QueryRecord:
    query_id: str
    recipient: str
    table_id: str
    body: dict[str, Any]  # the query's own fields (arco.sharing.protocol.QUERY_FIELDS), as submitted
    query: str  # their checksum (arco.sharing.paging.checksum)
    pin_version: int | None
    pin_ending: int | None
    created_ms: int
    expires_ms: int

    @property
    def pin(self) -> Pin:
        return Pin(self.pin_version, self.pin_ending)

    def to_bytes(self) -> bytes:
        return orjson.dumps(asdict(self))

    @staticmethod
    def from_bytes(data: bytes) -> QueryRecord:
        return QueryRecord(**orjson.loads(data))


def record_key(query_id: str) -> str:
    return f"{QUERIES}{query_id}.json"


def query_id_for(recipient: str, table_id: str, idempotency_key: str | None) -> str:
    """The id of a submission: derived from its key (a retry gets the same), else random."""
    if idempotency_key is None:
        return secrets.token_hex(16)
    return hashlib.sha256("\x00".join((recipient, table_id, idempotency_key)).encode()).hexdigest()[:32]


class AsyncQueries:
    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage

    def submit(self, record: QueryRecord) -> QueryRecord:
        """The record now stored under ``record.query_id``: this one, or the one an earlier submission with the
        same key stored (400 if that one asked something else, or if it is too big to keep)."""
        key, data = record_key(record.query_id), record.to_bytes()
        if len(data) > MAX_RECORD_BYTES:
            raise bad_request(f"an asynchronous query's parameters must fit in {MAX_RECORD_BYTES // 1024} KB: send "
                              "this query without asyncquery")
        for _ in range(MAX_ATTEMPTS):
            if self.storage.put(key, data, DoesNotExist()).ok:
                return record
            found = self.storage.get_or_none(key)
            if found is None:
                continue  # deleted meanwhile (an expired one): try again
            existing = QueryRecord.from_bytes(found.data)
            if existing.expires_ms > record.created_ms:
                if (existing.recipient, existing.table_id, existing.query) != \
                        (record.recipient, record.table_id, record.query):
                    raise bad_request("this idempotencyKey was used for another query: use a new key for a new "
                                      "query")
                return existing
            # An expired record under this key: the new submission replaces it (if nobody replaced it first).
            self.storage.delete(key, MatchesVersion(found.version))
        raise bad_request("the query could not be recorded: submit it again")

    def find(self, query_id: str, *, recipient: str, table_id: str, now_ms: int) -> QueryRecord | None:
        """The live query ``query_id`` of this recipient on this table; None for any other id (never one that
        was not issued here: the id is checked before it names a storage key)."""
        if not isinstance(query_id, str) or not _QUERY_ID.fullmatch(query_id):
            return None
        found = self.storage.get_or_none(record_key(query_id))
        if found is None:
            return None
        record = QueryRecord.from_bytes(found.data)
        if record.recipient != recipient or record.table_id != table_id or record.expires_ms <= now_ms:
            return None
        return record
