"""A chunk whose load is interrupted (an inline attempt that would wait for the chunk file, or a failed read) must
stay unloaded: not be left in memory empty while its count still holds its tables."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from arco.catalog import log as catalog_log
from arco.catalog import state as rules
from arco.catalog.errors import AlreadyExistsError, NotEmptyError
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.catalog.table_index import TableIndex
from arco.inline import WouldWait, run_inline
from arco.storage.base import StorageUnavailable
from arco.storage.local import LocalBackend
from arco.storage.timed import TimedBackend

CATALOG = "cat-1"
T_ID = "e64d4db1-0000-4000-8000-000000000000"


class ObjectStoreLike(LocalBackend):
    """A local directory that says what an object store says: a read costs more than a thread hand-over."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.capabilities = dataclasses.replace(self.capabilities, cheap_reads=False)


def _op(store: CatalogStore, build: dict) -> None:
    store.execute(lambda s: dict(build), principal="admin")


def test_an_inline_attempt_that_must_read_a_chunk_file_leaves_the_chunk_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_log, "SNAPSHOT_EVERY", 8)
    monkeypatch.setattr(catalog_log, "MANIFEST_RECHECK_S", 0.0)  # B looks at the manifest (every 60 s in a server)
    root = str(tmp_path)
    a = CatalogStore(TimedBackend(ObjectStoreLike(root)))  # one server
    b = CatalogStore(TimedBackend(ObjectStoreLike(root)))  # another, on the same warehouse
    _op(a, {"op": "create_catalog", "id": CATALOG, "name": "main", "storage_root": "file:///x", "owner": "admin"})
    _op(a, {"op": "create_namespace", "id": "ns-other", "catalog_id": CATALOG, "path": ["other"], "owner": "admin"})
    _op(a, {"op": "create_namespace", "id": "ns-3", "catalog_id": CATALOG, "path": ["n3"], "owner": "admin"})
    # B creates n3.t: the namespace had no chunk, so B's new chunk is not in memory (only its pending create).
    _op(b, {"op": "create_table", "id": T_ID, "catalog_id": CATALOG, "namespace": ["n3"], "name": "t",
            "location": "file:///x/n3/t", "owner": "admin"})
    # Others' changes go on elsewhere; A stores a snapshot, and B, catching up, rebases n3's chunk onto its file.
    for i in range(12):
        _op(a, {"op": "create_table", "id": f"0000{i:04x}-0000-4000-8000-000000000000", "catalog_id": CATALOG,
                "namespace": ["other"], "name": f"o{i}", "location": f"file:///x/o/{i}", "owner": "admin"})
    b.ensure_fresh(since=time.monotonic())
    chunk = b._state.tables.chunks["ns-3"]
    assert chunk.by_name is None and chunk.base_key is not None and not chunk.pending  # where the loss was seen

    # A request on B: its freshness check ran (in a thread), then the listing is tried inline, as
    # arco.api.requests.inline_or_blocking does; reading the chunk file would wait, so the attempt is abandoned.
    def list_n3() -> list[str]:
        with b.read() as state:
            return [t.name for t in state.tables_of(CATALOG, ("n3",))]

    with CatalogStore.fresh_as_of():
        b.ensure_fresh()
        with pytest.raises(WouldWait):
            run_inline(list_n3)
        listed = list_n3()  # run again from the start, in a worker thread

    oracle = CatalogState()
    for position, op in b.log.operations(1, b.seq):
        rules.apply(oracle, op, position)
    assert [t.name for t in oracle.tables_of(CATALOG, ("n3",))] == ["t"]
    with b.read() as state:
        assert state.table_count_in(CATALOG, ("n3",)) == 1
        assert listed == ["t"], "B lost the table it created (its chunk was left loaded and empty)"
        assert state.table(CATALOG, ("n3",), "t").id == T_ID
    # ... and so B refuses both a drop of n3 and a second create of n3.t, as A does.
    with pytest.raises(NotEmptyError):
        _op(b, {"op": "drop_namespace", "id": "ns-3"})
    with pytest.raises(AlreadyExistsError):
        _op(b, {"op": "create_table", "id": "12345678-0000-4000-8000-000000000000", "catalog_id": CATALOG,
                "namespace": ["n3"], "name": "t", "location": "file:///x/n3/t2", "owner": "admin"})


class FlakySource:
    def __init__(self, files: dict[str, list[dict]]) -> None:
        self.files, self.fail = files, 1

    def read_chunk(self, key: str) -> list[dict]:
        if self.fail:
            self.fail -= 1
            raise StorageUnavailable("timeout")
        return self.files[key]

    def read_id_bucket(self, key: str) -> dict[str, str]:
        return {}


def test_a_chunk_whose_file_could_not_be_read_is_read_again_next_time() -> None:
    state = CatalogState()
    rules.apply(state, {"op": "create_catalog", "id": CATALOG, "name": "main", "storage_root": "file:///x",
                        "owner": "admin", "at_ms": 1}, 1)
    rules.apply(state, {"op": "create_namespace", "id": "ns-3", "catalog_id": CATALOG, "path": ["n3"],
                        "owner": "admin", "at_ms": 1}, 2)
    row = {"id": T_ID, "catalog_id": CATALOG, "namespace": ["n3"], "name": "t", "location": "file:///x/t",
           "owner": "admin", "created_at_ms": 1, "updated_at_ms": 1, "kind": "TABLE", "format": "ICEBERG"}
    index = TableIndex(state.namespaces.get, FlakySource({"chunk-key": [row]}))
    index.set_base({"ns-3": {"key": "chunk-key", "count": 1}}, {"digits": 0, "buckets": {}}, {}, 2)
    with pytest.raises(StorageUnavailable):
        index.in_namespace("ns-3")
    assert list(index.in_namespace("ns-3")) == ["t"]
    assert index.count_in("ns-3") == 1


def test_an_entry_that_fails_part_way_is_applied_again_whole_not_twice(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path)
    a, b = CatalogStore(LocalBackend(root)), CatalogStore(LocalBackend(root))
    _op(a, {"op": "create_catalog", "id": CATALOG, "name": "main", "storage_root": "file:///x", "owner": "admin"})
    _op(a, {"op": "create_namespace", "id": "ns-3", "catalog_id": CATALOG, "path": ["n3"], "owner": "admin"})
    _op(a, {"op": "create_table", "id": T_ID, "catalog_id": CATALOG, "namespace": ["n3"], "name": "t",
            "location": "file:///x/n3/t", "owner": "admin"})
    applied = TableIndex.apply
    failures = [StorageUnavailable("a read the operation needed")]

    def fails_once_after_changing(self: TableIndex, op: dict, seq: int) -> None:
        applied(self, op, seq)  # the table is counted ...
        if failures:
            raise failures.pop()  # ... and then the application fails

    monkeypatch.setattr(TableIndex, "apply", fails_once_after_changing)
    with pytest.raises(StorageUnavailable):
        b.ensure_fresh(since=time.monotonic())
    with b.read() as state:  # caught up again: from a state without the half-applied entry
        assert state.table_count_in(CATALOG, ("n3",)) == 1
        assert [t.name for t in state.tables_of(CATALOG, ("n3",))] == ["t"]
