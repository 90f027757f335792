"""Tier 1 kept by namespace: chunked snapshots, lazy loading, eviction and rebasing, against a replay oracle.

The oracle is a state that applies every logged operation in memory (no snapshot, no chunk files); every other
view (a new process reading the newest snapshot and the log tail, a long-lived reader that drops chunks from
memory, a reader that rebases onto another process's snapshot) must answer every lookup as the oracle does.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from arco.catalog import log as catalog_log
from arco.catalog import snapshots, table_index
from arco.catalog import state as rules
from arco.catalog.errors import CatalogError
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.storage.local import LocalBackend
from support.tier1 import in_processes

CATALOG = "cat-1"


def _view(state: CatalogState) -> dict[str, Any]:
    """Everything lookups can tell about the tables, by name and by id."""
    by_name = {}
    for ns in sorted(state.namespaces.values(), key=lambda n: n.path):
        for t in state.tables_of(ns.catalog_id, ns.path):
            by_name[(ns.path, t.name)] = (t.id, t.namespace, t.properties, t.location, t.updated_at_ms)
    return {"by_name": by_name, "count": len(state.tables), "external": dict(state.tables.external)}


def _ids_view(state: CatalogState, ids: list[str]) -> dict[str, Any]:
    found = {}
    for table_id in ids:
        entry = state.tables.get(table_id)
        found[table_id] = None if entry is None else (entry.namespace, entry.name)
    return found


class Workload:
    """Random catalog changes, each through a store, each also applied to the oracle."""

    def __init__(self, store: CatalogStore, seed: int) -> None:
        self.store, self.rng = store, random.Random(seed)
        self.oracle = CatalogState(store.storage.url)
        self.ids: list[str] = []
        self.counter = 0
        self.run(lambda s: {"op": "create_catalog", "id": CATALOG, "name": "main", "storage_root": "file:///x",
                            "owner": "admin"})

    def run(self, build: Any) -> None:
        try:
            op = self.store.execute(build, principal="admin")
        except CatalogError:
            return
        seq = op.pop("seq")
        rules.apply(self.oracle, op, seq)

    def step(self) -> None:
        self.counter += 1
        n = self.counter
        namespaces = sorted(self.oracle.namespaces.values(), key=lambda e: e.id)
        live = sorted(self.oracle.tables.values(), key=lambda e: e.id)
        roll = self.rng.random()
        if not namespaces or roll < 0.06:
            self.run(lambda s: {"op": "create_namespace", "id": f"ns-{n}", "catalog_id": CATALOG,
                                "path": [f"db{n}"], "owner": "admin"})
        elif not live or roll < 0.55:
            ns = self.rng.choice(namespaces)
            table_id = f"{n:08x}-0000-4000-8000-{self.rng.getrandbits(48):012x}"
            self.ids.append(table_id)
            name, managed = f"t{self.rng.randrange(40)}", self.rng.random() < 0.8
            self.run(lambda s: {"op": "create_table", "id": table_id, "catalog_id": CATALOG,
                                "namespace": list(s.namespaces[ns.id].path), "name": name, "managed": managed,
                                "location": f"file:///x/{table_id}", "owner": "admin"})
        elif roll < 0.7:
            t = self.rng.choice(live)
            self.run(lambda s: {"op": "update_table", "id": t.id, "updates": {"k": str(n)}})
        elif roll < 0.8:
            t, ns = self.rng.choice(live), self.rng.choice(namespaces)
            self.run(lambda s: {"op": "rename_table", "id": t.id, "namespace": list(s.namespaces[ns.id].path),
                                "name": f"r{n}"})
        elif roll < 0.9:
            t = self.rng.choice(live)
            self.run(lambda s: {"op": "drop_table", "id": t.id})
        elif roll < 0.96:
            ns = self.rng.choice(namespaces)
            self.run(lambda s: {"op": "update_namespace", "id": ns.id, "new_name": f"renamed{n}"})
        else:
            ns = self.rng.choice(namespaces)
            self.run(lambda s: {"op": "drop_namespace", "id": ns.id, "force": True})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_reader_agrees_with_the_replay_oracle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    seed: int) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 16)
    monkeypatch.setattr(catalog_log, "MANIFEST_RECHECK_S", 0.0)  # readers look for a newer snapshot every time
    # Small id buckets, so the index is split again as it grows (1 bucket, then 16, then 256), and few of them
    # kept in memory, so they are read again and again.
    monkeypatch.setattr(table_index, "IDS_PER_BUCKET", 4)
    monkeypatch.setattr(table_index, "MAX_LOADED_ID_BUCKETS", 2)
    root = str(tmp_path)
    work = Workload(CatalogStore(LocalBackend(root)), seed)
    long_lived = CatalogStore(LocalBackend(root), max_loaded_tables=5)  # most chunks leave memory once read
    # A follower applies every change as it lands, so the writer's snapshots are behind it when it sees them:
    # it rebases onto them instead of reloading.
    follower = CatalogStore(LocalBackend(root), max_loaded_tables=5)
    rebased, states = [], set()
    for round_ in range(12):
        for _ in range(40):
            work.step()
            follower.ensure_fresh(since=time.monotonic())
            rebased.append(follower._state.tables.id_base_seq)
            states.add(id(follower._state))
        expected, expected_ids = _view(work.oracle), _ids_view(work.oracle, work.ids)
        new = CatalogStore(LocalBackend(root))
        with new.read() as state:
            assert _view(state) == expected, f"a new reader after round {round_}"
            assert _ids_view(state, work.ids) == expected_ids
        long_lived.ensure_fresh(since=time.monotonic())
        with long_lived.read_cached() as state:
            assert _view(state) == expected, f"the long-lived reader after round {round_}"
            assert _ids_view(state, work.ids) == expected_ids
        with work.store.read_cached() as state:
            assert _view(state) == expected
        with follower.read_cached() as state:
            assert _view(state) == expected, f"the follower after round {round_}"
            assert _ids_view(state, work.ids) == expected_ids
    assert catalog_log.CatalogLog(LocalBackend(root)).read_manifest().snapshot_seq > 0
    assert work.store._state.tables.id_digits == 2
    assert len(set(rebased)) > 5 and len(states) <= 2  # the base moved forward many times, the state stayed
    # The long-lived reader never kept more than a few chunks in memory, nor the operations a snapshot covers.
    index = long_lived._state.tables
    in_memory = [len(c.by_name) for c in index.chunks.values() if c.by_name is not None]
    assert sum(in_memory) <= 5 + max(c.count for c in index.chunks.values()) and len(in_memory) < len(index.chunks)
    assert index.id_base_seq > 0 and all(s > c.base_seq for c in index.chunks.values() for s, _ in c.pending)


def _build(root: str, namespaces: int, tables: int) -> CatalogStore:
    store = CatalogStore(LocalBackend(root))
    store.execute(lambda s: {"op": "create_catalog", "id": CATALOG, "name": "main", "storage_root": "file:///x",
                             "owner": "admin"}, principal="admin")
    for n in range(namespaces):
        store.execute(lambda s, n=n: {"op": "create_namespace", "id": f"ns-{n}", "catalog_id": CATALOG,
                                      "path": [f"db{n}"], "owner": "admin"}, principal="admin")
        for t in range(tables):
            store.execute(lambda s, n=n, t=t: {
                "op": "create_table", "id": f"{n:04x}{t:04x}-0000-4000-8000-000000000000", "catalog_id": CATALOG,
                "namespace": [f"db{n}"], "name": f"t{t}", "location": f"file:///x/{n}/{t}", "owner": "admin"},
                principal="admin")
    return store


def test_a_new_reader_reads_only_the_namespace_it_is_asked_about(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 32)
    _build(str(tmp_path), namespaces=20, tables=10)
    reader = CatalogStore(LocalBackend(str(tmp_path)))
    with reader.read() as state:
        entry = state.table(CATALOG, ("db7",), "t3")
        assert entry.id.startswith("00070003")
        assert state.tables.loads == 1  # one chunk file: db7's
        assert len(state.tables) == 200  # counted without reading the others
        assert state.tables.get("000c0001-0000-4000-8000-000000000000").name == "t1"
        assert state.tables.loads == 2


def test_a_snapshot_rewrites_only_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 10_000)
    store = _build(str(tmp_path), namespaces=10, tables=5)
    storage = LocalBackend(str(tmp_path))
    with store.read_cached() as state:
        first = snapshots.prepare(state)
    snapshots.write(store.log, first)
    store._state.tables.rebase(first.chunks, first.ids, first.seq)
    assert sum(k.startswith(snapshots.CHUNKS) for k in first.files) == 10
    store.execute(lambda s: {"op": "update_table", "id": "00030002-0000-4000-8000-000000000000",
                             "updates": {"a": "b"}}, principal="admin")
    store.execute(lambda s: {"op": "create_table", "id": "00030099-0000-4000-8000-000000000000",
                             "catalog_id": CATALOG, "namespace": ["db3"], "name": "new",
                             "location": "file:///x/new", "owner": "admin"}, principal="admin")
    with store.read_cached() as state:
        second = snapshots.prepare(state)
    written = sorted(second.files)
    assert [k for k in written if k.startswith(snapshots.CHUNKS)] == [snapshots.chunk_key("ns-3", second.seq)]
    assert len([k for k in written if k.startswith(snapshots.IDS)]) == 1  # the bucket the new id falls in
    assert second.chunks["ns-4"] == first.chunks["ns-4"]
    snapshots.write(store.log, second)
    root = orjson.loads(storage.get(catalog_log.snapshot_key(second.seq)).data)
    assert root["format"] == snapshots.FORMAT and "tables" not in root
    fresh = CatalogStore(storage)
    with fresh.read() as state:
        assert state.table(CATALOG, ("db3",), "t2").properties == {"a": "b"}
        assert state.tables.get("00030099-0000-4000-8000-000000000000").name == "new"


def test_a_whole_state_snapshot_from_before_is_read_and_then_chunked(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 10_000)
    root = str(tmp_path)
    store = _build(root, namespaces=3, tables=4)
    with store.read_cached() as state:
        store.log.write_snapshot(state.to_snapshot())  # the format earlier releases wrote
        expected = _view(state)
    old_format = CatalogStore(LocalBackend(root))
    with old_format.read() as state:
        assert _view(state) == expected
        prepared = snapshots.prepare(state)
    assert len([k for k in prepared.files if k.startswith(snapshots.CHUNKS)]) == 3
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 1)
    old_format.execute(lambda s: {"op": "drop_table", "id": "00010002-0000-4000-8000-000000000000"},
                       principal="admin")
    with CatalogStore(LocalBackend(root)).read() as state:
        assert "tables" not in orjson.loads(LocalBackend(root).get(catalog_log.snapshot_key(state.seq)).data)
        assert state.table_or_none(CATALOG, ("db1",), "t2") is None
        assert len(state.tables) == 11


def _create_tables(root: str, worker: int, count: int, barrier: object) -> None:
    store = CatalogStore(LocalBackend(root))
    barrier.wait(30)  # type: ignore[attr-defined]
    for i in range(count):
        store.execute(lambda s, i=i: {
            "op": "create_table", "id": f"{worker:04x}{i:04x}-0000-4000-8000-000000000000", "catalog_id": CATALOG,
            "namespace": [f"db{worker % 2}"], "name": f"w{worker}_{i}", "location": f"file:///x/{worker}/{i}",
            "owner": "admin"}, principal="w")


def test_processes_creating_tables_in_several_namespaces_lose_nothing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 8)
    root = str(tmp_path)
    _build(root, namespaces=2, tables=0)
    in_processes(_create_tables, root, workers=4, each=30)
    with CatalogStore(LocalBackend(root)).read() as state:
        assert len(state.tables) == 120
        for w in range(4):
            names = {t.name for t in state.tables_of(CATALOG, (f"db{w % 2}",))}
            assert {f"w{w}_{i}" for i in range(30)} <= names
            assert state.tables.get(f"{w:04x}0007-0000-4000-8000-000000000000").name == f"w{w}_7"


def test_a_bulk_snapshot_is_read_like_a_written_one(tmp_path: Path) -> None:
    # The benchmarks' million tables come through this path: a new reader must see exactly what it was given.
    store = _build(str(tmp_path), namespaces=3, tables=2)
    with store.read() as state:
        root = state.root_snapshot()
        given = {ns_id: [asdict(t) for t in state.tables_of(CATALOG, state.namespaces[ns_id].path)]
                 for ns_id in ("ns-0", "ns-1", "ns-2")}
    given["ns-1"].append({**given["ns-1"][0], "id": "ffff0000-0000-4000-8000-000000000000", "name": "Apart",
                          "managed": False, "location": "file:///elsewhere/apart"})
    given["ns-2"] = []
    progress: list[tuple[int, int]] = []
    snapshots.write_bulk(store.log, root, list(given), lambda ns_id: list(given[ns_id]),
                         lambda done, tables: progress.append((done, tables)))
    assert progress[-1] == (3, 5)
    with CatalogStore(LocalBackend(str(tmp_path))).read() as state:
        assert state.tables.loads == 0 and len(state.tables) == 5
        assert [t.name for t in state.tables_of(CATALOG, ("db1",))] == ["Apart", "t0", "t1"]
        assert state.tables_of(CATALOG, ("db2",)) == []
        assert state.tables.get("ffff0000-0000-4000-8000-000000000000").namespace == ("db1",)
        assert state.tables.external == {"ffff0000-0000-4000-8000-000000000000": ("Apart", "file:///elsewhere/apart")}


def test_coordinated_delta_commits_survive_a_snapshot_and_a_new_reader(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The commits UC coordinates for a managed Delta table live in its Tier 1 entry: a server that starts from a
    snapshot (not the log) knows them, so a writer's next version is checked against them."""
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 10_000)
    store = _build(str(tmp_path), namespaces=2, tables=2)
    table_id = "00010001-0000-4000-8000-000000000000"
    tracked = [{"version": 4, "timestamp": 1, "file_name": "a.json", "file_size": 9, "file_modification_timestamp": 1,
                "backfilled": True}, {"version": 5, "timestamp": 2, "file_name": "b.json", "file_size": 9,
                                      "file_modification_timestamp": 2}]
    store.execute(lambda s: {"op": "update_table", "id": table_id, "delta_commits": tracked}, principal="admin")
    with store.read_cached() as state:
        prepared = snapshots.prepare(state)
    snapshots.write(store.log, prepared)
    fresh = CatalogStore(LocalBackend(str(tmp_path)))
    with fresh.read() as state:
        assert state.tables.get(table_id).delta_commits == tracked
        assert state.table(CATALOG, ("db0",), "t1").delta_commits is None  # every other table: none
