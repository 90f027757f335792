"""Tier 1 at a million tables, at the store (no HTTP): what a new server pays, what it holds, what a change costs.

The warehouse is built through a bulk path (not a million operations): a catalog and its namespaces are created
through the store, then one chunked snapshot is written directly (a chunk file per namespace, the id index in
buckets, the root), exactly as a writer would have stored it (:mod:`arco.catalog.snapshots`). Then, each in a
fresh store:

  first lookup   a new store's first table lookup by name (manifest, root, the one namespace's chunk), and the
                 time from process start (a new interpreter) to that answer, with the resident memory after it
  list           the 1,000 tables of one namespace, first (its chunk is read) and again (in memory)
  create         a table create in the big warehouse next to one in an empty warehouse, interleaved; the mean
                 includes the snapshots that writers store every 256 changes (only the chunks and id buckets that
                 changed are rewritten)
  concurrent     creates per second from 1, 4 and 8 processes, each in its own namespace, and from 4 and 8
                 processes in one namespace, each with a store of its own on the big warehouse

    .venv/bin/python bench/tier1_store.py [--namespaces 1000] [--tables-per-namespace 1000] [--creates 600]
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from arco.catalog import snapshots
from arco.catalog.store import CatalogStore
from arco.storage.local import LocalBackend

CATALOG = "bench-catalog"
_fork = multiprocessing.get_context("fork")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _admin(store: CatalogStore, build: Any) -> dict[str, Any]:
    return store.execute(build, principal="admin")


def build_warehouse(root: Path, namespaces: int, per_namespace: int) -> None:
    """Namespaces through the store, then every table in one chunked snapshot written directly (the bulk path)."""
    store = CatalogStore(LocalBackend(str(root)))
    _admin(store, lambda s: {"op": "create_catalog", "id": CATALOG, "name": "main",
                             "storage_root": f"file://{root}/main", "owner": "admin"})
    for n in range(namespaces):
        _admin(store, lambda s, n=n: {"op": "create_namespace", "id": f"ns-{n:05d}", "catalog_id": CATALOG,
                                      "path": [f"db{n}"], "owner": "admin"})
    with store.read() as state:
        root_snapshot = state.root_snapshot()
    started = time.perf_counter()

    def rows_of(ns_id: str) -> list[dict[str, Any]]:
        n, rows = int(ns_id.removeprefix("ns-")), []
        for i in range(per_namespace):
            table_id, name = str(uuid.uuid4()), f"t{i:06d}"
            rows.append({"id": table_id, "catalog_id": CATALOG, "namespace": [f"db{n}"], "name": name,
                         "kind": "TABLE", "format": "ICEBERG", "owner": "admin", "managed": True,
                         "location": f"file://{root}/main/db{n}/{name}-{table_id.replace('-', '')}",
                         "comment": None, "properties": {}, "created_at_ms": 1, "updated_at_ms": 1,
                         "created_by": "admin", "updated_by": "admin", "columns": [], "view_definition": None,
                         "storage_credential_name": None})
        return rows

    def progress(done: int, tables: int) -> None:
        if done % max(1, namespaces // 10) == 0:
            print(f"  built {done}/{namespaces} namespaces ({time.perf_counter() - started:.0f} s)", flush=True)

    snapshots.write_bulk(store.log, root_snapshot, [f"ns-{n:05d}" for n in range(namespaces)], rows_of, progress)


def _first_lookup(root: str, probe: str, listed_ns: str, out: Any) -> None:
    """In a fresh process: the first lookup, listing, memory."""
    t0 = time.perf_counter()
    store = CatalogStore(LocalBackend(root))
    with store.read() as state:
        state.table(CATALOG, (probe,), "t000000")
        chunks_read = state.tables.loads
    first = time.perf_counter() - t0
    rss_first = rss_mb()
    t0 = time.perf_counter()
    with store.read() as state:
        listed = len(state.tables_of(CATALOG, (listed_ns,)))
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(50):
        t0 = time.perf_counter()
        with store.read() as state:
            state.tables_of(CATALOG, (listed_ns,))
        warm.append(time.perf_counter() - t0)
    out.put({"first": first, "rss_first": rss_first, "chunks_read": chunks_read,
             "listed": listed, "cold": cold, "warm": statistics.median(warm), "rss_after": rss_mb()})


def _create(store: CatalogStore, namespace: str, name: str) -> float:
    table_id = str(uuid.uuid4())
    t0 = time.perf_counter()
    _admin(store, lambda s: {"op": "create_table", "id": table_id, "catalog_id": CATALOG, "namespace": [namespace],
                             "name": name, "location": f"file:///bench/{table_id}", "owner": "admin"})
    return time.perf_counter() - t0


def _creator(root: str, namespace: str, prefix: str, seconds: float, barrier: Any, out: Any) -> None:
    store = CatalogStore(LocalBackend(root))
    store.ensure_fresh()
    barrier.wait(60)
    done, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        _create(store, namespace, f"{prefix}_{done}")
        done += 1
    out.put(done)


def concurrent_rate(root: str, namespaces: list[str], seconds: float) -> float:
    barrier, out = _fork.Barrier(len(namespaces)), _fork.Queue()
    procs = [_fork.Process(target=_creator, args=(root, ns, f"c{uuid.uuid4().hex[:8]}", seconds, barrier, out))
             for ns in namespaces]
    for p in procs:
        p.start()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    for p in procs:
        p.join(30)
    return total / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=1000)
    parser.add_argument("--tables-per-namespace", type=int, default=1000)
    parser.add_argument("--creates", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=5.0, help="per concurrent-create run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arco-tier1-"))
    try:
        big, empty = work / "big", work / "empty"
        total = args.namespaces * args.tables_per_namespace
        print(f"building {total:,} tables in {args.namespaces:,} namespaces ...", flush=True)
        started = time.perf_counter()
        build_warehouse(big, args.namespaces, args.tables_per_namespace)
        print(f"built in {time.perf_counter() - started:.0f} s", flush=True)
        build_warehouse(empty, 1, 0)

        n = args.namespaces
        spawn = multiprocessing.get_context("spawn")  # a new interpreter, as a new server is
        out = spawn.Queue()
        proc = spawn.Process(target=_first_lookup, args=(str(big), f"db{n // 2}", f"db{n // 3}", out))
        spawned = time.perf_counter()
        proc.start()
        first = out.get(timeout=300)
        first["from_start"] = time.perf_counter() - spawned  # the listing included: an upper bound
        proc.join(30)

        stores = {"big": CatalogStore(LocalBackend(str(big))), "empty": CatalogStore(LocalBackend(str(empty)))}
        namespace = {"big": f"db{n // 2}", "empty": "db0"}
        times: dict[str, list[float]] = {"big": [], "empty": []}
        for i in range(args.creates):
            for name in ("big", "empty"):  # interleaved: a noisy neighbour slows both alike
                times[name].append(_create(stores[name], namespace[name], f"new{i}"))

        rates = {}
        spread = [f"db{i * n // 8}" for i in range(8)]
        for label, spaces in [("1 process", spread[:1]),
                              ("4 processes, 4 namespaces", spread[:4]),
                              ("8 processes, 8 namespaces", spread),
                              ("4 processes, 1 namespace", spread[:1] * 4),
                              ("8 processes, 1 namespace", spread[:1] * 8)]:
            rates[label] = concurrent_rate(str(big), spaces, args.seconds)

        one = rates["1 process"]
        print(f"\nTier 1 with {total:,} tables in {args.namespaces:,} namespaces (local directory)")
        print(f"  new store, first lookup        {first['first'] * 1000:8.1f} ms   (process start to first answer "
              f"and listing <= {first['from_start']:.2f} s; goal <= 3 s); chunk files read: {first['chunks_read']}")
        print(f"  resident memory                {first['rss_first']:8.0f} MB   after the first lookup, "
              f"{first['rss_after']:.0f} MB after listing (goal <= 1,024 MB)")
        print(f"  list {first['listed']:,} tables, first       {first['cold'] * 1000:8.1f} ms   (goal <= 50 ms)")
        print(f"  list {first['listed']:,} tables, again       {first['warm'] * 1000:8.2f} ms")
        for stat in (statistics.median, statistics.mean):
            b, e = stat(times["big"]), stat(times["empty"])
            print(f"  create, {stat.__name__:6}               {b * 1000:8.2f} ms   empty warehouse {e * 1000:.2f} ms: "
                  f"{b / e:.2f}x (goal <= 2x)")
        for label, rate in rates.items():
            print(f"  creates/s, {label:27} {rate:7.0f}   {rate / one:.2f}x one process")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
