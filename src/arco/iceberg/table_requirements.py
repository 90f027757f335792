"""A table commit's requirements: parsed from the request (the spec's types only, as PyIceberg models them) and
checked against a base, failing in the reference implementation's words (``UpdateRequirement.java``). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import PARTITION_FIELD_ID_START
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.update import (
    AssertCreate,
    AssertCurrentSchemaId,
    AssertDefaultSortOrderId,
    AssertDefaultSpecId,
    AssertLastAssignedFieldId,
    AssertLastAssignedPartitionId,
    AssertRefSnapshotId,
    AssertTableUUID,
    TableRequirement,
)

from arco.iceberg.errors import BadRequest, CommitFailed
from arco.iceberg.malformed import MALFORMED, describe, parse_strictly

_requirements_adapter: TypeAdapter[list[TableRequirement]] = TypeAdapter(list[TableRequirement])

KNOWN_REQUIREMENT_TYPES = frozenset({
    "assert-create", "assert-table-uuid", "assert-ref-snapshot-id", "assert-last-assigned-field-id",
    "assert-current-schema-id", "assert-last-assigned-partition-id", "assert-default-spec-id",
    "assert-default-sort-order-id",
})


def requirement_objects(raw: Any) -> list[dict[str, Any]]:
    """A commit's ``requirements`` as the list of objects it must be (absent: none), before they are parsed."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
        raise BadRequest("'requirements' must be a list of objects")
    return raw


def parse_requirements(raw: Any) -> list[TableRequirement]:
    raw = requirement_objects(raw)
    unknown = sorted({str(r.get("type")) for r in raw if r.get("type") not in KNOWN_REQUIREMENT_TYPES})
    if unknown:
        raise BadRequest(f"unknown requirement types: {', '.join(unknown)}")
    try:
        return parse_strictly(_requirements_adapter, raw)
    except MALFORMED as exc:
        raise BadRequest(f"invalid requirement: {describe(exc)}") from None


def check_requirements(requirements: Sequence[TableRequirement], base: TableMetadata | None) -> None:
    """Raise :class:`CommitFailed` at the first requirement ``base`` (None: no table yet) does not meet, in the
    reference implementation's words (``UpdateRequirement.java``): clients and compatibility tests match on them."""
    for requirement in requirements:
        message = requirement_failure(requirement, base)
        if message is not None:
            raise CommitFailed(message)


def requirement_failure(requirement: TableRequirement, base: TableMetadata | None) -> str | None:
    """Why ``requirement`` fails against ``base``, or None if it holds."""
    if isinstance(requirement, AssertCreate):
        return "Requirement failed: table already exists" if base is not None else None
    if isinstance(requirement, AssertLastAssignedFieldId):
        # Java checks these two only against an existing table.
        if base is not None and base.last_column_id != requirement.last_assigned_field_id:
            return (f"Requirement failed: last assigned field id changed: expected id "
                    f"{requirement.last_assigned_field_id} != {base.last_column_id}")
        return None
    if isinstance(requirement, AssertLastAssignedPartitionId):
        found = _last_partition_id(base) if base is not None else None
        if base is not None and found != requirement.last_assigned_partition_id:
            return (f"Requirement failed: last assigned partition id changed: expected id "
                    f"{requirement.last_assigned_partition_id} != {found}")
        return None
    if base is None:
        return "Requirement failed: current table metadata is missing"
    if isinstance(requirement, AssertTableUUID):
        if str(requirement.uuid).lower() != str(base.table_uuid).lower():
            return f"Requirement failed: UUID does not match: expected {base.table_uuid} != {requirement.uuid}"
        return None
    if isinstance(requirement, AssertRefSnapshotId):
        ref = base.refs.get(requirement.ref)
        if ref is not None:
            kind = "branch" if ref.snapshot_ref_type == SnapshotRefType.BRANCH else "tag"
            if requirement.snapshot_id is None:
                return f"Requirement failed: {kind} {requirement.ref} was created concurrently"
            if requirement.snapshot_id != ref.snapshot_id:
                return (f"Requirement failed: {kind} {requirement.ref} has changed: expected id "
                        f"{requirement.snapshot_id} != {ref.snapshot_id}")
        elif requirement.snapshot_id is not None:
            return f"Requirement failed: branch or tag {requirement.ref} is missing, expected {requirement.snapshot_id}"
        return None
    if isinstance(requirement, AssertCurrentSchemaId):
        if requirement.current_schema_id != base.current_schema_id:
            return (f"Requirement failed: current schema changed: expected id {requirement.current_schema_id} != "
                    f"{base.current_schema_id}")
        return None
    if isinstance(requirement, AssertDefaultSpecId):
        if requirement.default_spec_id != base.default_spec_id:
            return (f"Requirement failed: default partition spec changed: expected id {requirement.default_spec_id}"
                    f" != {base.default_spec_id}")
        return None
    if isinstance(requirement, AssertDefaultSortOrderId):
        if requirement.default_sort_order_id != base.default_sort_order_id:
            return (f"Requirement failed: default sort order changed: expected id "
                    f"{requirement.default_sort_order_id} != {base.default_sort_order_id}")
        return None
    try:  # not reached for the spec's requirement types (parse_requirements admits only those)
        requirement.validate(base)
    except CommitFailedException as exc:
        return str(exc)
    return None


def _last_partition_id(base: TableMetadata) -> int:
    """The table's last assigned partition field id, as Java reports it (999 before any partition field)."""
    if base.last_partition_id is not None:
        return base.last_partition_id
    return max((f.field_id for spec in base.partition_specs for f in spec.fields), default=PARTITION_FIELD_ID_START - 1)
