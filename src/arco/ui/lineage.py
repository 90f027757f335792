"""A table's lineage a step up and a step down, for its page: the edges the compactor derived
(:mod:`arco.pipeline.lineage`), one per pair of tables and confidence, whatever the snapshots.

``known`` is False when no edge touches the table: the page then says "unknown" rather than "no inputs", since an
engine that reports no scans, or a pipeline not yet run, leaves a table without edges either way. ``may_see``
(a table uuid -> whether the viewer may read it) leaves out the neighbours the viewer cannot read; ``name_of``
(a table uuid -> its full name now, None if it is gone) names a neighbour renamed since the edge was recorded as
it is called now. ``by_snapshot`` gives each snapshot of the table the tables its commit read, for its version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from arco.lru import Lru
from arco.pipeline.checkpoint import history_keys
from arco.pipeline.lineage import LINEAGE
from arco.pipeline.parquet_io import read_many
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
    by_snapshot: dict[int, list[str]] = field(default_factory=dict)  # this table's snapshot -> the tables it read


COLUMNS = ["source_uuid", "source_catalog", "source_namespace", "source_table", "target_uuid", "target_catalog",
           "target_namespace", "target_table", "target_snapshot_id", "confidence"]
# The lineage table as a compaction left it, by its files (which never change: a compaction writes new ones).
_edges: Lru[tuple[str, tuple[str, ...]], pa.Table] = Lru(4, budget=64 << 20, weigh=lambda table: table.nbytes)


def _edges_of(storage: StorageBackend, keys: list[str]) -> pa.Table:
    edges = _edges.get_or_load((storage.url, tuple(keys)), lambda: read_many(storage, keys, LINEAGE, columns=COLUMNS))
    assert edges is not None  # read_many always answers a table
    return edges


def lineage_of(storage: StorageBackend, table_uuid: str, full_name: str,
               may_see: Callable[[str], bool] | None = None,
               name_of: Callable[[str], str | None] | None = None) -> Lineage:
    """Edges into and out of the table, as recorded by the last compaction; a table's edges to itself (the
    pipeline's own rewrites) are left out: its versions above say as much."""
    edges = _edges_of(storage, history_keys(storage, "lineage"))
    touching = pc.or_(pc.equal(edges["source_uuid"], table_uuid), pc.equal(edges["target_uuid"], table_uuid))
    rows = edges.filter(touching).to_pylist()  # a page's own edges only: the warehouse's may number millions

    def name(row: dict, side: str) -> str:
        now = name_of(row[f"{side}_uuid"]) if name_of is not None else None
        return now or ".".join(str(p) for p in (row[f"{side}_catalog"], *(row[f"{side}_namespace"] or []),
                                                row[f"{side}_table"]))

    upstream: dict[tuple[str, str], Edge] = {}
    downstream: dict[tuple[str, str], Edge] = {}
    by_snapshot: dict[int, set[str]] = {}
    for row in rows:
        if row["source_uuid"] == row["target_uuid"]:
            continue
        if row["target_uuid"] == table_uuid and (may_see is None or may_see(row["source_uuid"])):
            edge = upstream.setdefault((row["source_uuid"], row["confidence"]),
                                       Edge(name(row, "source"), full_name, row["confidence"]))
            if row["target_snapshot_id"] is not None:
                by_snapshot.setdefault(row["target_snapshot_id"], set()).add(edge.upstream)
        if row["source_uuid"] == table_uuid and (may_see is None or may_see(row["target_uuid"])):
            downstream.setdefault((row["target_uuid"], row["confidence"]),
                                  Edge(full_name, name(row, "target"), row["confidence"]))
    return Lineage(full_name, sorted(upstream.values(), key=lambda e: e.upstream),
                   sorted(downstream.values(), key=lambda e: e.downstream), known=bool(upstream or downstream),
                   by_snapshot={snapshot: sorted(names) for snapshot, names in by_snapshot.items()})
