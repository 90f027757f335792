"""UC FunctionInfo -> Iceberg FunctionMetadata (arco.iceberg.functions), as decision tables."""

from __future__ import annotations

from typing import Any

import pytest

from arco.iceberg import functions as f
from arco.iceberg.functions import Unrepresentable

FID = "3b8e8d7e-7f7c-4f43-9a55-0b0f5d1b8c11"


def param(name: str, type_name: str, type_text: str | None = None, position: int = 0, **extra: Any) -> dict:
    return {"name": name, "type_name": type_name, "type_text": type_text or type_name.lower(), "type_json": "{}",
            "position": position, **extra}


def info(**changes: Any) -> dict[str, Any]:
    base = {"name": "inc", "catalog_name": "main", "schema_name": "db", "full_name": "main.db.inc",
            "function_id": FID, "owner": "olga@x.com", "created_at": 1_700_000_000_000,
            "updated_at": 1_700_000_000_500, "input_params": {"parameters": [param("x", "INT")]},
            "data_type": "INT", "full_data_type": "int", "routine_body": "SQL", "routine_definition": "x + 1",
            "parameter_style": "S", "is_deterministic": True, "sql_data_access": "CONTAINS_SQL",
            "is_null_call": False, "security_type": "DEFINER", "specific_name": "inc", "comment": "adds one"}
    return {**base, **changes}


# -- parameter types: (type_name, type_text, precision, scale) -> Iceberg type -----------------------------------

