"""The pure core of a table commit: parse requirements and updates, apply the guardrails, check the requirements
against a base, and compute the new metadata. No I/O; every function returns a new value or raises.

PyIceberg's models (``pyiceberg.table.update``) cover every update and requirement type of the REST spec except
the encryption-key updates, and its appliers already implement most of the spec's rules (``-1`` for the last
added schema, sequence-number checks, snapshot-log maintenance), so they are used as they are, with three
exceptions where the reference implementation (Apache Iceberg Java) differs and clients depend on it:

* requirements are checked with Java's exact words (clients and Iceberg's CatalogTests match them), in
  :mod:`arco.iceberg.table_requirements`;
* added schemas, partition specs and sort orders get their ids as Java's ``TableMetadata.Builder`` gives them (reuse an
  identical one, else the highest id + 1), before the appliers run (:func:`assign_added_ids`);
* ``upgrade-format-version`` admits format v3 (PyIceberg's applier stops at v2), with row lineage and the
  fields' default values kept; defaults on an older format are refused, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import INITIAL_PARTITION_SPEC_ID as INITIAL_SPEC_ID
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import INITIAL_SCHEMA_ID, Schema
from pyiceberg.table.metadata import SnapshotLogEntry, TableMetadata, TableMetadataUtil, TableMetadataV1
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.table.sorting import INITIAL_SORT_ORDER_ID, UNSORTED_SORT_ORDER_ID, SortOrder
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AddSortOrderUpdate,
    AssignUUIDUpdate,
    RemovePartitionSpecsUpdate,
    RemovePartitionStatisticsUpdate,
    RemovePropertiesUpdate,
    RemoveSchemasUpdate,
    RemoveSnapshotsUpdate,
    RemoveStatisticsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    SetLocationUpdate,
    SetPartitionStatisticsUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    SetStatisticsUpdate,
    TableUpdate,
    UpgradeFormatVersionUpdate,
    # PyIceberg's per-update appliers and their context, run by Arco's own loop (see _update_metadata).
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)
from pyiceberg.utils.datetime import datetime_to_millis

from arco.catalog import locations
from arco.iceberg import field_checks, json_shapes
from arco.iceberg.errors import BadRequest, CommitFailed, InvalidArgument
from arco.iceberg.log_cut import after_last_gap
from arco.iceberg.malformed import MALFORMED, check_schema_limits, describe, parse_strictly
from arco.storage.urls import same_place, within

RESERVED_PROPERTY_PREFIX = "arco."

_updates_adapter: TypeAdapter[list[TableUpdate]] = TypeAdapter(list[TableUpdate])

KNOWN_UPDATE_ACTIONS = frozenset({
    "assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec", "set-default-spec",
    "add-sort-order", "set-default-sort-order", "add-snapshot", "set-snapshot-ref", "remove-snapshots",
    "remove-snapshot-ref", "set-location", "set-properties", "remove-properties", "set-statistics",
    "remove-statistics", "remove-partition-specs", "remove-schemas", "set-partition-statistics",
    "remove-partition-statistics",
})
# In the spec but without a model in PyIceberg; refused clearly rather than misapplied.
UNSUPPORTED_UPDATE_ACTIONS = frozenset({"add-encryption-key", "remove-encryption-key"})


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
        values = update.get("updates")
        if update.get("action") == "set-properties" and not (
                isinstance(values, dict) and all(isinstance(v, str) for v in values.values())):
            raise BadRequest("set-properties: 'updates' must be an object of string values")
        _check_json_types(update)
    try:
        for update in raw:
            if update.get("action") == "add-schema":
                check_schema_limits(update.get("schema"), "add-schema's schema")
        return parse_strictly(_updates_adapter, raw)
    except MALFORMED as exc:
        raise BadRequest(f"invalid update: {describe(exc)}") from None


def _check_json_types(update: dict[str, Any]) -> None:
    """The parts of an update PyIceberg builds without strict types (see :mod:`arco.iceberg.json_shapes`)."""
    action = update.get("action")
    if action == "add-schema":
        json_shapes.check_schema_json(update.get("schema"), "add-schema's schema")
    elif action == "add-spec":
        json_shapes.check_spec_json(update.get("spec"), "add-spec's spec")
    elif action == "add-sort-order":
        json_shapes.check_order_json(update.get("sort-order"), "add-sort-order's sort order")
    elif action == "add-snapshot":
        json_shapes.check_summary_json(update.get("snapshot"))


def check_reserved_properties(keys: Sequence[str]) -> None:
    reserved = sorted(k for k in keys if k.lower().startswith(RESERVED_PROPERTY_PREFIX))
    if reserved:
        raise BadRequest(f"properties under '{RESERVED_PROPERTY_PREFIX}*' are reserved for Arco: {', '.join(reserved)}")


# Table properties the server itself reads as integers (the metadata log's length, when a commit writes it): a value
# Java would not parse as an int would fail every later commit of the table.
SERVER_INT_PROPERTIES = ("write.metadata.previous-versions-max",)
_JAVA_INT = re.compile(r"[-+]?[0-9]{1,10}")


def check_property_values(properties: Mapping[str, str]) -> None:
    for key in SERVER_INT_PROPERTIES:
        value = properties.get(key)
        if value is not None and not (_JAVA_INT.fullmatch(value) and -(2**31) <= int(value) < 2**31):
            raise BadRequest(f"table property {key} must be an integer, got {value[:40]!r}")


def check_guardrails(updates: Sequence[TableUpdate], allowed_location: str | None) -> None:
    """Seed section 1.3: Arco owns table locations and the ``arco.*`` properties; and every path a table tells
    engines to write to stays inside the table's own prefix (:mod:`arco.catalog.locations`).

    ``allowed_location`` is the location the table has (or was assigned when staged); setting it to itself is not a
    move (clients creating or replacing a table send exactly that), whatever its spelling.
    """
    for update in updates:
        if isinstance(update, SetLocationUpdate) and not same_place(update.location, allowed_location):
            where = f"this table's is {allowed_location}; " if allowed_location else ""
            raise BadRequest(f"set-location to another place is refused: Arco owns table locations ({where}create a "
                             f"new table to move data, or register it from an external location)")
        if isinstance(update, SetPropertiesUpdate):
            check_reserved_properties(list(update.updates))
            check_property_values(update.updates)
            if allowed_location:
                locations.check_write_paths(update.updates, allowed_location)
        if isinstance(update, RemovePropertiesUpdate):
            check_reserved_properties(update.removals)
        if isinstance(update, AddSnapshotUpdate) and allowed_location and update.snapshot.manifest_list and \
                not within(locations.canonical(update.snapshot.manifest_list, "manifest-list"),
                           locations.canonical(allowed_location)):
            # A snapshot pointing into another table would let snapshot expiry delete that table's files.
            raise BadRequest("add-snapshot: the manifest list must lie inside the table's location")
        statistics = (update.statistics if isinstance(update, SetStatisticsUpdate) else
                      update.partition_statistics if isinstance(update, SetPartitionStatisticsUpdate) else None)
        if statistics is not None and allowed_location and not within(
                locations.canonical(statistics.statistics_path, "statistics-path"),
                locations.canonical(allowed_location)):
            # Maintenance deletes the statistics files of expired snapshots: as for a manifest list.
            raise BadRequest(f"{update.action}: the statistics file must lie inside the table's location")


def empty_metadata() -> TableMetadata:
    """The base a create-commit (``assert-create``) applies its updates to, as PyIceberg's catalogs do."""
    return TableMetadataV1.model_construct(last_column_id=-1, schema=Schema())


