"""A history log (a table's snapshot log, a view's version log) once some of what it names is gone.

Java's rule for both: an entry naming something removed clears every entry before it. Dropping that entry alone
would leave a gap, and the entry before it would then look current until the one after it, so time travel to a
moment the removed snapshot (or version) was current would read the older one, where it must fail.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

E = TypeVar("E")


def after_last_gap(entries: Sequence[E], kept: Collection[int], id_of: Callable[[E], int]) -> list[E]:
    """The entries after the last one whose id is not in ``kept``."""
    cut: list[E] = []
    for entry in entries:
        if id_of(entry) in kept:
            cut.append(entry)
        else:
            cut.clear()
    return cut
