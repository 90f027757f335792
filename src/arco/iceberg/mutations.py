"""Every Iceberg mutation, run at most once per Idempotency-Key (seed sections 3 and 3.7).

Each mutation is three small parts: the work (a service call that leaves the key's tag where its change lands),
the outcome it answers with, and the recovery that tells, after a crash, whether the tagged change landed:

* namespace and table create/drop/rename/properties, register, staged-create commits: the change is one Tier 1
  operation carrying the tag, found in the log after the position the marker noted when it was claimed;
* table commits and transactions: the new metadata files carry the tag in their names, found in the table's
  history (for a transaction, the first table's history says it all: its tables change together or not at all).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyiceberg.table.update import AssertCreate

from arco import metrics, optimistic
from arco.auth.principals import Principal
from arco.catalog.errors import CatalogError
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.catalog.store import CatalogStore
from arco.events import after_answer
from arco.iceberg import commit, transaction_commit
from arco.iceberg.claim_beside import ClaimGate, ClaimNotOwned, run_beside_claim
from arco.iceberg.errors import IcebergError, from_catalog_error
from arco.iceberg.idempotency import (
    IdempotencyMarkers,
    Keyed,
    Marker,
    Outcome,
    Recover,
    check_key,
    request_hash,
)
from arco.iceberg.namespaces import NamespaceService, properties_answer
from arco.iceberg.run_once import NotLanded, NotStarted, is_deterministic, not_landed, run_once, settle_unkeyed
from arco.iceberg.tables import TableService
from arco.iceberg.transactions import parse_table_changes
from arco.storage.base import StorageError


@dataclass(frozen=True)
class Caller:
    """Who asks, and under which Idempotency-Key (None: no key sent)."""

    principal: str
    source: dict[str, Any]
    key: str | None = None
    who: Principal | None = None  # the caller's identity, for decisions about locations it names


def catalog_scope(catalog: CatalogEntry) -> str:
    """Where a catalog's Idempotency-Key markers live: one key names one request in the catalog, whatever it is."""
    return f"catalog-{catalog.id}"


def keyed_on(markers: IdempotencyMarkers, catalog: CatalogEntry, key: str, operation: str, target: str,
             body: Any, principal: str, subject: str) -> Keyed:
    """The key of a change that lands in one table's (or view's) history, ``subject``: its marker is the catalog's,
    so that a retry after the name moved to another object is answered as the first request was, and recovery
    looks in ``subject``'s history."""
    return Keyed(markers, catalog_scope(catalog), key, operation, request_hash(operation, target, body),
                 principal=principal, subject=subject)


