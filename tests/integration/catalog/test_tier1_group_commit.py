"""Tier 1 group commit on a real local warehouse: changes queued behind an append share the next entry, each keeps
its own answer and position, and every reader (catch-up, recovery, the reconciler, a new process) sees one
operation per position.

The first append of the store under test is held in flight (``HeldPuts``) while the other changes queue behind
it, so which changes share an entry is decided by the test, not by timing."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from arco.catalog import log as catalog_log
from arco.catalog import state as rules
from arco.catalog.errors import AlreadyExistsError, TableNotFound
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.events.receipts import catalog_receipt_key
from arco.events.reconcile import reconcile_catalog_log
from arco.storage.base import StorageBackend, WriteNotApplied
from arco.storage.faults import FaultRule, FaultyBackend
from arco.storage.local import LocalBackend
from support.held_puts import HeldPuts
from support.storage_targets import StorageTarget

LOG = "_catalog/core/log/*"
Build = Callable[[CatalogState], dict[str, Any]]


def create(name: str, *, ns: str = "db", managed: bool = True, table_id: str | None = None) -> Build:
    return lambda state: {"op": "create_table", "id": table_id or f"id-{name}", "catalog_id": "id-main",
                          "namespace": [ns], "name": name, "kind": "TABLE", "format": "ICEBERG",
                          "location": f"file:///wh/{ns}/{name}", "owner": "u", "managed": managed,
                          "properties": {}}


def drop(table_id: str) -> Build:
    return lambda state: {"op": "drop_table", "id": table_id}


def warehouse_on(storage: StorageBackend, namespaces: tuple[str, ...]) -> None:
    store = CatalogStore(storage)
    store.execute(lambda s: {"op": "create_catalog", "id": "id-main", "name": "main", "storage_root": "x",
                             "owner": "admin"}, principal="admin")
    for ns in namespaces:
        store.execute(lambda s, ns=ns: {"op": "create_namespace", "id": f"ns-{ns}", "catalog_id": "id-main",
                                        "path": [ns], "owner": "admin"}, principal="admin")


def warehouse(root: Path, namespaces: tuple[str, ...] = ("db",)) -> None:
    warehouse_on(LocalBackend(root), namespaces)


class Outcomes:
    """Runs changes in threads; what each returned or raised, by label."""

    def __init__(self, store: CatalogStore) -> None:
        self.store = store
        self.results: dict[str, Any] = {}
        self.threads: list[threading.Thread] = []

    def start(self, label: str, build: Build, request: str | None = None) -> None:
        def run() -> None:
            try:
                self.results[label] = self.store.execute(build, principal=f"p-{label}", request=request)
            except Exception as exc:  # noqa: BLE001 - the outcome is what the test looks at
                self.results[label] = exc

        thread = threading.Thread(target=run)
        self.threads.append(thread)
        thread.start()

    def join(self) -> dict[str, Any]:
        for thread in self.threads:
            thread.join(30)
            assert not thread.is_alive()
        return self.results


def queued_behind_a_held_append(root: Path, first: Build, changes: list[tuple[str, Build]],
                                backend: Any = None) -> tuple[CatalogStore, dict[str, Any]]:
    """``first`` is appended and held in flight; ``changes`` queue behind it, in order; then it goes on."""
    held = HeldPuts(backend or LocalBackend(root), LOG)
    store = CatalogStore(held)
    runs = Outcomes(store)
    runs.start("first", first)
    assert held.reached.wait(10)
    for label, build in changes:
        before = len(store._queue)
        runs.start(label, build, request=f"key-{label}")
        deadline = time.monotonic() + 10
        while len(store._queue) == before:  # queued in this order
            assert time.monotonic() < deadline
            time.sleep(0.002)
    held.release()
    return store, runs.join()


def entries(root: Path) -> dict[int, list[dict[str, Any]]]:
    """The log's files: position -> the operations the entry holds."""
    folder = root / "_catalog" / "core" / "log"
    return {int(f.stem): catalog_log.ops_of(orjson.loads(f.read_bytes())) for f in sorted(folder.glob("*.json"))}


