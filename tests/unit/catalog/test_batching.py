"""Which Tier 1 operations may share a log entry (arco.catalog.batching), and how an entry holds them (log)."""

from __future__ import annotations

from typing import Any

import pytest

from arco.catalog.batching import MAX_BATCH, Batch, Pending, footprint
from arco.catalog.log import entry_of, ops_of


def create(name: str, *, ns: str = "db", managed: bool = True, table_id: str | None = None) -> dict[str, Any]:
    return {"op": "create_table", "id": table_id or f"id-{name}", "catalog_id": "c", "namespace": [ns],
            "name": name, "managed": managed}


def admitted(*ops: dict[str, Any]) -> list[bool]:
    batch = Batch()
    out = [batch.take(Pending(lambda state, op=op: op, "p"), op) for op in ops]
    assert batch.ops == [op for op, taken in zip(ops, out, strict=True) if taken]
    return out


def test_managed_creates_of_different_names_and_ids_share_an_entry() -> None:
    assert admitted(create("a"), create("b"), create("a", ns="other", table_id="x")) == [True, True, True]


@pytest.mark.parametrize("second", [create("A", table_id="other-id"), create("b", table_id="id-a"),
                                    create("b", managed=False), {"op": "drop_table", "id": "id-b"},
                                    {"op": "create_namespace", "id": "n", "catalog_id": "c", "path": ["x"]}])
def test_what_collides_or_cannot_be_checked_alongside_waits(second: dict[str, Any]) -> None:
    assert admitted(create("a"), second) == [True, False]


@pytest.mark.parametrize("first", [create("x", managed=False), {"op": "update_catalog", "id": "c"}])
def test_a_change_that_must_be_alone_is_alone(first: dict[str, Any]) -> None:
    assert footprint(first) is None
    assert admitted(first, create("a")) == [True, False]


def test_an_entry_holds_at_most_max_batch_operations() -> None:
    results = admitted(*(create(f"t{i}") for i in range(MAX_BATCH + 1)))
    assert results == [True] * MAX_BATCH + [False]


def test_a_malformed_operation_is_alone() -> None:
    assert footprint({"op": "create_table", "managed": True}) is None


def test_a_lone_operation_is_its_own_entry_and_a_batch_is_wrapped() -> None:
    a, b = create("a"), create("b")
    assert entry_of([a]) == a and ops_of(a) == [a]
    assert ops_of(entry_of([a, b])) == [a, b]
    with pytest.raises(ValueError):
        entry_of([])
    with pytest.raises(ValueError):
        entry_of([{"op": "x", "batch": []}])