class Mutations:
    def __init__(self, store: CatalogStore, namespaces: NamespaceService, tables: TableService,
                 markers: IdempotencyMarkers) -> None:
        self.store = store
        self.namespaces = namespaces
        self.tables = tables
        self.markers = markers

    # -- keys ------------------------------------------------------------------------------------------------

    def _catalog_keyed(self, caller: Caller, catalog: CatalogEntry, operation: str, target: str,
                       body: Any, subject: str | None = None) -> Keyed | None:
        if caller.key is None:
            return None
        key = check_key(caller.key)
        self.store.ensure_fresh()
        return Keyed(self.markers, catalog_scope(catalog), key, operation, request_hash(operation, target, body),
                     tier1_seq=self.store.seq, principal=caller.principal, subject=subject)

    def _tier1_recovery(self, outcome_of: Callable[[dict[str, Any]], Outcome]) -> Recover:
        def recover(marker: Marker) -> Outcome | None:
            found = self.store.find_request(marker.tier1_seq or 0, marker.hashed_key)
            return outcome_of(found[1]) if found is not None else None

        return recover

    # -- namespaces ------------------------------------------------------------------------------------------

    def create_namespace(self, catalog: CatalogEntry, body: dict[str, Any], caller: Caller) -> Outcome:
        keyed = self._catalog_keyed(caller, catalog, "createNamespace", "", body)
        return run_once(
            keyed,
            lambda tag: Outcome(200, self.namespaces.create(catalog, body.get("namespace"), body.get("properties"),
                                                            caller.principal, caller.source, tag, who=caller.who)),
            self._tier1_recovery(lambda op: Outcome(200, {"namespace": op["path"], "properties": op["properties"]})),
        )

    def drop_namespace(self, catalog: CatalogEntry, path: NamespacePath, caller: Caller) -> Outcome:
        keyed = self._catalog_keyed(caller, catalog, "dropNamespace", _dotted(path), None)

        def work(tag: str | None) -> Outcome:
            self.namespaces.drop(catalog, path, caller.principal, caller.source, tag)
            return Outcome(204)

        return run_once(keyed, work, self._tier1_recovery(lambda op: Outcome(204)))

    def update_namespace_properties(self, catalog: CatalogEntry, path: NamespacePath, body: dict[str, Any],
                                    caller: Caller) -> Outcome:
        keyed = self._catalog_keyed(caller, catalog, "updateProperties", _dotted(path), body)
        return run_once(
            keyed,
            lambda tag: Outcome(200, self.namespaces.update_properties(catalog, path, body, caller.principal,
                                                                       caller.source, tag)),
            self._tier1_recovery(lambda op: Outcome(200, properties_answer(op["summary"]))),
        )

    # -- tables ----------------------------------------------------------------------------------------------

    def _table_created(self) -> Recover:
        return self._tier1_recovery(lambda op: Outcome(200, metadata_location=op["metadata_location"]))

    def create_table(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any],
                     caller: Caller) -> Outcome:
        keyed = self._catalog_keyed(caller, catalog, "createTable", _dotted(namespace), body)

        def work(tag: str | None, gate: ClaimGate | None = None) -> Outcome:
            location, _ = self.tables.create(catalog, namespace, body, caller.principal, caller.source, tag,
                                             who=caller.who, gate=gate)
            return Outcome(200, metadata_location=location)

        with after_answer.answer_first():  # the committed receipt once the marker is final
            if keyed is None:
                return work(None)
            # The claim beside the metadata file, asked before the pointer: a keyed create waits for three writes
            # in a row (file, pointer, Tier 1 entry), as one without a key does.
            return run_beside_claim(keyed, work, self._table_created())

    def register_table(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any],
                       caller: Caller) -> Outcome:
        keyed = self._catalog_keyed(caller, catalog, "registerTable", _dotted(namespace), body)

        def work(tag: str | None) -> Outcome:
            location, _ = self.tables.register(catalog, namespace, body, caller.principal, caller.source, tag,
                                               who=caller.who)
            return Outcome(200, metadata_location=location)

        with after_answer.answer_first():  # the committed receipt once the marker is final
            return run_once(keyed, work, self._table_created())

    def commit_table(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, body: dict[str, Any],
                     caller: Caller) -> Outcome:
        # One catalog check for the whole commit, however many parts ask; the committed receipt (best effort)
        # once the marker is final: the answer does not wait for it (arco.events.after_answer).
        with CatalogStore.fresh_as_of(), after_answer.answer_first():
            return self._commit_table(catalog, namespace, name, body, caller)

    def _commit_table(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, body: dict[str, Any],
                      caller: Caller) -> Outcome:
        def work(tag: str | None, gate: ClaimGate | None = None) -> Outcome:
            with metrics.counted_commit():  # only attempts: a replayed Idempotency-Key answer is no commit
                try:
                    result = commit.commit_table(self.tables, catalog, namespace, name, body, caller.principal,
                                                 caller.source, tag, caller.who, gate)
                except Exception:
                    if gate is not None and not gate.holds():  # the claim answers (a replay, say): not counted
                        raise ClaimNotOwned() from None
                    raise
            return Outcome(200, metadata_location=result.metadata_location)

        requirements, _ = commit.parse_commit(body)
        if caller.key is None:
            if any(isinstance(r, AssertCreate) for r in requirements):
                self.store.confirm_view()  # a staged create writes before any check of its own
                return work(None)
            # An internal tag in the new metadata file's name lets this server tell, should storage fail, whether
            # the commit landed, and answer CommitStateUnknown only when that cannot be read either.
            # The table this process knows (the commit confirms it beside its first write) or, failing that, a
            # lookup; a commit that finds the name moved (commit.NameMoved) committed nothing, and is made again
            # against the name as it is now.
            known = None if self.store.is_fresh() else self.tables.known_entry(catalog, namespace, name)
            table_uuid = known.id if known is not None else self.tables.entry(catalog, namespace, name).id
            optimistic.table_found()
            tag = uuid.uuid4().hex
            try:
                try:
                    return work(tag)
                except commit.NameMoved:
                    self.store.ensure_fresh(time.monotonic())
                    table_uuid = self.tables.entry(catalog, namespace, name).id
                    return work(tag)
            except NotLanded as exc:
                raise not_landed(exc, "updateTable", keyed=False) from exc.fault
            except StorageError as exc:
                def recover() -> Outcome | None:
                    location = commit.landed_location(self.tables, table_uuid, tag)
                    return Outcome(200, metadata_location=location) if location is not None else None

                return settle_unkeyed(recover, exc, "updateTable")
        target = _dotted((*namespace, name))
        if any(isinstance(r, AssertCreate) for r in requirements):  # a staged create: the table is new
            return run_once(self._catalog_keyed(caller, catalog, "updateTable", target, body), work,
                            self._table_created(), commit_route=True)
        key = check_key(caller.key)
        known = None if self.store.is_fresh() else self.tables.known_entry(catalog, namespace, name)
        if known is not None:
            try:
                return self._keyed_commit_of_known_table(catalog, namespace, name, known, key, target, body, work,
                                                         caller.principal)
            except _MovedUnderKey:
                pass  # the name names another table (or none) now: its marker is released; go the long way
        self.store.confirm_view()
        entry = self.tables.entry(catalog, namespace, name)
        keyed = keyed_on(self.markers, catalog, key, "updateTable", target, body, caller.principal, entry.id)
        return run_beside_claim(keyed, work, self._commit_recovery(entry.id), commit_route=True)

    def _keyed_commit_of_known_table(self, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                                     known: TableEntry, key: str, target: str, body: dict[str, Any],
                                     work: Callable[[str, ClaimGate], Outcome], principal: str) -> Outcome:
        """The table's uuid, which this process knows, is where the change lands (the marker's subject): the
        commit goes ahead on that knowledge, its claim beside it, and the catalog check beside the metadata file's
        write (as for a commit without a key). If the check finds the name names another table now, nothing
        landed: the claim is released (as for any attempt that did not land) and :class:`_MovedUnderKey` sends the
        caller the long way, which resolves the name first."""
        optimistic.table_found()  # before the check starts: it decides whether the view holds

        def work_on_known(tag: str, gate: ClaimGate) -> Outcome:
            try:
                return work(tag, gate)
            except commit.NameMoved as exc:
                raise _MovedUnderKey() from exc
            except (CatalogError, IcebergError) as exc:
                if not is_deterministic(exc if isinstance(exc, IcebergError) else from_catalog_error(exc)):
                    raise
                # The marker records a refusal, so it must not rest on unchecked knowledge (the commit checks the
                # catalog only once it reaches its first write): confirm the view, and that the name still names
                # the table, first.
                self.store.confirm_view()
                now = self.tables.known_entry(catalog, namespace, name)
                if now is None or now.id != known.id:
                    raise _MovedUnderKey() from None
                raise

        keyed = keyed_on(self.markers, catalog, key, "updateTable", target, body, principal, known.id)
        return run_beside_claim(keyed, work_on_known, self._commit_recovery(known.id), commit_route=True)

    def _commit_recovery(self, table_uuid: str) -> Recover:
        def recover(marker: Marker) -> Outcome | None:  # the marker's table: the name may name another one now
            location = commit.landed_location(self.tables, marker.subject or table_uuid, marker.hashed_key)
            return Outcome(200, metadata_location=location) if location is not None else None

        return recover

    def commit_transaction(self, catalog: CatalogEntry, body: dict[str, Any], caller: Caller) -> Outcome:
        with after_answer.answer_first():  # the committed receipts once the marker is final
            return self._commit_transaction(catalog, body, caller)

    def _commit_transaction(self, catalog: CatalogEntry, body: dict[str, Any], caller: Caller) -> Outcome:
        def work(tag: str | None) -> Outcome:
            with metrics.counted_commit():
                transaction_commit.commit_transaction(self.tables, catalog, body, caller.principal, caller.source,
                                                      tag, caller.who, replayable=caller.key is not None)
            return Outcome(204)

        namespace, name, _ = parse_table_changes(body)[0]
        first = self.tables.entry(catalog, namespace, name)
        if caller.key is None:
            tag = uuid.uuid4().hex  # as for a single commit: tells, should storage fail, whether it landed
            try:
                return work(tag)
            except StorageError as exc:
                def landed() -> Outcome | None:
                    return Outcome(204) if commit.landed_location(self.tables, first.id, tag) is not None else None

                return settle_unkeyed(landed, exc, "commitTransaction")
        recover_first = self._commit_recovery(first.id)
        keyed = self._catalog_keyed(caller, catalog, "commitTransaction", "", body, subject=first.id)
        return run_once(keyed, work, lambda marker: Outcome(204) if recover_first(marker) is not None else None,
                        commit_route=True)

    def drop_table(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, purge: bool,
                   caller: Caller) -> Outcome:
        """Drop; the outcome keeps the table's location (not sent: a 204 has no body) for a purge on replay."""
        keyed = self._catalog_keyed(caller, catalog, "dropTable", _dotted((*namespace, name)), {"purge": purge})

        def work(tag: str | None) -> Outcome:
            entry = self.tables.drop(catalog, namespace, name, caller.principal, caller.source, tag)
            return Outcome(204, {"id": entry.id, "catalog_id": entry.catalog_id, "location": entry.location,
                                 "managed": entry.managed})

        def finish_drop(op: dict[str, Any]) -> Outcome:
            self.tables.tombstone(op["id"])  # the crash may have come between the Tier 1 drop and the tombstone
            return Outcome(204, {k: op.get(k) for k in ("id", "catalog_id", "location", "managed")})

        return run_once(keyed, work, self._tier1_recovery(finish_drop))

    def unregister_table(self, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                         caller: Caller) -> Outcome:
        """Unregister (the catalog forgets the table, its files stay); answers the last metadata location."""
        keyed = self._catalog_keyed(caller, catalog, "unregisterTable", _dotted((*namespace, name)), None)

        def work(tag: str | None) -> Outcome:
            _, location = self.tables.unregister(catalog, namespace, name, caller.principal, caller.source, tag)
            return Outcome(200, metadata_location=location)

        def finish_unregister(op: dict[str, Any]) -> Outcome:
            self.tables.tombstone(op["id"])  # the crash may have come between the Tier 1 drop and the tombstone
            return Outcome(200, metadata_location=self.tables.last_metadata_location(op["id"]))

        return run_once(keyed, work, self._tier1_recovery(finish_unregister))

    def rename_table(self, catalog: CatalogEntry, body: dict[str, Any], source: tuple[NamespacePath, str],
                     target: tuple[NamespacePath, str], caller: Caller) -> Outcome:
        keyed = self._catalog_keyed(caller, catalog, "renameTable", "", body)

        def work(tag: str | None) -> Outcome:
            self.tables.rename(catalog, source[0], source[1], target[0], target[1], caller.principal,
                               caller.source, tag)
            return Outcome(204)

        return run_once(keyed, work, self._tier1_recovery(lambda op: Outcome(204)))


class _MovedUnderKey(NotStarted):
    """The table a keyed commit's marker was claimed for is no longer the one its name names."""



def _dotted(path: tuple[str, ...]) -> str:
    return "\x1f".join(path)
