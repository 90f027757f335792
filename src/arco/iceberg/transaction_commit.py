"""The multi-table commit (``POST /v1/{prefix}/transactions/commit``): every table's steps 2-8 of the single
commit (:mod:`arco.iceberg.commit`), then one commit point for all of them by the protocol of
:mod:`arco.iceberg.transactions`; the committed receipts after the answer."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import AssertCreate

from arco.auth.principals import Principal
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.events import after_answer
from arco.events.receipts import IcebergReceiptKind, write_iceberg_receipt
from arco.iceberg import commit_rules, table_requirements
from arco.iceberg.commit import commit_table, find_tag, history_of, identifier_of, parse_commit
from arco.iceberg.errors import BadRequest, CommitFailed, NoSuchTable
from arco.iceberg.file_names import attempt_part, metadata_file_location, metadata_sequence
from arco.iceberg.tables import TableService, pointer_for
from arco.iceberg.transactions import PreparedChange, mark_and_commit, parse_table_changes

MAX_COMMIT_ATTEMPTS = 10


def commit_transaction(tables: TableService, catalog: CatalogEntry, body: Any, principal: str,
                       source: dict[str, Any], tag: str | None = None, who: Principal | None = None,
                       replayable: bool = False) -> None:
    """All table changes or none; see :mod:`arco.iceberg.transactions` for how. ``replayable``: the tag is an
    Idempotency-Key's, so another request with the key may have committed the transaction already (a retry that
    took the marker over while this one was paused): then nothing is applied a second time."""
    changes = parse_table_changes(body)
    if len(changes) == 1:
        namespace, name, change = changes[0]
        commit_table(tables, catalog, namespace, name, change, principal, source, tag, who, replayable=replayable)
        return
    parsed = [(namespace, name, *parse_commit(change)) for namespace, name, change in changes]
    if any(isinstance(r, AssertCreate) for _, _, requirements, _ in parsed for r in requirements):
        raise BadRequest("creating a table inside a multi-table transaction is not supported; create it first")
    entries = [tables.entry(catalog, namespace, name) for namespace, name, _, _ in parsed]
    identities = {entry.id: identifier_of(catalog, namespace, name)
                  for entry, (namespace, name, _, _) in zip(entries, parsed, strict=True)}
    for _ in range(MAX_COMMIT_ATTEMPTS):
        try:
            prepared = [prepare_change(tables, entry, namespace, name, requirements, updates, source, tag,
                                       replayable)
                        for entry, (namespace, name, requirements, updates) in zip(entries, parsed, strict=True)]
        except _AlreadyCommitted:
            return  # the files an earlier table's preparation wrote meanwhile are garbage collection's
        changed = [change for change in prepared if change.changed]  # receipts record changes, not requests
        for change in changed:
            write_change_receipt(tables, "pending", change, identities[change.entry.id])
        if mark_and_commit(tables.resolver, list(prepared)):
            for change in changed:  # after the answer (best effort), not one round trip each before it
                after_answer.write_later(functools.partial(write_change_receipt, tables, "committed", change,
                                                           identities[change.entry.id]))
            return
    raise CommitFailed(f"Commit failed: the tables changed concurrently {MAX_COMMIT_ATTEMPTS} times; retry")


@dataclass
class PreparedCommit(PreparedChange):
    metadata: TableMetadata
    changed: bool = True  # False: the table's updates changed nothing, so no file was written
    base_metadata: TableMetadata | None = None  # the version the change was made on, for the receipt's operation


class _AlreadyCommitted(Exception):
    """A table's base carries the transaction's Idempotency-Key tag: another request with the key committed it."""


def prepare_change(tables: TableService, entry: TableEntry, namespace: NamespacePath, name: str,
                   requirements: list[Any], updates: list[Any], source: dict[str, Any],
                   tag: str | None = None, replayable: bool = False) -> PreparedCommit:
    """Steps 2-7: the current pointer, the base metadata, the checks, the new metadata file written.

    A table whose updates change nothing gets no file: it stays at its base, and it still takes part in the commit
    point (its pointer is marked like the others'), so its requirements hold there too. A base that already
    carries a ``replayable`` tag raises :class:`_AlreadyCommitted`: the commit point marks the pointer at the
    version read here, so no mark can land the transaction a second time. (A transaction's files carry the tag
    in their names: it is never part of a group.)"""
    commit_rules.check_guardrails(updates, allowed_location=entry.location)
    current = tables.resolver.for_write(entry.id)
    if current is None or current.pointer.dropped:
        raise NoSuchTable(f"Table does not exist: {'.'.join((*namespace, name))}")
    base_location = current.pointer.current_metadata_location
    base = tables.files.read_base(base_location)
    if replayable and tag is not None and find_tag(tables, entry.id, history_of(base_location, base), tag,
                                                    in_groups=False) is not None:
        raise _AlreadyCommitted()
    table_requirements.check_requirements(requirements, base)
    running, changed = commit_rules.apply_member_updates(base, updates)
    if not changed:
        return PreparedCommit(entry, current, pointer_for(entry.id, base_location, base,
                                                          current.pointer.previous_metadata_location, source),
                              base, changed=False)
    new = commit_rules.close_group(base, running, base_location)
    location = metadata_file_location(new.location, metadata_sequence(base_location) + 1, attempt_part(tag),
                                      new.properties)
    tables.files.write(location, new)
    return PreparedCommit(entry, current, pointer_for(entry.id, location, new, base_location, source), new,
                          base_metadata=base)


def write_change_receipt(tables: TableService, kind: IcebergReceiptKind, change: PreparedCommit,
                         identity: dict[str, Any]) -> None:
    """Step 8 ("pending": the attempt, before the commit point) or step 10 ("committed", after it): best effort,
    the reconciler backfills committed receipts."""
    write_iceberg_receipt(tables.storage, kind, table_uuid=change.entry.id,
                          metadata_location=change.proposed.current_metadata_location, metadata=change.metadata,
                          previous_metadata_location=change.base.pointer.current_metadata_location,
                          source=change.proposed.updated_by, identifier=identity, base=change.base_metadata)
