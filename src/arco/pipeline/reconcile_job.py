"""``arco pipeline reconcile``: the metadata-log reconciler over every table, in parallel Spark tasks.

The per-table work is :func:`arco.events.reconcile.reconcile_table`, the same function ``arco reconcile`` runs
in one process; no bucket listing is involved (tables come from Tier 1, versions from their metadata logs).
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from dataclasses import asdict
from typing import Any

from arco.catalog.model import TableEntry
from arco.catalog.store import CatalogStore
from arco.events.reconcile import (
    DEFAULT_MAX_DEPTH,
    ReconcileCounts,
    iceberg_tables,
    reconcile_catalog_log,
    reconcile_table,
)
from arco.iceberg.metadata_files import MetadataFiles
from arco.iceberg.pointer import PointerStore
from arco.iceberg.transactions import PointerResolver, TxnRecords
from arco.pipeline.checkpoint import compacted_receipt_keys
from arco.pipeline.runs import Run
from arco.pipeline.storage_spec import StorageSpec


def reconcile_partition(spec: StorageSpec, max_depth: int,
                        tables: Iterator[tuple[dict[str, Any], dict[str, Any]]],
                        compacted: Container[str] = frozenset()) -> Iterator[dict[str, int]]:
    storage = spec.open()
    files = MetadataFiles(storage)
    resolver = PointerResolver(PointerStore(storage), TxnRecords(storage))
    total = ReconcileCounts()
    for entry, identifier in tables:
        table = TableEntry(**{**entry, "namespace": tuple(entry["namespace"])})
        total.add(reconcile_table(storage, files, resolver, table, identifier, max_depth, compacted))
    yield asdict(total)


def run_reconcile(spark: Any, spec: StorageSpec, run: Run, max_depth: int = DEFAULT_MAX_DEPTH,
                  progress: Any | None = None) -> dict[str, int]:
    from arco.pipeline.session import spark_progress

    storage = spec.open()
    store = CatalogStore(storage)
    tables = [(asdict(entry), identifier) for entry, identifier in iceberg_tables(store)]
    # Receipts the history holds are not missing, though gc may have deleted them since.
    compacted = compacted_receipt_keys(storage, kinds=("timeline", "audit"))
    if tables:
        slices = max(1, min(len(tables), spark.sparkContext.defaultParallelism * 4))
        rdd = spark.sparkContext.parallelize(tables, slices)
        task = _Task(spec, max_depth, spark.sparkContext.broadcast(compacted))
        if progress is not None:
            with spark_progress(spark, progress, f"reconciling {len(tables):,} tables in {slices} tasks"):
                parts = rdd.mapPartitions(task).collect()
        else:
            parts = rdd.mapPartitions(task).collect()
        for part in parts:
            for name, value in part.items():
                run.count(name, value)
    for name, value in asdict(reconcile_catalog_log(storage, store.log, compacted=compacted)).items():
        if value:
            run.count(name, value)
    return run.counts


class _Task:
    def __init__(self, spec: StorageSpec, max_depth: int, compacted: Any) -> None:
        self.spec, self.max_depth, self.compacted = spec, max_depth, compacted

    def __call__(self, tables: Iterator[tuple[dict[str, Any], dict[str, Any]]]) -> Iterator[dict[str, int]]:
        return reconcile_partition(self.spec, self.max_depth, tables, self.compacted.value)
