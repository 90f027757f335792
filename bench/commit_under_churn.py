"""Commits on one server while another server keeps creating tables, next to the same commits on a quiet catalog.

SeaweedFS warehouse (S3 on loopback), two ``arco serve`` processes on it. Server A receives metadata-only commits
without an Idempotency-Key, as PyIceberg sends them (each followed by 5 ms of idle time); they run under an
optimistic view of the catalog (``arco.optimistic``). In the churn phase server B creates a table every 20 ms
meanwhile, so A's views are often behind the log by the time their check reads it. Creations cannot change what a
commit of an existing table decided, so those views stand; any other change (a grant, a drop, a property) sends
the commit round again.

  quiet          p50 / p90 of A's commits, nobody else writing
  churn          p50 / p90 of A's commits while B creates tables
  ratio          churn p50 / quiet p50
  runs again     commits of the churn phase that ran a second time (A's metadata files deleted after a stale view)

    .venv/bin/python bench/commit_under_churn.py [--commits 200]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_path import SCHEMA, TOKEN, catalog_of, server_env

from arco.storage.s3 import create_bucket
from support import emulators
from support.arco_server import arco_server

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
_DELETES = re.compile(r'arco_storage_operation_duration_seconds_count\{operation="delete",outcome="ok"\} (\S+)')


def commits(http: httpx.Client, url: str, n: int) -> list[float]:
    latencies = []
    for i in range(n):
        started = time.perf_counter()
        response = http.post(url, headers=HEADERS, json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": {"n": str(i)}}]})
        latencies.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
        time.sleep(0.005)
    return latencies


def deletes(http: httpx.Client, base_url: str) -> float:
    return sum(float(v) for v in _DELETES.findall(http.get(f"{base_url}/metrics", headers=HEADERS).text))


def run(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, emulators.seaweedfs(Path(tmp)) as s3:
        options = s3.options()
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        create_bucket(bucket, options)
        env = server_env(options)
        args = tuple(arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}"))
        warehouse = f"s3://{bucket}/arco"
        with arco_server(warehouse, Path(tmp), admin_token=TOKEN, env=env, extra_args=args) as a, \
                arco_server(warehouse, Path(tmp), admin_token=TOKEN, env=env, extra_args=args) as b, \
                httpx.Client(timeout=60) as http:
            catalog = catalog_of(a)
            catalog.create_namespace("bench")
            catalog.create_table(("bench", "hot"), SCHEMA)
            config = http.get(f"{a.iceberg_uri}/v1/config?warehouse=main", headers=HEADERS).json()
            prefix = config["overrides"]["prefix"]
            url = f"{a.iceberg_uri}/v1/{prefix}/namespaces/bench/tables/hot"
            commits(http, url, 10)  # warm
            print(f"quiet: {n} commits on server A ...", flush=True)
            quiet = commits(http, url, n)

            stop = threading.Event()
            created = [0]

            def create_tables() -> None:
                other = catalog_of(b)
                while not stop.is_set():
                    other.create_table(("bench", f"new_{created[0]}"), SCHEMA)
                    created[0] += 1
                    time.sleep(0.02)

            creator = threading.Thread(target=create_tables)
            print(f"churn: {n} commits on server A while server B creates tables ...", flush=True)
            before = deletes(http, a.base_url)
            creator.start()
            try:
                churn = commits(http, url, n)
            finally:
                stop.set()
                creator.join()
            again = deletes(http, a.base_url) - before

    def p(samples: list[float], q: float) -> float:
        return sorted(samples)[int(len(samples) * q)]

    print("\np50 / p90 milliseconds")
    print(f"  quiet        {statistics.median(quiet):7.2f} / {p(quiet, 0.9):7.2f}")
    print(f"  churn        {statistics.median(churn):7.2f} / {p(churn, 0.9):7.2f}   ({created[0]} tables created on B)")
    print(f"  ratio        {statistics.median(churn) / statistics.median(quiet):7.2f}x")
    print(f"  runs again   {again:7.0f} of {n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=200)
    run(parser.parse_args().commits)


if __name__ == "__main__":
    main()
