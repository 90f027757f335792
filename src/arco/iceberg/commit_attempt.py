"""One try of a table's batch of commits against one base (:mod:`arco.iceberg.commit` runs the tries): the
requests waiting to be committed, the pure planning of a try (steps 5-6: each request's requirements checked and
updates applied in arrival order), the writing of its metadata file (steps 7-8), and what a lost try leaves."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from arco import optimistic
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.iceberg import commit_rules, side_writes, table_requirements
from arco.iceberg.claim_beside import ClaimGate
from arco.iceberg.file_names import attempt_part, group_part, metadata_file_location, metadata_sequence
from arco.iceberg.group_commit import GroupMember, GroupRecord, Pending
from arco.iceberg.tables import TableService
from arco.storage.base import StorageError


@dataclass(frozen=True)
class CommitResult:
    metadata_location: str
    metadata: TableMetadata


@dataclass(frozen=True)
class CommitRequest:
    """One updateTable request waiting to be committed (alone or in a group)."""

    entry: TableEntry
    namespace: NamespacePath
    name: str
    requirements: list[Any]
    updates: list[Any]
    principal: str
    source: dict[str, Any]
    tag: str | None
    identifier: dict[str, Any]
    catalog: CatalogEntry | None = None
    # Set when ``entry`` is this process's knowledge, not yet confirmed by a catalog check: the monotonic time the
    # check must have started at or after (the request's arrival).
    unconfirmed_since: float | None = None
    # The request's optimistic view, when its authentication and grant checks were decided on this process's
    # state (arco.optimistic): the batch confirms it with the same check, before the CAS, or fails the request
    # with StaleView (it then runs again the ordinary way).
    view: optimistic.OptimisticView | None = None
    # The request's Idempotency-Key claim, when it runs beside the commit: the batch asks it before the CAS, and a
    # member whose claim is not its own fails with ClaimNotOwned (its answer is the claim's).
    gate: ClaimGate | None = None
    # The tag is an Idempotency-Key's: another request with the key (a retry that took the marker over) may land
    # the same change, which this one must then not apply again (arco.iceberg.commit._landed_elsewhere).
    replayable: bool = False

    def member(self) -> GroupMember:
        return GroupMember(self.tag, self.principal, self.source, [str(u.action) for u in self.updates])


@dataclass(frozen=True)
class Landed:
    """A request's commit as it landed: the shared result, and the request's place in its group (if any)."""

    result: CommitResult
    base_location: str
    member: int = 0
    group_size: int = 1
    changed: bool = True  # False: the updates changed nothing, so nothing was written (the answer is the base)
    base: TableMetadata | None = None  # the version committed on, for the receipt's operation


@dataclass
class Attempt:
    """One try of a batch against one base: who is in, who failed a requirement only because of an earlier member
    (final only if this try lands), and what it wrote."""

    base_location: str
    accepted: list[Pending[CommitRequest]]
    deferred: list[tuple[Pending[CommitRequest], BaseException]]
    metadata: TableMetadata | None = None
    location: str = ""
    grouped: bool = False
    # False when no accepted request changed anything: nothing is written, and each is answered with the base, as
    # the reference answers a commit whose updates leave the metadata as it was.
    changed: bool = True
    base: TableMetadata | None = None

    def landed_in(self, current_location: str, current: TableMetadata) -> bool:
        """Whether this try's file is the table's version or in its history (a CAS the storage client retried
        after it had in fact succeeded reports a lost race)."""
        return current_location == self.location or any(
            entry.metadata_file == self.location for entry in current.metadata_log)

    def deliver(self) -> None:
        assert self.metadata is not None
        result = CommitResult(self.location, self.metadata)
        size = len(self.accepted)
        for index, pending in enumerate(self.accepted):
            pending.succeed(Landed(result, self.base_location, index if self.grouped else 0, size, self.changed,
                                   self.base))
        for pending, error in self.deferred:
            pending.fail(error)


def plan_attempt(waiting: list[Pending[CommitRequest]], base: TableMetadata, base_location: str,
                 final: bool = True) -> Attempt | None:
    """Steps 5-6 for each request in order, against the metadata as the earlier ones left it. A request failing
    against the base itself is answered at once; one failing only after earlier members' changes is deferred.
    Against a base that may be stale (``final`` False), any failure answers nobody: None, read the pointer."""
    tried = Attempt(base_location, [], [], base=base)
    running, changed = base, False
    for pending in waiting:
        request = pending.item
        try:
            table_requirements.check_requirements(request.requirements, running)
            running_next, member_changed = commit_rules.apply_member_updates(running, request.updates)
        except Exception as exc:  # noqa: BLE001 - a request's own failure is its answer, not the batch's
            if not final:
                return None
            if tried.accepted:
                tried.deferred.append((pending, exc))
            else:
                pending.fail(exc)
            continue
        running, changed = running_next, changed or member_changed
        tried.accepted.append(pending)
    if tried.accepted and not changed:
        tried.metadata, tried.location, tried.changed = base, base_location, False
    elif tried.accepted:
        tried.metadata = commit_rules.close_group(base, running, base_location)
        tried.grouped = len(tried.accepted) > 1
        suffix = group_part() if tried.grouped else attempt_part(tried.accepted[0].item.tag)
        tried.location = metadata_file_location(tried.metadata.location, metadata_sequence(base_location) + 1, suffix,
                                                tried.metadata.properties)
    return tried


def write_attempt(tables: TableService, table_uuid: str, tried: Attempt) -> Future[object] | None:
    """Step 7 (the metadata file) and, at the same time, for a group its record (which recovery and the reconciler
    need: both are written when this returns), else step 8, the pending receipt, whose write is returned running
    (:mod:`arco.iceberg.side_writes`: the CAS does not wait for it; :func:`side_writes.settle` does, after it)."""
    metadata = tried.metadata
    assert metadata is not None
    if tried.grouped:
        record = GroupRecord(table_uuid, tried.location, tried.base_location,
                             [pending.item.member() for pending in tried.accepted])
        side_writes.at_once(lambda: tables.files.write(tried.location, metadata), lambda: tables.groups.write(record))
        return None
    request = tried.accepted[0].item
    receipt = side_writes.start_pending_receipt(
        tables.storage, table_uuid=table_uuid, metadata_location=tried.location, metadata=metadata,
        previous_metadata_location=tried.base_location, source=request.source, identifier=request.identifier,
        base=tried.base)
    try:
        tables.files.write(tried.location, metadata)
    except BaseException:
        side_writes.settle(receipt)
        raise
    return receipt


def discard_attempt(tables: TableService, table_uuid: str, tried: Attempt) -> None:
    """A try that lost its CAS (and is known not to have landed) leaves nothing: its file and record are deleted,
    best effort (garbage collection removes what a crash leaves)."""
    if not tried.changed:
        return  # it wrote nothing
    tables.files.discard(tried.location)
    if tried.grouped:
        try:
            tables.groups.delete(table_uuid, tried.location)
        except (StorageError, OSError):
            pass
