"""A shared table's partition filter: which of its files a recipient may read (pure).

A provider may share part of a table (Unity Catalog's ``partition_specification`` on a share's data object, 2.0;
Databricks names the same list ``partitions``): a list of partitions combined with OR, each a list of
``{name, op, value}`` combined with AND, ``op`` ``EQUAL`` (the default) or ``LIKE`` (SQL's, ``%`` and ``_``), and a
missing value meaning null. A file is served only if its partition values satisfy the filter; a file without a value
for a named column is not served (the filter fails closed), so a filter naming a column the table is not partitioned
by shares nothing rather than everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPS = ("EQUAL", "LIKE")


class InvalidPartitionFilter(ValueError):
    """A partition filter that is not the spec's shape; the message says what is wrong."""


@dataclass(frozen=True)
class Condition:
    name: str  # the partition column, case-folded (column names are case-insensitive)
    op: str
    value: str | None

    def holds(self, values: Mapping[str, str | None]) -> bool:
        if self.name not in values:
            return False
        actual = values[self.name]
        if self.value is None or actual is None:
            return self.op == "EQUAL" and self.value is None and actual is None
        if self.op == "EQUAL":
            return actual == self.value
        return _like(self.value).fullmatch(actual) is not None


@dataclass(frozen=True)
class PartitionFilter:
    partitions: tuple[tuple[Condition, ...], ...]

    def admits(self, values: Mapping[str, str | None]) -> bool:
        """Whether a file with these partition values (column name -> value as Delta writes it) may be served."""
        folded = {name.casefold(): value for name, value in values.items()}
        return any(all(c.holds(folded) for c in partition) for partition in self.partitions)

    def spec(self) -> dict[str, Any]:
        """The filter in the spec's shape (``partition_specification``), as stored and answered."""
        return {"partitions": [{"values": [{"name": c.name, "op": c.op, **({"value": c.value}
                                                                            if c.value is not None else {})}
                                           for c in partition]} for partition in self.partitions]}


def parse(raw: Any) -> PartitionFilter:
    """A filter from ``partition_specification`` (``{"partitions": [...]}``) or Databricks' ``partitions`` list."""
    partitions = raw.get("partitions") if isinstance(raw, dict) else raw
    if not isinstance(partitions, list) or not partitions:
        raise InvalidPartitionFilter("a partition filter is a non-empty list of partitions, each {\"values\": "
                                     "[{\"name\", \"op\", \"value\"}]}")
    return PartitionFilter(tuple(_partition(p) for p in partitions))


def of_object(obj: Mapping[str, Any]) -> PartitionFilter | None:
    """The filter of a share's data object as stored (None: the whole table is shared)."""
    spec = obj.get("partition_specification")
    return parse(spec) if spec else None


def _partition(raw: Any) -> tuple[Condition, ...]:
    values = raw.get("values") if isinstance(raw, dict) else None
    if not isinstance(values, list) or not values:
        raise InvalidPartitionFilter("each partition needs a non-empty list of values")
    conditions = tuple(_condition(v) for v in values)
    names = [c.name for c in conditions]
    if len(set(names)) != len(names):
        raise InvalidPartitionFilter(f"a partition names a column twice: {names}")
    return conditions


def _condition(raw: Any) -> Condition:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"].strip():
        raise InvalidPartitionFilter("each partition value needs a column 'name'")
    if raw.get("recipient_property_key") is not None:
        raise InvalidPartitionFilter("recipient_property_key is not supported: name the value itself")
    op = str(raw.get("op") or "EQUAL").upper()
    if op not in OPS:
        raise InvalidPartitionFilter(f"op must be one of {list(OPS)}, got {raw.get('op')!r}")
    value = raw.get("value")
    if value is not None and not isinstance(value, str):
        raise InvalidPartitionFilter(f"the value of {raw['name']!r} must be a string (or absent, for null)")
    if op == "LIKE" and value is None:
        raise InvalidPartitionFilter(f"LIKE needs a value for {raw['name']!r}")
    return Condition(raw["name"].strip().casefold(), op, value)


def _like(pattern: str) -> re.Pattern[str]:
    """SQL LIKE as a regular expression: ``%`` any run, ``_`` one character, ``\\`` escapes the next one."""
    out: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            out.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            out.append(".*")
        elif char == "_":
            out.append(".")
        else:
            out.append(re.escape(char))
    return re.compile("".join(out), re.DOTALL)

