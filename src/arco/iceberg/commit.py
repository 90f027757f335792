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
Steps 4, 8, 10 and 11 (idempotency marker and receipts) wrap this flow in :mod:`arco.iceberg.idempotency`
and :mod:`arco.iceberg.receipts` where they exist.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import AssertCreate

from arco.catalog.errors import AlreadyExistsError
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.catalog.names import check_name
from arco.iceberg import commit_rules
from arco.iceberg.errors import AlreadyExists, BadRequest, CommitFailed, IcebergError, NoSuchTable
from arco.iceberg.idempotency import IdempotencyMarkers, Marker, ReplayedError, is_deterministic, key_hash
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


@dataclass(frozen=True)
class Idempotency:
    """The Idempotency-Key of a request, with the markers to record it in."""

    markers: IdempotencyMarkers
    key: str
    request_hash: str


def commit_table(tables: TableService, catalog: CatalogEntry, namespace: NamespacePath, name: str, body: Any,
                 principal: str, source: dict[str, Any], idempotency: Idempotency | None = None) -> CommitResult:
    requirements, updates = parse_commit(body)
    if any(isinstance(r, AssertCreate) for r in requirements):
        return _create_by_commit(tables, catalog, namespace, name, requirements, updates, principal, source)
    entry = tables.entry(catalog, namespace, name)
    if idempotency is None:
        return _commit_with_retries(tables, entry, namespace, name, requirements, updates, source, uuid.uuid4().hex)

    claim = idempotency.markers.claim(entry.id, idempotency.key, idempotency.request_hash,
                                      landed=lambda hashed: landed_location(tables, entry.id, hashed))
    if claim.replay is not None:
        return replay(tables, claim.replay)
    try:
        suffix = f"{key_hash(idempotency.key)}-{uuid.uuid4().hex[:8]}"
        result = _commit_with_retries(tables, entry, namespace, name, requirements, updates, source, suffix)
    except IcebergError as exc:
        if is_deterministic(exc):
            idempotency.markers.failed(claim, exc)
        raise
    idempotency.markers.committed(claim, result.metadata_location)
    return result


def replay(tables: TableService, marker: Marker) -> CommitResult:
    """The answer given before for this key: the committed metadata (an immutable file), or the same error."""
    if marker.status == "FAILED":
        raise ReplayedError(marker)
    assert marker.metadata_location is not None
    return CommitResult(marker.metadata_location, tables.files.read(marker.metadata_location))


def landed_location(tables: TableService, table_uuid: str, hashed_key: str) -> str | None:
    """The metadata file written by the commit with this key, if the table's history contains it."""
    current = tables.resolver.for_read(table_uuid)
    if current is None:
        return None
    tag = f"-{hashed_key}-"
    location = current.pointer.current_metadata_location
    if tag in location.rsplit("/", 1)[-1]:
        return location
    for entry in tables.files.read(location).metadata_log:
        if tag in entry.metadata_file.rsplit("/", 1)[-1]:
            return entry.metadata_file
    return None


def _commit_with_retries(tables: TableService, entry: TableEntry, namespace: NamespacePath, name: str,
                         requirements: list[Any], updates: list[Any], source: dict[str, Any],
                         suffix: str) -> CommitResult:
    for _ in range(MAX_COMMIT_ATTEMPTS):
        change = prepare_change(tables, entry, namespace, name, requirements, updates, source, suffix)
        if tables.pointers.swap(change.base.version, change.proposed).ok:
            return CommitResult(change.proposed.current_metadata_location, change.metadata)
    raise CommitFailed(f"Commit failed: {name} changed concurrently {MAX_COMMIT_ATTEMPTS} times; retry")


@dataclass
class PreparedCommit(PreparedChange):
    metadata: TableMetadata


def prepare_change(tables: TableService, entry: TableEntry, namespace: NamespacePath, name: str,
                   requirements: list[Any], updates: list[Any], source: dict[str, Any],
                   suffix: str | None = None) -> PreparedCommit:
    """Steps 2-7: the current pointer, the base metadata, the checks, the new metadata file written."""
    commit_rules.check_guardrails(updates, allowed_location=entry.location)
    current = tables.resolver.for_write(entry.id)
    if current is None or current.pointer.dropped:
        raise NoSuchTable(f"Table does not exist: {'.'.join((*namespace, name))}")
    base_location = current.pointer.current_metadata_location
    base = tables.files.read(base_location)
    commit_rules.check_requirements(requirements, base)
    new = commit_rules.apply_updates(base, updates, base_location)
    location = metadata_file_location(new.location, metadata_sequence(base_location) + 1, suffix or uuid.uuid4().hex)
    tables.files.write(location, new)
    return PreparedCommit(entry, current, pointer_for(entry.id, location, new, base_location, source), new)


def commit_transaction(tables: TableService, catalog: CatalogEntry, body: Any, principal: str,
                       source: dict[str, Any]) -> None:
    """All table changes or none; see :mod:`arco.iceberg.transactions` for how."""
    changes = parse_table_changes(body)
    if len(changes) == 1:
        namespace, name, change = changes[0]
        commit_table(tables, catalog, namespace, name, change, principal, source)
        return
    parsed = [(namespace, name, *parse_commit(change)) for namespace, name, change in changes]
    if any(isinstance(r, AssertCreate) for _, _, requirements, _ in parsed for r in requirements):
        raise BadRequest("creating a table inside a multi-table transaction is not supported; create it first")
    entries = [tables.entry(catalog, namespace, name) for namespace, name, _, _ in parsed]
    for _ in range(MAX_COMMIT_ATTEMPTS):
        prepared = [prepare_change(tables, entry, namespace, name, requirements, updates, source)
                    for entry, (namespace, name, requirements, updates) in zip(entries, parsed)]
        if mark_and_commit(tables.resolver, list(prepared)):
            return
    raise CommitFailed(f"Commit failed: the tables changed concurrently {MAX_COMMIT_ATTEMPTS} times; retry")


def _create_by_commit(tables: TableService, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                      requirements: list[Any], updates: list[Any], principal: str,
                      source: dict[str, Any]) -> CommitResult:
    """The second half of a staged create (Spark CTAS/RTAS, DuckDB CREATE TABLE): ``assert-create`` + updates."""
    check_name("table", name)
    try:
        tables.entry_absent(catalog, namespace, name)
    except AlreadyExistsError:
        raise CommitFailed(f"Requirement failed: table already exists: {'.'.join((*namespace, name))}") from None
    commit_rules.check_requirements(requirements, None)
    new = commit_rules.apply_updates(None, updates, None)
    expected_prefix = tables.new_location(catalog, namespace, name, str(new.table_uuid))
    commit_rules.check_guardrails(updates, allowed_location=expected_prefix)
    if new.location.rstrip("/") != expected_prefix:
        raise BadRequest("the staged table's location must be the one Arco assigned when it was staged")
    location = metadata_file_location(new.location, 0, uuid.uuid4().hex)
    try:
        tables.register_new(catalog, namespace, name, new, location, principal, source)
    except (AlreadyExists, AlreadyExistsError) as exc:
        raise CommitFailed(f"Requirement failed: {exc}") from None
    return CommitResult(location, new)