def with_row_lineage(metadata: TableMetadata) -> TableMetadata:
    """Format v3 tables track ``next-row-id`` from 0 (spec: row lineage); PyIceberg leaves it unset on new and
    upgraded tables, which would make every later snapshot's row ids unassignable."""
    if metadata.format_version >= 3 and getattr(metadata, "next_row_id", 0) is None:
        return metadata.model_copy(update={"next_row_id": 0})
    return metadata


def _same_spec(a: PartitionSpec, b: PartitionSpec) -> bool:
    """Java's ``PartitionSpec.compatibleWith``: the same fields (source, transform, name) in the same order."""
    def shape(spec: PartitionSpec) -> list[tuple[int, str, str]]:
        return [(f.source_id, str(f.transform), f.name) for f in spec.fields]
    return shape(a) == shape(b)


def _same_order(a: SortOrder, b: SortOrder) -> bool:
    """Java's ``SortOrder.sameOrder``: the same fields, whatever the ids."""
    def shape(order: SortOrder) -> list[tuple[int, str, Any, Any]]:
        return [(f.source_id, str(f.transform), f.direction, f.null_order) for f in order.fields]
    return shape(a) == shape(b)


def _same_schema(a: Schema, b: Schema) -> bool:
    """Java's ``Schema.sameSchema``: the same struct (field ids, names, types, docs, defaults) and identifier
    fields, whatever the ids of the schemas."""
    return a.fields == b.fields and set(a.identifier_field_ids) == set(b.identifier_field_ids)


