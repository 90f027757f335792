"""``GET /api/2.1/unity-catalog/lineage/tables/{full_name}?direction=upstream|downstream|both&depth=N``.

A table's lineage (:mod:`arco.pipeline.lineage`) as nodes and edges, up to ``depth`` (1 to 10, default 1) edges
away. The caller needs to read the table (SELECT, as for getTable). Every other table is shown only if the caller
may read it too; one it may not read (or one since dropped, for anyone but a metastore admin) is a redacted node,
with neither name nor id, and the walk does not go through it. Edges are read from the compacted history, so they
appear once ``arco pipeline compact`` has run.
"""

from __future__ import annotations

from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.pipeline import lineage
from arco.pipeline.checkpoint import history_keys
from arco.pipeline.parquet_io import read_many
from arco.storage.base import StorageBackend
from arco.unity.common import denied, tenant_of
from arco.unity.errors import invalid
from arco.unity.service import UnityService


def parse_query(direction: str | None, depth: str | None) -> tuple[str, int]:
    """``direction`` and ``depth`` as asked, or 400."""
    chosen = direction or "both"
    if chosen not in lineage.DIRECTIONS:
        raise invalid(f"direction must be one of {list(lineage.DIRECTIONS)}, got {direction!r}")
    try:
        hops = int(depth) if depth not in (None, "") else 1
    except ValueError:
        raise invalid(f"depth must be an integer, got {depth!r}") from None
    if not 1 <= hops <= lineage.MAX_DEPTH:
        raise invalid(f"depth must be between 1 and {lineage.MAX_DEPTH}, got {hops}")
    return chosen, hops


def read_edges(storage: StorageBackend) -> list[dict[str, Any]]:
    return read_many(storage, history_keys(storage, "lineage"), lineage.LINEAGE).to_pylist()


def may_read_table(state: CatalogState, caller: Principal, uuid: str) -> bool:
    who = subject_of(state, caller)
    entry = state.tables.get(uuid)
    if entry is None:
        return can.admin(who)  # a dropped table: its name is history only admins see
    catalog = state.catalogs.get(entry.catalog_id)
    # Only tables of the caller's metastore: another metastore's tables are no part of what it can name.
    if catalog is None or (catalog.metastore_id or None) != (tenant_of(state, caller).scope or None) \
            or not state.has_namespace(catalog.id, entry.namespace):
        return False
    return can.can_read_table(who, securable(state, "catalog", catalog),
                              securable(state, "schema", state.namespace(catalog.id, entry.namespace)),
                              securable(state, "table", entry))


def name_now(state: CatalogState, uuid: str) -> str | None:
    """A table's full name now (it may have been renamed since an edge was recorded); None if it is gone."""
    entry = state.tables.get(uuid)
    if entry is not None and entry.catalog_id in state.catalogs:
        return ".".join((state.catalogs[entry.catalog_id].name, *entry.namespace, entry.name))
    return None


def current_full_name(state: CatalogState, uuid: str, catalog: str | None, namespace: list[str] | None,
                      name: str | None) -> str:
    """:func:`name_now`, else the recorded name."""
    return name_now(state, uuid) or ".".join(str(p) for p in (catalog, *(namespace or []), name))


def table_lineage(unity: UnityService, storage: StorageBackend, full_name: str, direction: str | None,
                  depth: str | None, caller: Principal) -> dict[str, Any]:
    chosen, hops = parse_query(direction, depth)
    store: CatalogStore = unity.store
    with store.read() as state:
        entry = unity._table(state, caller, full_name)  # 404 for an unknown table, as getTable answers
        if not may_read_table(state, caller, entry.id):
            raise denied(caller, f"see the lineage of {full_name} (needs USE_CATALOG, USE_SCHEMA and SELECT)")
        seen: dict[str, bool] = {}

        def may_see(uuid: str) -> bool:
            if uuid not in seen:
                seen[uuid] = may_read_table(state, caller, uuid)
            return seen[uuid]

        levels, edges = lineage.walk(read_edges(storage), entry.id, chosen, hops, may_see)

        def end(row: dict[str, Any], side: str) -> dict[str, Any]:
            uuid = row[f"{side}_uuid"]
            if not may_see(uuid):
                return {"redacted": True}
            return {"table_id": uuid, "full_name": current_full_name(state, uuid, row[f"{side}_catalog"],
                                                              row[f"{side}_namespace"], row[f"{side}_table"]),
                    "snapshot_id": row[f"{side}_snapshot_id"]}

        names = {}
        for row in edges:
            for side in ("source", "target"):
                names.setdefault(row[f"{side}_uuid"], end(row, side))
        nodes = []
        for uuid, level in sorted(levels.items(), key=lambda item: (item[1], names.get(item[0], {}).get(
                "full_name") or "~")):
            shown = names.get(uuid) or {"table_id": uuid, "full_name": full_name}
            if shown.get("redacted"):
                nodes.append({"redacted": True, "depth": level})
            else:
                nodes.append({"table_id": uuid, "full_name": shown["full_name"], "depth": level})
        return {
            "table": {"table_id": entry.id, "full_name": full_name}, "direction": chosen, "depth": hops,
            "nodes": nodes,
            "edges": [{"source": end(row, "source"), "target": end(row, "target"), "confidence": row["confidence"],
                       "app_id": row["app_id"], "engine": row["engine"], "run_id": row["run_id"],
                       "observed_at": int(row["observed_at"].timestamp() * 1000)} for row in edges],
        }
