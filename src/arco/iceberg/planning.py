"""Server-side scan planning, the pure part: a PlanTableScanRequest parsed and checked, the spec's Expression JSON
read into PyIceberg expressions and written back (residual filters), and values in the spec's single-value
serialization.

Nothing here touches storage; every refusal is a :class:`BadRequest` naming what is wrong, so a malformed
request is a 400 in the Iceberg error shape, never a 500.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pyiceberg import expressions as ex
from pyiceberg.schema import Schema
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from arco.iceberg.errors import BadRequest

REQUEST_FIELDS = frozenset({"snapshot-id", "select", "filter", "min-rows-requested", "case-sensitive",
                            "use-snapshot-schema", "start-snapshot-id", "end-snapshot-id", "stats-fields"})
MAX_EXPRESSION_DEPTH = 200  # a filter nested deeper is refused, not a RecursionError


@dataclass(frozen=True)
class ScanRequest:
    """A PlanTableScanRequest, checked for shape (not yet against a table)."""

    snapshot_id: int | None = None
    select: tuple[str, ...] | None = None
    filter: ex.BooleanExpression = field(default_factory=ex.AlwaysTrue)
    case_sensitive: bool = True
    use_snapshot_schema: bool = False
    start_snapshot_id: int | None = None
    end_snapshot_id: int | None = None
    stats_fields: tuple[str, ...] | None = None
    min_rows_requested: int | None = None

    @property
    def incremental(self) -> bool:
        return self.start_snapshot_id is not None or self.end_snapshot_id is not None


def parse_scan_request(body: dict[str, Any]) -> ScanRequest:
    unknown = sorted(set(body) - REQUEST_FIELDS)
    if unknown:
        raise BadRequest(f"unknown fields in the scan request: {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(REQUEST_FIELDS))}")
    snapshot_id = _long(body, "snapshot-id")
    start, end = _long(body, "start-snapshot-id"), _long(body, "end-snapshot-id")
    if start is not None and end is None:
        raise BadRequest("end-snapshot-id is required when start-snapshot-id is given")
    if snapshot_id is not None and (start is not None or end is not None):
        raise BadRequest("a scan is point-in-time (snapshot-id) or incremental (start-snapshot-id, "
                         "end-snapshot-id), not both")
    min_rows = _long(body, "min-rows-requested")
    if min_rows is not None and min_rows < 0:
        raise BadRequest("min-rows-requested must not be negative")
    raw_filter = body.get("filter")
    return ScanRequest(
        snapshot_id=snapshot_id,
        select=_names(body, "select"),
        filter=ex.AlwaysTrue() if raw_filter is None else parse_expression(raw_filter),
        case_sensitive=_bool(body, "case-sensitive", True),
        use_snapshot_schema=_bool(body, "use-snapshot-schema", False),
        start_snapshot_id=start,
        end_snapshot_id=end,
        stats_fields=_names(body, "stats-fields"),
        min_rows_requested=min_rows,
    )


def _long(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise BadRequest(f"{key} must be a 64-bit integer, got {_shown(value)}")
    return value


def _bool(body: dict[str, Any], key: str, default: bool) -> bool:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest(f"{key} must be true or false, got {_shown(value)}")
    return value


def _names(body: dict[str, Any], key: str) -> tuple[str, ...] | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise BadRequest(f"{key} must be a list of field names")
    return tuple(value)


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:80] + "..."


# -- Expression JSON -> PyIceberg --------------------------------------------------------------------------------

_UNARY: dict[str, Callable[[str], ex.BooleanExpression]] = {
    "is-null": ex.IsNull, "not-null": ex.NotNull, "is-nan": ex.IsNaN, "not-nan": ex.NotNaN}
_COMPARISON: dict[str, Callable[[str, Any], ex.BooleanExpression]] = {
    "lt": ex.LessThan, "lt-eq": ex.LessThanOrEqual, "gt": ex.GreaterThan, "gt-eq": ex.GreaterThanOrEqual,
    "eq": ex.EqualTo, "not-eq": ex.NotEqualTo, "starts-with": ex.StartsWith, "not-starts-with": ex.NotStartsWith}
_SET: dict[str, Callable[[str, Any], ex.BooleanExpression]] = {"in": ex.In, "not-in": ex.NotIn}


def parse_expression(raw: Any, depth: int = 0) -> ex.BooleanExpression:
    """The spec's Predicate JSON as an unbound PyIceberg expression (both the current ``child``/``left``/
    ``right`` spelling and the older ``term``/``value``/``values`` one, which Iceberg 1.10 clients send)."""
    if depth > MAX_EXPRESSION_DEPTH:
        raise BadRequest(f"filter: nested deeper than {MAX_EXPRESSION_DEPTH} levels")
    if isinstance(raw, bool):
        return ex.AlwaysTrue() if raw else ex.AlwaysFalse()
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise BadRequest(f"filter: an expression must be true, false or an object with a 'type', got {_shown(raw)}")
    kind = raw["type"].lower()
    if kind in ("true", "false"):
        _only(raw, kind, set())
        return ex.AlwaysTrue() if kind == "true" else ex.AlwaysFalse()
    if kind in ("and", "or"):
        _only(raw, kind, {"left", "right"}, required={"left", "right"})
        left, right = parse_expression(raw["left"], depth + 1), parse_expression(raw["right"], depth + 1)
        return ex.And(left, right) if kind == "and" else ex.Or(left, right)
    if kind == "not":
        _only(raw, kind, {"child"}, required={"child"})
        return ex.Not(parse_expression(raw["child"], depth + 1))
    if kind in _UNARY:
        _only(raw, kind, {"child", "term"})
        return _UNARY[kind](_operand(raw, kind, "child"))
    if kind in _COMPARISON:
        _only(raw, kind, {"left", "right", "term", "value"})
        term = _operand(raw, kind, "left")
        value = raw["right"] if "right" in raw else raw.get("value", _MISSING)
        if value is _MISSING:
            raise BadRequest(f"filter: {kind!r} needs a value ('right' or 'value')")
        return _COMPARISON[kind](term, _literal(value, kind))
    if kind in _SET:
        _only(raw, kind, {"child", "term", "values"}, required={"values"})
        return _SET[kind](_operand(raw, kind, "child"), _literals(raw["values"], kind))
    raise BadRequest(f"filter: unknown expression type {raw['type']!r}")


_MISSING = object()


def _only(raw: dict[str, Any], kind: str, allowed: set[str], required: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    extra = sorted(set(raw) - allowed - {"type"})
    if extra:
        raise BadRequest(f"filter: unexpected fields in {kind!r}: {', '.join(extra)}")
    missing = sorted(required - set(raw))
    if missing:
        raise BadRequest(f"filter: {kind!r} needs {', '.join(missing)}")


def _operand(raw: dict[str, Any], kind: str, preferred: str) -> str:
    """The field a predicate tests: a reference by name (or the older bare string term)."""
    term = raw.get(preferred, raw.get("term"))
    if isinstance(term, str) and term:
        return term
    if isinstance(term, dict) and term.get("type") == "reference" and isinstance(term.get("name"), str):
        if set(term) - {"type", "name"}:
            raise BadRequest(f"filter: a reference in {kind!r} has only 'type' and 'name'")
        return term["name"]
    if isinstance(term, dict) and term.get("type") in ("transform", "apply"):
        raise BadRequest(f"filter: transform and function terms are not supported in {kind!r}; "
                         "use a field reference")
    if isinstance(term, dict) and term.get("type") == "reference" and "id" in term:
        raise BadRequest("filter: references by field id are not accepted in a scan filter; use the field name")
    raise BadRequest(f"filter: {kind!r} needs a field reference ('{preferred}' or 'term'), got {_shown(term)}")


def _literal(raw: Any, kind: str) -> Any:
    if isinstance(raw, dict):
        if raw.get("type") != "literal" or "value" not in raw or set(raw) - {"type", "value", "data-type"}:
            raise BadRequest(f"filter: the value of {kind!r} must be a literal, got {_shown(raw)}")
        raw = raw["value"]
    if raw is None or isinstance(raw, (list, dict)):
        raise BadRequest(f"filter: the value of {kind!r} must be a primitive value, got {_shown(raw)}")
    return raw


def _literals(raw: Any, kind: str) -> list[Any]:
    if isinstance(raw, dict):
        if raw.get("type") != "literals" or not isinstance(raw.get("values"), list):
            raise BadRequest(f"filter: the values of {kind!r} must be a list of literals")
        raw = raw["values"]
    if not isinstance(raw, list):
        raise BadRequest(f"filter: the values of {kind!r} must be a list of literals")
    return [_literal(v, kind) for v in raw]


def bind_filter(expression: ex.BooleanExpression, schema: Schema, case_sensitive: bool) -> None:
    """Refuse (400) a filter naming a field the schema lacks or comparing it with a value of the wrong type."""
    from pyiceberg.expressions.visitors import bind

    try:
        bind(schema, expression, case_sensitive)
    except (ValueError, TypeError) as exc:
        raise BadRequest(f"filter: {exc}") from None


def field_ids(schema: Schema, names: tuple[str, ...], case_sensitive: bool, what: str) -> list[int]:
    """The ids of ``names`` (full dotted names); 400 naming the first the schema lacks."""
    ids = []
    for name in names:
        try:
            ids.append(schema.find_field(name, case_sensitive).field_id)
        except ValueError:
            raise BadRequest(f"{what}: no field {name!r} in the schema") from None
    return ids


# -- PyIceberg -> Expression JSON (residual filters) ------------------------------------------------------------

_KIND_OF = {
    ex.IsNull: "is-null", ex.NotNull: "not-null", ex.IsNaN: "is-nan", ex.NotNaN: "not-nan",
    ex.BoundIsNull: "is-null", ex.BoundNotNull: "not-null", ex.BoundIsNaN: "is-nan", ex.BoundNotNaN: "not-nan",
    ex.LessThan: "lt", ex.LessThanOrEqual: "lt-eq", ex.GreaterThan: "gt", ex.GreaterThanOrEqual: "gt-eq",
    ex.EqualTo: "eq", ex.NotEqualTo: "not-eq", ex.StartsWith: "starts-with", ex.NotStartsWith: "not-starts-with",
    ex.BoundLessThan: "lt", ex.BoundLessThanOrEqual: "lt-eq", ex.BoundGreaterThan: "gt",
    ex.BoundGreaterThanOrEqual: "gt-eq", ex.BoundEqualTo: "eq", ex.BoundNotEqualTo: "not-eq",
    ex.BoundStartsWith: "starts-with", ex.BoundNotStartsWith: "not-starts-with",
    ex.In: "in", ex.NotIn: "not-in", ex.BoundIn: "in", ex.BoundNotIn: "not-in",
}


def expression_json(expression: ex.BooleanExpression, schema: Schema) -> Any:
    """An expression in the spec's JSON, in the ``term``/``value`` spelling every client reads (Iceberg 1.10
    and PyIceberg parse it; the newer ``child``/``left``/``right`` one they may not). Bound literals are written
    in the single-value serialization of their field's type."""
    if isinstance(expression, ex.AlwaysTrue):
        return True
    if isinstance(expression, ex.AlwaysFalse):
        return False
    if isinstance(expression, (ex.And, ex.Or)):
        return {"type": "and" if isinstance(expression, ex.And) else "or",
                "left": expression_json(expression.left, schema), "right": expression_json(expression.right, schema)}
    if isinstance(expression, ex.Not):
        return {"type": "not", "child": expression_json(expression.child, schema)}
    kind = _KIND_OF.get(type(expression))
    if kind is None:
        raise ValueError(f"cannot serialize {expression!r}")
    term: Any = expression.term  # type: ignore[attr-defined]
    if isinstance(term, ex.BoundReference):
        field_type: IcebergType | None = term.field.field_type
        name = schema.find_column_name(term.field.field_id) or term.field.name
    else:
        field_type, name = None, term.name
    out: dict[str, Any] = {"type": kind, "term": name}
    if isinstance(expression, (ex.LiteralPredicate, ex.BoundLiteralPredicate)):
        out["value"] = _literal_json(expression.literal, field_type)
    elif isinstance(expression, (ex.SetPredicate, ex.BoundSetPredicate)):
        values = expression.literals
        out["values"] = sorted((_literal_json(v, field_type) for v in values), key=repr)
    return out


