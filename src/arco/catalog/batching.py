"""Group commit for Tier 1: the changes waiting for this process's log append, and which share one entry (pure).

One process appends to the log one entry at a time (a second appender would only lose the race for the same
position), and an append is a durable write, so under many concurrent creates the append is what they queue
for. The writer that gets to append takes the changes waiting behind it too, builds each against the same state
and writes them as one entry: the positions ``n .. n+k-1`` of its ``k`` operations (:mod:`arco.catalog.log`).

Operations in one entry are checked against the state before the entry, not against each other, so only those
that cannot affect each other's checks may share one: creates of managed tables and views with different names
and ids. Their checks read the name, the id and the namespace (which no create drops), and a managed location is
allocated under the new table's own id, so it overlaps no other; a table at a location the client chose is
checked against every other table's location (storage governance), so it is an entry of its own, as is anything
else. A create that collides with one already taken waits for the next entry, where it is checked against the
state that includes the first (and refused, if the name is now taken).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from arco.catalog import state as rules
from arco.catalog.audit import audit_names
from arco.catalog.model import name_key, path_key
from arco.catalog.state import CatalogState, Operation
from arco.catalog.system import check_writable

BATCHABLE = frozenset({"create_table"})
MAX_BATCH = 64  # operations per entry: bounds an entry's size and the time one append holds the others


@dataclass(eq=False)
class Pending:
    """A change waiting to be appended: how to build it, and, once decided, its operation and position or the
    error that refused it."""

    build: Callable[[CatalogState], Operation]
    principal: str
    request: str | None = None
    source: dict[str, Any] | None = None
    # The decisions the request's grant checks made, to be made again on the state the change lands on
    # (arco.catalog.landing): the request's, noted when it queued the change.
    conditions: tuple[Callable[[CatalogState], None], ...] = ()
    done: bool = False
    result: tuple[Operation, int] | None = None
    error: BaseException | None = None

    def operation(self, state: CatalogState) -> Operation:
        """The change's operation, built and checked against ``state`` (the state it would land on, held still)."""
        for condition in self.conditions:
            condition(state)
        op = dict(self.build(state))
        op.setdefault("at_ms", int(time.time() * 1000))
        # Who made the change is the caller, always: an operation about another principal (a token made for it)
        # names that one in a field of its own.
        op["principal"] = self.principal
        if self.request is not None:
            op["request"] = self.request
        if self.source is not None:
            op["source"] = self.source
        check_writable(state, op, self.principal)
        rules.check(state, op)
        rules.annotate(state, op)
        # Named now, from the state the operation lands on: after a drop, its ids name nothing.
        op["audit"] = audit_names(state, op)
        return op

    def succeed(self, op: Operation, seq: int) -> None:
        self.result, self.done = (op, seq), True

    def fail(self, error: BaseException) -> None:
        self.error, self.done = error, True


def footprint(op: Operation) -> frozenset[Hashable] | None:
    """What a batchable operation's check reads and its application writes; None if the operation must be alone."""
    if op.get("op") not in BATCHABLE or op.get("managed") is not True:
        return None
    try:
        name = (op["catalog_id"], path_key(tuple(op["namespace"])), name_key(str(op["name"])))
        return frozenset({("name", *name), ("id", str(op["id"]))})
    except (KeyError, TypeError):
        return None


@dataclass
class Batch:
    """The operations of one entry, in order, each with its pending change."""

    members: list[tuple[Pending, Operation]] = field(default_factory=list)
    _taken: set[Hashable] = field(default_factory=set)
    _alone: bool = False

    def clear(self) -> None:
        self.members.clear()
        self._taken.clear()
        self._alone = False

    def take(self, pending: Pending, op: Operation) -> bool:
        """Add the change if it may join: the first operation always; then batchable ones that touch nothing
        already in, up to :data:`MAX_BATCH`. Whether it was added."""
        prints = footprint(op)
        if not self.members:
            self._alone = prints is None
        elif self._alone or prints is None or len(self.members) >= MAX_BATCH or prints & self._taken:
            return False
        self._taken |= prints or set()
        self.members.append((pending, op))
        return True

    @property
    def ops(self) -> list[Operation]:
        return [op for _, op in self.members]
