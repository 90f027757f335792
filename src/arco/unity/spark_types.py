"""Spark's JSON type of a Unity Catalog column that was created without ``type_json`` (pure).

Readers such as Polars' UC client build a table's schema from each column's ``type_json`` (a Spark ``StructField``)
and refuse a table, or a whole listing, where one is missing. The UC spec has the field required, but clients
(the Databricks SDK's ``ColumnInfo`` among them) may leave it out: Arco then derives it from ``type_name`` and,
for nested types, from the Spark SQL ``type_text`` (read by :mod:`arco.unity.type_text`). A text that cannot be
read leaves the field out, as given.
"""

from __future__ import annotations

from typing import Any

from arco.unity.type_text import TypeForms, UnreadableType, read_type_text

# type_name -> Spark's JSON name, for the types that have one name.
_BY_TYPE_NAME = {"BOOLEAN": "boolean", "BYTE": "byte", "SHORT": "short", "INT": "integer", "LONG": "long",
                 "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "TIMESTAMP": "timestamp",
                 "TIMESTAMP_NTZ": "timestamp_ntz", "STRING": "string", "CHAR": "string", "BINARY": "binary",
                 "VARIANT": "variant", "NULL": "void"}
SPARK_JSON_FORMS = TypeForms(
    # Spark SQL's type words (and aliases) -> Spark's JSON names.
    words={"boolean": "boolean", "bool": "boolean", "byte": "byte", "tinyint": "byte", "short": "short",
           "smallint": "short", "int": "integer", "integer": "integer", "long": "long", "bigint": "long",
           "float": "float", "real": "float", "double": "double", "date": "date", "timestamp": "timestamp",
           "timestamp_ltz": "timestamp", "timestamp_ntz": "timestamp_ntz", "string": "string", "char": "string",
           "varchar": "string", "binary": "binary", "variant": "variant", "void": "void"},
    decimal=lambda precision, scale: f"decimal({precision},{scale})",
    array=lambda element: {"type": "array", "elementType": element, "containsNull": True},
    map=lambda key, value: {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True},
    struct=lambda fields: {"type": "struct", "fields": [
        {"name": name, "type": field_type, "nullable": nullable, "metadata": {}}
        for name, field_type, nullable in fields]})
MAX_TEXT = 10_000


def spark_type_json(type_name: str, type_text: str | None, precision: int | None = None,
                    scale: int | None = None) -> Any | None:
    """The column's type as Spark's JSON has it, or None where it cannot be told."""
    if type_name == "DECIMAL":
        if precision is None and type_text and type_text.strip().lower().startswith("decimal"):
            return _read(type_text)
        return f"decimal({precision if precision is not None else 10},{scale or 0})"
    if type_name in _BY_TYPE_NAME:
        return _BY_TYPE_NAME[type_name]
    if type_name in ("ARRAY", "MAP", "STRUCT") and type_text:
        return _read(type_text)
    return None


def _read(text: str) -> Any | None:
    if len(text) > MAX_TEXT:
        return None
    try:
        return read_type_text(text, SPARK_JSON_FORMS)
    except UnreadableType:
        return None