def _literal_json(lit: Any, field_type: IcebergType | None) -> Any:
    value = lit.value
    return single_value_json(field_type, value) if field_type is not None else _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex().upper()
    if isinstance(value, Decimal):
        return str(value)
    return value


# -- single-value serialization ----------------------------------------------------------------------------------

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)


def single_value_json(field_type: IcebergType, value: Any) -> Any:
    """A value of a primitive type in the spec's JSON single-value serialization (the form partitions and
    bounds take in ContentFile): dates as ``YYYY-MM-DD``, timestamps ISO-8601 with microseconds, decimals and
    binaries as strings, UUIDs in the 8-4-4-4-12 form."""
    if value is None:
        return None
    if isinstance(field_type, (BooleanType, IntegerType, LongType, StringType)):
        return value
    if isinstance(field_type, (FloatType, DoubleType)):
        return float(value)
    if isinstance(field_type, DecimalType):
        return str(value)
    if isinstance(field_type, DateType):
        return (value if isinstance(value, dt.date) else EPOCH_DATE + dt.timedelta(days=int(value))).isoformat()
    if isinstance(field_type, TimeType):
        if isinstance(value, dt.time):
            return value.isoformat(timespec="microseconds")
        return (EPOCH + dt.timedelta(microseconds=int(value))).time().isoformat(timespec="microseconds")
    if isinstance(field_type, (TimestampType, TimestamptzType)):
        moment = value if isinstance(value, dt.datetime) else EPOCH + dt.timedelta(microseconds=int(value))
        text = moment.replace(tzinfo=None).isoformat(timespec="microseconds")
        return text + "+00:00" if isinstance(field_type, TimestamptzType) else text
    if isinstance(field_type, UUIDType):
        return str(value if isinstance(value, uuid.UUID) else uuid.UUID(bytes=bytes(value)))
    if isinstance(field_type, (FixedType, BinaryType)):
        return bytes(value).hex().upper()
    return _plain(value)  # nanosecond timestamps, unknown: as the value is
