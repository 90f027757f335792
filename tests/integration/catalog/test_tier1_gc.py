"""Garbage collection of Tier 1: superseded snapshot files and covered log entries go, and every reader still
answers as the writer does: a new server, a server idle since before the collection (its entries gone), a
server that kept reading."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from arco.catalog import log as catalog_log
from arco.catalog import snapshots
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.pipeline.gc import _delete, tier1_deletions
from arco.pipeline.gc_rules import GcPolicy
from arco.storage.local import LocalBackend

CATALOG = "cat-1"
NO_GRACE = GcPolicy(grace_s=0)


def _view(state: CatalogState) -> dict[Any, Any]:
    found = {}
    for ns in state.namespaces.values():
        for table in state.tables_of(ns.catalog_id, ns.path):
            found[(ns.path, table.name)] = (table.id, table.properties)
    return found


class Writer:
    def __init__(self, root: str) -> None:
        self.store = CatalogStore(LocalBackend(root))
        self.count = 0
        self.run(lambda s: {"op": "create_catalog", "id": CATALOG, "name": "main", "storage_root": "file:///x",
                            "owner": "admin"})
        for n in range(4):
            self.run(lambda s, n=n: {"op": "create_namespace", "id": f"ns-{n}", "catalog_id": CATALOG,
                                     "path": [f"db{n}"], "owner": "admin"})

    def run(self, build: Any) -> None:
        self.store.execute(build, principal="admin")

    def changes(self, count: int) -> None:
        for _ in range(count):
            self.count += 1
            n = self.count
            if n % 3 == 0:  # rewrite a table made before, so old chunk files are superseded
                table_id = f"{n - 1:08x}-0000-4000-8000-000000000000"
                self.run(lambda s, t=table_id, n=n: {"op": "update_table", "id": t, "updates": {"v": str(n)}})
            else:
                table_id = f"{n:08x}-0000-4000-8000-000000000000"
                self.run(lambda s, t=table_id, n=n: {
                    "op": "create_table", "id": t, "catalog_id": CATALOG, "namespace": [f"db{n % 4}"],
                    "name": f"t{n}", "location": f"file:///x/{t}", "owner": "admin"})

    def view(self) -> dict[Any, Any]:
        with self.store.read() as state:
            return _view(state)


@pytest.fixture
def writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Writer:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 8)  # many snapshots from few changes
    return Writer(str(tmp_path))


def _collect(root: str) -> list[str]:
    storage = LocalBackend(root)
    chosen = tier1_deletions(storage, NO_GRACE, time.time() + 60)
    for deletion in chosen:
        _delete(storage, deletion.key)
    return [d.key for d in chosen]


def _keys(root: Path, folder: str) -> set[str]:
    base = root / catalog_log.CORE / folder
    return {str(p.relative_to(root)) for p in base.rglob("*.json")} if base.exists() else set()


def test_collected_tier1_leaves_every_reader_answering_as_the_writer(tmp_path: Path, writer: Writer,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path)
    writer.changes(20)
    idle = CatalogStore(LocalBackend(root))  # reads now, then nothing until after the collection
    with idle.read() as state:
        assert _view(state) == writer.view()
        idle_seq = state.seq
    reading = CatalogStore(LocalBackend(root))
    writer.changes(60)
    with reading.read() as state:
        assert _view(state) == writer.view()
    newest = catalog_log.CatalogLog(LocalBackend(root)).read_manifest().snapshot_seq
    assert newest > idle_seq + catalog_log.SNAPSHOT_EVERY  # several snapshots since the idle server looked
    before = _keys(tmp_path, "chunks") | _keys(tmp_path, "ids")

    collected = _collect(root)

    assert any(k.startswith(f"{catalog_log.CORE}/log/") for k in collected)
    assert any(k.startswith(snapshots.CHUNKS) for k in collected)
    remaining_roots = {p.name for p in (tmp_path / catalog_log.CORE / "snapshots").glob("*.json")}
    assert remaining_roots == {f"{newest:020d}.json"}
    newest_root = catalog_log.CatalogLog(LocalBackend(root)).read_snapshot(newest)
    named = {c["key"] for c in newest_root["chunks"].values()} | set(newest_root["ids"]["buckets"].values())
    assert _keys(tmp_path, "chunks") | _keys(tmp_path, "ids") == named < before
    assert {p.name for p in (tmp_path / catalog_log.CORE / "log").glob("*.json")} == {
        f"{seq:020d}.json" for seq in range(newest + 1, writer.store.seq + 1)}

    expected = writer.view()
    with CatalogStore(LocalBackend(root)).read() as state:
        assert _view(state) == expected
    monkeypatch.setattr(catalog_log, "MANIFEST_RECHECK_S", 0.0)  # the idle servers' minute has passed
    for store in (idle, reading):
        store.ensure_fresh(since=time.monotonic())
        with store.read_cached() as state:
            assert _view(state) == expected
    writer.changes(10)  # and everyone goes on from there
    for store in (idle, reading, CatalogStore(LocalBackend(root))):
        with store.read() as state:
            assert _view(state) == writer.view()


def test_a_server_just_behind_the_newest_snapshot_starts_again_from_it(tmp_path: Path, writer: Writer,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Not far enough behind to reload on seeing the manifest: it reads the log, finds its next entry collected,
    # and starts again from the snapshot.
    root = str(tmp_path)
    writer.changes(7)
    behind = CatalogStore(LocalBackend(root))
    behind.ensure_fresh(since=time.monotonic())
    writer.changes(4)
    newest = catalog_log.CatalogLog(LocalBackend(root)).read_manifest().snapshot_seq
    assert behind.seq < newest <= behind.seq + catalog_log.SNAPSHOT_EVERY
    _collect(root)
    assert not (tmp_path / catalog_log.log_key(behind.seq + 1)).exists()
    monkeypatch.setattr(catalog_log, "MANIFEST_RECHECK_S", 0.0)
    behind.ensure_fresh(since=time.monotonic())
    with behind.read_cached() as state:
        assert state.seq == writer.store.seq and _view(state) == writer.view()


def test_nothing_younger_than_the_grace_period_goes(tmp_path: Path, writer: Writer) -> None:
    writer.changes(40)
    assert catalog_log.CatalogLog(LocalBackend(str(tmp_path))).read_manifest().snapshot_seq > 0
    assert tier1_deletions(LocalBackend(str(tmp_path)), GcPolicy(), time.time()) == []
