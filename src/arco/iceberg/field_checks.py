"""Checks of a client's schema, partition spec and sort order that PyIceberg's models leave out, made before any
of them is stored: what they let through makes a table that Java's readers refuse (an id past Java's ``int``) or
that no writer can write (``bucket[0]`` divides by zero; an unknown transform or a missing source column fails
every append). The rules are the reference implementation's (``PartitionSpec.checkCompatibility``,
``SortOrder.checkCompatibility``, the table spec's ``int`` fields). Pure: each raises :class:`BadRequest`.
"""

from __future__ import annotations

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema, index_by_id
from pyiceberg.table.sorting import SortOrder
from pyiceberg.transforms import BucketTransform, Transform, TruncateTransform, UnknownTransform, VoidTransform

from arco.iceberg.errors import BadRequest

INT_MAX = 2**31 - 1  # the table spec's ids, bucket counts and truncate widths are Java ints


def _check_id(value: int | None, what: str) -> None:
    if value is not None and not 0 <= value <= INT_MAX:
        raise BadRequest(f"{what} {value} is out of range: ids are 0 to {INT_MAX}")


def check_schema(schema: Schema, what: str = "schema") -> None:
    """The schema's id and every field id (nested ones too: list elements, map keys and values) are ints."""
    _check_id(schema.schema_id, f"{what}'s schema-id")
    for field_id in index_by_id(schema):
        _check_id(field_id, f"{what}'s field id")


def check_transform(transform: Transform, what: str) -> None:
    if isinstance(transform, UnknownTransform):
        raise BadRequest(f"{what}: unknown transform; the transforms are identity, bucket[N], truncate[W], year, "
                         "month, day, hour and void")
    if isinstance(transform, BucketTransform) and not 0 < transform.num_buckets <= INT_MAX:
        raise BadRequest(f"{what}: {transform} has no bucket count from 1 to {INT_MAX}")
    if isinstance(transform, TruncateTransform) and not 0 < transform.width <= INT_MAX:
        raise BadRequest(f"{what}: {transform} has no width from 1 to {INT_MAX}")


def check_spec(spec: PartitionSpec, schema: Schema | None) -> None:
    """Ids in range, known transforms, and (against ``schema``, the table's current one; None: not known here)
    each field's source column present, primitive and of a type its transform takes. A void field (a v1 spec's
    dropped partition) may name a column that is gone."""
    _check_id(spec.spec_id, "partition spec's spec-id")
    for field in spec.fields:
        what = f"partition field '{field.name}'"
        _check_id(field.field_id, f"{what}'s field-id")
        _check_id(field.source_id, f"{what}'s source-id")
        check_transform(field.transform, what)
        if schema is not None and not isinstance(field.transform, VoidTransform):
            _check_source(schema, field.source_id, field.transform, what)


def check_sort_order(order: SortOrder, schema: Schema | None) -> None:
    """As :func:`check_spec`, for a sort order's fields."""
    _check_id(order.order_id, "sort order's order-id")
    for position, field in enumerate(order.fields):
        what = f"sort field {position}"
        _check_id(field.source_id, f"{what}'s source-id")
        check_transform(field.transform, what)
        if schema is not None:
            _check_source(schema, field.source_id, field.transform, what)


def _check_source(schema: Schema, source_id: int, transform: Transform, what: str) -> None:
    source = schema._lazy_id_to_field.get(source_id)  # every field, nested ones too
    if source is None:
        raise BadRequest(f"{what}: no column has field id {source_id} (source-id) in schema {schema.schema_id}")
    if not source.field_type.is_primitive:
        raise BadRequest(f"{what}: column '{source.name}' is a {source.field_type}, not a primitive type")
    if not transform.can_transform(source.field_type):
        raise BadRequest(f"{what}: {transform} does not apply to column '{source.name}' of type {source.field_type}")
