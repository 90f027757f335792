"""The compacted history as Iceberg tables of the read-only ``system`` catalog (:mod:`arco.catalog.system`).

    system.history.timeline   committed Iceberg metadata versions      (history kind ``timeline``)
    system.history.runs       pipeline runs                            (``runs``)
    system.history.lineage    lineage edges                            (``lineage``)
    system.history.reports    engines' scan and commit reports         (``reports``)
    system.access.audit       Tier 1 changes and Delta Sharing reads   (``audit``)
    system.information.tables   one row per table (rewritten each time)   (``tables.parquet``)
    system.information.columns  one row per column of each current schema (``columns.parquet``)

The compactor publishes them after it commits a batch, through an Arco server in its own process (so every
commit goes through Arco's commit path as the pipeline, recorded with its run like ``maintain``'s). A history
table gets one append per compacted batch, its snapshot summary naming the batch (:data:`BATCH_KEY`), so a run
that stopped half-way is completed by the next, and a batch is never appended twice. The two information tables
are overwritten whole. The tables' rows are copies of the compacted Parquet (timestamps in microseconds, as
Iceberg has them), written into each table's own location: the tables stand alone, whatever happens to the
compactor's files.

The system tables' own commits are history too, and the next compaction reads their receipts; a batch holding
nothing else (``system_only``) does not start a publication by itself, or every run would make work for the next.
Maintenance is off for the system tables (``maintenance.enabled=false``): they are small, and appended rarely.
"""

from __future__ import annotations

import warnings
from typing import Any

import pyarrow as pa

from arco.auth.principals import PIPELINE
from arco.catalog.catalogs import create_catalog
from arco.catalog.errors import CatalogNotFound
from arco.catalog.store import CatalogStore
from arco.catalog.system import SYSTEM_CATALOG, SYSTEM_PROPERTY, is_system
from arco.iceberg.metadata_files import MetadataFiles
from arco.iceberg.pointer import PointerStore
from arco.pipeline import rows
from arco.pipeline.checkpoint import CompactState
from arco.pipeline.parquet_io import read_many, read_parquet
from arco.pipeline.runs import Run
from arco.storage.base import StorageBackend

HISTORY_TABLES: dict[tuple[str, str], str] = {
    ("history", "timeline"): "timeline", ("history", "runs"): "runs", ("history", "lineage"): "lineage",
    ("history", "reports"): "reports", ("access", "audit"): "audit",
}
PROJECTION_TABLES: dict[tuple[str, str], tuple[str, pa.Schema]] = {
    ("information", "tables"): ("_catalog/core/snapshots/tables.parquet", rows.TABLES),
    ("information", "columns"): ("_catalog/core/snapshots/columns.parquet", rows.COLUMNS),
}
BATCH_KEY = "arco.compact-batch"
PROPERTIES = {"maintenance.enabled": "false", "comment": "Arco history (read-only; written by arco pipeline compact)"}


