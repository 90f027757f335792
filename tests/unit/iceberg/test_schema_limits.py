"""Schemas beyond what Arco and engines can handle are refused before PyIceberg parses them
(arco.iceberg.malformed): types nested too deeply (PyIceberg's recursion gives out past about 80 levels, which a
client could otherwise turn into a 500), and fixed types longer than Java's engines can read."""

from __future__ import annotations

from typing import Any

import pytest

from arco.iceberg import commit_rules, view_rules
from arco.iceberg.errors import BadRequest
from arco.iceberg.malformed import MAX_FIXED_LENGTH, MAX_TYPE_NESTING, check_schema_limits, type_nesting


def nested(levels: int, kind: str = "struct") -> dict[str, Any]:
    """A schema (itself a struct: level 1) whose one field nests ``levels - 1`` more types of ``kind``."""
    inner: Any = "long"
    for i in range(levels - 1):
        if kind == "struct":
            inner = {"type": "struct", "fields": [{"id": 100 + i, "name": f"f{i}", "required": False, "type": inner}]}
        elif kind == "list":
            inner = {"type": "list", "element-id": 100 + i, "element": inner, "element-required": False}
        else:
            inner = {"type": "map", "key-id": 2 * i + 100, "key": "string", "value-id": 2 * i + 101, "value": inner,
                     "value-required": False}
    return {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "a", "required": False, "type": inner}]}


@pytest.mark.parametrize("kind", ["struct", "list", "map"])
def test_nesting_counts_every_kind_of_nested_type(kind: str) -> None:
    assert type_nesting(nested(1, kind)) == 1
    assert type_nesting(nested(7, kind)) == 7


def test_the_deepest_branch_counts_and_shapes_that_are_no_types_count_nothing() -> None:
    schema = {"type": "struct", "fields": [{"id": 1, "name": "flat", "type": "int"},
                                           {"id": 2, "name": "deep", "type": nested(4)}]}
    assert type_nesting(schema) == 5
    assert type_nesting({"type": "struct", "fields": "not a list"}) == 0
    assert type_nesting(["not", "a", "schema"]) == 0 and type_nesting(None) == 0


def test_the_limit_is_inclusive() -> None:
    check_schema_limits(nested(MAX_TYPE_NESTING))
    with pytest.raises(ValueError, match=f"nests types {MAX_TYPE_NESTING + 1} deep"):
        check_schema_limits(nested(MAX_TYPE_NESTING + 1))


@pytest.mark.parametrize("levels", [MAX_TYPE_NESTING + 1, 300])
def test_an_add_schema_nested_too_deeply_is_a_bad_request(levels: int) -> None:
    with pytest.raises(BadRequest, match="invalid update: add-schema's schema nests types"):
        commit_rules.parse_updates([{"action": "add-schema", "schema": nested(levels)}])


def test_a_view_schema_nested_too_deeply_is_a_bad_request() -> None:
    with pytest.raises(BadRequest, match="invalid schema: schema nests types"):
        view_rules.parse_schema(nested(300, "list"))


def test_a_schema_at_the_limit_parses_and_serializes() -> None:
    parsed = commit_rules.parse_updates([{"action": "add-schema", "schema": nested(MAX_TYPE_NESTING)}])
    assert parsed[0].schema_.model_dump_json()


def one_field(field_type: Any) -> dict[str, Any]:
    return {"type": "struct", "fields": [{"id": 1, "name": "a", "required": False, "type": field_type}]}


@pytest.mark.parametrize("spelling", ["fixed[{n}]", " fixed[ {n} ] "])
def test_a_fixed_type_is_at_most_what_an_int_holds(spelling: str) -> None:
    check_schema_limits(one_field(spelling.format(n=MAX_FIXED_LENGTH)))
    check_schema_limits(one_field({"type": "list", "element-id": 2, "element": "fixed[16]", "element-required": True}))
    too_long = spelling.format(n=MAX_FIXED_LENGTH + 1)
    with pytest.raises(ValueError, match=r"has a fixed\[2147483648\] type"):
        check_schema_limits(one_field(too_long))
    nested_too_long = {"type": "map", "key-id": 2, "key": "string", "value-id": 3,
                       "value": "fixed[99999999999999999999]", "value-required": False}
    with pytest.raises(BadRequest, match=r"fixed\[99999999999999999999\]"):
        commit_rules.parse_updates([{"action": "add-schema", "schema": one_field(nested_too_long)}])