def test_creates_queued_behind_an_append_share_the_next_entry(tmp_path: Path) -> None:
    warehouse(tmp_path)
    names = [f"t{i}" for i in range(10)]
    store, results = queued_behind_a_held_append(tmp_path, create("first"), [(n, create(n)) for n in names])

    first = results["first"]["seq"]
    assert sorted(results[n]["seq"] for n in names) == list(range(first + 1, first + 11))
    assert [results[n]["seq"] for n in names] == sorted(results[n]["seq"] for n in names)  # in the order queued
    assert all(results[n]["name"] == n and results[n]["principal"] == f"p-{n}" for n in names)
    log = entries(tmp_path)
    assert [op["name"] for op in log[first + 1]] == names  # one entry for the ten
    assert not set(log) & set(range(first + 2, first + 11))  # positions inside it have no file
    assert [seq for seq, _ in store.log.operations(1, store.seq)] == list(range(1, first + 11))

    fresh = CatalogStore(LocalBackend(tmp_path))  # a new process catches up through the batch
    with fresh.read() as state:
        assert state.seq == first + 10
        assert sorted(t.name for t in state.tables_of("id-main", ("db",))) == sorted(["first", *names])
    assert fresh.find_request(first, "key-t7") == (results["t7"]["seq"], entries(tmp_path)[first + 1][7])

    # Each operation has its receipt at its own position; the reconciler rewrites any that is lost.
    receipts = [catalog_receipt_key(results[n]["seq"], results[n]["at_ms"]) for n in names]
    assert all(store.storage.head(key) is not None for key in receipts)
    for key in receipts[::3]:
        store.storage.delete(key)
    counts = reconcile_catalog_log(store.storage, store.log)
    assert counts.catalog_ops == first + 10 and counts.catalog_backfilled == 4
    assert all(store.storage.head(key) is not None for key in receipts)

    # After the batch, a lone change lands right after it, in this process and the other.
    after = store.execute(create("after"), principal="u")
    assert after["seq"] == first + 11
    with fresh.read() as state:
        assert state.table("id-main", ("db",), "after").id == "id-after"


def test_a_change_that_depends_on_an_earlier_one_in_the_queue_waits_for_it(tmp_path: Path) -> None:
    """Same name (in another case), and a drop of a table created just before: checked against the state
    that includes the earlier change, as if the changes came one by one."""
    warehouse(tmp_path, ("db", "other"))
    _, results = queued_behind_a_held_append(tmp_path, create("first"), [
        ("dup", create("dup")), ("DUP", create("DUP", table_id="id-DUP")), ("made", create("made")),
        ("dropped", drop("id-made")), ("elsewhere", create("dup", ns="other", table_id="id-dup-other"))])
    assert isinstance(results["DUP"], AlreadyExistsError)
    assert results["dup"]["seq"] < results["made"]["seq"] < results["dropped"]["seq"]
    assert results["elsewhere"]["seq"] > results["dropped"]["seq"]
    with CatalogStore(LocalBackend(tmp_path)).read() as state:
        assert sorted(t.name for t in state.tables_of("id-main", ("db",))) == ["dup", "first"]
        assert [t.name for t in state.tables_of("id-main", ("other",))] == ["dup"]


def test_a_refused_change_is_refused_alone(tmp_path: Path) -> None:
    warehouse(tmp_path)
    _, results = queued_behind_a_held_append(tmp_path, create("first"), [
        ("a", create("a")), ("missing", drop("id-none")), ("b", create("b")), ("first-again", create("first"))])
    assert isinstance(results["missing"], TableNotFound)
    assert isinstance(results["first-again"], AlreadyExistsError)
    assert results["b"]["seq"] == results["a"]["seq"] + 1


def test_only_managed_creates_share_an_entry(tmp_path: Path) -> None:
    """A location the client chose is checked against every other table's (storage governance): such a create,
    and any other kind of change, is an entry of its own."""
    warehouse(tmp_path)
    _, results = queued_behind_a_held_append(tmp_path, create("first"), [
        ("m1", create("m1")), ("m2", create("m2")), ("ext", create("ext", managed=False)), ("m3", create("m3")),
        ("m4", create("m4"))])
    log = entries(tmp_path)
    by_seq = {results[label]["seq"]: label for label in ("m1", "m2", "ext", "m3", "m4")}
    sizes = {by_seq[seq]: len(ops) for seq, ops in log.items() if seq in by_seq}
    assert sizes == {"m1": 2, "ext": 1, "m3": 2}


