"""Spark's JSON type of a Unity Catalog column that was created without ``type_json`` (pure).

Readers such as Polars' UC client build a table's schema from each column's ``type_json`` (a Spark ``StructField``)
and refuse a table, or a whole listing, where one is missing. The UC spec has the field required, but clients
(the Databricks SDK's ``ColumnInfo`` among them) may leave it out: Arco then derives it from ``type_name`` and,
for nested types, from the Spark SQL ``type_text`` (``array<int>``, ``map<string,bigint>``,
``struct<a:int,b:decimal(10,2)>``). A text this parser does not follow leaves the field out, as given.
"""

from __future__ import annotations

import re
from typing import Any

# type_name -> Spark's JSON name, for the types that have one name.
_BY_TYPE_NAME = {"BOOLEAN": "boolean", "BYTE": "byte", "SHORT": "short", "INT": "integer", "LONG": "long",
                 "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "TIMESTAMP": "timestamp",
                 "TIMESTAMP_NTZ": "timestamp_ntz", "STRING": "string", "CHAR": "string", "BINARY": "binary",
                 "VARIANT": "variant", "NULL": "void"}
# Spark SQL's type names (and aliases) -> Spark's JSON name.
_BY_SQL_NAME = {"boolean": "boolean", "byte": "byte", "tinyint": "byte", "short": "short", "smallint": "short",
                "int": "integer", "integer": "integer", "long": "long", "bigint": "long", "float": "float",
                "real": "float", "double": "double", "date": "date", "timestamp": "timestamp",
                "timestamp_ltz": "timestamp", "timestamp_ntz": "timestamp_ntz", "string": "string",
                "char": "string", "varchar": "string", "binary": "binary", "variant": "variant", "void": "void"}
_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|`[^`]+`|\d+|[<>(),:])")
MAX_TEXT = 10_000


def spark_type_json(type_name: str, type_text: str | None, precision: int | None = None,
                    scale: int | None = None) -> Any | None:
    """The column's type as Spark's JSON has it, or None where it cannot be told."""
    if type_name == "DECIMAL":
        if precision is None and type_text and type_text.strip().lower().startswith("decimal"):
            return _parse(type_text)
        return f"decimal({precision if precision is not None else 10},{scale or 0})"
    if type_name in _BY_TYPE_NAME:
        return _BY_TYPE_NAME[type_name]
    if type_name in ("ARRAY", "MAP", "STRUCT") and type_text:
        return _parse(type_text)
    return None


def _parse(text: str) -> Any | None:
    if len(text) > MAX_TEXT:
        return None
    tokens = _tokens(text)
    if tokens is None:
        return None
    parser = _Parser(tokens)
    try:
        parsed = parser.type()
    except (ValueError, IndexError, RecursionError):
        return None
    return parsed if parser.at_end() else None


def _tokens(text: str) -> list[str] | None:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            return None if text[position:].strip() else tokens
        tokens.append(match.group(1))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0

    def at_end(self) -> bool:
        return self.at == len(self.tokens)

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.at]
        if expected is not None and token.lower() != expected:
            raise ValueError(f"expected {expected}, found {token}")
        self.at += 1
        return token

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def type(self) -> Any:
        name = self.take().lower()
        if name == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return {"type": "array", "elementType": element, "containsNull": True}
        if name == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True}
        if name == "struct":
            self.take("<")
            fields = []
            while self.peek() != ">":
                if fields:
                    self.take(",")
                field = self.take().strip("`")
                if self.peek() == ":":
                    self.take(":")
                fields.append({"name": field, "type": self.type(), "nullable": True, "metadata": {}})
            self.take(">")
            return {"type": "struct", "fields": fields}
        arguments = []
        if self.peek() == "(":
            self.take("(")
            arguments.append(int(self.take()))
            while self.peek() == ",":
                self.take(",")
                arguments.append(int(self.take()))
            self.take(")")
        if name == "decimal":
            precision, scale = (arguments + [10, 0][len(arguments):])[:2]
            return f"decimal({precision},{scale})"
        if name not in _BY_SQL_NAME:
            raise ValueError(f"unknown type {name}")
        return _BY_SQL_NAME[name]