def only_present_removals(base: TableMetadata, updates: Sequence[TableUpdate]) -> list[TableUpdate]:
    """The updates with each ``remove-properties`` naming only the keys present when it applies: removing an absent
    property changes nothing, as in the reference implementation (PyIceberg's applier raises ``KeyError`` instead,
    which was a 500)."""
    present = set(base.properties)
    out: list[TableUpdate] = []
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            present |= set(update.updates)
        elif isinstance(update, RemovePropertiesUpdate):
            update = RemovePropertiesUpdate(removals=[key for key in update.removals if key in present])
            present -= set(update.removals)
        out.append(update)
    return out


class _AddedIds:
    """The ids of one kind of thing a commit adds (schemas, partition specs or sort orders), as the reference
    implementation's ``TableMetadata.Builder`` chooses them: an identical existing one's id is reused, otherwise
    ``fresh_id`` of the ids in use."""

    def __init__(self, kind: str, existing: dict[int, Any], id_field: str, same: Callable[[Any, Any], bool],
                 fresh_id: Callable[[dict[int, Any], Any], int]) -> None:
        self.kind = kind
        self.existing = existing
        self.id_field = id_field
        self.same = same
        self.fresh_id = fresh_id
        self.last: int | None = None

    def add(self, item: Any) -> Any | None:
        """``item`` with the id it gets, or None when an identical one exists (the add is no change)."""
        same = next((i for i, old in self.existing.items() if self.same(old, item)), None)
        if same is not None:
            self.last = same
            return None
        self.last = self.fresh_id(self.existing, item)
        added = item.model_copy(update={self.id_field: self.last})
        self.existing[self.last] = added
        return added

    def last_added(self, update: str) -> int:
        """The id a ``-1`` in ``update`` names: the one the last add resolved to."""
        if self.last is None:
            raise BadRequest(f"{update} -1: no {self.kind} has been added")
        return self.last

    def remove(self, ids: Sequence[int]) -> None:
        self.existing = {i: item for i, item in self.existing.items() if i not in ids}


def _next_id(initial: int) -> Callable[[dict[int, Any], Any], int]:
    return lambda existing, _: max((i + 1 for i in existing), default=initial)


def _next_order_id(existing: dict[int, Any], order: SortOrder) -> int:
    return UNSORTED_SORT_ORDER_ID if order.is_unsorted else max([INITIAL_SORT_ORDER_ID, *(i + 1 for i in existing)])


def assign_added_ids(base: TableMetadata, updates: Sequence[TableUpdate]) -> list[TableUpdate]:
    """The updates with the ids of added schemas, partition specs and sort orders chosen as the reference
    implementation chooses them (see :class:`_AddedIds`), whatever id the client sent (or left out: a schema
    without an id was stored as a second schema 0); a ``-1`` in a later ``set-current-schema`` /
    ``set-default-spec`` / ``set-default-sort-order`` names the one the last add resolved to. Two writers that
    each added "spec 1" or "order 1" to the same base (concurrent replace transactions) thus both land, with
    distinct ids. Removals of no schemas or specs are no changes, and are dropped."""
    schemas = _AddedIds("schema", {s.schema_id: s for s in base.schemas}, "schema_id", _same_schema,
                        _next_id(INITIAL_SCHEMA_ID))
    specs = _AddedIds("partition spec", {s.spec_id: s for s in base.partition_specs}, "spec_id", _same_spec,
                      _next_id(INITIAL_SPEC_ID))
    orders = _AddedIds("sort order", {o.order_id: o for o in base.sort_orders}, "order_id", _same_order,
                       _next_order_id)
    current_schema = base.current_schema_id
    out: list[TableUpdate] = []
    for update in updates:
        if isinstance(update, AddSchemaUpdate):
            field_checks.check_schema(update.schema_, "add-schema's schema")
            if (schema := schemas.add(update.schema_)) is not None:
                out.append(update.model_copy(update={"schema_": schema}))
        elif isinstance(update, AddPartitionSpecUpdate):
            # Checked against the current schema as the update finds it, as the reference implementation does.
            field_checks.check_spec(update.spec, schemas.existing.get(current_schema))
            if (spec := specs.add(update.spec)) is not None:
                out.append(AddPartitionSpecUpdate(spec=spec))
        elif isinstance(update, AddSortOrderUpdate):
            field_checks.check_sort_order(update.sort_order, schemas.existing.get(current_schema))
            if (order := orders.add(update.sort_order)) is not None:
                out.append(AddSortOrderUpdate(sort_order=order))
        elif isinstance(update, SetCurrentSchemaUpdate):
            current_schema = schemas.last_added("set-current-schema") if update.schema_id == -1 else update.schema_id
            out.append(SetCurrentSchemaUpdate(schema_id=current_schema))
        elif isinstance(update, SetDefaultSpecUpdate) and update.spec_id == -1:
            out.append(SetDefaultSpecUpdate(spec_id=specs.last_added("set-default-spec")))
        elif isinstance(update, SetDefaultSortOrderUpdate) and update.sort_order_id == -1:
            out.append(SetDefaultSortOrderUpdate(sort_order_id=orders.last_added("set-default-sort-order")))
        elif isinstance(update, RemoveSchemasUpdate):
            if update.schema_ids:
                schemas.remove(update.schema_ids)
                out.append(update)
        elif isinstance(update, RemovePartitionSpecsUpdate):
            if update.spec_ids:
                specs.remove(update.spec_ids)
                out.append(update)
        else:
            out.append(update)
    return out


