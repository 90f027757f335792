"""Columns created through UC without ``type_json`` get the Spark type their type_name and type_text say, which
readers such as Polars build a table's schema from."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from arco.unity.infos import check_columns
from arco.unity.spark_types import spark_type_json


@pytest.mark.parametrize(("type_name", "type_text", "expected"), [
    ("LONG", "bigint", "long"), ("INT", None, "integer"), ("TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz"),
    ("CHAR", "char(3)", "string"), ("DECIMAL", "decimal(12,3)", "decimal(12,3)"),
    ("DECIMAL", "DECIMAL(7)", "decimal(7,0)"),
    ("ARRAY", "array<int>", {"type": "array", "elementType": "integer", "containsNull": True}),
    ("MAP", "map<string, array<bigint>>", {"type": "map", "keyType": "string", "valueContainsNull": True,
                                           "valueType": {"type": "array", "elementType": "long",
                                                         "containsNull": True}}),
    ("STRUCT", "struct<a:int,`b c`:decimal(5,2),d string>", {"type": "struct", "fields": [
        {"name": "a", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "b c", "type": "decimal(5,2)", "nullable": True, "metadata": {}},
        {"name": "d", "type": "string", "nullable": True, "metadata": {}}]}),
    ("STRUCT", "struct<>", {"type": "struct", "fields": []}),
])
def test_spark_json_types_from_uc_types(type_name: str, type_text: str | None, expected: Any) -> None:
    assert spark_type_json(type_name, type_text) == expected


@pytest.mark.parametrize(("type_name", "type_text"), [
    ("ARRAY", "array<int"), ("MAP", "map<int>"), ("STRUCT", "struct<a:whatever>"), ("ARRAY", "array<int> junk"),
    ("INTERVAL", "interval day"), ("USER_DEFINED_TYPE", "geo"), ("ARRAY", "array<" * 5000 + "int" + ">" * 5000),
    ("STRUCT", "struct<a:int;drop>"),
])
def test_a_text_not_understood_gives_no_type(type_name: str, type_text: str) -> None:
    assert spark_type_json(type_name, type_text) is None


def test_a_column_without_type_json_gets_one_and_a_given_one_is_kept() -> None:
    given = '{"name":"x","type":"long","nullable":false,"metadata":{"k":"v"}}'
    derived, kept, decimal = check_columns([
        {"name": "tags", "type_name": "ARRAY", "type_text": "array<string>", "nullable": False},
        {"name": "x", "type_name": "LONG", "type_text": "bigint", "type_json": given},
        {"name": "amount", "type_name": "DECIMAL", "type_precision": 9, "type_scale": 2}])
    assert orjson.loads(derived["type_json"]) == {"name": "tags", "nullable": False, "metadata": {}, "type": {
        "type": "array", "elementType": "string", "containsNull": True}}
    assert kept["type_json"] == given
    assert orjson.loads(decimal["type_json"])["type"] == "decimal(9,2)"
