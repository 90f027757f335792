"""A request answered from this process's catalog state first, and checked against storage later.

Every request normally starts with a freshness check of the Tier 1 log (:mod:`arco.catalog.store`): one storage
read before authentication, the catalog lookup and the grant checks may decide anything. For a table commit on
object storage that read is a sequential round trip of its own, in front of the commit's writes. Under an
*optimistic view* those decisions are made on the state this process already has, noting the log position it
was at; the check still happens, beside the commit's first write, and *confirms* the view only if the log has not
moved past that position, or, for a commit that found its table, moved by creations only (:data:`CREATIONS`): then
every decision made was the one a check at arrival would have given. Otherwise the request raises
:class:`StaleView`, what it wrote is undone, and :class:`arco.api.optimistic.OptimisticCommits` runs the whole
request again the ordinary way.

Which writes may come before the confirmation: with an Idempotency-Key, the marker claim (released if the view
is stale) and nothing else; without one, the new metadata file (deleted if the view is stale; it is not the
table's until the CAS, which waits for the confirmation) and the pending receipt (a record of an attempt, best
effort), written by the table's batch (:func:`arco.iceberg.commit.commit_batch`), which confirms each member's
view itself before the CAS. As a net under that rule, any other storage write made under a view not yet
confirmed raises :class:`StaleView` too (:func:`refuse_unconfirmed_write`; the allowed writes run inside
:func:`unconfirmed_writes_allowed`): a path that forgets to confirm costs a second run, never a change made on
stale grants.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from arco.catalog.log import FENCE

# Log operations that only add a new namespace or table. Once the request has found its table, none of them can
# change a decision it made: an operation of this kind leaves every existing name, entry, grant, owner and
# principal as it was (a new securable's owner grant is on that securable alone), and one that took the request's
# own name would have had to follow a drop or a rename of its table, which are not of this kind.
CREATIONS = frozenset({"create_namespace", "create_table"})
# Log operations that change nothing at all (arco.catalog.log: a fence holds an unanswered append's position).
NO_CHANGE = frozenset({FENCE})


class StaleView(Exception):
    """The catalog state a request's decisions were made on was not current: run the request again."""

    runs_again = True  # not an outcome of its own (arco.metrics.counted_commit)


@dataclass
class OptimisticView:
    arrived: float  # monotonic time the request arrived: the confirming check must start at or after it
    seen_seq: int | None = None  # the log position of the first unchecked read
    confirmed: bool = False
    # Set by a commit once it has found its (existing) table: from then on its decisions rest on things that exist,
    # which creations elsewhere cannot change (CREATIONS). Never for a staged create, whose name must be free.
    creations_irrelevant: bool = False


def table_found() -> None:
    """Say that the current request (a commit) has found its table: see :data:`CREATIONS`."""
    view = current()
    if view is not None:
        view.creations_irrelevant = True


def still_holds(view: OptimisticView, since_seen: Iterable[str | None] | None) -> bool:
    """Whether a view is as good as current, given the operations logged after its first unchecked read (None when
    this process does not know them all, say after loading a snapshot): none at all, or, for a commit that found
    its table, creations only (fences, which change nothing, aside)."""
    if since_seen is None:
        return False
    ops = [op for op in since_seen if op not in NO_CHANGE]
    return not ops or (view.creations_irrelevant and all(op in CREATIONS for op in ops))


_VIEW: ContextVar[OptimisticView | None] = ContextVar("arco_optimistic_view", default=None)
_WRITES_ALLOWED: ContextVar[bool] = ContextVar("arco_unconfirmed_writes_allowed", default=False)


def current() -> OptimisticView | None:
    """The request's view while it is unconfirmed; None outside one, or once confirmed."""
    view = _VIEW.get()
    return view if view is not None and not view.confirmed else None


@contextmanager
def optimistic_view(arrived: float) -> Iterator[OptimisticView]:
    view = OptimisticView(arrived)
    token = _VIEW.set(view)
    try:
        yield view
    finally:
        _VIEW.reset(token)


@contextmanager
def unconfirmed_writes_allowed() -> Iterator[None]:
    """Writes that may precede the confirmation: undone (a marker released) if the view turns out stale."""
    token = _WRITES_ALLOWED.set(True)
    try:
        yield
    finally:
        _WRITES_ALLOWED.reset(token)


def refuse_unconfirmed_write() -> None:
    if current() is not None and not _WRITES_ALLOWED.get():
        raise StaleView("a write under a catalog view that was not confirmed")
