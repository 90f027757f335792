"""What PyIceberg's models raise when a client's JSON does not describe one, and how that is said to the client.

Pydantic reports a wrong shape as its ``ValidationError``, but PyIceberg's own validators also raise past it:
their ``ValidationError`` (not pydantic's: ``"decimal(a,b)"``), ``KeyError`` (a list type without its element),
``AttributeError`` (a null where a validator expects an object), ``TypeError`` and ``ValueError`` (a transform
such as ``bucket[x]``), and their recursive validators and visitors raise ``RecursionError`` for a type nested
too deeply (about 80 levels of structs). Each is the client's mistake, answered 400, so every parse of client JSON
into a PyIceberg model catches :data:`MALFORMED`, not a subset of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError
from pyiceberg.exceptions import ValidationError as IcebergValidationError

# PyIceberg's field names where its KeyError names them, and the JSON names a client wrote (or left out).
_JSON_NAMES = {"element_type": "element", "key_type": "key", "value_type": "value"}

MALFORMED: tuple[type[Exception], ...] = (ValidationError, IcebergValidationError, ValueError, TypeError, KeyError,
                                          IndexError, AttributeError, RecursionError)


def describe(error: Exception, limit: int = 5) -> str:
    """Where and what, in a line: pydantic's first few errors by location, a missing key by name, else the text."""
    if isinstance(error, ValidationError):
        parts = []
        for item in error.errors()[:limit]:
            where = ".".join(str(p) for p in item.get("loc", ()))
            message = item.get("msg", "invalid")
            parts.append(f"{where}: {message}" if where else message)
        return "; ".join(parts) or "invalid"
    if isinstance(error, RecursionError):
        return "nested too deeply"
    if isinstance(error, KeyError):
        name = str(error.args[0]) if error.args else ""
        return f"missing field '{_JSON_NAMES.get(name, name)}'" if name else "a field is missing"
    return str(error) or type(error).__name__


M = TypeVar("M", bound=BaseModel)


def parse_strictly(model: type[M] | TypeAdapter[Any], raw: Any) -> Any:
    """A client's JSON value as a PyIceberg model, each field of the JSON type the spec gives it, as the reference
    implementation's parsers require: pydantic's default (lax) mode took ``false`` or ``"0"`` for an id 0 (a
    requirement then held that the client never stated) and ``1.0`` for an int. Raises one of :data:`MALFORMED`."""
    data = orjson.dumps(raw)
    if isinstance(model, TypeAdapter):
        return model.validate_json(data, strict=True)
    return model.model_validate_json(data, strict=True)


# Types nested deeper than this are refused before PyIceberg parses them: its recursion gives out at about 80
# levels of structs, and a schema it parsed must still go through id assignment, updates and serialization.
MAX_TYPE_NESTING = 50
# Java's engines read a fixed type's length as an int: a longer one would make the table unreadable to them.
MAX_FIXED_LENGTH = 2**31 - 1
_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]")


def type_nesting(schema: Any) -> int:
    """How many struct, list and map types are nested in a schema's JSON at its deepest (a schema itself: 1).
    Shapes that are not types count nothing: the parser reports those."""
    return _walk(schema)[0]


def type_nodes(schema: Any, where: str = "schema") -> Iterator[tuple[Any, int, str]]:
    """Every type in a schema's JSON with how deep it is nested (the schema itself: 0) and where it is, for
    messages (``schema.fields[2].element``): the struct, list and map objects and the names of primitive types.
    A shape that is no type is given as it is, and nothing under it: the parser reports those."""
    pending: list[tuple[Any, int, str]] = [(schema, 0, where)]
    while pending:
        node, depth, where = pending.pop()
        yield node, depth, where
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        if kind == "struct" and isinstance(node.get("fields"), list):
            pending.extend((field.get("type"), depth + 1, f"{where}.fields[{index}]")
                           for index, field in enumerate(node["fields"]) if isinstance(field, dict))
        elif kind == "list":
            pending.append((node.get("element"), depth + 1, f"{where}.element"))
        elif kind == "map":
            pending.extend([(node.get("key"), depth + 1, f"{where}.key"),
                            (node.get("value"), depth + 1, f"{where}.value")])


def _nested(node: Any) -> bool:
    """Whether ``node`` is a struct, list or map type (a struct with its list of fields)."""
    kind = node.get("type") if isinstance(node, dict) else None
    return kind in ("list", "map") or (kind == "struct" and isinstance(node.get("fields"), list))


def _walk(schema: Any) -> tuple[int, int]:
    """The deepest nesting of types in a schema's JSON, and the longest fixed type's length (0: none)."""
    deepest = longest = 0
    for node, depth, _ in type_nodes(schema):
        if isinstance(node, str):
            if fixed := _FIXED.fullmatch(node.strip()):
                longest = max(longest, int(fixed.group(1)))
        elif _nested(node):
            deepest = max(deepest, depth + 1)
    return deepest, longest


def check_schema_limits(schema: Any, what: str = "schema") -> None:
    """Refuse (ValueError, reported as any malformed schema is) a schema nesting more than MAX_TYPE_NESTING types,
    or with a fixed type longer than MAX_FIXED_LENGTH."""
    depth, longest = _walk(schema)
    if depth > MAX_TYPE_NESTING:
        raise ValueError(f"{what} nests types {depth} deep; at most {MAX_TYPE_NESTING} levels are supported")
    if longest > MAX_FIXED_LENGTH:
        raise ValueError(f"{what} has a fixed[{longest}] type; a fixed type is at most {MAX_FIXED_LENGTH} bytes")