def iceberg_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema as Iceberg stores it: timestamps in microseconds."""
    return pa.schema([pa.field(f.name, pa.timestamp("us", tz="UTC") if pa.types.is_timestamp(f.type) else f.type)
                      for f in schema])


def as_iceberg(table: pa.Table, schema: pa.Schema) -> pa.Table:
    return table.select(schema.names).cast(iceberg_schema(schema))


def ensure_system_catalog(store: CatalogStore) -> None:
    """Create the ``system`` catalog once; a user catalog of that name is left alone (and nothing is published)."""
    with store.read() as state:
        try:
            existing = state.catalog(SYSTEM_CATALOG)
        except CatalogNotFound:
            existing = None
    if existing is None:
        create_catalog(store, SYSTEM_CATALOG, owner=PIPELINE.name, properties={SYSTEM_PROPERTY: "true"},
                       comment="Arco's history as tables: read-only, written by arco pipeline compact")
    elif not is_system(existing):
        raise RuntimeError(f"a catalog named {SYSTEM_CATALOG!r} exists and is not Arco's system catalog; rename it "
                           "to have the history published as tables")


def published_batches(storage: StorageBackend) -> dict[tuple[str, str], set[str]]:
    """For each existing system history table, the batches already appended to it (from its snapshots)."""
    store = CatalogStore(storage)
    found: dict[tuple[str, str], set[str]] = {}
    with store.read() as state:
        try:
            catalog = state.catalog(SYSTEM_CATALOG)
        except CatalogNotFound:
            return found
        entries = {(e.namespace[0], e.name): e.id for e in state.tables.values()
                   if e.catalog_id == catalog.id and len(e.namespace) == 1}
    pointers, files = PointerStore(storage), MetadataFiles(storage)
    for key in HISTORY_TABLES:
        if key not in entries:
            continue
        pointer = pointers.load(entries[key])
        if pointer is None or pointer.pointer.dropped:
            continue
        metadata = files.read(pointer.pointer.current_metadata_location)
        found[key] = {s.summary[BATCH_KEY] for s in metadata.snapshots
                      if s.summary is not None and s.summary.additional_properties.get(BATCH_KEY)}
    return found


def to_publish(state: CompactState, published: dict[tuple[str, str], set[str]]) -> dict[tuple[str, str], list[dict]]:
    """The batches each history table still lacks (pure); none at all unless one of them is more than the system
    tables' own commits (see the module's docstring)."""
    missing = {key: [b for b in state.batches
                     if b["files"].get(kind) and b["batch_id"] not in published.get(key, set())]
               for key, kind in HISTORY_TABLES.items()}
    if not any(not b.get("system_only") for batches in missing.values() for b in batches):
        return {}
    return {key: batches for key, batches in missing.items() if batches}


def publish(storage: StorageBackend, state: CompactState, run: Run) -> None:
    """Append what the system tables lack and rewrite the information tables, through an in-process server."""
    from pyiceberg.catalog.rest import RestCatalog
    from uuid6 import uuid7

    from arco.pipeline.embedded_server import embedded_server
    from arco.pipeline.maintain import PIPELINE_TASK_HEADER

    published = published_batches(storage)
    work = to_publish(state, published)
    if not work and len(published) == len(HISTORY_TABLES):
        return
    ensure_system_catalog(CatalogStore(storage))
    with embedded_server(storage) as server:
        # The data files are written by PyIceberg here, with this job's own storage credentials: it asks for no
        # vended ones (an empty delegation header), which would clash with them.
        catalog = RestCatalog("arco-system", uri=server.iceberg_uri, warehouse=SYSTEM_CATALOG, token=server.token,
                              **storage.fileio_properties(),
                              **{f"header.{PIPELINE_TASK_HEADER}": f"{run.run_id}/{uuid7()}",
                                 "header.X-Iceberg-Access-Delegation": ""})
        for namespace in ("history", "access", "information"):
            catalog.create_namespace_if_not_exists(namespace)
        for key, kind in HISTORY_TABLES.items():
            schema = rows.SCHEMAS_BY_KIND[kind]
            table = catalog.create_table_if_not_exists(key, schema=iceberg_schema(schema), properties=PROPERTIES)
            for batch in work.get(key, []):
                data = as_iceberg(read_many(storage, batch["files"][kind], schema), schema)
                table.append(data, snapshot_properties={BATCH_KEY: batch["batch_id"]})
                run.count("system_table_appends")
        for key, (path, schema) in PROJECTION_TABLES.items():
            table = catalog.create_table_if_not_exists(key, schema=iceberg_schema(schema), properties=PROPERTIES)
            found = storage.get_or_none(path)
            data = read_parquet(storage, path) if found is not None else schema.empty_table()
            with warnings.catch_warnings():  # "Delete operation did not match any records": the first time
                warnings.simplefilter("ignore", UserWarning)
                table.overwrite(as_iceberg(data, schema))
            run.count("system_table_overwrites")


def system_only(timeline_rows: list[dict[str, Any]], audit_rows: list[dict[str, Any]],
                run_rows: list[dict[str, Any]], report_rows: int, lineage_rows: int) -> bool:
    """Whether a batch holds nothing but what publishing itself made (pure): commits to the system tables, the
    pipeline's Tier 1 changes (creating them), and records of compaction runs."""
    return (report_rows == 0 and lineage_rows == 0
            and all(r.get("catalog") == SYSTEM_CATALOG for r in timeline_rows)
            and all(r.get("principal") == PIPELINE.name for r in audit_rows)
            and all(r.get("job") == "compact" for r in run_rows))
