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
}


def _sql_and_json(field_type: t.IcebergType) -> tuple[str, Any]:
    if isinstance(field_type, t.DecimalType):
        text = f"decimal({field_type.precision},{field_type.scale})"
        return text, text
    if isinstance(field_type, t.StructType):
        inner = [(f.name, *_sql_and_json(f.field_type), not f.required) for f in field_type.fields]
        return (f"struct<{','.join(f'{n}:{s}' for n, s, _, _ in inner)}>",
                {"type": "struct", "fields": [{"name": n, "type": j, "nullable": nl, "metadata": {}}
                                              for n, _, j, nl in inner]})
    if isinstance(field_type, t.ListType):
        text, json = _sql_and_json(field_type.element_type)
        return f"array<{text}>", {"type": "array", "elementType": json,
                                  "containsNull": not field_type.element_required}
    if isinstance(field_type, t.MapType):
        key_text, key_json = _sql_and_json(field_type.key_type)
        value_text, value_json = _sql_and_json(field_type.value_type)
        return f"map<{key_text},{value_text}>", {"type": "map", "keyType": key_json, "valueType": value_json,
                                                  "valueContainsNull": not field_type.value_required}
    for cls, (_, text, json) in _PRIMITIVES.items():
        if isinstance(field_type, cls):
            return text, json
    return str(field_type), str(field_type)


def _type_name(field_type: t.IcebergType) -> str:
    if isinstance(field_type, t.DecimalType):
        return "DECIMAL"
    if isinstance(field_type, t.StructType):
        return "STRUCT"
    if isinstance(field_type, t.ListType):
        return "ARRAY"
    if isinstance(field_type, t.MapType):
        return "MAP"
    for cls, (name, _, _) in _PRIMITIVES.items():
        if isinstance(field_type, cls):
            return name
    return "STRING"


def column_infos(schema: Schema, partition_source_ids: list[int] | None = None) -> list[dict[str, Any]]:
    partitions = partition_source_ids or []
    columns = []
    for position, field in enumerate(schema.fields):
        text, json = _sql_and_json(field.field_type)
        info: dict[str, Any] = {
            "name": field.name, "type_name": _type_name(field.field_type), "type_text": text,
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
