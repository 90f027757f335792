"""File skipping from the query's hints (pure). Every hint is best effort: a hint that does not parse, names a
column that is not a partition column, or cannot be compared is ignored (the file is kept), never an error;
the client applies the predicates to the data it reads anyway.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

import orjson

from arco.sharing.actions import SharedFile

_UNKNOWN = None  # three-valued logic: None means "cannot tell", and a file is dropped only on a definite False
_MAX_DEPTH = 64


def _cast(value: str | None, value_type: str) -> Any:
    if value is None:
        return None
    kind = value_type.lower()
    if kind in ("int", "long"):
        return int(value)
    if kind in ("float", "double"):
        return float(value)
    if kind == "bool":
        if value.lower() not in ("true", "false"):
            raise ValueError(value)
        return value.lower() == "true"
    if kind == "date":
        return date.fromisoformat(value)
    if kind == "timestamp":
        return datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T")).replace(tzinfo=None)
    if kind == "string":
        return value
    raise ValueError(f"unknown valueType {value_type!r}")


class _Skip(Exception):
    """This (sub)predicate cannot be evaluated: treat it as unknown."""


def _leaf(node: dict[str, Any], values: dict[str, str | None]) -> Any:
    op = node.get("op")
    if op == "column":
        name = node.get("name")
        if not isinstance(name, str) or name not in values:
            raise _Skip  # not a partition column: the files cannot be told apart by it
        return _cast(values[name] if values[name] != "" else None, str(node.get("valueType", "")))
    if op == "literal":
        return _cast(node.get("value") if isinstance(node.get("value"), str) else None, str(node.get("valueType", "")))
    raise _Skip


_COMPARE = {
    "equal": lambda a, b: a == b, "lessThan": lambda a, b: a < b, "lessThanOrEqual": lambda a, b: a <= b,
    "greaterThan": lambda a, b: a > b, "greaterThanOrEqual": lambda a, b: a >= b,
}


def _eval(node: Any, values: dict[str, str | None], depth: int = 0) -> bool | None:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        raise _Skip
    op = node.get("op")
    children = node.get("children") or []
    if not isinstance(children, list):
        raise _Skip
    if op in ("and", "or"):
        results = []
        for child in children:
            try:
                results.append(_eval(child, values, depth + 1))
            except _Skip:
                results.append(_UNKNOWN)
        if op == "and":
            return False if False in results else (True if all(r is True for r in results) else _UNKNOWN)
        return True if True in results else (False if all(r is False for r in results) else _UNKNOWN)
    if op == "not":
        if len(children) != 1:
            raise _Skip
        inner = _eval(children[0], values, depth + 1)
        return None if inner is None else not inner
    if op == "isNull":
        if len(children) != 1:
            raise _Skip
        return _leaf(children[0], values) is None
    if op in _COMPARE:
        if len(children) != 2:
            raise _Skip
        left, right = _leaf(children[0], values), _leaf(children[1], values)
        if left is None or right is None:
            return False  # SQL: a comparison with NULL is not true
        try:
            return bool(_COMPARE[op](left, right))
        except TypeError:
            raise _Skip from None
    raise _Skip


def parse_json_predicate(raw: str | None) -> dict[str, Any] | None:
    if not raw or len(raw) > 1_000_000:
        return None
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def keeps(tree: dict[str, Any] | None, file: SharedFile) -> bool:
    if tree is None:
        return True
    try:
        return _eval(tree, file.partition_values) is not False
    except (_Skip, ValueError, TypeError, RecursionError):
        return True


_SQL = re.compile(r"^\s*(?:(?P<col>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op><=|>=|<>|!=|=|<|>)\s*"
                  r"(?P<lit>'(?:[^']|'')*'|-?\d+(?:\.\d+)?)"
                  r"|(?P<lit2>'(?:[^']|'')*'|-?\d+(?:\.\d+)?)\s*(?P<op2><=|>=|<>|!=|=|<|>)\s*(?P<col2>[A-Za-z_][A-Za-z0-9_]*)"
                  r"|(?P<col3>[A-Za-z_][A-Za-z0-9_]*)\s+IS\s+(?P<not>NOT\s+)?NULL)\s*$", re.IGNORECASE)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "<>": "<>", "!=": "!="}


def _sql_keeps(hint: str, values: dict[str, str | None]) -> bool:
    match = _SQL.match(hint)
    if match is None:
        return True  # not in the supported subset: skipped
    if match.group("col3"):
        column = match.group("col3")
        if column not in values:
            return True
        is_null = values[column] in (None, "")
        return not is_null if match.group("not") else is_null
    if match.group("col"):
        column, op, literal = match.group("col"), match.group("op"), match.group("lit")
    else:
        column, op, literal = match.group("col2"), _FLIP[match.group("op2")], match.group("lit2")
    if column not in values:
        return True
    value = values[column]
    if value in (None, ""):
        return False
    if literal.startswith("'"):
        left: Any = value
        right: Any = literal[1:-1].replace("''", "'")
        # Text order equals value order only for ISO dates; other ordered comparisons on text are skipped.
        if op not in ("=", "<>", "!=") and not (_ISO_DATE.match(left) and _ISO_DATE.match(right)):
            return True
    else:
        try:
            left, right = float(value), float(literal)  # type: ignore[arg-type]
        except ValueError:
            return True
    return {"=": left == right, "<>": left != right, "!=": left != right, "<": left < right, ">": left > right,
            "<=": left <= right, ">=": left >= right}[op]


def filter_files(files: list[SharedFile], predicate_hints: list[str] | None, json_hints: str | None,
                 limit_hint: int | None) -> list[SharedFile]:
    """Files that may satisfy the hints (predicates first, then the limit, as the protocol orders them)."""
    tree = parse_json_predicate(json_hints)
    kept = [f for f in files if keeps(tree, f)
            and all(_sql_keeps(h, f.partition_values) for h in (predicate_hints or [])[:100] if len(h) < 10_000)]
    if limit_hint is None:
        return kept
    out: list[SharedFile] = []
    rows = 0
    for file in kept:
        if rows >= limit_hint and out:
            break
        out.append(file)
        count = _num_records(file.stats)
        if count is None:
            return kept  # without a row count the limit cannot be honoured safely: send everything
        rows += count
    return out


def _num_records(stats: str | None) -> int | None:
    if not stats:
        return None
    try:
        value = orjson.loads(stats).get("numRecords")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, int) else None
