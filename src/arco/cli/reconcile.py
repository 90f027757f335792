"""``arco reconcile``: backfill missing committed receipts for one table, one catalog, or the whole warehouse."""

from __future__ import annotations

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from arco.catalog.model import TableEntry
from arco.catalog.store import CatalogStore
from arco.events.reconcile import (
    DEFAULT_MAX_DEPTH,
    ReconcileCounts,
    iceberg_tables,
    reconcile_catalog_log,
    reconcile_tables,
)
from arco.iceberg.metadata_files import MetadataFiles
from arco.iceberg.pointer import PointerStore
from arco.iceberg.transactions import PointerResolver, TxnRecords
from arco.pipeline.checkpoint import compacted_receipt_keys
from arco.storage.base import StorageBackend


def run_reconcile(storage: StorageBackend, catalog: str | None, table: str | None, max_depth: int = DEFAULT_MAX_DEPTH,
                  console: Console | None = None) -> ReconcileCounts:
    console = console or Console(stderr=True)
    store = CatalogStore(storage)
    tables = iceberg_tables(store, catalog, table)
    if table is not None and not tables:
        raise click.ClickException(f"no Iceberg table {table!r}{f' in catalog {catalog!r}' if catalog else ''}; "
                                   "name it as namespace.table (with --catalog for a catalog other than main)")
    files = MetadataFiles(storage)
    resolver = PointerResolver(PointerStore(storage), TxnRecords(storage))
    compacted = compacted_receipt_keys(storage, kinds=("timeline", "audit"))  # gc may have deleted these since
    total = ReconcileCounts()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task("tables", total=len(tables))

        def advance(entry: TableEntry, counts: ReconcileCounts) -> None:
            progress.update(task, advance=1, description=f"tables ({'.'.join((*entry.namespace, entry.name))})")

        total.add(reconcile_tables(storage, files, resolver, tables, max_depth, on_table=advance,
                                   compacted=compacted))
        progress.update(task, description="tables")
        if table is None:
            log_task = progress.add_task("catalog log", total=None)
            total.add(reconcile_catalog_log(storage, store.log, compacted=compacted))
            progress.update(log_task, total=1, completed=1)
    return total


def print_summary(counts: ReconcileCounts, console: Console) -> None:
    summary = RichTable(title="reconcile summary", show_header=True)
    summary.add_column("what")
    summary.add_column("count", justify="right")
    for label, value in [
        ("tables", counts.tables), ("metadata versions examined", counts.versions),
        ("committed receipts present", counts.present), ("committed receipts backfilled", counts.backfilled),
        ("unreadable metadata files (skipped)", counts.unreadable), ("tables truncated at max depth", counts.truncated),
        ("catalog operations examined", counts.catalog_ops), ("catalog receipts backfilled", counts.catalog_backfilled),
    ]:
        summary.add_row(label, str(value))
    console.print(summary)
