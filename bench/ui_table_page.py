"""The web UI's table page for a table with 1,000 snapshots, next to loadTable of the same table, in one run.

Starts `arco serve` on a fresh local warehouse, makes a table with 1,000 snapshots (1,000 commits over HTTP, each
with a snapshot summary so the charts have data), signs in, and then times, interleaved round by round:

  page       GET /tables/main.bench.big with the session cookie (the whole HTML page: versions with their sources
             from the commit receipts, charts over all snapshots, schema, snapshots, refs, grants)
  page_json  GET /ui/api/tables/main.bench.big (the same data as JSON)
  load       GET loadTable (/iceberg/v1/main/namespaces/bench/tables/big), as an engine loads it

and prints p50/p99 in milliseconds and each one's ratio to load (the page's target: under 200 ms).

    .venv/bin/python bench/ui_table_page.py [--rounds 100] [--snapshots 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.manifest import write_manifest_list
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.types import LongType, NestedField, StringType, StructType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from percentiles import p50_p99

from support.arco_server import start_server
from support.net import stop

TOKEN = "bench-admin-token"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "who", StructType(NestedField(3, "name", StringType(), required=False)),
                            required=False))
TABLE_URL = "/iceberg/v1/main/namespaces/bench/tables/big"


def build_table(base_url: str, snapshots: int) -> None:
    catalog = RestCatalog("bench", uri=f"{base_url}/iceberg", warehouse="main", token=TOKEN)
    catalog.create_namespace("bench")
    table = catalog.create_table("bench.big", SCHEMA)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    parent, sequence = None, table.metadata.last_sequence_number
    with httpx.Client(base_url=base_url, headers=headers, timeout=60) as http:
        for i in range(1, snapshots + 1):
            snapshot_id, sequence = 1_000_000 + i, sequence + 1
            manifest_list = f"{table.metadata.location}/metadata/snap-{snapshot_id}-bench.avro"
            with write_manifest_list(format_version=table.metadata.format_version,
                                     output_file=table.io.new_output(manifest_list), snapshot_id=snapshot_id,
                                     parent_snapshot_id=parent, sequence_number=sequence, avro_compression="null"):
                pass
            summary = Summary(Operation.APPEND, **{"added-records": "10", "total-records": str(10 * i),
                                                   "total-data-files": str(i), "total-files-size": str(4096 * i)})
            snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent, sequence_number=sequence,
                                timestamp_ms=int(time.time() * 1000), schema_id=0, manifest_list=manifest_list,
                                summary=summary)
            body = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
                    "updates": [{"action": "add-snapshot",
                                 "snapshot": snapshot.model_dump(by_alias=True, mode="json", exclude_none=True)},
                                {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                                 "snapshot-id": snapshot_id}]}
            response = http.post(TABLE_URL, json=body)
            response.raise_for_status()
            parent = snapshot_id


def timed(fn: Callable[[], httpx.Response]) -> float:
    start = time.perf_counter()
    response = fn()
    elapsed = (time.perf_counter() - start) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url} answered {response.status_code}: {response.text[:300]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--snapshots", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arco-ui-bench-") as scratch:
        workdir = Path(scratch)
        server = start_server(workdir / "warehouse", workdir, admin_token=TOKEN)
        try:
            started = time.perf_counter()
            build_table(server.base_url, args.snapshots)
            print(f"made a table with {args.snapshots:,} snapshots in {time.perf_counter() - started:.1f} s")
            browser = httpx.Client(base_url=server.base_url, timeout=60)
            assert browser.post("/ui/signin", data={"token": TOKEN}).status_code == 303
            api = httpx.Client(base_url=server.base_url, timeout=60, headers={"Authorization": f"Bearer {TOKEN}"})
            ops: dict[str, Callable[[], httpx.Response]] = {
                "page": lambda: browser.get("/tables/main.bench.big"),
                "page_json": lambda: api.get("/ui/api/tables/main.bench.big"),
                "load": lambda: api.get(TABLE_URL),
            }
            page = ops["page"]()
            shown = page.text.count('data-testid="version"')
            print(f"table page: {len(page.content) / 1024:,.0f} KiB of HTML, {shown} versions shown")
            for fn in ops.values():  # warm-up: caches filled, connections open
                for _ in range(3):
                    timed(fn)
            samples: dict[str, list[float]] = {name: [] for name in ops}
            for _ in range(args.rounds):
                for name, fn in ops.items():
                    samples[name].append(timed(fn))
            load_p50 = statistics.median(samples["load"])
            print(f"{'':<10} {'p50 ms':>8} {'p99 ms':>8} {'p50 / load':>11}   ({args.rounds} rounds, cpu count "
                  f"{os.cpu_count()})")
            for name, values in samples.items():
                p50, p99 = p50_p99(values)
                print(f"{name:<10} {p50:>8.1f} {p99:>8.1f} {p50 / load_p50:>10.2f}x")
        finally:
            stop(server.process)


if __name__ == "__main__":
    main()
