"""``arco pipeline <job>``: the Spark jobs of Tier 2 (see :mod:`arco.pipeline`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from arco.cli.common import parse_options
from arco.settings import DEFAULT_WAREHOUSE

MASTER_HELP = "Spark master (default local[*]); ignored under spark-submit, which brings its own."


def common_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = _said_plainly(fn)
    fn = click.option("--master", default=None, help=MASTER_HELP)(fn)
    fn = click.option("--storage-option", "storage_options", multiple=True, metavar="KEY=VALUE",
                      help="A storage setting such as s3.endpoint=http://127.0.0.1:8333 (repeatable).")(fn)
    fn = click.option("--warehouse", default=lambda: os.environ.get("ARCO_WAREHOUSE", DEFAULT_WAREHOUSE),
                      show_default="./warehouse", help="The warehouse directory or URL.")(fn)
    return fn


def _said_plainly(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A job that lost a race to a concurrent run, or could not reach its storage, committed nothing: it says so
    and what to do, and exits 1, instead of a traceback."""

    @functools.wraps(fn)
    def job(*args: Any, **kwargs: Any) -> Any:
        from arco.pipeline.checkpoint import ConcurrentCompaction
        from arco.storage.base import StorageError

        try:
            return fn(*args, **kwargs)
        except ConcurrentCompaction as exc:
            raise click.ClickException(str(exc)) from None
        except StorageError as exc:
            raise click.ClickException(f"the warehouse's storage failed: {exc}; what was not committed is left "
                                       "for the next run: run it again once the storage answers") from None

    return job


def storage_spec(warehouse: str, storage_options: tuple[str, ...]) -> Any:
    from arco.catalog.warehouse_format import ensure_format
    from arco.pipeline.storage_spec import StorageSpec
    from arco.storage.base import StorageError
    from arco.storage.factory import local_directory, open_storage

    directory = local_directory(warehouse)
    if directory is not None and not directory.is_dir():
        # Opening it would make an empty warehouse there, and the job would succeed at nothing: a mistyped path.
        raise click.ClickException(f"there is no warehouse at {warehouse}: check --warehouse (or ARCO_WAREHOUSE), "
                                   f"or serve one there first (arco serve --warehouse {warehouse})")

    options = parse_options(storage_options)
    try:
        storage = open_storage(warehouse, options)
        ensure_format(storage)
    except StorageError as exc:
        raise click.ClickException(f"cannot open the warehouse {warehouse}: {exc}") from exc
    # Resolve a relative directory here: executors may run elsewhere (the URL must mean the same to them).
    return StorageSpec(storage.url, options)


@click.group()
def pipeline() -> None:
    """Tier 2 batch jobs on Spark: compact, reconcile, gc, maintain."""


@pipeline.command()
@common_options
def compact(warehouse: str, storage_options: tuple[str, ...], master: str | None) -> None:
    """Compact receipts, run records and engine reports into Parquet history and lineage; refresh the schema
    projection; publish it all as the read-only `system` catalog's Iceberg tables."""
    from arco.pipeline.compact import run_compact
    from arco.pipeline.runs import Run, print_summary
    from arco.pipeline.session import new_progress, pipeline_session

    spec = storage_spec(warehouse, storage_options)
    run = Run("compact")
    spark = pipeline_session("compact", master)
    with new_progress() as progress:
        run_compact(spark, spec, run, progress)
    unpublished = run.counts.get("system_tables_failed", 0)
    if not run.counts.get("receipts_new") and not unpublished:
        Console().print("nothing new to compact; nothing written")
        return
    failed = "failed to publish the system tables" if unpublished else None
    if not any(run.counts.get(f"{kind}_rows") for kind in ("timeline", "audit", "runs", "reports")):
        print_summary(run.record(failed or "nothing compacted"), Console())  # only unreadable receipts: no record
    else:
        # A failed publication amends the row the run put into its batch ("succeeded": the compaction did).
        print_summary(run.finish(spec.open(), failed or "succeeded", amends=bool(unpublished)), Console())
    if unpublished:  # the history is compacted; a scheduler must still see that its tables are stale
        raise click.ClickException("the history was compacted, but the system tables were not published (see "
                                   "'skipped' above); fix the cause and run compact again, which publishes them")


RECONCILE_LABELS = {"versions": "metadata versions examined", "present": "committed receipts present",
                    "backfilled": "committed receipts backfilled", "unreadable": "unreadable metadata files (skipped)",
                    "truncated": "tables truncated at max depth", "catalog_ops": "catalog operations examined",
                    "catalog_backfilled": "catalog receipts backfilled"}


