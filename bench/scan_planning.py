"""Server-side scan planning on a big table, beside PyIceberg planning the same table in process; and loadView
beside loadTable. One run, one warehouse, two `arco serve` processes (one plans synchronously, one
asynchronously).

The table: 1,000 manifests of 100 data files each (100,000 files), partitioned by identity on ``part`` with one
partition per manifest, committed in one snapshot through Arco (the manifests are real, the data files are
entries only: planning reads manifests, never data).

Measured, as p50/p99 in milliseconds:
  plan_all        every file: planTableScan, then every plan task fetched (fetchScanTasks)
  plan_one_part   ``part = 7`` (one manifest survives pruning by partition summaries)
for each of (rounds interleaved)
  sync            answered ``completed`` while the request waits, further chunks as plan tasks
  async           answered ``submitted``; fetchPlanningResult polled every 20 ms, then every plan task fetched
  pyiceberg       ``table.scan(row_filter=...).plan_files()`` in this process (no HTTP, no JSON)
and, 1 KB-ish responses:
  load_table      GET loadTable of the big table (metadata cached by the server)
  load_view       GET loadView of a view over it

Ratios: sync and async against PyIceberg in process (above 1: the server is slower), load_view / load_table.

    .venv/bin/python bench/scan_planning.py [--rounds 5] [--load-rounds 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import IntegerType, LongType, NestedField

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from percentiles import p50_p99

from support.arco_server import arco_server
from support.iceberg_files import commit_files, fake_data_file

TOKEN = "bench-token"
MANIFESTS, FILES_PER_MANIFEST = 1000, 100
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", IntegerType(), required=False))
SPEC = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "part"))
FILTERS: dict[str, tuple[Any, BooleanExpression]] = {
    "plan_all": (None, AlwaysTrue()),
    "plan_one_part": ({"type": "eq", "term": "part", "value": 7}, EqualTo("part", 7)),
}
WARMUP = 1


def create_view(base: str) -> None:
    body = {"name": "v", "schema": SCHEMA.model_dump(by_alias=True), "properties": {},
            "view-version": {"version-id": 1, "schema-id": 0, "timestamp-ms": int(time.time() * 1000),
                             "summary": {"engine": "bench"}, "default-namespace": ["bench"],
                             "representations": [{"type": "sql", "sql": "SELECT * FROM bench.big",
                                                   "dialect": "spark"}]}}
    httpx.post(f"{base}/namespaces/bench/views", json=body, headers=auth(), timeout=60).raise_for_status()


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def served_plan(client: httpx.Client, body: dict[str, Any]) -> int:
    """planTableScan, then whatever it takes to have every file scan task; the number of tasks."""
    result = client.post("/namespaces/bench/tables/big/plan", json=body).json()
    if result["status"] == "submitted":
        plan_id = result["plan-id"]
        while result["status"] == "submitted":
            time.sleep(0.02)
            result = client.get(f"/namespaces/bench/tables/big/plan/{plan_id}").json()
    assert result["status"] == "completed", result
    count = len(result.get("file-scan-tasks", []))
    for task in result.get("plan-tasks", []):
        chunk = client.post("/namespaces/bench/tables/big/tasks", json={"plan-task": task})
        count += len(chunk.json()["file-scan-tasks"])
    return count


def measure(peers: dict[str, Callable[[], int]], rounds: int, expected: int) -> dict[str, list[float]]:
    """Time each peer ``rounds`` times after a warm-up, one round of each in turn (so a noisy neighbour slows
    them alike), checking each planned every task."""
    samples: dict[str, list[float]] = {name: [] for name in peers}
    for i in range(-WARMUP, rounds):
        for name, fn in peers.items():
            started = time.perf_counter()
            got = fn()
            if i >= 0:
                samples[name].append((time.perf_counter() - started) * 1000)
            assert got == expected, f"{name}: {got} tasks, expected {expected}"
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--load-rounds", type=int, default=200)
    parser.add_argument("--manifests", type=int, default=MANIFESTS, help="a smaller table for a quick try")
    args = parser.parse_args()
    manifest_count = args.manifests
    results: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="arco-bench-planning-") as tmp:
        workdir = Path(tmp)
        warehouse = workdir / "wh"
        with arco_server(warehouse, workdir, admin_token=TOKEN,
                         extra_args=("--scan-planning-async-manifests", str(10 * manifest_count))) as sync_server, \
                arco_server(warehouse, workdir, admin_token=TOKEN,
                            extra_args=("--scan-planning-async-manifests", "0")) as async_server:
            catalog = RestCatalog("arco", uri=sync_server.iceberg_uri, warehouse="main", token=TOKEN)
            catalog.create_namespace("bench")
            table = catalog.create_table("bench.big", SCHEMA, partition_spec=SPEC)
            started = time.perf_counter()
            files = [fake_data_file(f"{table.location()}/data/part={m}/{f:03d}.parquet", Record(m), 0)
                     for m in range(manifest_count) for f in range(FILES_PER_MANIFEST)]
            commit_files(table, files, deletes=False, per_manifest=FILES_PER_MANIFEST)
            table = catalog.load_table("bench.big")
            manifests = table.current_snapshot().manifests(table.io)  # type: ignore[union-attr]
            assert len(manifests) == manifest_count, len(manifests)
            print(f"built bench.big: {len(manifests):,} manifests, {len(files):,} data files in "
                  f"{time.perf_counter() - started:.1f} s", flush=True)
            base = f"{sync_server.iceberg_uri}/v1/main"
            create_view(base)
            sync = httpx.Client(base_url=base, headers=auth(), timeout=600)
            async_ = httpx.Client(base_url=f"{async_server.iceberg_uri}/v1/main", headers=auth(), timeout=600)
            for measure_name, (raw, expression) in FILTERS.items():
                body = {} if raw is None else {"filter": raw}
                expected = len(list(table.scan(row_filter=expression).plan_files()))
                print(f"  {measure_name}: {expected:,} tasks, {args.rounds} rounds each", flush=True)
                results[measure_name] = measure({
                    "pyiceberg": lambda e=expression: len(list(table.scan(row_filter=e).plan_files())),  # type: ignore[misc]
                    "sync": lambda b=body: served_plan(sync, b),  # type: ignore[misc]
                    "async": lambda b=body: served_plan(async_, b),  # type: ignore[misc]
                }, args.rounds, expected)

            def get(path: str) -> int:
                sync.get(path).raise_for_status()
                return 0

            print(f"  load_table / load_view: {args.load_rounds} rounds each, interleaved", flush=True)
            loads: dict[str, list[float]] = {"load_table": [], "load_view": []}
            for i in range(-5, args.load_rounds):
                for name, path in (("load_table", "/namespaces/bench/tables/big"),
                                   ("load_view", "/namespaces/bench/views/v")):
                    started = time.perf_counter()
                    get(path)
                    if i >= 0:
                        loads[name].append((time.perf_counter() - started) * 1000)
    print("\nmilliseconds (p50 / p99); ratio = server p50 / PyIceberg-in-process p50 (above 1: the server is slower)")
    print(f"{'measure':<15}{'pyiceberg':>20}{'sync':>20}{'async':>20}{'sync/py':>10}{'async/py':>10}")
    for measure_name, by_peer in results.items():
        cells = {peer: p50_p99(samples) for peer, samples in by_peer.items()}
        line = f"{measure_name:<15}" + "".join(f"{cells[p][0]:>11.1f} / {cells[p][1]:>6.1f}"
                                               for p in ("pyiceberg", "sync", "async"))
        line += f"{cells['sync'][0] / cells['pyiceberg'][0]:>9.2f}x{cells['async'][0] / cells['pyiceberg'][0]:>9.2f}x"
        print(line)
    table_p50, table_p99 = p50_p99(loads["load_table"])
    view_p50, view_p99 = p50_p99(loads["load_view"])
    print(f"\nload_table {table_p50:.2f} / {table_p99:.2f} ms, load_view {view_p50:.2f} / {view_p99:.2f} ms; "
          f"load_view / load_table = {view_p50 / table_p50:.2f}x")


if __name__ == "__main__":
    main()
