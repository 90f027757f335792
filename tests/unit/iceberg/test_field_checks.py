"""What PyIceberg's models let through in a client's schema, spec, order and summary, refused before storing."""

from __future__ import annotations

import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform, VoidTransform, parse_transform
from pyiceberg.types import DateType, ListType, LongType, NestedField, StructType

from arco.iceberg import field_checks, json_shapes
from arco.iceberg.errors import BadRequest

SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "d", DateType()),
                NestedField(3, "s", StructType(NestedField(4, "x", LongType()))), schema_id=0)


def spec(*fields: PartitionField) -> PartitionSpec:
    return PartitionSpec(*fields, spec_id=1)


def test_ids_past_a_java_int_are_refused_at_any_depth() -> None:
    field_checks.check_schema(SCHEMA)
    nested = Schema(NestedField(1, "l", ListType(2**31, LongType())), schema_id=0)
    with pytest.raises(BadRequest, match="field id 2147483648"):
        field_checks.check_schema(nested)
    with pytest.raises(BadRequest, match="schema-id"):
        field_checks.check_schema(Schema(NestedField(1, "a", LongType()), schema_id=-1))


@pytest.mark.parametrize("transform, words", [
    ("bucket[0]", "bucket count"), ("bucket[2147483648]", "bucket count"), ("truncate[0]", "width"),
    ("bogus", "unknown transform"),
])
def test_transforms_no_writer_can_apply_are_refused(transform: str, words: str) -> None:
    with pytest.raises(BadRequest, match=words):
        field_checks.check_spec(spec(PartitionField(1, 1000, parse_transform(transform), "p")), SCHEMA)


def test_a_partition_source_must_be_a_primitive_column_its_transform_takes() -> None:
    field_checks.check_spec(spec(PartitionField(2, 1000, DayTransform(), "d_day"),
                                 PartitionField(1, 1001, BucketTransform(16), "b")), SCHEMA)
    with pytest.raises(BadRequest, match="no column has field id 9"):
        field_checks.check_spec(spec(PartitionField(9, 1000, IdentityTransform(), "p")), SCHEMA)
    with pytest.raises(BadRequest, match="not a primitive type"):
        field_checks.check_spec(spec(PartitionField(3, 1000, IdentityTransform(), "p")), SCHEMA)
    with pytest.raises(BadRequest, match="does not apply"):
        field_checks.check_spec(spec(PartitionField(1, 1000, DayTransform(), "p")), SCHEMA)
    # A v1 spec's dropped partition is a void field whose column may be gone.
    field_checks.check_spec(spec(PartitionField(9, 1000, VoidTransform(), "gone")), SCHEMA)
    # Without a schema (none known), only the ids and the transforms are checked.
    field_checks.check_spec(spec(PartitionField(9, 1000, IdentityTransform(), "p")), None)


def test_a_sort_source_must_exist() -> None:
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform()), order_id=1)
    field_checks.check_sort_order(order, SCHEMA)
    with pytest.raises(BadRequest, match="no column has field id 8"):
        field_checks.check_sort_order(SortOrder(SortField(source_id=8, transform=IdentityTransform()), order_id=1),
                                      SCHEMA)


@pytest.mark.parametrize("schema, words", [
    ({"type": "struct", "fields": [{"id": "1", "name": "a", "required": False, "type": "long"}]}, "'id'"),
    ({"type": "struct", "fields": [{"id": 1, "name": "a", "required": 1, "type": "long"}]}, "'required'"),
    ({"type": "struct", "fields": [{"id": True, "name": "a", "required": False, "type": "long"}]}, "'id'"),
    ({"type": "struct", "schema-id": 0.0, "fields": []}, "'schema-id'"),
    ({"type": "struct", "fields": [{"id": 1, "name": "", "required": False, "type": "long"}]}, "'name' is empty"),
    ({"type": "struct", "identifier-field-ids": ["1"], "fields": []}, "'identifier-field-ids'"),
    ({"type": "struct", "fields": [{"id": 1, "name": "m", "required": False, "type": {
        "type": "map", "key-id": 2, "key": "long", "value-id": 3, "value": {
            "type": "list", "element-id": 4, "element": "long", "element-required": "no"},
        "value-required": False}}]}, "'element-required'"),
])
def test_schema_json_of_the_wrong_types_is_refused(schema: dict, words: str) -> None:
    with pytest.raises(BadRequest, match=words):
        json_shapes.check_schema_json(schema)


def test_well_typed_json_passes() -> None:
    json_shapes.check_schema_json({"type": "struct", "schema-id": 0, "identifier-field-ids": [1], "fields": [
        {"id": 1, "name": "a", "required": True, "type": "long", "doc": "x"},
        {"id": 2, "name": "l", "required": False, "type": {
            "type": "list", "element-id": 3, "element": "long", "element-required": False}}]})
    json_shapes.check_spec_json({"spec-id": 0, "fields": [
        {"source-id": 1, "field-id": 1000, "name": "p", "transform": "identity"}]})
    json_shapes.check_order_json({"order-id": 1, "fields": [
        {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]})
    json_shapes.check_summary_json({"summary": {"operation": "append", "added-files": "1"}})


def test_spec_order_and_summary_json_of_the_wrong_types_are_refused() -> None:
    with pytest.raises(BadRequest, match="'source-id'"):
        json_shapes.check_spec_json({"fields": [{"source-id": "1", "name": "p", "transform": "identity"}]})
    with pytest.raises(BadRequest, match="'transform' is missing"):
        json_shapes.check_spec_json({"fields": [{"source-id": 1, "name": "p"}]})
    with pytest.raises(BadRequest, match="'null-order'"):
        json_shapes.check_order_json({"order-id": 1, "fields": [
            {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": 1}]})
    with pytest.raises(BadRequest, match="added-files"):
        json_shapes.check_summary_json({"summary": {"operation": "append", "added-files": 1}})
