"""Iceberg catalog latency: Arco next to the catalogs a Python user would run instead, in one run.

Peers, each on a fresh local warehouse:
  arco     `arco serve` (one process), through PyIceberg's RestCatalog and raw HTTP
  sql      PyIceberg's SqlCatalog on SQLite, in process (no server at all)
  lakana   `lakana-server` from PyPI (a Python Iceberg REST server keeping metadata in SQLite), installed by this
           script into its own venv under .tools/ on first use (its dependencies clash with Arco's)

Measured, as p50/p99 in milliseconds, with the ratio of each peer to Arco (>1 means Arco is faster):
  load_table        PyIceberg `catalog.load_table` of a small table
  append            PyIceberg `table.append` of 10 rows (writes data + manifests, then commits)
  raw_commit        one commit of a pre-built add-snapshot + set-snapshot-ref (no data written)
  load_warm         GET loadTable over HTTP, metadata already cached by the server
  load_304          the same GET with If-None-Match: the client's copy is current
  load_1000_snaps   GET loadTable of a table with 1,000 snapshots

All peers run at once and their rounds are interleaved (arco, sql, lakana, arco, ...), so a noisy neighbour slows
them alike. Tables live in the namespace bronze.bench because lakana-server only accepts tables under bronze,
silver or gold.

    .venv/bin/python bench/iceberg_catalog.py [--rounds 200] [--peers arco,sql,lakana]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import write_manifest_list
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.types import LongType, NestedField, StringType

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from percentiles import p50_p99  # noqa: E402

from support.arco_server import arco_server  # noqa: E402
from support.net import free_port, stop, wait_for_http  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False))
ROWS = pa.table({"id": pa.array(range(10), pa.int64()), "city": pa.array(["oslo"] * 10, pa.string())})
WARMUP = 5
MIN_ROUNDS = 20  # of each measure, however few --rounds asks for
MEASURES = ("load_table", "append", "raw_commit", "load_warm", "load_304", "load_1000_snaps")


@dataclass
class Peer:
    """One catalog under test: a PyIceberg catalog, and (for REST servers) the raw HTTP routes of a table."""

    name: str
    catalog: Catalog
    rest_prefix: str | None = None  # e.g. http://host:port/iceberg/v1/main, None for in-process catalogs
    headers: dict[str, str] = field(default_factory=dict)
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=60))

    def table_url(self, namespace: str, name: str) -> str:
        return f"{self.rest_prefix}/namespaces/{namespace}/tables/{name}"


# --- the peers --------------------------------------------------------------------------------------------------

@contextmanager
def arco_peer(workdir: Path) -> Iterator[Peer]:
    with arco_server(workdir / "arco-warehouse", workdir, admin_token=TOKEN) as server:
        catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=TOKEN)
        prefix = httpx.get(f"{server.iceberg_uri}/v1/config?warehouse=main",
                           headers={"Authorization": f"Bearer {TOKEN}"}).json()["overrides"]["prefix"]
        yield Peer("arco", catalog, f"{server.iceberg_uri}/v1/{prefix}", {"Authorization": f"Bearer {TOKEN}"})


@contextmanager
def sql_peer(workdir: Path) -> Iterator[Peer]:
    (workdir / "sql-warehouse").mkdir()
    catalog = SqlCatalog("sql", uri=f"sqlite:///{workdir}/sql-catalog.db", warehouse=f"file://{workdir}/sql-warehouse")
    yield Peer("sql", catalog)


LAKANA_VERSION = "0.20.0"
LAKANA_VENV = ROOT / ".tools" / f"lakana-{LAKANA_VERSION}"


def lakana_python() -> Path:
    python = LAKANA_VENV / "bin" / "python"
    if not (LAKANA_VENV / ".installed").exists():
        print(f"installing lakana-server=={LAKANA_VERSION} into {LAKANA_VENV} (first run only)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(LAKANA_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        f"lakana-server=={LAKANA_VERSION}"], check=True)
        (LAKANA_VENV / ".installed").write_text(LAKANA_VERSION)
    return python


@contextmanager
def lakana_peer(workdir: Path) -> Iterator[Peer]:
    """lakana-server on SQLite, with a local-directory "environment" (its Iceberg prefix) named dev."""
    server_bin = lakana_python().parent / "lakana-server"
    port = free_port()
    key_id, secret = "0123456789abcdef", "benchsecret"
    token = f"lakana_pat_{key_id}_{secret}"  # the bootstrap admin's personal access token, by its own convention
    env = {**os.environ, "LAKANA_DATABASE__URL": f"sqlite:///{workdir}/lakana.db", "LAKANA_HOST": "127.0.0.1",
           "LAKANA_PORT": str(port), "LAKANA_BOOTSTRAP_PAT_KEY_ID": key_id, "LAKANA_BOOTSTRAP_PAT_SECRET": secret}
    log_path = workdir / "lakana.log"
    with open(log_path, "wb") as log:
        subprocess.run([str(server_bin), "migrate"], env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                       check=True)
        process = subprocess.Popen([str(server_bin)], env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_http(f"{base}/healthz", timeout=60, process=process, log_path=log_path)
        (workdir / "lakana-warehouse").mkdir()
        headers = {"Authorization": f"Bearer {token}"}
        created = httpx.post(f"{base}/api/v1/environments", headers=headers, json={
            "name": "dev", "storage": {"scheme": "file", "root": (workdir / "lakana-warehouse").as_uri()}})
        created.raise_for_status()
        catalog = RestCatalog("lakana", uri=base, prefix="dev", token=token)
        yield Peer("lakana", catalog, f"{base}/v1/dev", headers)
    finally:
        stop(process)


PEERS: dict[str, Callable[[Path], Any]] = {"arco": arco_peer, "sql": sql_peer, "lakana": lakana_peer}


# --- the measurements ---------------------------------------------------------------------------------------

NAMESPACE = ("bronze", "bench")
NAMESPACE_IN_PATH = "bronze%1Fbench"


def fresh_table(peer: Peer, name: str) -> Table:
    for depth in (1, 2):
        try:
            peer.catalog.create_namespace(NAMESPACE[:depth])
        except Exception:  # noqa: BLE001 - already there (lakana makes bronze itself); each peer has its own type
            pass
    return peer.catalog.create_table((*NAMESPACE, name), SCHEMA)


def snapshot_commit(table: Table, parent: int | None, sequence: int, snapshot_id: int) -> tuple[Any, Any]:
    """A commit as a writer sends it once its files are written: add the snapshot, move main to it.

    The snapshot's manifest list is a real (empty) file, since lakana-server reads it during the commit."""
    manifest_list = f"{table.metadata.location}/metadata/snap-{snapshot_id}-bench.avro"
    with write_manifest_list(format_version=table.metadata.format_version,
                             output_file=table.io.new_output(manifest_list), snapshot_id=snapshot_id,
                             parent_snapshot_id=parent, sequence_number=sequence, avro_compression="null"):
        pass
    snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent, sequence_number=sequence,
                        timestamp_ms=int(time.time() * 1000), schema_id=0, manifest_list=manifest_list,
                        summary=Summary(Operation.APPEND))
    updates = (AddSnapshotUpdate(snapshot=snapshot),
               SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=snapshot_id))
    requirements = (AssertRefSnapshotId(ref="main", snapshot_id=parent),)
    return requirements, updates


