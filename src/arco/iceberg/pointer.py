"""The Iceberg table pointer (seed section 2): one small object per table, changed only by compare-and-swap.

    _catalog/iceberg_pointers/{table_uuid}.json

It names the table's current metadata file and denormalizes what a commit checks first (current snapshot,
refs, last sequence number). A dropped table's pointer becomes a *tombstone*, written with a version-matched
put rather than deleted, because a conditional delete is not enforced by every store (fake-gcs-server ignores it)
and an in-flight commit holding the old version must fail either way. Every write carries a fresh ``write_id``,
so two writes never have the same bytes (an S3 version is a hash of the content).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from arco import metrics
from arco.storage.base import DoesNotExist, MatchesVersion, NotFound, StorageBackend, WriteResult

POINTER_FORMAT_VERSION = 1
POINTERS = "_catalog/iceberg_pointers"


def pointer_key(table_uuid: str) -> str:
    return f"{POINTERS}/{table_uuid}.json"


@dataclass(frozen=True)
class TablePointer:
    table_uuid: str
    current_metadata_location: str
    current_snapshot_id: int | None = None
    refs: dict[str, Any] = field(default_factory=dict)
    last_sequence_number: int = 0
    previous_metadata_location: str | None = None
    updated_at_ms: int = 0
    updated_by: dict[str, Any] = field(default_factory=dict)
    dropped: bool = False
    # Set while a multi-table transaction holds this table (see arco.iceberg.transactions): the transaction id
    # and the pointer fields this table gets if, and only if, that transaction commits.
    pending_txn: str | None = None
    proposed: dict[str, Any] | None = None
    write_id: str = ""
    version: int = POINTER_FORMAT_VERSION

    def to_bytes(self) -> bytes:
        return orjson.dumps({**asdict(self), "write_id": uuid.uuid4().hex, "updated_at_ms": int(time.time() * 1000)})

    @classmethod
    def from_bytes(cls, data: bytes) -> TablePointer:
        raw = orjson.loads(data)
        known = {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}
        return cls(**known)


    def with_changes(self, **changes: Any) -> TablePointer:
        return TablePointer(**{**self.__dict__, **changes})

    def rolled_forward(self) -> TablePointer:
        """The pointer after its pending transaction committed: the proposal becomes current."""
        assert self.proposed is not None
        return self.with_changes(**self.proposed, pending_txn=None, proposed=None)

    def rolled_back(self) -> TablePointer:
        return self.with_changes(pending_txn=None, proposed=None)


@dataclass(frozen=True)
class VersionedPointer:
    pointer: TablePointer
    version: str


class PointerStore:
    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage

    def load(self, table_uuid: str) -> VersionedPointer | None:
        """The pointer and its storage version, or None if there is none (tombstones are returned as such)."""
        try:
            found = self.storage.get(pointer_key(table_uuid))
        except NotFound:
            return None
        return VersionedPointer(TablePointer.from_bytes(found.data), found.version)

    def create(self, pointer: TablePointer) -> WriteResult:
        return self.storage.put(pointer_key(pointer.table_uuid), pointer.to_bytes(), DoesNotExist())

    def swap(self, expected_version: str, pointer: TablePointer) -> WriteResult:
        written = self.storage.put(pointer_key(pointer.table_uuid), pointer.to_bytes(),
                                   MatchesVersion(expected_version))
        metrics.cas("table_pointer", written.ok)  # a lost swap means a concurrent commit: the caller retries
        return written

    def create_or_revive(self, pointer: TablePointer) -> bool:
        """Create the pointer, or replace a tombstone of the same uuid by CAS (the files of a dropped table or view
        registered again); False if a live pointer of that uuid exists, or the tombstone changed under us."""
        if self.create(pointer).ok:
            return True
        existing = self.load(pointer.table_uuid)
        return existing is not None and existing.pointer.dropped and self.swap(existing.version, pointer).ok
