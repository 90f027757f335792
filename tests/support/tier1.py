"""Driving the pure Tier 1 rules in unit tests: check, then apply, as a writer would."""

from __future__ import annotations

from arco.catalog import state as rules
from arco.catalog.state import CatalogState, Operation


def commit(state: CatalogState, op: Operation) -> None:
    op = {"at_ms": 1000 + state.seq, "principal": "admin", **op}
    rules.check(state, op)
    rules.apply(state, op, state.seq + 1)
