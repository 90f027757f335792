"""The JSON types of a client's schema, partition spec, sort order and snapshot summary, checked on the JSON
itself before PyIceberg parses it.

:func:`arco.iceberg.malformed.parse_strictly` holds most of a request to JSON's own types, but PyIceberg builds
these four through constructors of its own, where pydantic's strict mode does not reach: a field id ``"1"``, a
``required`` of ``1`` or a summary count of ``5`` were converted and stored. The reference implementation's
parsers (``SchemaParser``, ``PartitionSpecParser``, ``SortOrderParser``, ``SnapshotParser``) refuse each. Pure.
"""

from __future__ import annotations

from typing import Any

from arco.iceberg.errors import BadRequest
from arco.iceberg.malformed import type_nodes


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _expect(node: dict[str, Any], key: str, kind: str, where: str, *, required: bool = False) -> None:
    if key not in node:
        if required:
            raise BadRequest(f"invalid {where}: '{key}' is missing")
        return
    value = node[key]
    ok = {"int": _is_int(value), "bool": isinstance(value, bool), "str": isinstance(value, str),
          "ints": isinstance(value, list) and all(_is_int(v) for v in value)}[kind]
    if not ok:
        words = {"int": "an integer", "bool": "a boolean", "str": "a string", "ints": "a list of integers"}[kind]
        raise BadRequest(f"invalid {where}: '{key}' must be {words}, not {value!r:.40}")


def check_schema_json(schema: Any, what: str = "schema") -> None:
    """Every id an integer, every ``required`` a boolean, every name a string (not empty), at any depth."""
    if not isinstance(schema, dict):
        return  # the parser reports a schema that is no object
    _expect(schema, "schema-id", "int", what)
    _expect(schema, "identifier-field-ids", "ints", what)
    for node, _, where in type_nodes(schema, what):
        kind = node.get("type") if isinstance(node, dict) else None
        if kind == "struct" and isinstance(node.get("fields"), list):
            for index, field in enumerate(node["fields"]):
                if isinstance(field, dict):
                    _check_field_json(field, f"{where}.fields[{index}]")
        elif kind == "list":
            _expect(node, "element-id", "int", where)
            _expect(node, "element-required", "bool", where)
        elif kind == "map":
            _expect(node, "key-id", "int", where)
            _expect(node, "value-id", "int", where)
            _expect(node, "value-required", "bool", where)


def _check_field_json(field: dict[str, Any], where: str) -> None:
    _expect(field, "id", "int", where)
    _expect(field, "name", "str", where)
    if field.get("name") == "":
        raise BadRequest(f"invalid {where}: 'name' is empty (no engine could name the column)")
    _expect(field, "required", "bool", where)
    _expect(field, "doc", "str", where)


_SPEC_FIELD = (("source-id", "int", False), ("source-ids", "ints", False), ("field-id", "int", False),
               ("name", "str", False), ("transform", "str", True))
_ORDER_FIELD = (("source-id", "int", False), ("source-ids", "ints", False), ("transform", "str", True),
                ("direction", "str", True), ("null-order", "str", True))


def check_spec_json(spec: Any, what: str = "partition spec") -> None:
    _check_layout_json(spec, what, "spec-id", _SPEC_FIELD)


def check_order_json(order: Any, what: str = "sort order") -> None:
    _check_layout_json(order, what, "order-id", _ORDER_FIELD)


def _check_layout_json(layout: Any, what: str, id_key: str,
                       field_keys: tuple[tuple[str, str, bool], ...]) -> None:
    """A partition spec or sort order: its id, and each field's keys ``(key, kind, required)``."""
    if not isinstance(layout, dict):
        return  # the parser reports one that is no object
    _expect(layout, id_key, "int", what)
    for index, field in enumerate(layout.get("fields") or []):
        if isinstance(field, dict):
            for key, kind, required in field_keys:
                _expect(field, key, kind, f"{what}.fields[{index}]", required=required)


def check_summary_json(snapshot: Any) -> None:
    """A snapshot's summary is a map of strings (its counts too: ``"added-files": "1"``)."""
    summary = snapshot.get("summary") if isinstance(snapshot, dict) else None
    if isinstance(summary, dict):
        for key, value in summary.items():
            if not isinstance(value, str):
                raise BadRequest(f"invalid snapshot: summary value of '{key}' must be a string, not {value!r:.40}")