@pytest.mark.parametrize(("type_name", "type_text", "precision", "scale", "expected"), [
    ("BOOLEAN", "boolean", None, None, "boolean"),
    ("BYTE", "tinyint", None, None, "int"),
    ("SHORT", "smallint", None, None, "int"),
    ("INT", "int", None, None, "int"),
    ("LONG", "bigint", None, None, "long"),
    ("FLOAT", "float", None, None, "float"),
    ("DOUBLE", "double", None, None, "double"),
    ("DATE", "date", None, None, "date"),
    ("TIMESTAMP", "timestamp", None, None, "timestamptz"),
    ("TIMESTAMP_NTZ", "timestamp_ntz", None, None, "timestamp"),
    ("STRING", "string", None, None, "string"),
    ("CHAR", "char(3)", None, None, "string"),
    ("BINARY", "binary", None, None, "binary"),
    ("VARIANT", "variant", None, None, "variant"),
    ("DECIMAL", "decimal(10,2)", 10, 2, "decimal(10,2)"),
    ("DECIMAL", "decimal(12,3)", None, None, "decimal(12,3)"),
    ("DECIMAL", "DECIMAL(7)", None, None, "decimal(7,0)"),
    ("DECIMAL", "decimal", None, None, "decimal(10,0)"),
    ("decimal", "numeric(5, 1)", None, None, "decimal(5,1)"),
    ("ARRAY", "array<int>", None, None, {"type": "list", "element": "int"}),
    ("ARRAY", "ARRAY<ARRAY<BIGINT>>", None, None,
     {"type": "list", "element": {"type": "list", "element": "long"}}),
    ("MAP", "map<string,decimal(9,2)>", None, None, {"type": "map", "key": "string", "value": "decimal(9,2)"}),
    ("STRUCT", "struct<a:int,b:string>", None, None,
     {"type": "struct", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string"}]}),
    ("STRUCT", "STRUCT<a: INT NOT NULL, `b c`: ARRAY<STRING> COMMENT 'x, y'>", None, None,
     {"type": "struct", "fields": [{"name": "a", "type": "int"},
                                   {"name": "b c", "type": {"type": "list", "element": "string"}}]}),
])
def test_parameter_types(type_name: str, type_text: str, precision: int | None, scale: int | None,
                         expected: Any) -> None:
    assert f.iceberg_type(type_name, type_text, precision, scale) == expected


@pytest.mark.parametrize(("type_name", "type_text", "precision"), [
    ("INTERVAL", "interval day to second", None),
    ("NULL", "void", None),
    ("USER_DEFINED_TYPE", "my_type", None),
    ("TABLE_TYPE", "table(a int)", None),
    (None, "int", None),
    ("ARRAY", "map<int,int>", None),       # the type text contradicts the type name
    ("ARRAY", "array<interval>", None),    # an element Iceberg cannot express
    ("STRUCT", "struct<a:int", None),      # does not parse
    ("DECIMAL", "decimal(10,2)", 40),      # precision out of range
    ("DECIMAL", "string", None),
])
def test_types_iceberg_cannot_express(type_name: str | None, type_text: str, precision: int | None) -> None:
    with pytest.raises(Unrepresentable):
        f.iceberg_type(type_name, type_text, precision, 0)


@pytest.mark.parametrize(("data_type", "expected"), [
    ("int", "int"),
    ("decimal(9,2)", "decimal(9,2)"),
    ({"type": "list", "element": "int"}, "list<int>"),
    ({"type": "map", "key": "string", "value": {"type": "list", "element": "long"}}, "map<string,list<long>>"),
    ({"type": "struct", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string"}]},
     "struct<a:int,b:string>"),
])
def test_type_strings_have_no_spaces(data_type: Any, expected: str) -> None:
    assert f.type_string(data_type) == expected


# -- whole functions ---------------------------------------------------------------------------------------------


def test_a_sql_function_is_one_definition_with_one_spark_sql_version() -> None:
    metadata = f.function_metadata(info())
    assert metadata == {
        "function-uuid": FID, "format-version": 1, "doc": "adds one",
        "definitions": [{
            "definition-id": "int", "specific-name": "inc", "parameters": [{"name": "x", "type": "int"}],
            "return-type": "int", "function-type": "udf", "current-version-id": 1,
            "versions": [{"version-id": 1, "representations": [{"type": "sql", "dialect": "spark", "sql": "x + 1"}],
                          "deterministic": True, "on-null-input": "call", "timestamp-ms": 1_700_000_000_000}],
        }],
        "definition-log": [{"timestamp-ms": 1_700_000_000_000,
                            "definition-versions": [{"definition-id": "int", "version-id": 1}]}],
        "properties": {"owner": "olga@x.com", "uc.full-name": "main.db.inc", "uc.routine-body": "SQL",
                       "uc.sql-data-access": "CONTAINS_SQL", "uc.security-type": "DEFINER"},
    }


def test_an_external_function_has_no_sql_representation_and_its_body_in_properties() -> None:
    metadata = f.function_metadata(info(routine_body="EXTERNAL", external_language="PYTHON",
                                        routine_definition="return x", sql_data_access="NO_SQL"))
    version = metadata["definitions"][0]["versions"][0]
    assert version["representations"] == []
    assert metadata["properties"]["uc.external-language"] == "PYTHON"
    assert metadata["properties"]["uc.routine-definition"] == "return x"
    assert metadata["properties"]["uc.routine-body"] == "EXTERNAL"


@pytest.mark.parametrize(("changes", "field", "expected"), [
    # parameters in position order; definition-id joins their types without spaces
    ({"input_params": {"parameters": [param("b", "STRING", position=1), param("a", "DECIMAL", "decimal(5,2)",
                                                                              position=0, comment="amount")]}},
     "definition-id", "decimal(5,2),string"),
    ({"input_params": {"parameters": [param("b", "STRING", position=1), param("a", "LONG", position=0,
                                                                              comment="amount")]}},
     "parameters", [{"name": "a", "type": "long", "doc": "amount"}, {"name": "b", "type": "string"}]),
    ({"input_params": {"parameters": []}}, "definition-id", ""),
    ({"input_params": {"parameters": [param("m", "MAP", "map<string, int>")]}}, "definition-id", "map<string,int>"),
    # the return type: data_type, decimals and nested types from full_data_type
    ({"data_type": "DECIMAL", "full_data_type": "decimal(20,4)"}, "return-type", "decimal(20,4)"),
    ({"data_type": "ARRAY", "full_data_type": "array<string>"}, "return-type",
     {"type": "list", "element": "string"}),
    # a table function: udtf, its row type from return_params (else from full_data_type)
    ({"data_type": "TABLE_TYPE", "full_data_type": "table(a int, b string)",
      "return_params": {"parameters": [param("a", "INT"), param("b", "STRING", position=1)]}}, "return-type",
     {"type": "struct", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string"}]}),
    ({"data_type": "TABLE_TYPE", "full_data_type": "TABLE(a INT, b STRING)"}, "return-type",
     {"type": "struct", "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string"}]}),
    ({"data_type": "TABLE_TYPE", "full_data_type": "table<a:bigint>"}, "return-type",
     {"type": "struct", "fields": [{"name": "a", "type": "long"}]}),
    ({"data_type": "TABLE_TYPE", "full_data_type": "table(a int)"}, "function-type", "udtf"),
    ({"data_type": "STRING", "full_data_type": "string"}, "function-type", "udf"),
    ({"specific_name": None}, "specific-name", None),
])
def test_definition_fields(changes: dict[str, Any], field: str, expected: Any) -> None:
    assert f.function_metadata(info(**changes))["definitions"][0].get(field) == expected


@pytest.mark.parametrize(("changes", "field", "expected"), [
    ({"is_deterministic": False}, "deterministic", False),
    ({"is_deterministic": True}, "deterministic", True),
    ({"is_null_call": True}, "on-null-input", "return-null"),
    ({"is_null_call": False}, "on-null-input", "call"),
    ({"created_at": None}, "timestamp-ms", 1_700_000_000_500),
    ({"created_at": None, "updated_at": None}, "timestamp-ms", 0),
])
def test_version_fields(changes: dict[str, Any], field: str, expected: Any) -> None:
    assert f.function_metadata(info(**changes))["definitions"][0]["versions"][0][field] == expected


@pytest.mark.parametrize(("changes", "field", "expected"), [
    ({"comment": None}, "doc", None),
    ({"comment": "doc"}, "doc", "doc"),
    ({"properties": '{"team": "a", "n": 1}'}, "properties",
     {"team": "a", "n": "1", "owner": "olga@x.com", "uc.full-name": "main.db.inc", "uc.routine-body": "SQL",
      "uc.sql-data-access": "CONTAINS_SQL", "uc.security-type": "DEFINER"}),
    ({"properties": "not json", "owner": None, "full_name": None, "routine_body": None, "sql_data_access": None,
      "security_type": None}, "properties", {"uc.properties": "not json"}),
    ({"properties": "[1]", "owner": None, "full_name": None, "routine_body": None, "sql_data_access": None,
      "security_type": None, "external_name": "mod.fn", "sql_path": "main.db"}, "properties",
     {"uc.properties": "[1]", "uc.external-name": "mod.fn", "uc.sql-path": "main.db"}),
    ({}, "function-uuid", FID),
    ({}, "format-version", 1),
])
def test_metadata_fields(changes: dict[str, Any], field: str, expected: Any) -> None:
    assert f.function_metadata(info(**changes)).get(field) == expected


@pytest.mark.parametrize("changes", [
    {"input_params": {"parameters": [param("i", "INTERVAL", "interval day")]}},
    {"input_params": {"parameters": [param("t", "TABLE_TYPE", "table(a int)")]}},
    {"data_type": "NULL", "full_data_type": "void"},
    {"data_type": "TABLE_TYPE", "full_data_type": "garbage"},
    {"data_type": "TABLE_TYPE", "full_data_type": "table(a interval)"},
])
def test_a_function_iceberg_cannot_express_is_not_representable(changes: dict[str, Any]) -> None:
    assert not f.representable(info(**changes))
    with pytest.raises(Unrepresentable):
        f.function_metadata(info(**changes))


def test_a_function_iceberg_can_express_is_representable() -> None:
    assert f.representable(info())