# -- format v3 --------------------------------------------------------------------------------------------------

MAX_FORMAT_VERSION = 3
_DEFAULT_KEYS = ("initial-default", "write-default")


def keep_field_defaults(fresh: Schema, original: Schema) -> Schema:
    """``fresh`` (``original`` with fresh field ids, as PyIceberg assigns them on create) with the fields' default
    values (``initial-default`` / ``write-default``, format v3) that the id assignment drops put back."""
    source = original.model_dump(by_alias=True, exclude_none=True)
    target = fresh.model_dump(by_alias=True, exclude_none=True)
    if not _copy_defaults(source, target):
        return fresh
    return Schema.model_validate(target)


def _copy_defaults(source: Any, target: Any) -> bool:
    """Copy the default values of every field of type ``source`` onto the same field of ``target`` (the same
    shape, other ids); True if there were any."""
    if not isinstance(source, dict) or not isinstance(target, dict):
        return False
    copied = False
    if "fields" in source and "fields" in target:
        for src, dst in zip(source["fields"], target["fields"], strict=True):
            for key in _DEFAULT_KEYS:
                if key in src:
                    dst[key] = src[key]
                    copied = True
            copied = _copy_defaults(src.get("type"), dst.get("type")) or copied
    for key in ("element", "key", "value"):
        copied = _copy_defaults(source.get(key), target.get(key)) or copied
    return copied


def check_field_defaults(schema: Schema, format_version: int) -> None:
    """Default values need format v3 (Java refuses them on older tables the same way): refused, never dropped."""
    if format_version >= 3:
        return
    for field in schema._lazy_id_to_field.values():
        for value, kind in ((field.initial_default, "initial"), (field.write_default, "write")):
            if value is not None:
                raise InvalidArgument(f"Invalid {kind} default for {field.name}: non-null default ({value}) is not "
                                      f"supported until v3; create the table with format-version 3")


def _upgrade_format_version(update: UpgradeFormatVersionUpdate, base: TableMetadata,
                            context: _TableMetadataUpdateContext) -> TableMetadata:
    """PyIceberg's applier stops at v2; Arco writes v3 (row lineage starts at ``next-row-id`` 0, as in Java)."""
    if update.format_version > MAX_FORMAT_VERSION:
        raise InvalidArgument(f"Unsupported table format version: {update.format_version} (Arco supports up to "
                              f"{MAX_FORMAT_VERSION})")
    if update.format_version < base.format_version:
        raise InvalidArgument(f"Cannot downgrade v{base.format_version} table to v{update.format_version}")
    if update.format_version == base.format_version:
        return base
    context.add_update(update)
    upgraded = TableMetadataUtil._construct_without_validation(
        base.model_copy(update={"format_version": update.format_version}))
    return with_row_lineage(upgraded)


