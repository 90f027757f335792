"""What Spark costs the compactor: ``compact`` on local[2] beside a single-process pyarrow read-and-write.

Both read the same committed receipts from a local warehouse, turn them into the same timeline rows (the same
code, :mod:`arco.pipeline.rows`) and write Parquet; the peer does it in one Python process with no Spark at all.
Printed: receipts per second of each and their ratio (above 1: Spark is faster). Spark's start-up is measured
apart, since a long-running cluster does not pay it per job.

    .venv/bin/python bench/pipeline_compact.py [--receipts 100000] [--tables 1000] [--master local[2]]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
import uuid
from pathlib import Path

import orjson
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from arco.events.receipts import EVENTS  # noqa: E402
from arco.pipeline import rows  # noqa: E402
from arco.pipeline.compact import kind_of, run_compact  # noqa: E402
from arco.pipeline.parquet_io import parquet_bytes  # noqa: E402
from arco.pipeline.runs import Run  # noqa: E402
from arco.pipeline.storage_spec import StorageSpec  # noqa: E402
from arco.storage.local import LocalBackend  # noqa: E402


def write_receipts(storage: LocalBackend, count: int, tables: int) -> None:
    table_ids = [str(uuid.uuid4()) for _ in range(tables)]
    start_ms = int(time.time() * 1000) - count * 1000
    for i in range(count):
        table = table_ids[i % tables]
        name = f"{i // tables + 1:05d}-{uuid.uuid4().hex}.metadata.json"
        location = f"{storage.url}/main/db/t{i % tables}/metadata/{name}"
        commit_key = hashlib.sha256(location.encode()).hexdigest()
        at = start_ms + i * 1000
        day = time.strftime("%Y-%m-%d", time.gmtime(at / 1000))
        event = {
            "event_type": "IcebergCommitCommitted", "schema_version": 1, "event_id": str(uuid.uuid4()),
            "commit_key": commit_key, "table_uuid": table,
            "identifier": {"catalog": "main", "namespace": ["db"], "name": f"t{i % tables}"},
            "metadata_location": location, "previous_metadata_location": None, "format_version": 2,
            "last_updated_ms": at, "sequence_number": i // tables + 1, "snapshot_id": i + 1, "operation": "append",
            "summary": {"operation": "append", "added-records": "10", "added-data-files": "1"}, "schema_id": 0,
            "source": {"kind": "iceberg_rest", "client_info": "bench", "principal": "admin"},
            "recorded_by": "commit", "recorded_at_ms": at,
        }
        storage.put(f"{EVENTS}/{day}/iceberg/committed/{commit_key}.json", orjson.dumps(event))


def pyarrow_peer(storage: LocalBackend) -> int:
    """The same work in one process: list, read, build rows, write one Parquet file."""
    keys = sorted(m.key for m in storage.list(f"{EVENTS}/") if kind_of(m.key) == "timeline")
    built = [rows.timeline_row(k, rows.parse_json(storage.get(k).data), set()) for k in keys]
    storage.put("_bench/peer/timeline.parquet", parquet_bytes(pa.Table.from_pylist(built, schema=rows.TIMELINE)))
    return len(built)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--receipts", type=int, default=100_000)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="arco-bench-compact-") as tmp:
        storage = LocalBackend(Path(tmp) / "warehouse", fsync=False)
        print(f"writing {args.receipts:,} receipts for {args.tables:,} tables ...", flush=True)
        write_receipts(storage, args.receipts, args.tables)

        start = time.perf_counter()
        peer_count = pyarrow_peer(storage)
        peer_s = time.perf_counter() - start

        from arco.pipeline.session import pipeline_session

        start = time.perf_counter()
        spark = pipeline_session("bench", args.master)
        spark.sparkContext.parallelize([1]).count()
        startup_s = time.perf_counter() - start
        start = time.perf_counter()
        run = Run("compact")
        run_compact(spark, StorageSpec(storage.url), run)
        spark_s = time.perf_counter() - start
        spark.stop()

    assert run.counts.get("timeline_rows") == peer_count == args.receipts, (run.counts, peer_count)
    print(f"\n{args.receipts:,} receipts, {args.tables:,} tables")
    print(f"{'':<28}{'seconds':>10}{'receipts/s':>14}")
    print(f"{'pyarrow, one process':<28}{peer_s:>10.1f}{args.receipts / peer_s:>14,.0f}")
    print(f"{'compact on ' + args.master:<28}{spark_s:>10.1f}{args.receipts / spark_s:>14,.0f}")
    print(f"{'(Spark start-up, apart)':<28}{startup_s:>10.1f}")
    print(f"ratio (Spark receipts/s over pyarrow's): {peer_s / spark_s:.2f}x")


if __name__ == "__main__":
    main()