class RawCommitter:
    """Sends pre-built snapshot commits to one table, over HTTP for REST peers and in process for SqlCatalog."""

    def __init__(self, peer: Peer, table: Table, count: int) -> None:
        self.peer, self.table = peer, table
        parent, sequence = table.metadata.current_snapshot_id, table.metadata.last_sequence_number
        self.commits = []
        for snapshot_id in range(1_000_000, 1_000_000 + count):  # files written now, outside the timed part
            sequence += 1
            requirements, updates = snapshot_commit(table, parent, sequence, snapshot_id)
            body = {"requirements": [r.model_dump(by_alias=True, mode="json") for r in requirements],
                    "updates": [u.model_dump(by_alias=True, mode="json", exclude_none=True) for u in updates]}
            self.commits.append((requirements, updates, body))
            parent = snapshot_id
        self.commits.reverse()

    def commit(self) -> None:
        requirements, updates, body = self.commits.pop()
        if self.peer.rest_prefix is None:
            self.table = self.peer.catalog.load_table(self.table.name())  # SqlCatalog checks the base it is given
            self.peer.catalog.commit_table(self.table, requirements, updates)
            return
        response = self.peer.http.post(self.peer.table_url(NAMESPACE_IN_PATH, self.table.name()[-1]), json=body,
                                       headers=self.peer.headers)
        if response.status_code != 200:
            raise RuntimeError(f"{self.peer.name} refused a commit: {response.status_code} {response.text}")


