"""Iceberg schemas as Unity Catalog columns: every Iceberg type, format v3's included, is named by a type UC's spec
knows, with SQL text and a Spark JSON type that say the same thing (clients such as DuckDB's UC extension parse
``type_text`` and refuse a table, or a whole listing, over a name they do not know)."""

from __future__ import annotations

import orjson
import pytest
from pyiceberg import types as t
from pyiceberg.schema import Schema

from arco.unity.columns import column_infos

# ColumnTypeName in the Unity Catalog OpenAPI spec.
UC_TYPE_NAMES = {"BOOLEAN", "BYTE", "SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ",
                 "STRING", "BINARY", "DECIMAL", "INTERVAL", "ARRAY", "STRUCT", "MAP", "VARIANT", "CHAR", "NULL",
                 "USER_DEFINED_TYPE", "TABLE_TYPE"}
# Spark SQL's names of the types UC's type names stand for, and Spark's JSON names of them.
SQL_TEXT = {"BOOLEAN": ("boolean", "boolean"), "INT": ("int", "integer"), "LONG": ("bigint", "long"),
            "FLOAT": ("float", "float"), "DOUBLE": ("double", "double"), "DATE": ("date", "date"),
            "TIMESTAMP": ("timestamp", "timestamp"), "TIMESTAMP_NTZ": ("timestamp_ntz", "timestamp_ntz"),
            "STRING": ("string", "string"), "BINARY": ("binary", "binary"), "NULL": ("void", "void")}

PRIMITIVES = [t.BooleanType(), t.IntegerType(), t.LongType(), t.FloatType(), t.DoubleType(), t.DateType(),
              t.TimeType(), t.TimestampType(), t.TimestamptzType(), t.TimestampNanoType(), t.TimestamptzNanoType(),
              t.StringType(), t.UUIDType(), t.BinaryType(), t.FixedType(16), t.UnknownType(), t.GeometryType(),
              t.GeographyType()]


@pytest.mark.parametrize("field_type", PRIMITIVES, ids=str)
def test_each_primitive_is_a_type_uc_and_spark_know(field_type: t.PrimitiveType) -> None:
    [info] = column_infos(Schema(t.NestedField(1, "c", field_type, required=False)))
    assert info["type_name"] in UC_TYPE_NAMES
    assert (info["type_text"], orjson.loads(info["type_json"])["type"]) == SQL_TEXT[info["type_name"]]


def test_nanosecond_timestamps_are_the_microsecond_ones_spark_reads() -> None:
    schema = Schema(t.NestedField(1, "at", t.TimestampNanoType(), required=True),
                    t.NestedField(2, "zoned", t.TimestamptzNanoType(), required=False),
                    t.NestedField(3, "s", t.StructType(t.NestedField(4, "inner", t.TimestampNanoType())),
                                  required=False))
    at, zoned, nested = column_infos(schema)
    assert (at["type_name"], at["type_text"]) == ("TIMESTAMP_NTZ", "timestamp_ntz")
    assert (zoned["type_name"], zoned["type_text"]) == ("TIMESTAMP", "timestamp")
    assert nested["type_text"] == "struct<inner:timestamp_ntz>"
    assert orjson.loads(nested["type_json"])["type"]["fields"][0]["type"] == "timestamp_ntz"