def stale_snapshot(snapshot: Snapshot, metadata: TableMetadata) -> str | None:
    """Why ``snapshot`` was built on an older state of the table than ``metadata`` (None: it was not), in Java's
    words. The writer must rebuild it on the table as it is, so the answer is a retryable 409, as the reference
    answers it (``RetryableValidationException``); PyIceberg's applier checks the sequence number on v2 alone."""
    if metadata.format_version >= 2 and snapshot.parent_snapshot_id is not None and \
            snapshot.sequence_number is not None and snapshot.sequence_number <= metadata.last_sequence_number:
        return (f"Cannot add snapshot with sequence number {snapshot.sequence_number} older than last sequence "
                f"number {metadata.last_sequence_number}")
    next_row_id = getattr(metadata, "next_row_id", None)
    if metadata.format_version >= 3 and snapshot.first_row_id is not None and next_row_id is not None and \
            snapshot.first_row_id < next_row_id:
        return f"Cannot add a snapshot, first-row-id is behind table next-row-id: {snapshot.first_row_id} < " \
               f"{next_row_id}"
    return None


def _remove_snapshots(update: RemoveSnapshotsUpdate, metadata: TableMetadata,
                      context: _TableMetadataUpdateContext) -> TableMetadata:
    """As the reference's ``TableMetadata.Builder`` removes snapshots: ids the table no longer has are skipped (two
    expiries racing, or a retry), and each removed snapshot's statistics and partition statistics go with it.
    PyIceberg's applier refuses an unknown id and keeps partition statistics; it also blanks the parent of a
    removed snapshot's children and drops just the removed entries from the snapshot log, where the reference
    keeps snapshots as written and cuts the log (:func:`snapshot_log_without`)."""
    present = {snapshot.snapshot_id for snapshot in metadata.snapshots}
    removed = [snapshot_id for snapshot_id in update.snapshot_ids if snapshot_id in present]
    if not removed:
        return metadata
    new = _apply_table_update(RemoveSnapshotsUpdate(snapshot_ids=removed), metadata, context)
    for snapshot_id in {p.snapshot_id for p in new.partition_statistics} & set(removed):
        new = _apply_table_update(RemovePartitionStatisticsUpdate(snapshot_id=snapshot_id), new, context)
    kept = [snapshot for snapshot in metadata.snapshots if snapshot.snapshot_id not in set(removed)]
    return new.model_copy(update={
        "snapshots": kept,
        "snapshot_log": snapshot_log_without(metadata.snapshot_log, {s.snapshot_id for s in kept})})


def snapshot_log_without(log: list[SnapshotLogEntry], kept: set[int]) -> list[SnapshotLogEntry]:
    """The snapshot log once the snapshots not in ``kept`` are gone, as Java's ``updateSnapshotLog`` makes it
    (:mod:`arco.iceberg.log_cut`)."""
    return after_last_gap(log, kept, lambda entry: entry.snapshot_id)


def _apply_one(update: TableUpdate, metadata: TableMetadata, context: _TableMetadataUpdateContext,
               creating: bool = False) -> TableMetadata:
    """One update; ``creating``: the table's first metadata, whose uuid its create assigns."""
    if isinstance(update, AssignUUIDUpdate) and not creating and update.uuid != metadata.table_uuid:
        # The spec: "It is not safe to re-assign the UUID if a table/view already has a UUID assigned" (clients
        # that loaded the table refuse it from then on); refused as a view's is.
        raise ValueError("Cannot reassign uuid")
    if isinstance(update, SetSnapshotRefUpdate) and update.ref_name == MAIN_BRANCH and \
            update.type != SnapshotRefType.BRANCH:
        raise ValueError(f"Cannot set {MAIN_BRANCH} to a tag, it must be a branch")  # Java's rule and words
    if isinstance(update, UpgradeFormatVersionUpdate):
        return _upgrade_format_version(update, metadata, context)
    if isinstance(update, RemoveSnapshotsUpdate):
        return _remove_snapshots(update, metadata, context)
    # Removing statistics a snapshot no longer has changes nothing, as in the reference: Spark's expire_snapshots
    # sends remove-statistics after the remove-snapshots that already took them.
    if isinstance(update, RemoveStatisticsUpdate) and \
            all(s.snapshot_id != update.snapshot_id for s in metadata.statistics):
        return metadata
    if isinstance(update, RemovePartitionStatisticsUpdate) and \
            all(s.snapshot_id != update.snapshot_id for s in metadata.partition_statistics):
        return metadata
    if isinstance(update, AddSnapshotUpdate):
        if metadata.format_version >= 3 and update.snapshot.added_rows is None:
            raise BadRequest("add-snapshot: a format v3 snapshot needs added-rows (row lineage)")
        stale = stale_snapshot(update.snapshot, metadata)
        if stale is not None:
            raise CommitFailed(f"Validation failed, please retry: {stale}")
    return _apply_table_update(update, metadata, context)


