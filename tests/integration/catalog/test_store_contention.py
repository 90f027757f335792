"""Tier 1 writers that meet: one snapshot per interval however many processes write, and a snapshot being
written holds up neither readers nor the next change."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from unittest.mock import ANY

import pytest

from arco.catalog import log as catalog_log
from arco.catalog import snapshots, table_index
from arco.catalog.store import CatalogStore
from arco.storage.base import ObjectData, Precondition, WriteNotApplied, WriteResult
from arco.storage.faults import FaultRule, FaultyBackend
from arco.storage.local import LocalBackend

CATALOG = "cat-1"


def _catalog_and_namespace(store: CatalogStore) -> None:
    store.execute(lambda s: {"op": "create_catalog", "id": CATALOG, "name": "main", "storage_root": "file:///x",
                             "owner": "admin"}, principal="admin")
    store.execute(lambda s: {"op": "create_namespace", "id": "ns-1", "catalog_id": CATALOG, "path": ["db"],
                             "owner": "admin"}, principal="admin")


def _create(store: CatalogStore, name: str) -> int:
    table_id = str(uuid.uuid4())
    op = store.execute(lambda s: {"op": "create_table", "id": table_id, "catalog_id": CATALOG, "namespace": ["db"],
                                  "name": name, "location": f"file:///x/{table_id}", "owner": "admin"},
                       principal="admin")
    return int(op["seq"])


def _snapshot_positions(root: Path) -> list[int]:
    folder = root / catalog_log.CORE / "snapshots"
    return sorted(int(p.name.removesuffix(".json")) for p in folder.glob("*.json")) if folder.exists() else []


def test_servers_taking_turns_store_one_snapshot_per_interval(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Two stores on one warehouse, as two servers: each would find a snapshot due at about the same time.
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 8)
    first, second = CatalogStore(LocalBackend(str(tmp_path))), CatalogStore(LocalBackend(str(tmp_path)))
    _catalog_and_namespace(first)
    last = 0
    for i in range(70):
        last = _create(first if i % 2 else second, f"t{i}")
    positions = _snapshot_positions(tmp_path)
    assert positions == list(range(8, last + 1, 8))  # one per interval, each by the writer of that position
    with CatalogStore(LocalBackend(str(tmp_path))).read() as state:
        assert len(state.tables) == 70


def test_a_snapshot_its_writer_did_not_store_is_stored_at_the_next_interval(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The writer of the designated position did not store it (it died there): the writer of the next one does,
    # in whichever server, so catch-up stays bounded.
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 8)
    store = CatalogStore(LocalBackend(str(tmp_path)))
    _catalog_and_namespace(store)
    monkeypatch.setattr(CatalogStore, "_store_snapshot", lambda self, prepared: None)  # the designated writer dies
    for i in range(6):
        _create(store, f"t{i}")
    assert _snapshot_positions(tmp_path) == []
    monkeypatch.undo()
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 8)
    late = CatalogStore(LocalBackend(str(tmp_path)))  # another server, which never saw position 8 written
    seqs = [_create(late, f"late{i}") for i in range(10)]
    assert _snapshot_positions(tmp_path) == [16]
    assert 16 in seqs


class _HeldSnapshots(LocalBackend):
    """Local storage whose snapshot files wait until the test lets them through."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.reached, self.release = threading.Event(), threading.Event()

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        if key.startswith((f"{catalog_log.CORE}/snapshots/", f"{catalog_log.CORE}/chunks/")):
            self.reached.set()
            assert self.release.wait(30), "the test never released the snapshot"
        return super().put(key, data, precondition)


def test_readers_and_writers_go_on_while_a_snapshot_is_written(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 4)
    storage = _HeldSnapshots(str(tmp_path))
    storage.release.set()
    store = CatalogStore(storage)
    _catalog_and_namespace(store)
    _create(store, "t0")
    storage.release.clear()
    # Position 4 is due a snapshot: its writer stops inside the snapshot write, after its commit point.
    snapshotting = threading.Thread(target=_create, args=(store, "t1"))
    snapshotting.start()
    assert storage.reached.wait(30)
    others: list[object] = []
    meanwhile = threading.Thread(target=lambda: others.extend([_create(store, "t2"), store.find(
        lambda s: s.table(CATALOG, ("db",), "t1").name)]))
    meanwhile.start()
    meanwhile.join(30)
    try:
        assert not meanwhile.is_alive(), "a change or a read waited for the snapshot being written"
        assert others == [5, "t1"]
        assert snapshotting.is_alive()  # still writing the snapshot
    finally:
        storage.release.set()
        snapshotting.join(30)
    assert _snapshot_positions(tmp_path) == [4]
    with CatalogStore(LocalBackend(str(tmp_path))).read() as state:
        assert sorted(t.name for t in state.tables_of(CATALOG, ("db",))) == ["t0", "t1", "t2"]