@pipeline.command()
@common_options
@click.option("--max-depth", default=10_000, show_default=True, type=click.IntRange(1),
              help="Versions of a table's metadata log to walk at most.")
def reconcile(warehouse: str, storage_options: tuple[str, ...], master: str | None, max_depth: int) -> None:
    """Backfill missing committed receipts of every table (in parallel) and of the catalog log."""
    from arco.pipeline.reconcile_job import run_reconcile
    from arco.pipeline.runs import Run, print_summary
    from arco.pipeline.session import new_progress, pipeline_session

    spec = storage_spec(warehouse, storage_options)
    run = Run("reconcile")
    spark = pipeline_session("reconcile", master)
    with new_progress() as progress:
        run_reconcile(spark, spec, run, max_depth, progress)
    print_summary(run.finish(spec.open()), Console(), RECONCILE_LABELS)


@pipeline.command()
@common_options
@click.option("--dry-run", is_flag=True, help="Print what would be deleted and why; delete nothing.")
@click.option("--key-lifetime", default=3600, show_default=True, type=click.IntRange(1),
              help="The servers' idempotency-key-lifetime in seconds (markers are kept this long + 24 h).")
@click.option("--in-progress-timeout", default=600, show_default=True, type=click.IntRange(1),
              help="The servers' --idempotency-in-progress-timeout in seconds.")
@click.option("--temp-file-age", default=3600, show_default=True, type=click.IntRange(60),
              help="A local warehouse's temporary file (.arco-tmp/) unchanged this many seconds is from an "
                   "interrupted write and is deleted.")
def gc(warehouse: str, storage_options: tuple[str, ...], master: str | None, dry_run: bool, key_lifetime: int,
       in_progress_timeout: int, temp_file_age: int) -> None:
    """Delete expired markers, receipts, transaction records and orphan metadata (defaults: docs/pipeline.md, "gc")."""
    from arco.pipeline.gc import describe, run_gc
    from arco.pipeline.gc_rules import GcPolicy
    from arco.pipeline.runs import Run, print_summary
    from arco.pipeline.session import new_progress, pipeline_session

    spec = storage_spec(warehouse, storage_options)
    run = Run("gc-dry-run" if dry_run else "gc")
    spark = pipeline_session("gc", master)
    policy = GcPolicy(key_lifetime_s=key_lifetime, in_progress_timeout_s=in_progress_timeout,
                      temp_file_age_s=temp_file_age)
    with new_progress() as progress:
        chosen = run_gc(spark, spec, run, policy, dry_run=dry_run, progress=progress)
    console = Console()
    if not chosen:
        console.print("nothing is eligible for deletion yet (see docs/pipeline.md for the retention rules)")
    for line in describe(chosen):
        # One line per file, however long, so the list can be read by a script (a pipe is 80 columns to rich).
        console.print(("would delete " if dry_run else "deleted ") + line, markup=False, highlight=False,
                      soft_wrap=True)
    if dry_run:
        print_summary(run.record("dry run"), console)
    else:
        print_summary(run.finish(spec.open()), console)


@pipeline.command()
@common_options
@click.option("--table", default=None, metavar="CATALOG.NAMESPACE.TABLE", help="Only this table.")
def maintain(warehouse: str, storage_options: tuple[str, ...], master: str | None, table: str | None) -> None:
    """Compact small files, rewrite manifests, expire snapshots and remove orphan files of every Iceberg table."""
    from arco.pipeline.maintain import NoSuchTable, StorageNotInSpark, run_maintain
    from arco.pipeline.runs import Run, print_summary
    from arco.pipeline.session import new_progress, pipeline_session

    spec = storage_spec(warehouse, storage_options)
    run = Run("maintain")
    spark = pipeline_session("maintain", master)
    try:
        with new_progress() as progress:
            run_maintain(spark, spec, run, table, progress=progress)
    except (NoSuchTable, StorageNotInSpark) as exc:
        raise click.ClickException(str(exc)) from None
    failed = run.counts.get("tables_failed", 0)
    print_summary(run.finish(spec.open(), "failed" if failed else "succeeded"), Console())
    if failed:  # a scheduler must see it: the run record and the summary above say which tables and why
        raise click.ClickException(f"maintenance failed for {failed} table(s)")