def _update_metadata(base: TableMetadata, updates: Sequence[TableUpdate], enforce_validation: bool,
                     metadata_location: str | None,
                     context: _TableMetadataUpdateContext | None = None) -> TableMetadata:
    """``pyiceberg.table.update.update_table_metadata``, step for step, with format v3 upgrades admitted and
    removals of absent properties ignored."""
    context = context if context is not None else _TableMetadataUpdateContext()
    new = base
    for update in only_present_removals(base, updates):
        new = _apply_one(update, new, context, creating=enforce_validation)
    if context.has_changes():
        if metadata_location:
            new = _update_table_metadata_log(new, metadata_location, base.last_updated_ms)
        if base.last_updated_ms == new.last_updated_ms:
            new = new.model_copy(update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    new.spec().check_compatible(new.schema())
    new.sort_order().check_compatible(new.schema())
    # Checked at the end: a create transaction may add its schema before upgrading to v3.
    added = {u.schema_.schema_id for u in updates if isinstance(u, AddSchemaUpdate)}
    for schema in new.schemas:
        if schema.schema_id in added or schema.schema_id == new.current_schema_id:
            check_field_defaults(schema, new.format_version)
    if enforce_validation:
        return TableMetadataUtil.parse_obj(new.model_dump())
    # PyIceberg deep-copies here; Arco does not. The models are frozen and every applier builds new containers, so
    # the new metadata may share what did not change with its (cached, never mutated) base. The copy costs 40 ms
    # for a table of 1,000 snapshots, on every commit's critical path, and grows with the table's history.
    return new


def apply_member_updates(running: TableMetadata, updates: Sequence[TableUpdate]) -> tuple[TableMetadata, bool]:
    """One request of a group commit: :func:`apply_updates` on an existing table, without the metadata-log entry
    (the group adds one entry, for its base, in :func:`close_group`); and whether anything changed."""
    start = with_row_lineage(running)
    with _update_errors():
        context = _TableMetadataUpdateContext()
        new = _update_metadata(start, assign_added_ids(start, updates), enforce_validation=False,
                               metadata_location=None, context=context)
        return with_row_lineage(new), context.has_changes()


def close_group(base: TableMetadata, new: TableMetadata, base_location: str) -> TableMetadata:
    """The metadata a group commit that changed something writes: its members' changes, and the base in the
    metadata log (once), exactly as :func:`apply_updates` would have logged a single commit. A group that changed
    nothing writes nothing (its callers answer the base)."""
    try:
        return _update_table_metadata_log(new, base_location, base.last_updated_ms)
    except ValueError as exc:  # a table property it reads that no check here let in (a table registered with it)
        raise InvalidArgument(f"cannot apply the updates: {exc}") from None


def apply_updates(base: TableMetadata | None, updates: Sequence[TableUpdate],
                  base_location: str | None) -> TableMetadata:
    """The new metadata; ``base_location`` (the base's metadata file) goes into the metadata log."""
    start = with_row_lineage(base) if base is not None else empty_metadata()
    with _update_errors():
        new = _update_metadata(start, assign_added_ids(start, updates), enforce_validation=base is None,
                               metadata_location=base_location)
        return with_row_lineage(new)


@contextmanager
def _update_errors() -> Iterator[None]:
    """The appliers' failures as the API's: a requirement PyIceberg checks is a 409, a model the request's values
    do not fit a 400, a rule of the spec broken Java's IllegalArgumentException (400)."""
    try:
        yield
    except CommitFailedException as exc:
        raise CommitFailed(str(exc)) from None
    except ValidationError as exc:  # a model the request's values do not fit (pydantic's is a ValueError too)
        raise BadRequest(f"cannot apply the updates: {exc}") from None
    except (ValueError, IcebergValidationError) as exc:  # a rule of the spec: Java's IllegalArgumentException
        raise InvalidArgument(f"cannot apply the updates: {exc}") from None
