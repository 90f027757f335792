"""Hot-table commits: one writer against sixteen writers over two servers, on one table, in one run.

Every commit is a metadata-only ``set-properties`` with no requirements (so nothing truly conflicts) and its own
Idempotency-Key; a writer that is refused (409) or gets an error moves on to its next commit. Per storage target:

  one writer      commits/s of a single writer through one server (the reference rate)
  16 writers      commits/s of 16 writer processes spread over two ``arco serve`` processes sharing the warehouse
                  (``--servers`` more)
  ratio           16-writer rate / one-writer rate (goal: >= 0.5)
  refused         share of the 16 writers' requests answered 409 (goal: < 1%)
  errors          other non-2xx answers
  lost            acknowledged commits whose property is missing from the final metadata (must be 0)
  files/commit    metadata files in the table's metadata folder per acknowledged commit (lost races write orphans)
  p50/p99/max ms  request latencies, refused ones included (the tail shows whether the two servers take turns: a
                  server that always won would leave the other's requests waiting for seconds)
  commit / put    the one writer's p50 commit latency over the p50 of a create-only put of a small object to the
                  same storage from this process, measured in the same run (the seed's critical path is 4
                  sequential conditional writes, so 4 is the floor and 4.8 the goal; the commit also pays HTTP, its
                  reads and the receipts)

Targets: ``local`` (a directory) and ``seaweedfs`` (``weed mini``, S3, installed by ``./run.sh test``).

    .venv/bin/python bench/hot_table.py [--seconds 10] [--writers 16] [--targets local,seaweedfs] [--servers 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from uuid6 import uuid7

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from percentiles import p50_p99

from arco.iceberg.metadata_files import MetadataFiles
from arco.storage.base import DoesNotExist, StorageBackend
from arco.storage.factory import open_storage
from support import emulators
from support.arco_server import arco_server

TOKEN = "bench-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}
_fork = multiprocessing.get_context("fork")


@dataclass
class Target:
    warehouse: str
    options: dict[str, str]

    def server_args(self) -> tuple[str, ...]:
        return tuple(arg for k, v in self.options.items() for arg in ("--storage-option", f"{k}={v}"))


@contextmanager
def open_target(name: str, workdir: Path) -> Iterator[Target]:
    if name == "local":
        yield Target(str(workdir / "warehouse"), {})
        return
    from arco.storage.s3 import create_bucket

    with emulators.seaweedfs(workdir) as s3:
        bucket = f"hot-{uuid.uuid4().hex[:8]}"
        create_bucket(bucket, s3.options())
        yield Target(f"s3://{bucket}/wh", s3.options())


def table_url(prefix: str, name: str) -> str:
    return f"{prefix}/namespaces/hot/tables/{name}"


def writer(prefix: str, name: str, writer_id: int, seconds: float, barrier: Any, results: Any) -> None:
    """Commit until the deadline; report acknowledged property keys, refusals, errors and latencies."""
    acked: list[str] = []
    refused = errors = 0
    latencies: list[float] = []
    with httpx.Client(timeout=120, headers=HEADERS) as http:
        barrier.wait(120)
        deadline = time.monotonic() + seconds
        n = 0
        while time.monotonic() < deadline:
            key = f"w{writer_id}-{n}"
            n += 1
            body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {key: "1"}}]}
            started = time.monotonic()
            r = http.post(table_url(prefix, name), json=body, headers={"Idempotency-Key": str(uuid7())})
            latencies.append(time.monotonic() - started)
            if r.status_code == 200:
                acked.append(key)
            elif r.status_code == 409:
                refused += 1
            else:
                errors += 1
    results.put({"acked": acked, "refused": refused, "errors": errors, "latencies": latencies})


@dataclass
class PhaseResult:
    writers: int
    elapsed: float
    acked: int
    refused: int
    errors: int
    lost: int
    metadata_files: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    @property
    def rate(self) -> float:
        return self.acked / self.elapsed

    @property
    def requests(self) -> int:
        return self.acked + self.refused + self.errors


def phase(prefixes: list[str], name: str, writers: int, seconds: float, storage: StorageBackend) -> PhaseResult:
    http = httpx.Client(timeout=60, headers=HEADERS)
    http.post(f"{prefixes[0]}/namespaces/hot/tables", json={"name": name, "schema": SCHEMA}).raise_for_status()
    barrier, results = _fork.Barrier(writers + 1), _fork.Queue()
    procs = [_fork.Process(target=writer, args=(prefixes[w % len(prefixes)], name, w, seconds, barrier, results))
             for w in range(writers)]
    for p in procs:
        p.start()
    barrier.wait(120)
    started = time.monotonic()
    reports = [results.get(timeout=seconds + 300) for _ in procs]
    elapsed = time.monotonic() - started
    for p in procs:
        p.join(60)
    loaded = http.get(table_url(prefixes[-1], name)).json()
    properties = loaded["metadata"]["properties"]
    acked = [k for r in reports for k in r["acked"]]
    lost = sum(1 for k in acked if k not in properties)
    files = MetadataFiles(storage)
    folder = files.key_of(loaded["metadata"]["location"].rstrip("/") + "/metadata/")
    metadata_files = sum(1 for m in storage.list(folder) if m.key.endswith(".metadata.json"))
    latencies = [x * 1000 for r in reports for x in r["latencies"]] or [0.0]
    p50, p99 = p50_p99(latencies)
    return PhaseResult(writers, elapsed, len(acked), sum(r["refused"] for r in reports),
                       sum(r["errors"] for r in reports), lost, metadata_files, p50, p99, max(latencies))


def run_target(name: str, seconds: float, writers: int, server_count: int = 2) -> None:
    with tempfile.TemporaryDirectory(prefix="arco-hot-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        target = stack.enter_context(open_target(name, workdir))
        servers = [stack.enter_context(arco_server(target.warehouse, workdir, admin_token=TOKEN,
                                                   extra_args=target.server_args())) for _ in range(server_count)]
        config = httpx.get(f"{servers[0].iceberg_uri}/v1/config?warehouse=main", headers=HEADERS).json()
        prefixes = [f"{s.iceberg_uri}/v1/{config['overrides']['prefix']}" for s in servers]
        httpx.post(f"{prefixes[0]}/namespaces", json={"namespace": ["hot"]}, headers=HEADERS).raise_for_status()
        storage = open_storage(target.warehouse, target.options)
        one = phase(prefixes[:1], "one", 1, seconds, storage)
        many = phase(prefixes, "many", writers, seconds, storage)
        put_ms = raw_put_p50_ms(storage)
        print(f"\n[{name}] {seconds:.0f}s per phase, {server_count} servers")
        print(f"{'':12} {'commits/s':>10} {'acked':>7} {'refused':>8} {'errors':>7} {'lost':>5} "
              f"{'files/commit':>13} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
        for label, r in (("1 writer", one), (f"{writers} writers", many)):
            refused = r.refused / r.requests if r.requests else 0.0
            print(f"{label:12} {r.rate:10.1f} {r.acked:7d} {refused:8.1%} {r.errors:7d} {r.lost:5d} "
                  f"{r.metadata_files / max(1, r.acked):13.2f} {r.p50_ms:8.1f} {r.p99_ms:8.1f} {r.max_ms:8.1f}")
        ratio = many.rate / one.rate if one.rate else 0.0
        refused = many.refused / many.requests if many.requests else 0.0
        print(f"ratio {writers} writers / 1 writer: {ratio:.2f} (goal >= 0.50); refused {refused:.2%} (goal < 1%); "
              f"lost {one.lost + many.lost} (must be 0)")
        print(f"1 writer's commit p50 {one.p50_ms:.1f} ms = {one.p50_ms / put_ms:.1f} x a create-only put "
              f"({put_ms:.2f} ms p50)", flush=True)


def raw_put_p50_ms(storage: StorageBackend, rounds: int = 200) -> float:
    samples = []
    for i in range(rounds):
        started = time.perf_counter()
        storage.put(f"bench-puts/{uuid.uuid4().hex}-{i}", b"x" * 512, DoesNotExist())
        samples.append(time.perf_counter() - started)
    return sorted(samples)[len(samples) // 2] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--targets", default="local,seaweedfs")
    parser.add_argument("--servers", type=int, default=2, help="servers the writers are spread over")
    args = parser.parse_args()
    for name in args.targets.split(","):
        run_target(name.strip(), args.seconds, args.writers, args.servers)


if __name__ == "__main__":
    main()
