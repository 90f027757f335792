"""The table commit (seed section 5), each I/O step named so crash tests can stop between any two.

    1 resolve the table in Tier 1          (no lock; a cached identity and a freshness check)
    2 load the pointer and its version
    3 load the base metadata file          (cached by location: files are immutable)
    5 check the requirements               (pure, :mod:`arco.iceberg.commit_rules`)
    6 compute the new metadata             (pure)
    7 write the new metadata file          (create-only, name derived from the base sequence)
    9 pointer compare-and-swap             (the commit point)

On a lost pointer race the requirements are checked again against the new base and the updates re-applied, as
the reference implementation does (Spark retries a 409 only a few times, and Iceberg's compatibility kit expects
the server to absorb benign races); only a failed requirement, or running out of attempts, answers 409.
    8 pending receipt                      (best effort)
    10 committed receipt                   (best effort; the reconciler backfills)

Steps 4 and 11 (the Idempotency-Key marker) wrap this flow in :mod:`arco.iceberg.mutations`; the marker's tag
goes into the new metadata file's name, which is how a retry after a crash tells whether the commit landed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import AssertCreate

from arco.auth.principals import Principal
from arco.catalog import locations
from arco.catalog.errors import AlreadyExistsError
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.catalog.names import check_name
from arco.iceberg import commit_rules
from arco.events.receipts import write_iceberg_receipt
from arco.iceberg.errors import AlreadyExists, BadRequest, CommitFailed, NoSuchTable
from arco.iceberg.transactions import PreparedChange, mark_and_commit, parse_table_changes
from arco.iceberg.tables import (
    TableService,
    metadata_file_location,
    metadata_sequence,
    pointer_for,
)

MAX_COMMIT_ATTEMPTS = 10


@dataclass(frozen=True)
class CommitResult:
    metadata_location: str
    metadata: TableMetadata


def parse_commit(body: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    requirements = commit_rules.parse_requirements(body.get("requirements"))
    updates = commit_rules.parse_updates(body.get("updates", []))
    return requirements, updates


def commit_table(tables: TableService, catalog: CatalogEntry, namespace: NamespacePath, name: str, body: Any,
                 principal: str, source: dict[str, Any], tag: str | None = None,
                 who: Principal | None = None) -> CommitResult:
    """Commit one table; ``tag`` (an Idempotency-Key hash) goes into the new metadata file's name."""
    requirements, updates = parse_commit(body)
    if any(isinstance(r, AssertCreate) for r in requirements):
        return _create_by_commit(tables, catalog, namespace, name, requirements, updates, principal, source, tag,
                                 who)
    entry = tables.entry(catalog, namespace, name)
    identity = identifier_of(catalog, namespace, name)
    for _ in range(MAX_COMMIT_ATTEMPTS):
        change = prepare_change(tables, entry, namespace, name, requirements, updates, source, tag)
        write_pending_receipt(tables, change, identity)
        if tables.pointers.swap(change.base.version, change.proposed).ok:
            write_committed_receipt(tables, change, identity)
            return CommitResult(change.proposed.current_metadata_location, change.metadata)
    raise CommitFailed(f"Commit failed: {name} changed concurrently {MAX_COMMIT_ATTEMPTS} times; retry")


def identifier_of(catalog: CatalogEntry, namespace: NamespacePath, name: str) -> dict[str, Any]:
    return {"catalog": catalog.name, "namespace": list(namespace), "name": name}


def write_pending_receipt(tables: TableService, change: PreparedCommit, identity: dict[str, Any]) -> None:
    """Step 8: the attempt, recorded before the commit point (best effort)."""
    write_iceberg_receipt(tables.storage, "pending", table_uuid=change.entry.id,
                          metadata_location=change.proposed.current_metadata_location, metadata=change.metadata,
                          previous_metadata_location=change.base.pointer.current_metadata_location,
                          source=change.proposed.updated_by, identifier=identity)


def write_committed_receipt(tables: TableService, change: PreparedCommit, identity: dict[str, Any]) -> None:
    """Step 10: the commit, recorded after the commit point (best effort; the reconciler backfills)."""
    write_iceberg_receipt(tables.storage, "committed", table_uuid=change.entry.id,
                          metadata_location=change.proposed.current_metadata_location, metadata=change.metadata,
                          previous_metadata_location=change.base.pointer.current_metadata_location,
                          source=change.proposed.updated_by, identifier=identity)


def landed_location(tables: TableService, table_uuid: str, tag: str) -> str | None:
    """The metadata file written by the commit tagged ``tag``, if the table's history (current file and metadata
    log) contains it. The log keeps ``write.metadata.previous-versions-max`` versions (100 by default), which
    bounds how many later commits a crashed commit can be recovered across."""
    current = tables.resolver.for_read(table_uuid)
    if current is None:
        return None
    marker = f"-{tag}-"
    location = current.pointer.current_metadata_location
    if marker in location.rsplit("/", 1)[-1]:
        return location
    for entry in reversed(tables.files.read(location).metadata_log):
        if marker in entry.metadata_file.rsplit("/", 1)[-1]:
            return entry.metadata_file
    return None


