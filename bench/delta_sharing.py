"""What reading through Arco's Delta Sharing server costs, next to reading the same table directly (same run).

1. ``delta_sharing.load_as_pandas`` of a shared Delta table of ``--files`` files (one per partition) through a
   real ``arco serve`` (metadata, query, then one signed URL per file), beside ``deltalake`` reading the same table
   from its directory into pandas. The ratio is what the protocol's round trips and per-file HTTP reads add.
2. The query latency (``POST .../query``: the whole NDJSON answer with every signed URL) of a ``--big-files``
   table, beside ``deltalake`` listing the same table's add actions in-process (the floor: the log replay itself).

Rounds are interleaved so drift on a shared machine hits both sides alike.

What bounds the first ratio is the client: ``load_as_pandas`` reads the files one after another, each with about
ten HTTP requests through fsspec (HEAD for the size, a GET to test for a "directory", ranged GETs) plus a pyarrow
dataset and a pandas frame of its own, while deltalake reads them in parallel in Rust. Arco answers a signed-file
request in about a quarter of a millisecond, so most of the per-file time is the client's own. The second
measures a repeated query: the version's signed lines are reused within the URL expiry's one-minute step.

Usage: .venv/bin/python bench/delta_sharing.py [--files 1000] [--big-files 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa

# Run as a script, this file's folder comes first on sys.path and its name would shadow the delta_sharing package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent / "tests"))

from support.arco_server import arco_server  # noqa: E402 - after the sys.path fix above

TOKEN = "bench-token"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def report(name: str, samples: dict[str, list[float]], base: str) -> None:
    print(f"\n{name}")
    for label, values in samples.items():
        ratio = statistics.median(values) / statistics.median(samples[base])
        print(f"  {label:<40} p50 {statistics.median(values):9.1f} ms   max {max(values):9.1f} ms   "
              f"x{ratio:.2f} of {base}")


def uc(base: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    response = httpx.request(method, f"{base}/api/2.1/unity-catalog{path}", timeout=120,
                             headers={"Authorization": f"Bearer {TOKEN}"}, **kwargs)
    response.raise_for_status()
    return response


def shared_delta_table(base: str, name: str, files: int) -> str:
    """A managed Delta table with ``files`` files (one partition each), written by deltalake in one commit."""
    from deltalake import write_deltalake

    staging = uc(base, "POST", "/staging-tables", json={"name": name, "catalog_name": "main",
                                                        "schema_name": "bench"}).json()
    location = staging["staging_location"]
    rows = pa.table({"part": pa.array(range(files), pa.int64()), "value": pa.array(range(files), pa.float64())})
    write_deltalake(location, rows, partition_by=["part"])
    uc(base, "POST", "/tables", json={
        "name": name, "catalog_name": "main", "schema_name": "bench", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": location, "columns": [
            {"name": "part", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"},
            {"name": "value", "type_name": "DOUBLE", "type_text": "double", "position": 1, "type_json": "{}"}]})
    uc(base, "PATCH", "/shares/bench", json={"updates": [
        {"action": "ADD", "data_object": {"name": f"main.bench.{name}", "data_object_type": "TABLE"}}]})
    return location


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--big-files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import delta_sharing
    from deltalake import DeltaTable

    with tempfile.TemporaryDirectory() as tmp, arco_server(Path(tmp) / "warehouse", Path(tmp),
                                                           admin_token=TOKEN) as server:
        base = server.base_url
        uc(base, "POST", "/schemas", json={"name": "bench", "catalog_name": "main"})
        uc(base, "POST", "/shares", json={"name": "bench"})
        print(f"writing a {args.files}-file and a {args.big_files}-file Delta table ...", flush=True)
        small = shared_delta_table(base, "small", args.files)
        big = shared_delta_table(base, "big", args.big_files)
        recipient = uc(base, "POST", "/recipients", json={"name": "reader", "authentication_type": "TOKEN"}).json()
        uc(base, "PATCH", "/shares/bench/permissions", json={"changes": [{"principal": "reader", "add": ["SELECT"]}]})
        profile = httpx.get(recipient["tokens"][0]["activation_url"], timeout=30).json()
        profile_path = Path(tmp) / "reader.share"
        profile_path.write_text(json.dumps(profile))

        rows = len(delta_sharing.load_as_pandas(f"{profile_path}#bench.bench.small"))
        assert rows == args.files == len(DeltaTable(small).to_pyarrow_table())
        load: dict[str, list[float]] = {"deltalake, direct (to pandas)": [], "delta_sharing via Arco (to pandas)": []}
        for _ in range(args.rounds):
            load["deltalake, direct (to pandas)"].append(
                timed(lambda: DeltaTable(small).to_pyarrow_table().to_pandas()))
            load["delta_sharing via Arco (to pandas)"].append(
                timed(lambda: delta_sharing.load_as_pandas(f"{profile_path}#bench.bench.small")))
        report(f"load_as_pandas of a {args.files}-file table ({rows} rows)", load, "deltalake, direct (to pandas)")

        query_url = f"{base}/delta-sharing/shares/bench/schemas/bench/tables/big/query"
        headers = {"Authorization": f"Bearer {profile['bearerToken']}"}
        with httpx.Client(timeout=300) as client:
            answer = client.post(query_url, json={}, headers=headers)
            assert len(answer.text.splitlines()) == args.big_files + 2, answer.text[:500]
            query: dict[str, list[float]] = {"deltalake add actions, in-process": [], "POST query via Arco": []}
            for _ in range(args.rounds):
                query["deltalake add actions, in-process"].append(
                    timed(lambda: DeltaTable(big).get_add_actions(flatten=True)))
                query["POST query via Arco"].append(
                    timed(lambda: client.post(query_url, json={}, headers=headers).raise_for_status()))
        report(f"query latency of a {args.big_files}-file table", query, "deltalake add actions, in-process")


if __name__ == "__main__":
    main()
