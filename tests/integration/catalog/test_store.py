"""Tier 1 on a real local warehouse, with several processes writing at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from arco.catalog import log as catalog_log
from arco.catalog.errors import AlreadyExistsError
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.storage.local import LocalBackend
from support.tier1 import in_processes

_fork = multiprocessing.get_context("fork")


def _create_catalog(store: CatalogStore, name: str = "main") -> None:
    store.execute(lambda s: {"op": "create_catalog", "id": f"id-{name}", "name": name, "storage_root": "x",
                             "owner": "admin"}, principal="admin")


def _create_namespaces(root: str, worker: int, count: int, barrier: object) -> None:
    store = CatalogStore(LocalBackend(root))
    barrier.wait(30)  # type: ignore[attr-defined]
    for i in range(count):
        store.execute(lambda s, i=i: {"op": "create_namespace", "id": f"w{worker}-{i}", "catalog_id": "id-main",
                                      "path": [f"ns_{worker}_{i}"], "owner": f"w{worker}"}, principal="w")


def test_concurrent_writers_in_many_processes_lose_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 16)
    root = str(tmp_path)
    _create_catalog(CatalogStore(LocalBackend(root)))
    in_processes(_create_namespaces, root, workers=4, each=25)
    fresh = CatalogStore(LocalBackend(root))
    with fresh.read() as state:
        assert state.seq == 101
        names = sorted(n.path[0] for n in state.child_namespaces("id-main", ()))
    assert names == sorted(f"ns_{w}_{i}" for w in range(4) for i in range(25))
    assert catalog_log.CatalogLog(LocalBackend(root)).read_manifest().snapshot_seq > 0


def _race_create(root: str, worker: int, barrier: object, results: object) -> None:
    store = CatalogStore(LocalBackend(root))
    barrier.wait(30)  # type: ignore[attr-defined]
    try:
        store.execute(lambda s: {"op": "create_namespace", "id": f"w{worker}", "catalog_id": "id-main",
                                 "path": ["contested"], "owner": f"w{worker}"}, principal="w")
        results.put("won")  # type: ignore[attr-defined]
    except AlreadyExistsError:
        results.put("exists")  # type: ignore[attr-defined]


def test_concurrent_create_of_one_name_has_exactly_one_winner(tmp_path: Path) -> None:
    root = str(tmp_path)
    _create_catalog(CatalogStore(LocalBackend(root)))
    barrier, results = _fork.Barrier(8), _fork.Queue()
    procs = [_fork.Process(target=_race_create, args=(root, w, barrier, results)) for w in range(8)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(30)
    assert outcomes == ["exists"] * 7 + ["won"]


def test_a_second_process_sees_a_write_at_once(tmp_path: Path) -> None:
    a, b = CatalogStore(LocalBackend(tmp_path)), CatalogStore(LocalBackend(tmp_path))
    _create_catalog(a)
    with b.read() as state:
        assert state.catalog("main").id == "id-main"
    b.execute(lambda s: {"op": "update_catalog", "id": "id-main", "comment": "from b"}, principal="b")
    with a.read() as state:
        assert state.catalog("main").comment == "from b"


def test_a_new_process_starts_from_the_newest_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 4)
    store = CatalogStore(LocalBackend(tmp_path))
    _create_catalog(store)
    for i in range(10):
        store.execute(lambda s, i=i: {"op": "create_namespace", "id": f"n{i}", "catalog_id": "id-main",
                                      "path": [f"n{i}"], "owner": "a"}, principal="a")
    storage = LocalBackend(tmp_path)
    snapshot_seq = catalog_log.CatalogLog(storage).read_manifest().snapshot_seq
    assert snapshot_seq >= 8
    for seq in range(1, snapshot_seq + 1):  # garbage collection may remove entries a snapshot covers
        storage.delete(catalog_log.log_key(seq))
    with CatalogStore(storage).read() as state:
        assert state.seq == 11
        assert len(state.child_namespaces("id-main", ())) == 10
        assert isinstance(state, CatalogState)
