"""A table's lineage a step up and a step down, for its page.

No part of Arco records lineage edges yet: the compacted timeline carries each version's lineage *confidence*
(seed section 8.1) but not its inputs. So this answers "unknown" for every table today; it is the one function
the table page reads, to be replaced by a reader of declared or observed lineage when one exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arco.storage.base import StorageBackend


@dataclass(frozen=True)
class Edge:
    upstream: str  # full names
    downstream: str
    confidence: str  # Verified, DeclaredUnverified, None (section 8.1)


@dataclass(frozen=True)
class Lineage:
    table: str
    upstream: list[Edge] = field(default_factory=list)
    downstream: list[Edge] = field(default_factory=list)
    known: bool = False  # False: nothing recorded, shown as "unknown" rather than as "no inputs"


def lineage_of(storage: StorageBackend, table_uuid: str, full_name: str) -> Lineage:
    """Edges into and out of the table; none are recorded yet (see the module's docstring)."""
    return Lineage(full_name)
