"""Tier 1 at a million tables, through HTTP: what a new ``arco serve`` pays and holds, and what creates cost.

The local-directory warehouse is built through a bulk path, not a million requests: a server creates the
namespaces and a few real Iceberg tables (PyIceberg), then this process fills every namespace with synthetic table
entries in one chunked snapshot written directly, as a writer would have stored it (a chunk file per namespace, the
id index in buckets, the root: :mod:`arco.catalog.snapshots`). The synthetic tables have no Iceberg metadata, so
only the real ones are loaded. Then, through new servers:

  start          a new server on the big warehouse: from process start until it answers /health (polled every 0.1 s)
  first load     its first loadTable of a real table through PyIceberg's RestCatalog (its config request, then
                 load_table), and a second new server's first request, a plain GET of a real table (goal <= 3 s)
  memory         the first server's VmRSS after the first load, after the listing and after the creates
                 (goal <= 1 GB)
  list           GET .../namespaces/{ns}/tables?pageSize=1000 of a namespace this server has not read: the first,
                 then the median of again (goal <= 50 ms)
  create         PyIceberg create_table in the big warehouse next to one in an empty warehouse (the catalog and one
                 namespace), each through its own server, interleaved: medians and their ratio (goal <= 2x)
  concurrent     creates/s (REST POST) from 1, 4 and 16 client processes each in its own namespace, and from 4 and
                 16 in one namespace, through the first server, then again through a server with a worker process
                 per core (--workers; servers are the unit of scale, and one interpreter saturates one core):
                 the five runs take turns, --cycles times, each run's rate compared with the one-client run of
                 its own cycle (the local disk's speed drifts from minute to minute); medians of the rates and
                 of those ratios (goal: own namespaces scale with clients; one namespace never below one
                 client), the server's CPU time over each run's duration, and how busy the machine's cores were
                 (clients share them: where they are all busy, more clients cannot add creates)

    .venv/bin/python bench/tier1_scale.py [--tables 1000000] [--namespaces 1000] [--creates 30] [--seconds 3]
                                          [--cycles 3] [--workers N]
    .venv/bin/python bench/tier1_scale.py --small     # 20,000 tables in 100 namespaces, to try it quickly
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from arco.catalog import snapshots
from arco.catalog.log import CatalogLog, snapshot_key
from arco.catalog.model import NamespaceEntry
from arco.catalog.store import CatalogStore
from arco.storage.local import LocalBackend
from support.arco_server import RunningServer, arco_server, start_server
from support.net import stop

TOKEN = "bench-token"
HEADERS = {"Authorization": f"Bearer {TOKEN}"}
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False))
REST_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}
REAL_TABLES = 4  # namespaces ns0000.. get one real Iceberg table each, named "real"
WARMUP = 3
LIST_ROUNDS = 50
GB = 1024.0
_fork = multiprocessing.get_context("fork")


def ns_name(n: int) -> str:
    return f"ns{n:04d}"


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1] if len(samples) > 1 else samples[0]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process and its live children (uvicorn's workers) have used so far."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot, from /proc/stat (idle and iowait are not busy)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def catalog_of(server: RunningServer) -> RestCatalog:
    return RestCatalog(f"arco-{uuid.uuid4().hex[:6]}", uri=server.iceberg_uri, warehouse="main", token=TOKEN)


def prefix_url(server: RunningServer) -> str:
    config = httpx.get(f"{server.iceberg_uri}/v1/config?warehouse=main", headers=HEADERS, timeout=60)
    config.raise_for_status()
    return f"{server.iceberg_uri}/v1/{config.json()['overrides']['prefix']}"


def timed_start(warehouse: Path, workdir: Path) -> tuple[RunningServer, float]:
    started = time.perf_counter()
    server = start_server(warehouse, workdir, admin_token=TOKEN)
    return server, time.perf_counter() - started


# -- building ------------------------------------------------------------------------------------------------


def create_namespaces(warehouse: Path, workdir: Path, namespaces: int) -> str:
    """The namespaces over HTTP, and a real Iceberg table in each of the first few; the path of the catalog main's
    Iceberg routes (``/iceberg/v1/{prefix}``)."""
    with arco_server(warehouse, workdir, admin_token=TOKEN) as server, \
            httpx.Client(base_url=prefix_url(server), headers=HEADERS, timeout=60) as http:
        started = time.perf_counter()
        for n in range(namespaces):
            http.post("/namespaces", json={"namespace": [ns_name(n)]}).raise_for_status()
            if (n + 1) % max(1, namespaces // 5) == 0:
                print(f"  {n + 1:,}/{namespaces:,} namespaces over HTTP ({time.perf_counter() - started:.0f} s)",
                      flush=True)
        catalog = catalog_of(server)
        for n in range(min(REAL_TABLES, namespaces)):
            catalog.create_table((ns_name(n), "real"), SCHEMA)
        return str(http.base_url).removeprefix(server.base_url).rstrip("/")


def synthetic_rows(namespace: NamespaceEntry, storage_root: str, count: int, at_ms: int) -> list[dict[str, Any]]:
    """``count`` table entries with exactly :class:`TableEntry`'s fields, as the admin's tables have them."""
    rows = []
    for i in range(count):
        table_id, name = str(uuid.uuid4()), f"t{i:06d}"
        rows.append({"id": table_id, "catalog_id": namespace.catalog_id, "namespace": list(namespace.path),
                     "name": name, "kind": "TABLE", "format": "ICEBERG",
                     "location": f"{storage_root}/{'/'.join(namespace.path)}/{name}-{table_id.replace('-', '')}",
                     "owner": "admin", "managed": True, "comment": None, "properties": {}, "created_at_ms": at_ms,
                     "updated_at_ms": at_ms, "created_by": "admin", "updated_by": "admin", "columns": [],
                     "view_definition": None, "storage_credential_name": None})
    return rows


def write_snapshot(warehouse: Path, tables: int) -> None:
    """Fill every namespace of ``main`` to ``tables`` in all, keeping its real tables, in one chunked snapshot at
    the log's current position (replacing the root a server may have stored there)."""
    storage = LocalBackend(str(warehouse), fsync=False)
    with CatalogStore(storage).read() as state:
        root, seq = state.root_snapshot(), state.seq
        catalog = state.catalog("main")
        namespaces = sorted((ns for ns in state.namespaces.values() if ns.catalog_id == catalog.id),
                            key=lambda ns: ns.path)
        real = {ns.id: [asdict(t) for t in state.tables_of(catalog.id, ns.path)] for ns in namespaces}
    per_namespace, extra = divmod(tables, len(namespaces))
    position = {ns.id: n for n, ns in enumerate(namespaces)}
    by_id = {ns.id: ns for ns in namespaces}
    at_ms = int(time.time() * 1000)
    started = time.perf_counter()

    def rows_of(ns_id: str) -> list[dict[str, Any]]:
        rows = real[ns_id]
        count = per_namespace + (position[ns_id] < extra) - len(rows)
        return rows + synthetic_rows(by_id[ns_id], catalog.storage_root, count, at_ms)

    def progress(done: int, written: int) -> None:
        if done % max(1, len(namespaces) // 10) == 0:
            print(f"  {written:,}/{tables:,} tables in chunk files ({time.perf_counter() - started:.0f} s)",
                  flush=True)

    if storage.head(snapshot_key(seq)) is not None:
        storage.delete(snapshot_key(seq))
    log = CatalogLog(storage)
    snapshots.write_bulk(log, root, [ns.id for ns in namespaces], rows_of, progress)
    print(f"  chunks, id buckets and root written ({time.perf_counter() - started:.0f} s)", flush=True)
    assert log.read_manifest().snapshot_seq == seq, "the manifest did not move to the bulk snapshot"


# -- measuring -----------------------------------------------------------------------------------------------


def first_get(warehouse: Path, workdir: Path, prefix: str) -> float:
    """A new server's first request: a plain GET of a real table (seconds)."""
    server, _ = timed_start(warehouse, workdir)
    try:
        started = time.perf_counter()
        response = httpx.get(f"{server.base_url}{prefix}/namespaces/{ns_name(1)}/tables/real", headers=HEADERS,
                             timeout=60)
        elapsed = time.perf_counter() - started
        response.raise_for_status()
        return elapsed
    finally:
        stop(server.process)


def list_page(http: httpx.Client, namespace: str, expected: int) -> float:
    started = time.perf_counter()
    response = http.get(f"/namespaces/{namespace}/tables", params={"pageSize": 1000})
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    assert len(response.json()["identifiers"]) == expected, response.text[:200]
    return elapsed


def timed_creates(ops: dict[str, Callable[[int], object]], rounds: int) -> dict[str, list[float]]:
    """``rounds`` calls of each op, interleaved (a, b, a, b, ...), after a few unmeasured ones (seconds)."""
    results: dict[str, list[float]] = {name: [] for name in ops}
    for i in range(-WARMUP, rounds):
        for name, op in ops.items():
            started = time.perf_counter()
            op(i)
            if i >= 0:
                results[name].append(time.perf_counter() - started)
    return results


def creator(prefix: str, namespace: str, tag: str, seconds: float, barrier: Any, results: Any) -> None:
    """Create tables in ``namespace`` until the deadline; report how many were acknowledged, and failures."""
    acked = failed = 0
    with httpx.Client(base_url=prefix, timeout=120, headers=HEADERS) as http:
        barrier.wait(120)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            response = http.post(f"/namespaces/{namespace}/tables",
                                 json={"name": f"{tag}_{acked + failed}", "schema": REST_SCHEMA})
            if response.status_code == 200:
                acked += 1
            else:
                failed += 1
    results.put((acked, failed))


@dataclass(frozen=True)
class Rate:
    per_s: float  # acknowledged creates per second
    failed: int  # requests not answered 200
    server_cores: float  # the server's CPU time over the run's duration
    machine_busy: float  # the share of all cores' time spent busy over the run (server, clients and the rest)


def create_rate(prefix: str, namespaces: list[str], seconds: float, server_pid: int) -> Rate:
    """Creates/s of one client process per entry of ``namespaces``, all through the server ``server_pid``."""
    barrier, results = _fork.Barrier(len(namespaces) + 1), _fork.Queue()
    procs = [_fork.Process(target=creator, args=(prefix, ns, f"c{uuid.uuid4().hex[:8]}", seconds, barrier, results))
             for ns in namespaces]
    for proc in procs:
        proc.start()
    barrier.wait(120)
    started, cpu, (busy, total) = time.monotonic(), cpu_seconds(server_pid), machine_cpu()
    reports = [results.get(timeout=seconds + 300) for _ in procs]
    elapsed, cpu = time.monotonic() - started, cpu_seconds(server_pid) - cpu
    busy_after, total_after = machine_cpu()
    for proc in procs:
        proc.join(60)
    return Rate(sum(acked for acked, _ in reports) / elapsed, sum(failed for _, failed in reports), cpu / elapsed,
                (busy_after - busy) / max(1, total_after - total))


@dataclass
class Figure:
    label: str
    value: str
    goal: str = ""
    met: bool | None = None

    def row(self) -> str:
        verdict = "" if self.met is None else ("ok" if self.met else "MISSED")
        return f"  {self.label:<44} {self.value:>22}   {self.goal:<24} {verdict}"


def measure(big: Path, empty: Path, workdir: Path, prefix_path: str, namespaces: int, listed_count: int,
            creates: int, seconds: float, workers: int, cycles: int) -> list[Figure]:
    print("a new server's first request: GET of a real table ...", flush=True)
    get_first = first_get(big, workdir, prefix_path)

    print("a new server: start, first loadTable through PyIceberg, listing, memory ...", flush=True)
    server, to_health = timed_start(big, workdir)
    try:
        pid = server.process.pid
        started = time.perf_counter()
        catalog = catalog_of(server)
        config = time.perf_counter() - started
        loaded = time.perf_counter()
        catalog.load_table((ns_name(0), "real"))
        load = time.perf_counter() - loaded
        first = config + load
        rss_first = rss_mb(pid)
        prefix = f"{server.base_url}{prefix_path}"
        with httpx.Client(base_url=prefix, headers=HEADERS, timeout=60) as http:
            listed = ns_name(namespaces // 2)
            list_cold = list_page(http, listed, listed_count)
            list_warm = [list_page(http, listed, listed_count) for _ in range(LIST_ROUNDS)]
        rss_listed = rss_mb(pid)

        print(f"create: {creates} in the big warehouse and {creates} in an empty one, interleaved ...", flush=True)
        with arco_server(empty, workdir, admin_token=TOKEN) as peer:
            empty_catalog = catalog_of(peer)
            empty_catalog.create_namespace(ns_name(0))
            times = timed_creates({
                "big": lambda i: catalog.create_table((ns_name(namespaces // 3), f"new{i + WARMUP}"), SCHEMA),
                "empty": lambda i: empty_catalog.create_table((ns_name(0), f"new{i + WARMUP}"), SCHEMA),
            }, creates)

        rates = {1: concurrent_rates(prefix, namespaces, seconds, pid, cycles)}
        rss_end = rss_mb(pid)
    finally:
        stop(server.process)
    if workers > 1:
        # Servers are the unit of scale: the same runs through one server with a worker process per core.
        with arco_server(big, workdir, admin_token=TOKEN, extra_args=("--workers", str(workers))) as pool:
            rates[workers] = concurrent_rates(f"{pool.base_url}{prefix_path}", namespaces, seconds, pool.process.pid,
                                              cycles)

    figures = [
        Figure("new server: process start to /health", f"{to_health:.2f} s"),
        Figure("first loadTable, PyIceberg (config + load)", f"{first * 1000:.0f} ms", "<= 3,000 ms", first <= 3),
        Figure("  of which the config request", f"{config * 1000:.0f} ms"),
        Figure("  of which load_table", f"{load * 1000:.0f} ms"),
        Figure("first loadTable, plain GET (another server)", f"{get_first * 1000:.0f} ms", "<= 3,000 ms",
               get_first <= 3.0),
        Figure("process start to first loadTable answered", f"{to_health + first:.2f} s"),
        Figure("resident memory after the first load", f"{rss_first:.0f} MB", "<= 1,024 MB", rss_first <= GB),
        Figure("resident memory after the listing", f"{rss_listed:.0f} MB", "<= 1,024 MB", rss_listed <= GB),
        Figure("resident memory after the creates", f"{rss_end:.0f} MB", "<= 1,024 MB", rss_end <= GB),
        Figure(f"list {listed_count:,} tables, first (cold)", f"{list_cold * 1000:.1f} ms", "<= 50 ms",
               list_cold <= 0.05),
        Figure(f"list {listed_count:,} tables, again (median; p90 of {LIST_ROUNDS})",
               f"{statistics.median(list_warm) * 1000:.1f}; {p90(list_warm) * 1000:.1f} ms", "<= 50 ms",
               statistics.median(list_warm) <= 0.05),
    ]
    big_p50, empty_p50 = statistics.median(times["big"]), statistics.median(times["empty"])
    figures += [
        Figure(f"create, big warehouse (median; p90 of {creates})",
               f"{big_p50 * 1000:.1f}; {p90(times['big']) * 1000:.1f} ms"),
        Figure(f"create, empty warehouse (median; p90 of {creates})",
               f"{empty_p50 * 1000:.1f}; {p90(times['empty']) * 1000:.1f} ms"),
        Figure("create, big / empty (medians)", f"{big_p50 / empty_p50:.2f}x", "<= 2.00x", big_p50 / empty_p50 <= 2),
    ]
    for count, runs in rates.items():
        figures += rate_figures(runs, "1 worker" if count == 1 else f"{count} workers")
    return figures


CONCURRENT_RUNS = (("1 client", 1, False), ("4 clients, own namespaces", 4, False),
                   ("16 clients, own namespaces", 16, False), ("4 clients, one namespace", 4, True),
                   ("16 clients, one namespace", 16, True))


def concurrent_rates(prefix: str, namespaces: int, seconds: float, server_pid: int,
                     cycles: int) -> dict[str, list[Rate]]:
    """Creates/s of each of :data:`CONCURRENT_RUNS` through the server at ``prefix``, ``cycles`` times in turn.

    A disk shared with other machines drifts by tens of percent from one minute to the next: so the runs take
    turns (1, 4, 16, 4, 16 clients, then again), and each is compared with the one-client run of its own cycle."""
    own = [ns_name(REAL_TABLES + (namespaces - 1 - REAL_TABLES) * k // 16) for k in range(16)]
    shared = ns_name(namespaces - 1)
    rates: dict[str, list[Rate]] = {label: [] for label, _, _ in CONCURRENT_RUNS}
    for cycle in range(cycles):
        for label, clients, one_namespace in CONCURRENT_RUNS:
            print(f"concurrent creates, cycle {cycle + 1} of {cycles}: {label}, {seconds:.0f} s ...", flush=True)
            rates[label].append(create_rate(prefix, [shared] * clients if one_namespace else own[:clients], seconds,
                                            server_pid))
    return rates


def rate_figures(rates: dict[str, list[Rate]], server: str) -> list[Figure]:
    """Each configuration's median rate, and the median over the cycles of its ratio to that cycle's one client."""
    figures: list[Figure] = []
    ones = [rate.per_s for rate in rates["1 client"]]
    previous = 1.0
    for label, runs in rates.items():
        per_s = statistics.median(rate.per_s for rate in runs)
        ratio = statistics.median(rate.per_s / one for rate, one in zip(runs, ones, strict=True))
        value = f"{per_s:.1f}/s" if label == "1 client" else f"{per_s:.1f}/s, {ratio:.2f}x"
        failed = sum(rate.failed for rate in runs)
        if failed:
            value += f", {failed} failed"
        name = f"creates/s, {server}, {label}"
        if label == "1 client":
            figures.append(Figure(name, value))
        elif "own" in label:
            figures.append(Figure(name, value, f"> {previous:.2f}x (rising)", ratio > previous))
            previous = ratio
        else:
            figures.append(Figure(name, value, ">= 1.00x", ratio >= 1.0))
    figures += [Figure(f"  server CPU, {label}", f"{statistics.median(r.server_cores for r in runs):.2f} cores; "
                                                  f"machine {statistics.median(r.machine_busy for r in runs):.0%} busy")
                for label, runs in rates.items()]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=1_000_000)
    parser.add_argument("--namespaces", type=int, default=1000)
    parser.add_argument("--creates", type=int, default=30, help="measured creates per warehouse")
    parser.add_argument("--seconds", type=float, default=3.0, help="per concurrent-create run")
    parser.add_argument("--cycles", type=int, default=3, help="concurrent-create runs of each kind, taking turns")
    parser.add_argument("--small", action="store_true", help="20,000 tables in 100 namespaces")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1),
                        help="the concurrent creates again through a server with this many worker processes "
                             "(default: one per core, at most 4; 1 skips them)")
    args = parser.parse_args()
    if args.small:
        args.tables, args.namespaces = 20_000, 100
    if args.namespaces < 17 + REAL_TABLES or args.tables < args.namespaces:
        parser.error(f"needs at least {17 + REAL_TABLES} namespaces and a table in each")
    with tempfile.TemporaryDirectory(prefix="arco-tier1-scale-") as tmp:
        workdir = Path(tmp)
        big, empty = workdir / "big", workdir / "empty"
        print(f"building {args.tables:,} tables in {args.namespaces:,} namespaces ...", flush=True)
        started = time.perf_counter()
        prefix_path = create_namespaces(big, workdir, args.namespaces)
        write_snapshot(big, args.tables)
        built = time.perf_counter() - started
        print(f"built in {built:.0f} s", flush=True)
        per_namespace, extra = divmod(args.tables, args.namespaces)
        listed_count = min(1000, per_namespace + (args.namespaces // 2 < extra))  # the listed namespace's page
        figures = measure(big, empty, workdir, prefix_path, args.namespaces, listed_count, args.creates,
                          args.seconds, args.workers, args.cycles)
    print(f"\nTier 1 at {args.tables:,} tables in {args.namespaces:,} namespaces (local directory, built in "
          f"{built:.0f} s), through arco serve")
    print(f"  {'figure':<44} {'value':>22}   {'goal':<24}")
    for figure in figures:
        print(figure.row())


if __name__ == "__main__":
    main()