@dataclass
class PreparedCommit(PreparedChange):
    metadata: TableMetadata


def prepare_change(tables: TableService, entry: TableEntry, namespace: NamespacePath, name: str,
                   requirements: list[Any], updates: list[Any], source: dict[str, Any],
                   tag: str | None = None) -> PreparedCommit:
    """Steps 2-7: the current pointer, the base metadata, the checks, the new metadata file written."""
    commit_rules.check_guardrails(updates, allowed_location=entry.location)
    current = tables.resolver.for_write(entry.id)
    if current is None or current.pointer.dropped:
        raise NoSuchTable(f"Table does not exist: {'.'.join((*namespace, name))}")
    base_location = current.pointer.current_metadata_location
    base = tables.files.read(base_location)
    commit_rules.check_requirements(requirements, base)
    new = commit_rules.apply_updates(base, updates, base_location)
    location = metadata_file_location(new.location, metadata_sequence(base_location) + 1, file_suffix(tag))
    tables.files.write(location, new)
    return PreparedCommit(entry, current, pointer_for(entry.id, location, new, base_location, source), new)


def file_suffix(tag: str | None) -> str:
    """A new metadata file's name after its sequence: unique per attempt, and carrying the request's tag."""
    return f"{tag}-{uuid.uuid4().hex[:8]}" if tag else uuid.uuid4().hex


def commit_transaction(tables: TableService, catalog: CatalogEntry, body: Any, principal: str,
                       source: dict[str, Any], tag: str | None = None, who: Principal | None = None) -> None:
    """All table changes or none; see :mod:`arco.iceberg.transactions` for how."""
    changes = parse_table_changes(body)
    if len(changes) == 1:
        namespace, name, change = changes[0]
        commit_table(tables, catalog, namespace, name, change, principal, source, tag, who)
        return
    parsed = [(namespace, name, *parse_commit(change)) for namespace, name, change in changes]
    if any(isinstance(r, AssertCreate) for _, _, requirements, _ in parsed for r in requirements):
        raise BadRequest("creating a table inside a multi-table transaction is not supported; create it first")
    entries = [tables.entry(catalog, namespace, name) for namespace, name, _, _ in parsed]
    identities = {entry.id: identifier_of(catalog, namespace, name)
                  for entry, (namespace, name, _, _) in zip(entries, parsed)}
    for _ in range(MAX_COMMIT_ATTEMPTS):
        prepared = [prepare_change(tables, entry, namespace, name, requirements, updates, source, tag)
                    for entry, (namespace, name, requirements, updates) in zip(entries, parsed)]
        for change in prepared:
            write_pending_receipt(tables, change, identities[change.entry.id])
        if mark_and_commit(tables.resolver, list(prepared)):
            for change in prepared:
                write_committed_receipt(tables, change, identities[change.entry.id])
            return
    raise CommitFailed(f"Commit failed: the tables changed concurrently {MAX_COMMIT_ATTEMPTS} times; retry")


def _create_by_commit(tables: TableService, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                      requirements: list[Any], updates: list[Any], principal: str,
                      source: dict[str, Any], tag: str | None, who: Principal | None) -> CommitResult:
    """The second half of a staged create (Spark CTAS/RTAS, DuckDB CREATE TABLE): ``assert-create`` + updates."""
    check_name("table", name)
    try:
        tables.entry_absent(catalog, namespace, name)
    except AlreadyExistsError:
        raise CommitFailed("Requirement failed: table already exists") from None
    commit_rules.check_requirements(requirements, None)
    new = commit_rules.apply_updates(None, updates, None)
    # A staged table lives where it was staged: the prefix Arco allocated to its uuid, or a location the caller
    # may use inside an external location (CREATE TABLE ... LOCATION); decided by the same rule as a create.
    with tables.store.read() as state:
        tables.placement(state, catalog, namespace, name, str(new.table_uuid), new.location, who)
    commit_rules.check_guardrails(updates, allowed_location=new.location)
    locations.check_write_paths(new.properties, new.location)
    location = metadata_file_location(new.location, 0, file_suffix(tag))
    try:
        tables.register_new(catalog, namespace, name, new, location, principal, source, tag=tag,
                            place=lambda state: tables.placement(state, catalog, namespace, name,
                                                                 str(new.table_uuid), new.location, who))
    except (AlreadyExists, AlreadyExistsError):
        raise CommitFailed("Requirement failed: table already exists") from None
    return CommitResult(location, new)