def load_over_http(peer: Peer, name: str) -> Callable[[int], object]:
    url = peer.table_url(NAMESPACE_IN_PATH, name)

    def load(_: int) -> object:
        response = peer.http.get(url, headers=peer.headers)
        response.raise_for_status()
        return response

    return load


def prepare(peer: Peer, rounds: int) -> dict[str, tuple[Callable[[int], object], int]]:
    """The operations to time on one peer, each with its share of rounds (1 = all, 4 = a quarter)."""
    small = fresh_table(peer, "small")
    small.append(ROWS)
    appended = fresh_table(peer, "appended")
    committer = RawCommitter(peer, fresh_table(peer, "raw"), max(MIN_ROUNDS, rounds) + WARMUP)
    big = RawCommitter(peer, fresh_table(peer, "big"), 1000)
    for _ in range(1000):
        big.commit()
    ops: dict[str, tuple[Callable[[int], object], int]] = {
        "load_table": (lambda _: peer.catalog.load_table((*NAMESPACE, "small")), 1),
        "append": (lambda _: appended.append(ROWS), 4),
        "raw_commit": (lambda _: committer.commit(), 1),
    }
    if peer.rest_prefix is None:
        ops["load_1000_snaps"] = (lambda _: peer.catalog.load_table((*NAMESPACE, "big")), 4)
        return ops
    ops["load_warm"] = (load_over_http(peer, "small"), 1)
    etag = peer.http.get(peer.table_url(NAMESPACE_IN_PATH, "small"), headers=peer.headers).headers.get("etag")
    if etag:
        conditional = {**peer.headers, "If-None-Match": etag}

        def not_modified(_: int) -> None:
            response = peer.http.get(peer.table_url(NAMESPACE_IN_PATH, "small"), headers=conditional)
            assert response.status_code == 304, response.status_code

        ops["load_304"] = (not_modified, 1)
    ops["load_1000_snaps"] = (load_over_http(peer, "big"), 4)
    return ops


def run_interleaved(prepared: dict[str, dict[str, tuple[Callable[[int], object], int]]],
                    rounds: int) -> dict[str, dict[str, list[float]]]:
    """Time every operation on every peer, one round of each peer in turn, after a few warm-up rounds."""
    results: dict[str, dict[str, list[float]]] = {name: {} for name in prepared}
    for measure_name in MEASURES:
        peers = {name: ops[measure_name] for name, ops in prepared.items() if measure_name in ops}
        if not peers:
            continue
        share = max(op[1] for op in peers.values())
        count = max(MIN_ROUNDS, rounds // share)
        print(f"  {measure_name}: {count} rounds on {', '.join(peers)}", flush=True)
        for i in range(-WARMUP, count):
            for name, (fn, _) in peers.items():
                start = time.perf_counter()
                fn(i)
                if i >= 0:
                    results[name].setdefault(measure_name, []).append((time.perf_counter() - start) * 1000)
    return results


def report(all_results: dict[str, dict[str, list[float]]]) -> None:
    names = list(all_results)
    header = f"{'measure':<17}" + "".join(f"{n + ' p50':>12}{n + ' p99':>12}" for n in names)
    header += "".join(f"{n + '/arco':>13}" for n in names if n != "arco")
    print(header)
    for measure_name in MEASURES:
        line = f"{measure_name:<17}"
        medians: dict[str, float] = {}
        for name in names:
            samples = all_results[name].get(measure_name)
            if samples:
                p50, p99 = p50_p99(samples)
                medians[name] = p50
                line += f"{p50:>12.2f}{p99:>12.2f}"
            else:
                line += f"{'-':>12}{'-':>12}"
        for name in names:
            if name == "arco":
                continue
            if name in medians and "arco" in medians:
                line += f"{medians[name] / medians['arco']:>12.2f}x"
            else:
                line += f"{'-':>13}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--peers", default="arco,sql,lakana")
    args = parser.parse_args()
    names = args.peers.split(",")
    with tempfile.TemporaryDirectory(prefix="arco-bench-") as tmp, ExitStack() as stack:
        prepared = {}
        for name in names:
            workdir = Path(tmp) / name
            workdir.mkdir()
            print(f"starting {name} and preparing its tables (one with 1,000 snapshots) ...", flush=True)
            prepared[name] = prepare(stack.enter_context(PEERS[name](workdir)), args.rounds)
        print("measuring, peers interleaved:", flush=True)
        results = run_interleaved(prepared, args.rounds)
    print("\nmilliseconds; ratio = peer p50 / arco p50 (above 1: Arco is faster)")
    report(results)


if __name__ == "__main__":
    main()
