"""The pure core of a table commit: parse requirements and updates, apply the guardrails, check the requirements
against a base, and compute the new metadata. No I/O; every function returns a new value or raises.

PyIceberg's models (``pyiceberg.table.update``) cover every update and requirement type of the REST spec except
the encryption-key updates, and its appliers already implement the spec's rules (``-1`` for the last added
schema/spec/sort order, sequence-number checks, snapshot-log maintenance), so they are used as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    RemovePropertiesUpdate,
    TableRequirement,
    TableUpdate,
    update_table_metadata,
)

from arco.catalog import locations
from arco.iceberg.errors import BadRequest, CommitFailed
from arco.storage.urls import BadLocation, normalize, within

RESERVED_PROPERTY_PREFIX = "arco."

_updates_adapter: TypeAdapter[list[TableUpdate]] = TypeAdapter(list[TableUpdate])
_requirements_adapter: TypeAdapter[list[TableRequirement]] = TypeAdapter(list[TableRequirement])

KNOWN_UPDATE_ACTIONS = frozenset({
    "assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec", "set-default-spec",
    "add-sort-order", "set-default-sort-order", "add-snapshot", "set-snapshot-ref", "remove-snapshots",
    "remove-snapshot-ref", "set-location", "set-properties", "remove-properties", "set-statistics",
    "remove-statistics", "remove-partition-specs", "remove-schemas", "set-partition-statistics",
    "remove-partition-statistics",
})
# In the spec but without a model in PyIceberg; refused clearly rather than misapplied.
UNSUPPORTED_UPDATE_ACTIONS = frozenset({"add-encryption-key", "remove-encryption-key"})
KNOWN_REQUIREMENT_TYPES = frozenset({
    "assert-create", "assert-table-uuid", "assert-ref-snapshot-id", "assert-last-assigned-field-id",
    "assert-current-schema-id", "assert-last-assigned-partition-id", "assert-default-spec-id",
    "assert-default-sort-order-id",
})


def _describe(error: ValidationError) -> str:
    parts = []
    for e in error.errors()[:5]:
        where = ".".join(str(p) for p in e["loc"])
        parts.append(f"{where}: {e['msg']}" if where else e["msg"])
    return "; ".join(parts)


def parse_updates(raw: Any) -> list[TableUpdate]:
    if not isinstance(raw, list) or not all(isinstance(u, dict) for u in raw):
        raise BadRequest("'updates' must be a list of objects")
    actions = [u.get("action") for u in raw]
    unknown = sorted({str(a) for a in actions if a not in KNOWN_UPDATE_ACTIONS and a not in UNSUPPORTED_UPDATE_ACTIONS})
    if unknown:
        raise BadRequest(f"unknown update types: {', '.join(unknown)}")
    unsupported = sorted({a for a in actions if a in UNSUPPORTED_UPDATE_ACTIONS})
    if unsupported:
        raise BadRequest(f"unsupported update types: {', '.join(unsupported)} (table encryption is not supported)")
    for update in raw:
        # PyIceberg turns non-string property values into strings; the spec allows only strings.
        if update.get("action") == "set-properties" and not all(
                isinstance(v, str) for v in (update.get("updates") or {}).values()):
            raise BadRequest("set-properties: property values must be strings")
    try:
        return _updates_adapter.validate_python(raw)
    except ValidationError as exc:
        raise BadRequest(f"invalid update: {_describe(exc)}") from None


def parse_requirements(raw: Any) -> list[TableRequirement]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise BadRequest("'requirements' must be a list of objects")
    unknown = sorted({str(r.get("type")) for r in raw if r.get("type") not in KNOWN_REQUIREMENT_TYPES})
    if unknown:
        raise BadRequest(f"unknown requirement types: {', '.join(unknown)}")
    try:
        return _requirements_adapter.validate_python(raw)
    except ValidationError as exc:
        raise BadRequest(f"invalid requirement: {_describe(exc)}") from None


def check_reserved_properties(keys: Sequence[str]) -> None:
    reserved = sorted(k for k in keys if k.lower().startswith(RESERVED_PROPERTY_PREFIX))
    if reserved:
        raise BadRequest(f"properties under '{RESERVED_PROPERTY_PREFIX}*' are reserved for Arco: {', '.join(reserved)}")


def check_guardrails(updates: Sequence[TableUpdate], allowed_location: str | None) -> None:
    """Seed section 1.3: Arco owns table locations and the ``arco.*`` properties; and every path a table tells
    engines to write to stays inside the table's own prefix (:mod:`arco.catalog.locations`).

    ``allowed_location`` is the location the table has (or was assigned when staged); setting it to itself is not a
    move (clients creating or replacing a table send exactly that), whatever its spelling.
    """
    for update in updates:
        if isinstance(update, SetLocationUpdate) and not _same_place(update.location, allowed_location):
            raise BadRequest("set-location is not allowed: Arco owns table locations (create a new table to move "
                             "data, or register it from an external location)")
        if isinstance(update, SetPropertiesUpdate):
            check_reserved_properties(list(update.updates))
            if allowed_location:
                locations.check_write_paths(update.updates, allowed_location)
        if isinstance(update, RemovePropertiesUpdate):
            check_reserved_properties(update.removals)
        if isinstance(update, AddSnapshotUpdate) and allowed_location and update.snapshot.manifest_list and \
                not within(locations.canonical(update.snapshot.manifest_list, "manifest-list"),
                           locations.canonical(allowed_location)):
            # A snapshot pointing into another table would let snapshot expiry delete that table's files.
            raise BadRequest("add-snapshot: the manifest list must lie inside the table's location")


def _same_place(a: str, b: str | None) -> bool:
    try:
        return b is not None and normalize(a) == normalize(b)
    except BadLocation:
        return False


def check_requirements(requirements: Sequence[TableRequirement], base: TableMetadata | None) -> None:
    for requirement in requirements:
        try:
            requirement.validate(base)
        except CommitFailedException as exc:
            raise CommitFailed(f"Requirement failed: {exc}") from None


def empty_metadata() -> TableMetadata:
    """The base a create-commit (``assert-create``) applies its updates to, as PyIceberg's catalogs do."""
    return TableMetadataV1.model_construct(last_column_id=-1, schema=Schema())


def with_row_lineage(metadata: TableMetadata) -> TableMetadata:
    """Format v3 tables track ``next-row-id`` from 0 (spec: row lineage); PyIceberg leaves it unset on new and
    upgraded tables, which would make every later snapshot's row ids unassignable."""
    if metadata.format_version >= 3 and getattr(metadata, "next_row_id", 0) is None:
        return metadata.model_copy(update={"next_row_id": 0})
    return metadata


def apply_updates(base: TableMetadata | None, updates: Sequence[TableUpdate], base_location: str | None) -> TableMetadata:
    """The new metadata; ``base_location`` (the base's metadata file) goes into the metadata log."""
    try:
        new = update_table_metadata(
            with_row_lineage(base) if base is not None else empty_metadata(),
            tuple(updates),
            enforce_validation=base is None,
            metadata_location=base_location,
        )
        return with_row_lineage(new)
    except CommitFailedException as exc:
        raise CommitFailed(str(exc)) from None
    except (ValueError, ValidationError) as exc:
        raise BadRequest(f"cannot apply the updates: {exc}") from None
