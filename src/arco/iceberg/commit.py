"""The table commit (seed section 5), each I/O step named so crash tests can stop between any two.

    1 resolve the table in Tier 1          (no lock; the table this process knows, confirmed by a catalog check
                                            that runs beside step 7 and must pass before step 9)
    2 load the pointer and its version     (this process's copy when it has one: step 9's CAS checks it)
    3 load the base metadata file          (cached by location: files are immutable)
    5 check the requirements               (pure, :mod:`arco.iceberg.table_requirements`)
    6 compute the new metadata             (pure)
    7 write the new metadata file          (create-only, name derived from the base sequence)
    9 pointer compare-and-swap             (the commit point)

    8 pending receipt                      (best effort: started beside step 7, waited for only after step 9;
                                            a group writes its record instead, before step 9)
    10 committed receipt                   (best effort, after the answer: :mod:`arco.events.after_answer`;
                                            the reconciler backfills)

Requests to one table that meet in one server go through steps 2-9 together, as one group commit: one base, each
request's requirements checked and updates applied in arrival order, one metadata file, one CAS (see
:mod:`arco.iceberg.group_commit` for what clients, the metadata log and the history see). On a lost pointer race
the batch backs off with jitter, then the requirements are checked again against the new base and the updates
re-applied, as the reference implementation does (Spark retries a 409 only a few times, and Iceberg's
compatibility kit expects the server to absorb benign races); only a failed requirement, or running out of
attempts, answers 409. The file of a lost race is deleted once the new base shows it did not land. This module
runs the tries; one try's steps 5-8, and what a lost try leaves, are :mod:`arco.iceberg.commit_attempt`.

Steps 4 and 11 (the Idempotency-Key marker) wrap this flow in :mod:`arco.iceberg.mutations`; step 4's claim runs
beside steps 2-7 (:mod:`arco.iceberg.claim_beside`) and must be the request's before step 9. The marker's tag
goes into the new metadata file's name (or, for a group, into its group record), which is how a retry after a
crash tells whether the commit landed (:func:`landed_location`). A request with ``assert-create`` creates its
table instead (:mod:`arco.iceberg.staged_create`); several tables at once go through
:mod:`arco.iceberg.transaction_commit`.
"""

from __future__ import annotations

import contextvars
import functools
import random
import time
from concurrent.futures import Future
from typing import Any

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import AssertCreate

from arco import optimistic
from arco.auth.principals import Principal
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.events import after_answer
from arco.events.receipts import write_iceberg_receipt
from arco.iceberg import commit_rules, side_writes, staged_create, table_requirements
from arco.iceberg.claim_beside import ClaimGate, ClaimNotOwned
from arco.iceberg.commit_attempt import (
    Attempt,
    CommitRequest,
    CommitResult,
    Landed,
    discard_attempt,
    plan_attempt,
    write_attempt,
)
from arco.iceberg.errors import BadRequest, CommitFailed, NoSuchTable
from arco.iceberg.file_names import is_group_file, tag_finder
from arco.iceberg.group_commit import Pending
from arco.iceberg.run_once import NotLanded
from arco.iceberg.tables import TableService, pointer_for
from arco.storage.backoff import backoff_delay
from arco.storage.base import CommitPointUnanswered, StorageError, WriteNotApplied

# A batch tries longer than a transaction: its tries back off with jitter (arco.iceberg.group_commit), so they
# cost little, and a hot table served by several servers loses races as a matter of course. 60 tries take a few
# seconds at most, far below the Idempotency-Key in-progress timeout.
MAX_BATCH_ATTEMPTS = 60
# A lost try waits at most about one try before the next (full jitter up to this cap): the server it lost to holds
# its next batch for one to one and a half of its tries once it has won YIELD_AFTER_WINS times in a row
# (yield_to_other_servers), and a loser still asleep when that hold ends has missed its turn. With a cap of 250 ms,
# 16 writers over two servers on SeaweedFS had a p99 of 1.0-3.3 s; with 30 ms and the hold, 0.25-0.28 s.
BATCH_BACKOFF_CAP_S = 0.03
YIELD_AFTER_WINS = 2


