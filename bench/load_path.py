"""The storage path of loadTable and of a commit, each next to its floor, measured in one run.

Local directory warehouse, through PyIceberg's RestCatalog:
  load cold      `load_table` of a table this server has not read yet (made by a second server on the warehouse)
  load warm      `load_table` again: the catalog check and the pointer's conditional read, in one round trip
  load hot       `load_table` from a server run with --read-freshness-ms 60000: no storage call at all
  floor          `load_table` from a canned Starlette server answering the same config and, table by table, the
                 same LoadTableResult bytes (the cold floor loads each cold table once too);
                 each of cold, warm and hot is timed in turns with the floor alone (a, floor, a, floor, ...), and
                 its ratio is to the floor of its own pairing (see "pairs" below)
  append         `table.append` of 10 rows through Arco, next to PyIceberg's SqlCatalog on SQLite (same rows);
                 each followed by 5 ms of untimed idle time (see "writes alone" below)
  create         `create_table` through Arco next to SqlCatalog's (then, not interleaved with the appends)

SeaweedFS warehouse (S3 on loopback), started here:
  4 puts, 2 puts four (two) create-only puts of small objects one after the other, timed whole: the storage
                 floor of a keyed (unkeyed) commit, interleaved with the commits
  commit         a keyed metadata-only commit over HTTP (set-properties with an Idempotency-Key), next to 4 puts
                 (the seed's four sequential conditional writes: the goal's floor) and to 2 puts (its own critical
                 path: the marker's claim runs beside the metadata file, then the CAS; the marker's finalization
                 follows the answer)
  writes alone   the storage calls that commit makes, made directly in the same order and overlap (two
                 sequential writes; the claim, a read and the pending receipt beside the first, the receipt waited
                 for after the second; the finalization and the committed receipt after that, not waited for): the
                 ratio of commit to it is Arco's own cost, the rest is what the side calls cost a store that
                 shares this machine's cores
                 (each op is followed by 5 ms of untimed idle time, so a commit's writes after its answer do not
                 land in the next op's measurement)
  commit unkeyed the same commit without an Idempotency-Key, as PyIceberg sends it: its critical path is the
                 metadata file (the pending receipt and the catalog check beside it) and the CAS, two writes
  3 puts, create a create (REST, no Idempotency-Key) next to three create-only puts: its critical path is the
                 metadata file (the pending receipt beside it), the pointer and the Tier 1 entry
  load warm/hot  as above, on S3 (the pointer's conditional read is a GET answered 304)
  CPU per op     the CPU time SeaweedFS, the Arco server and this client used per commit and per 4 puts (each op's
                 settle time included): the store, the server and the client share this machine's cores, so their
                 sum over the number of cores bounds how fast an op can be, whatever its critical path

Rounds of the peers being compared are interleaved (a, b, a, b, ...), so a noisy neighbour slows both alike.
Pairs: the loads are compared two by two, not in one rotation of all four. Measured here: two Arco servers taking
turns slow each other's loads by about 0.09 ms (each evicts the other's working set from the CPU caches), two
canned servers do not; in one rotation the cold load followed the hot server's and paid that, which no single
server's load path costs.

    .venv/bin/python bench/load_path.py [--rounds 200] [--no-s3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from uuid6 import uuid7

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from arco.storage.base import DoesNotExist
from arco.storage.factory import open_storage
from support import emulators
from support.arco_server import arco_server
from support.net import free_port, stop, wait_for_http

TOKEN = "bench-token"
REST_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False))
ROWS = pa.table({"id": pa.array(range(10), pa.int64()), "city": pa.array(["oslo"] * 10, pa.string())})
WARMUP = 5

CANNED_SERVER = '''
import sys
from pathlib import Path
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
import uvicorn

folder = Path(sys.argv[1])
config = (folder / "config.json").read_bytes()
answers = {path.stem: path.read_bytes() for path in (folder / "tables").iterdir()}

async def get_config(request):
    return Response(config, media_type="application/json")

async def load_table(request):
    body = answers[request.path_params["table"]]
    return Response(body, media_type="application/json", headers={"ETag": '"canned"'})

async def health(request):
    return Response(b"{}", media_type="application/json")

app = Starlette(routes=[Route("/v1/config", get_config), Route("/health", health),
                        Route("/v1/{prefix}/namespaces/{namespace}/tables/{table}", load_table)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
'''


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


class CpuMeter:
    """CPU time each party (a name -> process ids; "client" is this process) used per op, the op's settle time
    included (a commit's writes after its answer are its own): on a machine of few cores, what the store, the
    server and the client burn together bounds how fast a commit can be, whatever its critical path. Linux only
    (``/proc``); elsewhere it reads nothing."""

    def __init__(self, parties: dict[str, list[int]]) -> None:
        self.parties = parties
        self.used: dict[str, dict[str, float]] = {}  # op -> party -> CPU seconds, over all its measured rounds
        self.rounds: dict[str, int] = {}

    def read(self) -> dict[str, float]:
        readings = {name: sum(_process_cpu_s(pid) for pid in pids) for name, pids in self.parties.items()}
        return {**readings, "client": time.process_time()}

    def add(self, op: str, before: dict[str, float], after: dict[str, float]) -> None:
        used = self.used.setdefault(op, {})
        for party, value in after.items():
            used[party] = used.get(party, 0.0) + value - before[party]
        self.rounds[op] = self.rounds.get(op, 0) + 1

    def per_op_ms(self, op: str) -> dict[str, float]:
        return {party: 1000 * value / self.rounds[op] for party, value in self.used.get(op, {}).items()}


def _process_cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def timed_interleaved(ops: dict[str, Callable[[], object]], rounds: int, settle_s: float = 0.0,
                      meter: CpuMeter | None = None) -> dict[str, list[float]]:
    """p50 inputs for each op, the ops taking turns; ``settle_s`` of idle time after each (untimed), so the writes a
    commit makes after its answer do not land in the next op's measurement; ``meter`` notes each op's CPU."""
    results: dict[str, list[float]] = {name: [] for name in ops}
    for i in range(-WARMUP, rounds):
        for name, fn in ops.items():
            before = meter.read() if meter is not None and i >= 0 else None
            start = time.perf_counter()
            fn()
            if i >= 0:
                results[name].append((time.perf_counter() - start) * 1000)
            if settle_s:
                time.sleep(settle_s)
            if meter is not None and before is not None:
                meter.add(name, before, meter.read())
    return results


def catalog_of(server: Any, props: dict[str, str] | None = None) -> RestCatalog:
    return RestCatalog(f"arco-{uuid.uuid4().hex[:6]}", uri=server.iceberg_uri, warehouse="main", token=TOKEN,
                       **(props or {}))


@contextmanager
def canned_server(workdir: Path, config: bytes, answers: dict[str, bytes]) -> Iterator[str]:
    """A Starlette server answering ``config`` and, to a load of a table named in ``answers``, its bytes."""
    folder = workdir / "canned"
    (folder / "tables").mkdir(parents=True)
    (folder / "config.json").write_bytes(config)
    for name, body in answers.items():
        (folder / "tables" / f"{name}.json").write_bytes(body)
    (folder / "server.py").write_text(CANNED_SERVER)
    port = free_port()
    log_path = folder / "server.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, str(folder / "server.py"), str(folder), str(port)], stdout=log,
                                   stderr=subprocess.STDOUT)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/health", timeout=30, process=process, log_path=log_path)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


def load_figures(warehouse: str, workdir: Path, rounds: int, env: dict[str, str] | None = None,
                 args: tuple[str, ...] = (), props: dict[str, str] | None = None) -> dict[str, float]:
    """cold / warm / hot loadTable p50 (ms) on one warehouse, each with the canned-response floor it was timed
    in turns with ("<name> floor")."""
    figures: dict[str, float] = {}
    with ExitStack() as stack:
        server = stack.enter_context(arco_server(warehouse, workdir, admin_token=TOKEN, env=env, extra_args=args))
        maker = stack.enter_context(arco_server(warehouse, workdir, admin_token=TOKEN, env=env, extra_args=args))
        hot = stack.enter_context(arco_server(warehouse, workdir, admin_token=TOKEN, env=env,
                                              extra_args=(*args, "--read-freshness-ms", "60000")))
        making = catalog_of(maker, props)
        making.create_namespace("bench")
        table = making.create_table(("bench", "small"), SCHEMA)
        table.append(ROWS)
        cold_names = [f"cold_{i}" for i in range(rounds + WARMUP)]
        for name in cold_names:  # made by the other server: the measured one has read none of them
            making.create_table(("bench", name), SCHEMA)
        warm_catalog, hot_catalog = catalog_of(server, props), catalog_of(hot, props)
        cold = iter(cold_names)
        ops: dict[str, Callable[[], object]] = {
            "load cold": lambda: warm_catalog.load_table(("bench", next(cold))),
            "load warm": lambda: warm_catalog.load_table(("bench", "small")),
            "load hot": lambda: hot_catalog.load_table(("bench", "small")),
        }
        headers = {"Authorization": f"Bearer {TOKEN}"}
        config = httpx.get(f"{server.iceberg_uri}/v1/config?warehouse=main", headers=headers)
        prefix = config.json()["overrides"]["prefix"]
        # The same bytes PyIceberg gets from Arco (it asks for vended credentials: so does this request), table by
        # table: a cold load's floor loads each cold table once, as the cold loads do (the client itself costs
        # 2-3% more for a table it has not loaded before than for one answer over and over).
        def answer(table: str) -> bytes:
            return httpx.get(f"{maker.iceberg_uri}/v1/{prefix}/namespaces/bench/tables/{table}",
                             headers={**headers, "X-Iceberg-Access-Delegation": "vended-credentials"}).content

        canned_uri = stack.enter_context(canned_server(workdir / uuid.uuid4().hex[:6], config.content,
                                                       {name: answer(name) for name in ("small", *cold_names)}))
        canned = RestCatalog("canned", uri=canned_uri, warehouse="main", token=TOKEN, **(props or {}))
        cold_floor = iter(cold_names)
        floors = {"load cold": lambda: canned.load_table(("bench", next(cold_floor))),
                  "load warm": lambda: canned.load_table(("bench", "small")),
                  "load hot": lambda: canned.load_table(("bench", "small"))}
        for name, op in ops.items():
            results = timed_interleaved({name: op, "floor": floors[name]}, rounds)
            figures[name], figures[f"{name} floor"] = p50(results[name]), p50(results["floor"])
    return figures


def append_figures(workdir: Path, rounds: int) -> dict[str, float]:
    with arco_server(workdir / "append-warehouse", workdir, admin_token=TOKEN) as server:
        arco = catalog_of(server)
        arco.create_namespace("bench")
        arco_table = arco.create_table(("bench", "appended"), SCHEMA)
        (workdir / "sql-warehouse").mkdir()
        sql = SqlCatalog("sql", uri=f"sqlite:///{workdir}/sql.db", warehouse=f"file://{workdir}/sql-warehouse")
        sql.create_namespace("bench")
        sql_table = sql.create_table(("bench", "appended"), SCHEMA)
        results = timed_interleaved({"append arco": lambda: arco_table.append(ROWS),
                                     "append sql": lambda: sql_table.append(ROWS)}, rounds, settle_s=0.005)
        made = iter(range(10**9))
        results.update(timed_interleaved({
            "create arco": lambda: arco.create_table(("bench", f"t{next(made)}"), SCHEMA),
            "create sql": lambda: sql.create_table(("bench", f"t{next(made)}"), SCHEMA)}, rounds, settle_s=0.005))
    return {name: p50(samples) for name, samples in results.items()}


def server_env(options: dict[str, str]) -> dict[str, str]:
    """The environment an ``arco serve`` on an S3 warehouse with these storage options needs."""
    return {"AWS_ACCESS_KEY_ID": options["s3.access-key-id"], "AWS_SECRET_ACCESS_KEY": options["s3.secret-access-key"],
            "AWS_ENDPOINT_URL_S3": options["s3.endpoint"], "AWS_REGION": options.get("s3.region", "us-east-1")}


def s3_figures(workdir: Path, rounds: int, loads: bool = True) -> dict[str, float]:
    from arco.storage.s3 import create_bucket

    with emulators.seaweedfs(workdir) as s3:
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        create_bucket(bucket, s3.options())
        options = s3.options()
        env = server_env(options)
        warehouse = f"s3://{bucket}/arco"
        args = tuple(arg for key, value in options.items() for arg in ("--storage-option", f"{key}={value}"))
        raw = open_storage(f"s3://{bucket}/raw", options)
        figures: dict[str, float] = {}
        with arco_server(warehouse, workdir, admin_token=TOKEN, env=env, extra_args=args) as server:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            catalog = catalog_of(server)
            catalog.create_namespace("bench")
            catalog.create_table(("bench", "committed"), SCHEMA)
            prefix = httpx.get(f"{server.iceberg_uri}/v1/config?warehouse=main", headers=headers).json()[
                "overrides"]["prefix"]
            url = f"{server.iceberg_uri}/v1/{prefix}/namespaces/bench/tables/committed"
            http = httpx.Client(timeout=60)
            counter = iter(range(10**9))

            def commit() -> None:
                i = next(counter)
                response = http.post(url, headers={**headers, "Idempotency-Key": str(uuid7())}, json={
                    "requirements": [], "updates": [{"action": "set-properties", "updates": {"n": str(i)}}]})
                assert response.status_code == 200, response.text

            def commit_unkeyed() -> None:
                i = next(counter)
                response = http.post(url, headers=headers, json={
                    "requirements": [], "updates": [{"action": "set-properties", "updates": {"n": str(i)}}]})
                assert response.status_code == 200, response.text

            tables = f"{server.iceberg_uri}/v1/{prefix}/namespaces/bench/tables"

            def create() -> None:
                response = http.post(tables, headers=headers, json={"name": f"made_{next(counter)}",
                                                                    "schema": REST_SCHEMA})
                assert response.status_code == 200, response.text

            def puts(n: int) -> Callable[[], None]:
                def run() -> None:
                    for _ in range(n):
                        assert raw.put(f"puts/{uuid.uuid4().hex}", b"x" * 600, DoesNotExist()).ok
                return run

            side = ThreadPoolExecutor(3)
            metadata_size = len(httpx.get(url, headers=headers).content)

            def writes_alone() -> None:
                name = uuid.uuid4().hex
                claim = side.submit(raw.put, f"markers/{name}", b"m" * 400, DoesNotExist())
                check = side.submit(raw.get_or_none, f"log/{name}")
                pending = side.submit(raw.put, f"pending/{name}", b"r" * 1200, DoesNotExist())
                raw.put(f"metadata/{name}", b"j" * metadata_size, DoesNotExist())
                assert claim.result().ok
                check.result()
                version = raw.put("pointer", uuid.uuid4().bytes * 10)
                assert version.ok
                pending.result()  # the pending receipt, not waited for before the CAS
                # The finalization and the committed receipt, after the answer: not waited for (they run into the
                # settle time).
                side.submit(raw.put, f"markers/{name}", b"f" * 600)
                side.submit(raw.put, f"committed/{name}", b"c" * 1200, DoesNotExist())

            # The floors are sequences of puts timed whole, after the same idle time as the commits: the first
            # call after idle is slower on this kind of machine, for the commit's first write as for a floor's.
            meter = CpuMeter({"SeaweedFS": [s3.pid], "Arco server": [server.process.pid]})
            results = timed_interleaved({"s3 4 puts": puts(4), "s3 commit": commit, "s3 writes alone": writes_alone,
                                         "s3 2 puts": puts(2), "s3 commit unkeyed": commit_unkeyed,
                                         "s3 3 puts": puts(3), "s3 create": create}, rounds,
                                        settle_s=0.005, meter=meter)
            figures.update({name: p50(samples) for name, samples in results.items()})
            for op in ("s3 4 puts", "s3 commit"):
                figures.update({f"{op} cpu {party}": ms for party, ms in meter.per_op_ms(op).items()})
        if not loads:
            return figures
        props = {"s3.endpoint": options["s3.endpoint"], "s3.access-key-id": options["s3.access-key-id"],
                 "s3.secret-access-key": options["s3.secret-access-key"], "s3.region": env["AWS_REGION"]}
        loads = load_figures(f"s3://{bucket}/loads", workdir, max(20, rounds // 2), env=env, args=args, props=props)
        figures.update({f"s3 {name}": value for name, value in loads.items()})
    return figures


def print_s3_commit(s3: dict[str, float]) -> None:
    print(f"  {'s3 4 puts':<12} {s3['s3 4 puts']:8.2f}")
    print(f"  {'s3 commit':<12} {s3['s3 commit']:8.2f}   {s3['s3 commit'] / s3['s3 4 puts']:5.2f}x 4 puts   "
          f"{s3['s3 commit'] / s3['s3 2 puts']:5.2f}x 2 puts   {s3['s3 commit'] / s3['s3 writes alone']:5.2f}x its "
          "writes alone")
    print(f"  {'s3 writes alone':<12} {s3['s3 writes alone']:8.2f}   "
          f"{s3['s3 writes alone'] / s3['s3 4 puts']:5.2f}x 4 puts")
    print(f"  {'s3 2 puts':<12} {s3['s3 2 puts']:8.2f}")
    print(f"  {'s3 commit unkeyed':<12} {s3['s3 commit unkeyed']:8.2f}   "
          f"{s3['s3 commit unkeyed'] / s3['s3 2 puts']:5.2f}x 2 puts")
    print(f"  {'s3 3 puts':<12} {s3['s3 3 puts']:8.2f}")
    print(f"  {'s3 create':<12} {s3['s3 create']:8.2f}   {s3['s3 create'] / s3['s3 3 puts']:5.2f}x 3 puts")
    cores = os.cpu_count() or 1
    for op in ("s3 4 puts", "s3 commit"):
        used = {key.removeprefix(f"{op} cpu "): ms for key, ms in s3.items() if key.startswith(f"{op} cpu ")}
        if any(used.values()):
            parts = ", ".join(f"{party} {ms:.2f}" for party, ms in used.items())
            print(f"  CPU per {op.removeprefix('s3 ')} (its settle time included), ms: {parts}; all of it spread "
                  f"over {cores} cores: {sum(used.values()) / cores:.2f} ms")


def print_loads(figures: dict[str, float], prefix: str = "") -> None:
    for name in ("load cold", "load warm", "load hot"):
        load, floor = figures[prefix + name], figures[f"{prefix}{name} floor"]
        print(f"  {prefix + name:<12} {load:8.2f}   {load / floor:5.2f}x the floor ({floor:.2f}, timed in turns "
              "with it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--only-s3-commit", action="store_true", help="only the SeaweedFS put/commit figures")
    args = parser.parse_args()
    if args.only_s3_commit:
        with tempfile.TemporaryDirectory(prefix="arco-load-path-") as tmp:
            print_s3_commit(s3_figures(Path(tmp), args.rounds, loads=False))
        return
    with tempfile.TemporaryDirectory(prefix="arco-load-path-") as tmp:
        workdir = Path(tmp)
        print("local directory: loadTable (cold, warm, hot) and the canned-response floor ...", flush=True)
        loads = load_figures(str(workdir / "warehouse"), workdir, args.rounds)
        print("local directory: append of 10 rows and create_table, Arco and SqlCatalog ...", flush=True)
        appends = append_figures(workdir, max(20, args.rounds // 2))
        s3 = {} if args.no_s3 else s3_figures(workdir, args.rounds)
    print("\np50 milliseconds")
    print_loads(loads)
    print(f"  {'append arco':<12} {appends['append arco']:8.2f}   "
          f"{appends['append arco'] / appends['append sql']:5.2f}x SqlCatalog")
    print(f"  {'append sql':<12} {appends['append sql']:8.2f}")
    print(f"  {'create arco':<12} {appends['create arco']:8.2f}   "
          f"{appends['create arco'] / appends['create sql']:5.2f}x SqlCatalog")
    print(f"  {'create sql':<12} {appends['create sql']:8.2f}")
    if s3:
        print_s3_commit(s3)
        print_loads(s3, "s3 ")


if __name__ == "__main__":
    main()