def test_a_batch_that_fails_to_apply_part_way_never_leaves_the_state_inside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An operation that cannot be applied (a bug) after others of its entry were: the process starts its state
    again rather than take the position after the applied ones (which has no file) for the end of the log, where
    its next append would land inside the entry."""
    warehouse(tmp_path)
    real_apply = rules.apply
    failures = []

    def apply_failing_once(state: CatalogState, op: dict[str, Any], seq: int) -> None:
        if op.get("name") == "b" and not failures:
            failures.append(seq)
            raise RuntimeError("an applier's bug")
        real_apply(state, op, seq)

    monkeypatch.setattr(rules, "apply", apply_failing_once)
    store, results = queued_behind_a_held_append(tmp_path, create("first"), [(n, create(n)) for n in "abc"])
    assert all(isinstance(results[n], RuntimeError) for n in "abc")  # landed, but not known to this process
    first = results["first"]["seq"]
    assert [op["name"] for op in entries(tmp_path)[first + 1]] == ["a", "b", "c"] and failures == [first + 2]
    after = store.execute(create("d"), principal="u")
    assert after["seq"] == first + 4  # after the entry, not inside it
    for reader in (store, CatalogStore(LocalBackend(tmp_path))):
        with reader.read() as state:
            assert sorted(t.name for t in state.tables_of("id-main", ("db",))) == ["a", "b", "c", "d", "first"]
    assert [seq for seq, _ in store.log.operations(1, first + 4)] == list(range(1, first + 5))


def test_a_batch_whose_append_fails_fails_every_change_in_it_and_lands_nothing(tmp_path: Path) -> None:
    warehouse(tmp_path)
    faulty = FaultyBackend(LocalBackend(tmp_path), [FaultRule("put", LOG, "before", "fail", nth=2)])
    store, results = queued_behind_a_held_append(tmp_path, create("first"), [(n, create(n)) for n in "abc"],
                                                 backend=faulty)
    assert all(isinstance(results[n], WriteNotApplied) for n in "abc")  # its position fenced: it cannot land
    assert [ops[0]["name"] for seq, ops in entries(tmp_path).items() if ops[0]["op"] == "create_table"] == ["first"]
    again = store.execute(create("a"), principal="u")  # nothing is left half done: the same change goes in
    assert again["seq"] == results["first"]["seq"] + 2  # after the fence


def test_a_batch_that_landed_without_an_answer_is_known_to_have_landed(tmp_path: Path) -> None:
    warehouse(tmp_path)
    faulty = FaultyBackend(LocalBackend(tmp_path), [FaultRule("put", LOG, "after", "fail", nth=2)])
    store, results = queued_behind_a_held_append(tmp_path, create("first"), [(n, create(n)) for n in "abc"],
                                                 backend=faulty)
    first = results["first"]["seq"]
    assert [results[n]["seq"] for n in "abc"] == [first + 1, first + 2, first + 3]
    assert [op["name"] for op in entries(tmp_path)[first + 1]] == ["a", "b", "c"]
    with store.read() as state:
        assert state.seq == first + 3


@pytest.mark.timeout(180)
@pytest.mark.parametrize("where", ["local", "seaweedfs"])
def test_two_processes_creating_at_once_lose_nothing(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     request: pytest.FixtureRequest) -> None:
    """Two stores (two servers) on one warehouse, eight writers each: every create lands once, at a position of
    its own, snapshots (taken by whichever entry covers a multiple) included. On S3 too, where an append is a
    round trip and more changes queue behind it."""
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 16)
    if where == "local":
        def open_storage() -> StorageBackend:
            return LocalBackend(tmp_path)
    else:
        bucket: StorageTarget = request.getfixturevalue("s3_seaweedfs_bucket")
        target = replace(bucket, url=f"{bucket.url}/tier1-{uuid.uuid4().hex[:8]}")
        open_storage = target.open
    namespaces = tuple(f"ns{i}" for i in range(4))
    warehouse_on(open_storage(), namespaces)
    stores = [CatalogStore(open_storage()), CatalogStore(open_storage())]
    seqs: list[int] = []
    lock = threading.Lock()

    def writer(store: CatalogStore, worker: int) -> None:
        for i in range(15):
            name = f"w{worker}_{i}"
            made = store.execute(create(name, ns=namespaces[i % 4], table_id=f"id-{name}"), principal="u")
            with lock:
                seqs.append(made["seq"])

    threads = [threading.Thread(target=writer, args=(stores[w % 2], w)) for w in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    assert len(seqs) == len(set(seqs)) == 240
    fresh = CatalogStore(open_storage())
    with fresh.read() as state:
        total = sum(len(state.tables_of("id-main", (ns,))) for ns in namespaces)
        last = state.seq
    assert total == 240 and set(seqs) <= set(range(1, last + 1))
    positions = [seq for seq, _ in fresh.log.operations(1, last)]
    assert positions == list(range(1, last + 1))
    assert fresh.log.read_manifest().snapshot_seq > 0
    for store in stores:
        with store.read() as state:
            assert state.seq == last