def parse_commit(body: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    requirements = table_requirements.parse_requirements(body.get("requirements"))
    updates = commit_rules.parse_updates(body.get("updates", []))
    return requirements, updates


def commit_table(tables: TableService, catalog: CatalogEntry, namespace: NamespacePath, name: str, body: Any,
                 principal: str, source: dict[str, Any], tag: str | None = None,
                 who: Principal | None = None, gate: ClaimGate | None = None,
                 replayable: bool = False) -> CommitResult:
    """Commit one table; ``tag`` (an Idempotency-Key hash) goes where recovery finds it (the new metadata file's
    name, or the group record of a grouped commit); ``gate``, the key's claim running beside, must hold before the
    CAS; ``replayable``: the tag is an Idempotency-Key's (so it is with a gate). Requests that meet in this process
    go as one group commit."""
    requirements, updates = parse_commit(body)
    if any(isinstance(r, AssertCreate) for r in requirements):
        if gate is not None:
            gate.wait()  # a staged create writes its table's files at once: nothing before the claim
        location, created = staged_create.create_by_commit(tables, catalog, namespace, name, requirements, updates,
                                                           principal, source, tag, who)
        return CommitResult(location, created)
    # Step 1. A table this process knows goes ahead on that knowledge; the catalog check runs beside the metadata
    # file's write and is confirmed before the CAS (commit_batch), so it costs no round trip of its own.
    try:
        known = None if tables.store.is_fresh() else tables.known_entry(catalog, namespace, name)
        entry = known if known is not None else tables.entry(catalog, namespace, name)
    except StorageError as exc:
        raise NotLanded(exc) from exc
    commit_rules.check_guardrails(updates, allowed_location=entry.location)  # depends on the request alone
    # Under an optimistic view (arco.api.optimistic: a commit without a key over HTTP) every decision so far was
    # made on this process's state: the same check confirms the view, or the request runs again.
    view = optimistic.current()
    unconfirmed = known is not None or view is not None
    request = CommitRequest(entry, namespace, name, requirements, updates, principal, source, tag,
                            identifier_of(catalog, namespace, name), catalog=catalog,
                            unconfirmed_since=tables.store.scope_start() if unconfirmed else None, view=view,
                            gate=gate, replayable=replayable or gate is not None)
    try:
        landed: Landed = tables.committer.submit(entry.id, request, lambda batch: commit_batch(tables, batch))
    except (optimistic.StaleView, NameMoved, NotLanded):
        raise
    except Exception:
        if view is not None and not view.confirmed:
            # A refusal (a failed requirement, say) made on an unchecked view: the answer stands once the view is
            # confirmed, which costs one check, where dropping it would cost the whole request again.
            tables.store.confirm_view()
        raise
    after_answer.write_later(functools.partial(write_member_receipt, tables, request, landed))  # step 10
    return landed.result


def commit_batch(tables: TableService, batch: list[Pending[CommitRequest]]) -> None:
    """Steps 2-9 for a batch of requests to one table, in arrival order; decides every member (see
    :mod:`arco.iceberg.group_commit`). A lost CAS backs off with jitter and redoes the batch on the new base.

    The batch writes on behalf of its members, whatever the view of the thread that leads it: each member's view
    is confirmed here before the CAS (:func:`_all_views_confirmed` is the net), so the storage layer's own net,
    which knows only the leading request's view, is lifted for the batch."""
    discards: list[Future[object]] = []
    with optimistic.unconfirmed_writes_allowed():
        try:
            _commit_batch(tables, batch, discards)
        except CommitPointUnanswered:
            raise  # whether it landed is for recovery to find
        except StorageError as exc:
            raise NotLanded(exc) from exc  # every CAS tried so far was refused and checked; none was sent this time
        finally:
            for discard in discards:
                side_writes.settle(discard)


def _commit_batch(tables: TableService, batch: list[Pending[CommitRequest]], discards: list[Future[object]]) -> None:
    table_uuid = batch[0].item.entry.id
    waiting = list(batch)
    lost: Attempt | None = None
    # Step 2 starts from this process's copy of the pointer when it has one (it wrote or read it last): the CAS
    # checks it, so a warm writer reads nothing before its writes. A copy is never trusted to refuse a request.
    copy = tables.pointers.cached(table_uuid)
    if copy is not None and (copy.pointer.dropped or copy.pointer.pending_txn is not None):
        copy = None
    lost_to_copy = 0
    confirmed: set[int] = set()  # members whose table the catalog check has confirmed
    for attempt in range(MAX_BATCH_ATTEMPTS + 1):
        try_started = time.monotonic()
        try:
            current = copy if copy is not None else tables.resolver.for_write(table_uuid)  # step 2
            landed = lost is not None and current is not None and _landed(
                tables, lost, current.pointer.current_metadata_location)
        except StorageError as exc:
            if lost is None:
                raise
            # The seed has a refused CAS checked against the pointer (a race with ourselves may have landed it):
            # until that check is made, the outcome is for recovery to find.
            raise CommitPointUnanswered(f"a refused compare-and-swap could not be checked: {exc}") from exc
        if lost is not None:
            if landed:
                lost.deliver()
                return
            # Beside the next try, not before it: a delete between the next try's pointer read and its writes (6-28
            # ms on SeaweedFS under load) widens the window in which a server committing from its own copy wins.
            discards.append(side_writes.SIDE.submit(contextvars.copy_context().run, discard_attempt, tables,
                                                    table_uuid, lost))
            if attempt == MAX_BATCH_ATTEMPTS:
                break
        if current is None or current.pointer.dropped:
            for pending in waiting:
                request = pending.item
                pending.fail(NoSuchTable(f"Table does not exist: {'.'.join((*request.namespace, request.name))}"))
            return
        base_location = current.pointer.current_metadata_location
        base = tables.files.read_base(base_location)  # step 3
        tried = plan_attempt(waiting, base, base_location, final=copy is None)  # steps 5-6
        if tried is None or (copy is not None and not tried.changed):
            # A request fails against the copy, or nothing changes it and the answer would be the copy: decide
            # against the pointer as it is.
            copy = None
            continue
        waiting = [pending for pending in waiting if not pending.done]
        if not tried.accepted:
            return  # every request failed against the table as it is: nothing to write
        unconfirmed = [p for p in tried.accepted if p.item.unconfirmed_since is not None and id(p) not in confirmed]
        check = None
        if unconfirmed:  # step 1's catalog check, beside the metadata file's write
            since = max(p.item.unconfirmed_since for p in unconfirmed)  # type: ignore[type-var]
            check = side_writes.SIDE.submit(tables.store.ensure_fresh, since)
        receipt = None
        try:
            try:
                if tried.changed:
                    receipt = write_attempt(tables, table_uuid, tried)  # steps 7-8
            finally:
                if check is not None:
                    check.result()
            moved = [p for p in unconfirmed if not _still_named(tables, p.item)]
            stale = [p for p in unconfirmed if p not in moved and not _view_holds(tables, p.item)]
            confirmed.update(id(p) for p in unconfirmed)
            unclaimed = [p for p in tried.accepted if p.item.gate is not None and not p.item.gate.holds()]
            elsewhere = [] if unclaimed else _landed_elsewhere(tables, table_uuid, tried, base_location, base)
            if moved or stale or unclaimed or elsewhere:  # those go the long way (the name names another table, or
                # none; or their grants may have changed), are answered by their claim, or landed through another
                # request with their key: nothing of theirs lands (again), and the rest try again
                for pending, location in elsewhere:
                    pending.succeed(Landed(CommitResult(location, tables.files.read(location)), location,
                                           changed=False))  # that request's receipt is the commit's
                for pending in moved:
                    pending.fail(NameMoved(f"{'.'.join((*pending.item.namespace, pending.item.name))} moved"))
                for pending in stale:
                    pending.fail(optimistic.StaleView("the catalog moved under the commit's view"))
                for pending in unclaimed:
                    if not pending.done:
                        pending.fail(ClaimNotOwned())
                discard_attempt(tables, table_uuid, tried)
                waiting = [pending for pending in waiting if not pending.done]
                if not waiting:
                    return
                continue
            _all_views_confirmed(tried)
            if not tried.changed:
                # Nothing to commit: the answer is the table as it is, checked as a commit's would be (the reference
                # does not commit a change-less update either, so the metadata log gets no empty version).
                tried.deliver()
                return
            # The pointer names one writer: the group's last member (each member's own source is in its receipt).
            proposed = pointer_for(table_uuid, tried.location, tried.metadata, base_location,  # type: ignore[arg-type]
                                   tried.accepted[-1].item.source)
            try:
                swapped = tables.pointers.swap(current.version, proposed).ok  # step 9, the commit point
            except WriteNotApplied:
                raise  # never sent, or refused in the store's answer: as any fault before the commit point
            except StorageError as exc:
                # It may still reach the store: the check of where it landed fences it first (run_once.check_landed).
                fence = functools.partial(tables.pointers.fence, current.version, current.pointer)
                raise CommitPointUnanswered(f"the pointer's compare-and-swap got no answer: {exc}", fence) from exc
        finally:
            side_writes.settle(receipt)  # after the CAS, or on whatever way this try ends: none outlives its request
        if swapped:
            tried.deliver()
            yield_to_other_servers(tables, table_uuid, time.monotonic() - try_started)
            return
        lost = tried
        if copy is not None:
            copy = None  # the copy was stale: another server committed since; no race to back off from yet
            lost_to_copy += 1
            continue
        time.sleep(backoff_delay(attempt - lost_to_copy, cap_s=BATCH_BACKOFF_CAP_S))
    for pending in waiting:
        pending.fail(CommitFailed(f"Commit failed: {pending.item.name} changed concurrently "
                                  f"{MAX_BATCH_ATTEMPTS} times; retry"))


def yield_to_other_servers(tables: TableService, table_uuid: str, try_s: float) -> None:
    """After a won swap: on a table another server commits to (this server lost a swap of it lately), a leader
    that has won :data:`YIELD_AFTER_WINS` times in a row holds the table's next batch at this server for one to one
    and a half of its own tries. A server that commits from its own copy of the pointer tries faster than one that
    must first read what the other wrote, so without this it wins nearly every race: with 16 writers over two
    servers on SeaweedFS, the other server's batch (and every request queued behind it) lost up to 40 times in a
    row. Requests that arrive during the hold join the next batch."""
    if tables.pointers.contended(table_uuid) and tables.pointers.won_in_a_row(table_uuid) >= YIELD_AFTER_WINS:
        tables.committer.delay_next_batch(table_uuid, random.uniform(1.0, 1.5) * try_s)


class NameMoved(Exception):
    """A commit went ahead on the table this process knew by that name; the catalog check found the name now names
    another table, or none. Nothing was committed: the caller resolves the name afresh and tries again."""

    runs_again = True  # not an outcome of its own (arco.metrics.counted_commit)


def _view_holds(tables: TableService, request: CommitRequest) -> bool:
    return request.view is None or tables.store.view_holds(request.view)


def _all_views_confirmed(tried: Attempt) -> None:
    """The net under the rule above (the batch writes for its members, so the storage layer's net, which knows the
    leader's view alone, cannot stand in for it): no CAS for a member whose view is unconfirmed."""
    if any(p.item.view is not None and not p.item.view.confirmed for p in tried.accepted):
        raise optimistic.StaleView("a commit under a catalog view that was not confirmed")


def _still_named(tables: TableService, request: CommitRequest) -> bool:
    assert request.catalog is not None
    now = tables.known_entry(request.catalog, request.namespace, request.name)  # the state the check brought
    return now is not None and now.id == request.entry.id


def _landed_elsewhere(tables: TableService, table_uuid: str, tried: Attempt, base_location: str,
                      base: TableMetadata) -> list[tuple[Pending[CommitRequest], str]]:
    """Members whose change another request with their Idempotency-Key has landed already (a retry that took the
    marker over while this one was paused, say), with the file it landed in: found in the base this try would swap
    against, so no swap can land the change a second time. File names carry a tag, which costs nothing to look
    for; a group's record is read only where the member's claim may have been shared (ClaimGate.shared)."""
    found: list[tuple[Pending[CommitRequest], str]] = []
    history: list[str] | None = None
    for pending in tried.accepted:
        request = pending.item
        if not request.replayable or request.tag is None:
            continue
        if history is None:
            history = history_of(base_location, base)
        in_groups = request.gate is None or request.gate.shared()
        location = find_tag(tables, table_uuid, history, request.tag, in_groups=in_groups)
        if location is not None:
            found.append((pending, location))
    return found


def history_of(location: str, metadata: TableMetadata) -> list[str]:
    """A table's metadata files, newest first: the current one, then its metadata log's."""
    return [location, *(entry.metadata_file for entry in reversed(metadata.metadata_log))]


def find_tag(tables: TableService, table_uuid: str, history: list[str], tag: str, *,
             in_groups: bool = True) -> str | None:
    """The file of ``history`` the commit tagged ``tag`` wrote: by the tag in its name, or (``in_groups``) in the
    record of a group's file."""
    carries = tag_finder(tag)
    for candidate in history:
        if carries(candidate):
            return candidate
        if in_groups and is_group_file(candidate):
            record = tables.groups.read(table_uuid, candidate)
            if record is not None and record.member_of(tag) is not None:
                return candidate
    return None


def _landed(tables: TableService, attempt: Attempt, current_location: str) -> bool:
    return attempt.landed_in(current_location, tables.files.read(current_location))


def write_member_receipt(tables: TableService, request: CommitRequest, landed: Landed) -> None:
    """Step 10 for one request: its own committed receipt (its source, the shared metadata file), best effort.
    A request that changed nothing committed nothing, and gets none."""
    if not landed.changed:
        return
    group = None
    if landed.group_size > 1:
        group = {"index": landed.member, "size": landed.group_size, "actions": request.member().actions}
    write_iceberg_receipt(tables.storage, "committed", table_uuid=request.entry.id,
                          metadata_location=landed.result.metadata_location, metadata=landed.result.metadata,
                          previous_metadata_location=landed.base_location, source=request.source,
                          identifier=request.identifier, member=landed.member, group=group, base=landed.base)


def identifier_of(catalog: CatalogEntry, namespace: NamespacePath, name: str) -> dict[str, Any]:
    return {"catalog": catalog.name, "namespace": list(namespace), "name": name}


def landed_location(tables: TableService, table_uuid: str, tag: str) -> str | None:
    """The metadata file written by the commit tagged ``tag``, if the table's history (current file and metadata
    log) contains it: by the tag in the file's name, or, for a group's file, in its group record. The log keeps
    ``write.metadata.previous-versions-max`` versions (100 by default), which bounds how many later commits a
    crashed commit can be recovered across."""
    current = tables.resolver.for_read(table_uuid)
    if current is None:
        return None
    location = current.pointer.current_metadata_location
    return find_tag(tables, table_uuid, history_of(location, tables.files.read(location)), tag)
