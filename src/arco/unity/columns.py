"""Iceberg schemas as Unity Catalog ``ColumnInfo`` (pure): the UC view of an Iceberg table's current schema."""

from __future__ import annotations

from typing import Any

import orjson
from pyiceberg import types as t
from pyiceberg.schema import Schema

_PRIMITIVES: dict[type, tuple[str, str, str]] = {  # Iceberg type -> (UC type_name, SQL text, Spark JSON type)
    t.BooleanType: ("BOOLEAN", "boolean", "boolean"),
    t.IntegerType: ("INT", "int", "integer"),
    t.LongType: ("LONG", "bigint", "long"),
    t.FloatType: ("FLOAT", "float", "float"),
    t.DoubleType: ("DOUBLE", "double", "double"),
    t.DateType: ("DATE", "date", "date"),
    t.TimestamptzType: ("TIMESTAMP", "timestamp", "timestamp"),
    t.TimestampType: ("TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz"),
    t.StringType: ("STRING", "string", "string"),
    t.UUIDType: ("STRING", "string", "string"),
    t.BinaryType: ("BINARY", "binary", "binary"),
    t.FixedType: ("BINARY", "binary", "binary"),
    t.TimeType: ("LONG", "bigint", "long"),  # UC has no time type; Spark reads Iceberg time as microseconds
    # Format v3's: UC and Spark have no nanosecond timestamps (Spark reads them at microseconds), no geospatial
    # types (the values are WKB), and a column of v3's unknown type holds only nulls.
    t.TimestamptzNanoType: ("TIMESTAMP", "timestamp", "timestamp"),
    t.TimestampNanoType: ("TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz"),
    t.GeometryType: ("BINARY", "binary", "binary"),
    t.GeographyType: ("BINARY", "binary", "binary"),
    t.UnknownType: ("NULL", "void", "void"),
}


def describe(field_type: t.IcebergType) -> tuple[str, str, Any]:
    """A type as UC names it: (type_name, SQL text, Spark JSON type); nested types recursively."""
    if isinstance(field_type, t.DecimalType):
        text = f"decimal({field_type.precision},{field_type.scale})"
        return "DECIMAL", text, text
    if isinstance(field_type, t.StructType):
        inner = [(f.name, *describe(f.field_type)[1:], not f.required) for f in field_type.fields]
        return ("STRUCT", f"struct<{','.join(f'{n}:{s}' for n, s, _, _ in inner)}>",
                {"type": "struct", "fields": [{"name": n, "type": j, "nullable": nl, "metadata": {}}
                                              for n, _, j, nl in inner]})
    if isinstance(field_type, t.ListType):
        _, text, json = describe(field_type.element_type)
        return "ARRAY", f"array<{text}>", {"type": "array", "elementType": json,
                                           "containsNull": not field_type.element_required}
    if isinstance(field_type, t.MapType):
        _, key_text, key_json = describe(field_type.key_type)
        _, value_text, value_json = describe(field_type.value_type)
        return "MAP", f"map<{key_text},{value_text}>", {"type": "map", "keyType": key_json, "valueType": value_json,
                                                         "valueContainsNull": not field_type.value_required}
    described = _PRIMITIVES.get(type(field_type))
    if described is None:  # a type of a later Iceberg release: said to be one UC and Spark have, consistently
        return "STRING", "string", "string"
    return described


def column_infos(schema: Schema, partition_source_ids: list[int] | None = None) -> list[dict[str, Any]]:
    partitions = partition_source_ids or []
    columns = []
    for position, field in enumerate(schema.fields):
        type_name, text, json = describe(field.field_type)
        info: dict[str, Any] = {
            "name": field.name, "type_name": type_name, "type_text": text,
            "type_json": orjson.dumps({"name": field.name, "type": json, "nullable": not field.required,
                                       "metadata": {}}).decode(),
            "position": position, "nullable": not field.required,
        }
        if isinstance(field.field_type, t.DecimalType):
            info["type_precision"], info["type_scale"] = field.field_type.precision, field.field_type.scale
        if field.doc:
            info["comment"] = field.doc
        if field.field_id in partitions:
            info["partition_index"] = partitions.index(field.field_id)
        columns.append(info)
    return columns