class _CountedBuckets(LocalBackend):
    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.bucket_reads: list[str] = []

    def get(self, key: str) -> ObjectData:
        if key.startswith(snapshots.IDS):
            self.bucket_reads.append(key)
        return super().get(key)


def test_after_a_snapshot_only_the_id_buckets_it_changed_are_read_again(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 10_000)  # snapshots stored by the test
    monkeypatch.setattr(table_index, "IDS_PER_BUCKET", 4)  # 20 tables: the id index in 16 buckets
    storage = _CountedBuckets(str(tmp_path))
    store = CatalogStore(storage)
    _catalog_and_namespace(store)

    def create(table_id: str) -> None:
        store.execute(lambda s: {"op": "create_table", "id": table_id, "catalog_id": CATALOG, "namespace": ["db"],
                                 "name": f"t{table_id[:4]}", "location": f"file:///x/{table_id}", "owner": "admin"},
                      principal="admin")

    def snapshot() -> None:
        with store.read_cached() as state:
            prepared = snapshots.prepare(state)
        store._store_snapshot(prepared)

    ids = [f"{n:x}{n:03x}0000-0000-4000-8000-000000000000" for n in range(16)] + \
          [f"{n:x}{n + 1:03x}0000-0000-4000-8000-000000000000" for n in range(4)]
    for table_id in ids:
        create(table_id)
    snapshot()
    with store.read_cached() as state:
        assert state.tables.id_digits == 1
        assert [state.tables.get(i).id for i in ids[:3]] == ids[:3]
    assert len(storage.bucket_reads) == 3  # buckets 0, 1 and 2
    create("20100000-0000-4000-8000-000000000000")  # bucket 2 changes
    snapshot()
    storage.bucket_reads.clear()
    with store.read_cached() as state:
        assert [state.tables.get(i).id for i in ids[:3]] == ids[:3]
        assert state.tables.get("20100000-0000-4000-8000-000000000000").name == "t2010"
    assert [key.split("/")[-2] for key in storage.bucket_reads] == ["2"]  # 0 and 1 were kept


@pytest.mark.parametrize("when", ["before", "after"])
def test_an_append_that_fails_unanswered_is_looked_up(tmp_path: Path, when: str) -> None:
    # The log entry's write fails without an answer: written anyway ("after") or not at all ("before"). The store
    # looks: a change that landed is answered as made; for one that did not, the store takes its position with a
    # fence (so that it cannot land later) and raises: it did not take effect, and may be retried as it is.
    storage = FaultyBackend(LocalBackend(str(tmp_path)))
    store = CatalogStore(storage)
    _catalog_and_namespace(store)
    storage.inject(FaultRule(op="put", key=f"{catalog_log.CORE}/log/*", when=when, action="fail"))
    if when == "after":
        assert _create(store, "t0") == 3
    else:
        with pytest.raises(WriteNotApplied, match="fenced"):
            _create(store, "t0")
        assert store.log.read_ops(3) == [{"op": "fence", "at_ms": ANY}]
        assert _create(store, "t0") == 4  # the retry finds the name free, after the fence
    with CatalogStore(LocalBackend(str(tmp_path))).read() as state:
        assert [t.name for t in state.tables_of(CATALOG, ("db",))] == ["t0"] and state.seq == 3 + (when == "before")


def test_an_unanswered_append_that_lost_the_position_builds_again(tmp_path: Path) -> None:
    storage = FaultyBackend(LocalBackend(str(tmp_path)))
    store, other = CatalogStore(storage), CatalogStore(LocalBackend(str(tmp_path)))
    _catalog_and_namespace(store)
    raced: list[int] = []

    class Unanswered(FaultRule):
        def matches(self, op: str, key: str) -> bool:
            if not super().matches(op, key) or raced:
                return False
            raced.append(_create(other, "theirs"))  # another server takes the position just before this write
            return True

    storage.inject(Unanswered(op="put", key=f"{catalog_log.CORE}/log/*", when="before", action="fail"))
    # The write failed unanswered and the entry at its position is another's: a lost race, so the store catches
    # up and appends again at the next position.
    assert _create(store, "mine") == 4 and raced == [3]
    with CatalogStore(LocalBackend(str(tmp_path))).read() as state:
        assert sorted(t.name for t in state.tables_of(CATALOG, ("db",))) == ["mine", "theirs"]
