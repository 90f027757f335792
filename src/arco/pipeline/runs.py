"""Run records: what each pipeline run did, kept as JSON and compacted into ``history/runs`` Parquet."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table as RichTable
from uuid6 import uuid7

from arco.storage.base import DoesNotExist, StorageBackend

RUNS_PREFIX = "_catalog/pipeline/runs/"


def run_key(run_id: str) -> str:
    return f"{RUNS_PREFIX}{run_id}.json"


def amended_run_key(run_id: str) -> str:
    """Where a run's record goes when its history row was written before the run ended and says otherwise (a
    compact run puts its own row into its batch, and may then fail to publish the system tables): a key of its own,
    so the next compact takes it into the history as the run's final row."""
    return f"{RUNS_PREFIX}{run_id}.amended.json"


@dataclass
class Run:
    job: str
    run_id: str = field(default_factory=lambda: str(uuid7()))
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def record(self, status: str) -> dict[str, Any]:
        return {"run_id": self.run_id, "job": self.job, "status": status, "started_at_ms": self.started_at_ms,
                "ended_at_ms": int(time.time() * 1000), "counts": self.counts, "errors": self.errors[:1000]}

    def finish(self, storage: StorageBackend, status: str = "succeeded", *, amends: bool = False) -> dict[str, Any]:
        """Write the run's record; ``amends``: its history row is already written and says otherwise."""
        record = self.record(status)
        key = amended_run_key(self.run_id) if amends else run_key(self.run_id)
        storage.put(key, orjson.dumps(record), DoesNotExist())
        return record


def print_summary(record: dict[str, Any], console: Console | None = None, labels: dict[str, str] | None = None) -> None:
    console = console or Console()
    table = RichTable(title=f"arco pipeline {record['job']}: {record['status']}", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    for name, value in record["counts"].items():
        table.add_row((labels or {}).get(name, name.replace("_", " ")), f"{value:,}")
    seconds = (record["ended_at_ms"] - record["started_at_ms"]) / 1000
    table.add_row("seconds", f"{seconds:.1f}")
    console.print(table)
    for error in record["errors"][:20]:
        console.print(f"[yellow]skipped:[/yellow] {error}")
    if len(record["errors"]) > 20:
        console.print(f"[yellow]... and {len(record['errors']) - 20} more (all in the run record "
                      f"{run_key(record['run_id'])})[/yellow]")
