"""Driving Tier 1 in tests: the pure rules (check, then apply, as a writer would), and writers in many processes."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

from arco.catalog import state as rules
from arco.catalog.state import CatalogState, Operation

_fork = multiprocessing.get_context("fork")


def commit(state: CatalogState, op: Operation) -> None:
    op = {"at_ms": 1000 + state.seq, "principal": "admin", **op}
    rules.check(state, op)
    rules.apply(state, op, state.seq + 1)


def in_processes(worker: Callable[[str, int, int, Any], None], root: str, workers: int, each: int) -> None:
    """``worker(root, index, each, barrier)`` in ``workers`` forked processes that start together (the barrier);
    every one must exit cleanly."""
    barrier = _fork.Barrier(workers)
    procs = [_fork.Process(target=worker, args=(root, index, each, barrier)) for index in range(workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
