"""When an optimistic view (arco.optimistic) still holds although the log moved: only creations, only for a commit
that found its table, and only while this process knows every operation it applied since the view's first read."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arco.catalog import state as rules
from arco.optimistic import CREATIONS, NO_CHANGE, OptimisticView, optimistic_view, still_holds
from arco.storage.local import LocalBackend
from support.iceberg_harness import Harness, make_harness


def commit_view() -> OptimisticView:
    return OptimisticView(arrived=0.0, seen_seq=10, creations_irrelevant=True)


def test_a_view_with_nothing_logged_since_holds_for_any_request() -> None:
    assert still_holds(OptimisticView(arrived=0.0, seen_seq=10), [])
    assert still_holds(commit_view(), [])


def test_creations_leave_the_view_of_a_commit_that_found_its_table_standing() -> None:
    assert still_holds(commit_view(), ["create_table", "create_namespace", "create_table"])


def test_creations_make_any_other_view_stale() -> None:
    """A staged create (or anything before its table is found) decided on a name being free: a creation may have
    taken it."""
    assert not still_holds(OptimisticView(arrived=0.0, seen_seq=10), ["create_table"])


def test_fences_change_nothing_so_they_leave_every_view_standing() -> None:
    assert still_holds(OptimisticView(arrived=0.0, seen_seq=10), ["fence", "fence"])
    assert still_holds(commit_view(), ["fence", "create_table", "fence"])
    assert not still_holds(OptimisticView(arrived=0.0, seen_seq=10), ["fence", "create_table"])


@pytest.mark.parametrize("op", sorted(set(rules.RULES) - CREATIONS - NO_CHANGE))
def test_every_other_operation_makes_the_view_stale(op: str) -> None:
    assert not still_holds(commit_view(), ["create_table", op])


def test_operations_this_process_does_not_know_make_the_view_stale() -> None:
    assert not still_holds(commit_view(), None)


def processes(tmp_path: Path) -> tuple[Harness, Harness]:
    """Two processes on one warehouse: ``other`` changes the catalog, ``here`` holds the view."""
    other = make_harness(LocalBackend(tmp_path / "warehouse"))
    other.namespaces.create(other.catalog, ["db"], {}, "admin")
    other.create_table("t")
    here = make_harness(LocalBackend(tmp_path / "warehouse"))
    here.store.ensure_fresh(time.monotonic())
    return other, here


def view_after(here: Harness, found_table: bool, change: Callable[[], None]) -> bool:
    """Open a view on ``here``, make ``change`` elsewhere, check: whether the view holds."""
    with optimistic_view(time.monotonic()) as view:
        with here.store.read():  # an unchecked read: notes where the log was
            pass
        assert view.seen_seq is not None
        view.creations_irrelevant = found_table
        change()
        here.store.ensure_fresh(time.monotonic())  # the check (started after the view's arrival)
        return here.store.view_holds(view)


def test_a_store_keeps_a_commits_view_across_creations_elsewhere(tmp_path: Path) -> None:
    other, here = processes(tmp_path)

    def creations() -> None:
        other.namespaces.create(other.catalog, ["elsewhere"], {}, "admin")
        other.create_table("u")

    assert view_after(here, found_table=True, change=creations)
    assert not view_after(here, found_table=False, change=lambda: other.create_table("v"))


def test_a_store_makes_a_commits_view_stale_after_a_change_to_something_that_exists(tmp_path: Path) -> None:
    other, here = processes(tmp_path)

    def change() -> None:
        other.create_table("u")
        other.namespaces.update_properties(other.catalog, ("db",), {"updates": {"team": "x"}}, "admin")

    assert not view_after(here, found_table=True, change=change)


def test_a_store_that_does_not_remember_every_operation_since_the_view_finds_it_stale(tmp_path: Path) -> None:
    """After loading a snapshot (which forgets the operations one by one), or more operations than it keeps."""
    other, here = processes(tmp_path)
    with optimistic_view(time.monotonic()) as view:
        with here.store.read():
            pass
        view.creations_irrelevant = True
        other.create_table("u")
        here.store.ensure_fresh(time.monotonic())
        here.store._recent_ops.clear()  # as loading a snapshot does
        assert not here.store.view_holds(view)
