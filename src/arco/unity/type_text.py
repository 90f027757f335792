"""Spark SQL type text, as Unity Catalog's ``type_text`` and ``full_data_type`` carry it, read into another form
(pure): ``decimal(10,2)``, ``array<int>``, ``map<string,int>``, ``struct<a:int,b string NOT NULL COMMENT 'x'>``,
and a table function's ``table(a int, b string)``.

One reader, two forms: Iceberg UDF types for functions served through Iceberg REST (:mod:`arco.iceberg.functions`)
and Spark's JSON types for a UC column created without ``type_json`` (:mod:`arco.unity.spark_types`). A
:class:`TypeForms` says how each kind of type is written; text the reader cannot follow is :class:`UnreadableType`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),:])")
_DECIMAL_WORDS = ("decimal", "dec", "numeric")
_LENGTH_WORDS = ("char", "varchar")  # char(n) / varchar(n): the length is no part of the type's form


class UnreadableType(ValueError):
    """Type text that is not Spark SQL's, or names a type the form has no word for."""


@dataclass(frozen=True)
class TypeForms:
    """How each kind of type is written. ``words``: Spark SQL's simple type words (lower case) and their forms;
    ``struct`` gets ``(name, type, nullable)`` per field (``NOT NULL`` makes it not nullable)."""

    words: Mapping[str, Any]
    decimal: Callable[[int, int], Any]
    array: Callable[[Any], Any]
    map: Callable[[Any, Any], Any]
    struct: Callable[[list[tuple[str, Any, bool]]], Any]


def read_type_text(text: str, forms: TypeForms, *, table: bool = False) -> Any:
    """``text`` in ``forms``; ``table``: the text of a table function's result (its row as a struct)."""
    if not isinstance(text, str) or not text.strip():
        raise UnreadableType("a type text is empty")
    try:
        return _Reader(text, forms).whole(table=table)
    except RecursionError:  # nesting deeper than any real type
        raise UnreadableType(f"type {text[:100]!r}... is nested too deeply") from None


def _tokens(text: str) -> list[str]:
    tokens, position = [], 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise UnreadableType(f"cannot read the type {text!r}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


class _Reader:
    def __init__(self, text: str, forms: TypeForms) -> None:
        self.text, self.forms, self.tokens, self.at = text, forms, _tokens(text), 0

    def fail(self) -> UnreadableType:
        return UnreadableType(f"type {self.text!r} has no equivalent")

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token.lower() != expected):
            raise self.fail()
        self.at += 1
        return token

    def whole(self, *, table: bool = False) -> Any:
        parsed = self.table() if table else self.type()
        if self.peek() is not None:
            raise self.fail()
        return parsed

    def table(self) -> Any:
        """``table(a int, ...)`` / ``table<a:int, ...>``, or a bare ``struct<...>``: the output row type."""
        word = (self.peek() or "").lower()
        if word == "struct":
            return self.type()
        self.take("table")
        close = {"(": ")", "<": ">"}.get(self.take())
        if close is None:
            raise self.fail()
        return self.forms.struct(self.fields(close))

    def fields(self, close: str) -> list[tuple[str, Any, bool]]:
        fields: list[tuple[str, Any, bool]] = []
        while self.peek() != close:
            if fields:
                self.take(",")
            name = self.take()
            if not (name[0].isalpha() or name[0] in "_`"):
                raise self.fail()
            name = name[1:-1].replace("``", "`") if name.startswith("`") else name
            if self.peek() == ":":
                self.take()
            field_type = self.type()
            fields.append((name, field_type, self.nullable()))
        self.take(close)
        return fields

    def nullable(self) -> bool:
        """``NOT NULL`` and ``COMMENT '...'`` after a struct field: whether the field may be null."""
        nullable = True
        while (self.peek() or "").lower() in ("not", "comment"):
            if self.take().lower() == "not":
                self.take("null")
                nullable = False
            elif (self.peek() or "")[:1] in ("'", '"'):
                self.take()
            else:
                raise self.fail()
        return nullable

    def type(self) -> Any:
        word = self.take().lower()
        if word in _DECIMAL_WORDS:
            return self.decimal()
        if word in _LENGTH_WORDS and self.peek() == "(":
            self.take()
            self.take()
            self.take(")")
        if word in self.forms.words:
            return self.forms.words[word]
        if word == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return self.forms.array(element)
        if word == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            return self.forms.map(key, value)
        if word == "struct":
            self.take("<")
            return self.forms.struct(self.fields(">"))
        raise self.fail()

    def decimal(self) -> Any:
        if self.peek() != "(":
            return self.forms.decimal(10, 0)  # Spark's DECIMAL alone
        self.take("(")
        precision, scale = self.number(), 0
        if self.peek() == ",":
            self.take()
            scale = self.number()
        self.take(")")
        return self.forms.decimal(precision, scale)

    def number(self) -> int:
        token = self.take()
        if not token.isdigit():
            raise self.fail()
        return int(token)
