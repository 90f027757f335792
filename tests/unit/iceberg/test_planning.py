"""Scan planning's pure parts: the request and its filter JSON (a decision table), residuals written back, values
in single-value serialization, and file scan tasks as ContentFile JSON."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from pyiceberg import expressions as ex
from pyiceberg.expressions.visitors import bind
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from arco.iceberg.errors import BadRequest
from arco.iceberg.planner import inherit_first_row_id
from arco.iceberg.planning import (
    bind_filter,
    expression_json,
    parse_expression,
    parse_scan_request,
    single_value_json,
)
from arco.iceberg.scan_tasks import PlannedTask, TaskWriter, v3_field

SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "cat", StringType()),
                NestedField(3, "ts", TimestampType()),
                NestedField(4, "loc", StructType(NestedField(5, "city", StringType()))))

PARSED: list[tuple[Any, ex.BooleanExpression]] = [
    (True, ex.AlwaysTrue()),
    (False, ex.AlwaysFalse()),
    ({"type": "true"}, ex.AlwaysTrue()),
    ({"type": "false"}, ex.AlwaysFalse()),
    ({"type": "is-null", "term": "id"}, ex.IsNull("id")),
    ({"type": "not-null", "child": {"type": "reference", "name": "id"}}, ex.NotNull("id")),
    ({"type": "is-nan", "child": "id"}, ex.IsNaN("id")),
    ({"type": "not-nan", "term": "id"}, ex.NotNaN("id")),
    ({"type": "lt", "term": "id", "value": 3}, ex.LessThan("id", 3)),
    ({"type": "lt-eq", "left": "id", "right": 3}, ex.LessThanOrEqual("id", 3)),
    ({"type": "gt", "left": {"type": "reference", "name": "id"}, "right": {"type": "literal", "value": 3}},
     ex.GreaterThan("id", 3)),
    ({"type": "gt-eq", "term": "id", "value": 3}, ex.GreaterThanOrEqual("id", 3)),
    ({"type": "eq", "term": "cat", "value": "a"}, ex.EqualTo("cat", "a")),
    ({"type": "not-eq", "term": "cat", "value": "a"}, ex.NotEqualTo("cat", "a")),
    ({"type": "starts-with", "term": "cat", "value": "a"}, ex.StartsWith("cat", "a")),
    ({"type": "not-starts-with", "term": "cat", "value": "a"}, ex.NotStartsWith("cat", "a")),
    ({"type": "in", "term": "id", "values": [1, 2]}, ex.In("id", {1, 2})),
    ({"type": "not-in", "child": "id", "values": {"type": "literals", "values": [1], "data-type": "long"}},
     ex.NotIn("id", {1})),
    ({"type": "and", "left": True, "right": {"type": "eq", "term": "id", "value": 1}},
     ex.And(ex.AlwaysTrue(), ex.EqualTo("id", 1))),
    ({"type": "or", "left": {"type": "eq", "term": "id", "value": 1},
      "right": {"type": "eq", "term": "id", "value": 2}},
     ex.Or(ex.EqualTo("id", 1), ex.EqualTo("id", 2))),
    ({"type": "not", "child": {"type": "eq", "term": "loc.city", "value": "x"}}, ex.Not(ex.EqualTo("loc.city", "x"))),
    ({"type": "EQ", "term": "id", "value": 1}, ex.EqualTo("id", 1)),
]


@pytest.mark.parametrize(("raw", "expected"), PARSED)
def test_expression_json_is_read_as_pyiceberg_reads_it(raw: Any, expected: ex.BooleanExpression) -> None:
    assert parse_expression(raw) == expected


REFUSED: list[tuple[Any, str]] = [
    ("id = 1", "must be true, false or an object"),
    ({"term": "id"}, "must be true, false or an object"),
    ({"type": "between", "term": "id"}, "unknown expression type"),
    ({"type": "and", "left": True}, "needs right"),
    ({"type": "not"}, "needs child"),
    ({"type": "true", "extra": 1}, "unexpected fields"),
    ({"type": "eq", "term": "id"}, "needs a value"),
    ({"type": "eq", "term": "id", "value": None}, "primitive value"),
    ({"type": "eq", "term": "id", "value": [1]}, "primitive value"),
    ({"type": "eq", "term": "id", "value": {"type": "literal"}}, "must be a literal"),
    ({"type": "eq", "value": 1}, "needs a field reference"),
    ({"type": "eq", "term": {"type": "reference", "id": 1}, "value": 1}, "by field id"),
    ({"type": "eq", "term": {"type": "transform", "transform": "day", "term": "ts"}, "value": 1}, "transform"),
    ({"type": "in", "term": "id", "values": 1}, "list of literals"),
    ({"type": "in", "term": "id"}, "needs values"),
    ({"type": "is-null", "term": "id", "value": 1}, "unexpected fields"),
]


@pytest.mark.parametrize(("raw", "message"), REFUSED)
def test_malformed_expressions_are_a_bad_request_naming_the_problem(raw: Any, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        parse_expression(raw)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    deep: Any = True
    for _ in range(1000):
        deep = {"type": "not", "child": deep}
    with pytest.raises(BadRequest, match="nested deeper"):
        parse_expression(deep)


@pytest.mark.parametrize(("expression", "message"), [
    (ex.EqualTo("nope", 1), "nope"),
    (ex.LessThan("id", "abc"), "filter"),
    (ex.EqualTo("ID", 1), "ID"),
])
def test_binding_refuses_unknown_fields_and_wrong_literals(expression: ex.BooleanExpression, message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        bind_filter(expression, SCHEMA, case_sensitive=True)


def test_case_insensitive_binding() -> None:
    bind_filter(ex.EqualTo("ID", 1), SCHEMA, case_sensitive=False)


@pytest.mark.parametrize(("body", "message"), [
    ({"surprise": 1}, "unknown fields"),
    ({"snapshot-id": "1"}, "64-bit integer"),
    ({"snapshot-id": True}, "64-bit integer"),
    ({"snapshot-id": 2**63}, "64-bit integer"),
    ({"start-snapshot-id": 1}, "end-snapshot-id is required"),
    ({"snapshot-id": 1, "end-snapshot-id": 2}, "not both"),
    ({"select": "id"}, "list of field names"),
    ({"stats-fields": [1]}, "list of field names"),
    ({"case-sensitive": "true"}, "true or false"),
    ({"min-rows-requested": -1}, "negative"),
])
def test_malformed_requests(body: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest, match=message):
        parse_scan_request(body)


def test_a_full_request() -> None:
    request = parse_scan_request({"select": ["id"], "filter": {"type": "eq", "term": "id", "value": 1},
                                  "case-sensitive": False, "start-snapshot-id": 1, "end-snapshot-id": 2,
                                  "stats-fields": ["cat"], "min-rows-requested": 10, "use-snapshot-schema": None})
    assert request.incremental and request.select == ("id",) and request.stats_fields == ("cat",)
    assert request.filter == ex.EqualTo("id", 1) and not request.case_sensitive and not request.use_snapshot_schema
    assert not parse_scan_request({}).incremental and parse_scan_request({}).filter == ex.AlwaysTrue()


@pytest.mark.parametrize(("field_type", "value", "expected"), [
    (LongType(), 5, 5),
    (StringType(), "a", "a"),
    (DoubleType(), 1, 1.0),
    (DecimalType(9, 2), Decimal("123.40"), "123.40"),
    (DateType(), 0, "1970-01-01"),
    (DateType(), 19723, "2024-01-01"),
    (TimeType(), 3_600_000_001, "01:00:00.000001"),
    (TimestampType(), 1_704_067_200_000_000, "2024-01-01T00:00:00.000000"),
    (TimestamptzType(), 1_704_067_200_000_000, "2024-01-01T00:00:00.000000+00:00"),
    (UUIDType(), uuid.UUID(int=1).bytes, "00000000-0000-0000-0000-000000000001"),
    (UUIDType(), uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    (BinaryType(), b"xyz", "78797A"),
    (LongType(), None, None),
])
def test_single_value_serialization(field_type: Any, value: Any, expected: Any) -> None:
    assert single_value_json(field_type, value) == expected


def test_residuals_are_written_back_as_expression_json_that_reads_back() -> None:
    for raw, expected in PARSED:
        written = expression_json(expected, SCHEMA)
        assert parse_expression(written) == expected, raw
    bound = bind(SCHEMA, ex.And(ex.EqualTo("loc.city", "x"), ex.GreaterThan("ts", "2024-01-01T00:00:00")), True)
    assert expression_json(bound, SCHEMA) == {
        "type": "and", "left": {"type": "eq", "term": "loc.city", "value": "x"},
        "right": {"type": "gt", "term": "ts", "value": "2024-01-01T00:00:00.000000"}}


def data_file(path: str, content: DataFileContent = DataFileContent.DATA, **extra: Any) -> DataFile:
    made = DataFile.from_args(content=content, file_path=path, file_format=FileFormat.PARQUET,
                              partition=Record("a", 19723), record_count=10, file_size_in_bytes=100, **extra)
    made.spec_id = 1
    return made


def test_tasks_as_content_file_json_with_shared_delete_files_and_chosen_stats() -> None:
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"),
                         PartitionField(3, 1001, DayTransform(), "ts_day"), spec_id=1)
    stats = {"column_sizes": {1: 10, 2: 20}, "value_counts": {1: 10, 2: 10}, "null_value_counts": {1: 0, 2: 1},
             "lower_bounds": {1: (3).to_bytes(8, "little"), 2: b"a"}, "upper_bounds": {1: (9).to_bytes(8, "little")}}
    first, second = data_file("s3://b/1.parquet", **stats), data_file("s3://b/2.parquet")
    positions = data_file("s3://b/pos.parquet", DataFileContent.POSITION_DELETES)
    equality = data_file("s3://b/eq.parquet", DataFileContent.EQUALITY_DELETES, equality_ids=[1])
    residual = bind(SCHEMA, ex.GreaterThan("id", 5), True)
    writer = TaskWriter(SCHEMA, {1: spec}, stats_ids=[1])
    body = writer.chunk([PlannedTask(first, (positions, equality), residual), PlannedTask(second, (positions,))])
    assert [d["file-path"] for d in body["delete-files"]] == ["s3://b/eq.parquet", "s3://b/pos.parquet"]
    assert [d["content"] for d in body["delete-files"]] == ["equality-deletes", "position-deletes"]
    assert body["delete-files"][0]["equality-ids"] == [1]
    one, two = body["file-scan-tasks"]
    assert one["delete-file-references"] == [0, 1] and two["delete-file-references"] == [1]
    assert one["residual-filter"] == {"type": "gt", "term": "id", "value": 5} and two["residual-filter"] is True
    assert one["data-file"] == {
        "spec-id": 1, "content": "data", "file-path": "s3://b/1.parquet", "file-format": "parquet",
        "partition": ["a", "2024-01-01"], "file-size-in-bytes": 100, "record-count": 10,
        "column-sizes": {"keys": [1], "values": [10]}, "value-counts": {"keys": [1], "values": [10]},
        "null-value-counts": {"keys": [1], "values": [0]}, "lower-bounds": {"keys": [1], "values": [3]},
        "upper-bounds": {"keys": [1], "values": [9]}}
    without_stats = TaskWriter(SCHEMA, {1: spec}, stats_ids=None).chunk([PlannedTask(first)])
    assert "column-sizes" not in without_stats["file-scan-tasks"][0]["data-file"]
    assert "delete-files" not in without_stats  # no tasks refer to any


def test_format_v3_fields_of_delete_files_are_kept() -> None:
    """A deletion vector names its data file and where in the Puffin file its bitmap lies."""
    vector = DataFile.from_args(_table_format_version=3, content=DataFileContent.POSITION_DELETES,
                                file_path="s3://b/dv.puffin", file_format=FileFormat.PUFFIN,
                                partition=Record(), record_count=2, file_size_in_bytes=300,
                                referenced_data_file="s3://b/1.parquet", content_offset=4, content_size_in_bytes=40)
    vector.spec_id = 0
    written = TaskWriter(SCHEMA, {}, None).content_file(vector)
    assert written["file-format"] == "puffin" and written["partition"] == []
    assert written["referenced-data-file"] == "s3://b/1.parquet"
    assert written["content-offset"] == 4 and written["content-size-in-bytes"] == 40
    assert "first-row-id" not in written


def _data_file(records: int, first_row_id: int | None = None) -> DataFile:
    data_file = DataFile.from_args(_table_format_version=3, content=DataFileContent.DATA,
                                   file_path=f"s3://b/{uuid.uuid4()}", file_format=FileFormat.PARQUET,
                                   partition=Record(), record_count=records, file_size_in_bytes=100,
                                   first_row_id=first_row_id)
    data_file.spec_id = 0
    return data_file


def test_data_files_inherit_first_row_ids_from_their_manifest() -> None:
    """The spec's inheritance: files without a first row id take the manifest's next one, in manifest order, each
    moving it on by its record count; a file that has one keeps it and moves nothing."""
    files = [_data_file(10), _data_file(5, first_row_id=7), _data_file(3)]
    next_row_id: int | None = 1000
    for data_file in files:
        next_row_id = inherit_first_row_id(data_file, next_row_id)
    assert [v3_field(f, "first-row-id") for f in files] == [1000, 7, 1010]
    assert next_row_id == 1013
    assert TaskWriter(SCHEMA, {}, None).content_file(files[2])["first-row-id"] == 1010


def test_data_files_of_a_manifest_without_a_first_row_id_have_none() -> None:
    """A manifest written before the table's upgrade to v3 assigns no row ids: its files' are null (as Iceberg
    Java reads them), and the served file has no first-row-id."""
    upgraded = _data_file(10, first_row_id=3)
    assert inherit_first_row_id(upgraded, None) is None
    assert v3_field(upgraded, "first-row-id") is None
    assert "first-row-id" not in TaskWriter(SCHEMA, {}, None).content_file(upgraded)


@pytest.mark.parametrize(("path", "own"), [
    ("file:///wh/main/db/t-1/metadata/m0.avro", True),
    ("file:/wh/main/db/t-1/metadata/m0.avro", True),  # Hadoop's spelling of the same file
    ("file:///wh/main/db/t-10/metadata/m0.avro", False),  # a sibling whose name starts alike
    ("file:///wh/main/db/victim/metadata/m0.avro", False),
    ("file:///wh/main/db/t-1/../victim/metadata/m0.avro", False),
    ("s3://bucket/wh/main/db/t-1/metadata/m0.avro", False),
])
def test_only_a_tables_own_manifests_are_planned(path: str, own: bool) -> None:
    from arco.storage.urls import file_under  # what the planner asks of each manifest

    assert file_under(path, "file:///wh/main/db/t-1") is own
