"""Read-only request work runs on the event loop when it needs nothing that waits, and in a worker thread,
from the start, when it would wait: for storage that is not a local disk, for a write, for a lock another
thread holds, for another thread's freshness check."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from arco.api.app import asgi_app
from arco.api.requests import inline_or_blocking
from arco.catalog.store import CatalogStore
from arco.iceberg.tables import TableService
from arco.inline import WouldWait, run_inline
from arco.settings import ServerSettings
from arco.storage.base import StorageBackend
from arco.storage.local import LocalBackend
from arco.storage.memory import MemoryBackend
from arco.storage.timed import TimedBackend

TOKEN = "inline-admin-token"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}


class FarAway(MemoryBackend):
    """Memory, but said to be as far away as a network: no read is cheap enough to make inline."""

    capabilities = dataclasses.replace(MemoryBackend.capabilities, cheap_reads=False)


def test_inside_an_attempt_cheap_reads_go_ahead_and_writes_and_far_reads_refuse() -> None:
    near, far = TimedBackend(MemoryBackend()), TimedBackend(FarAway())
    for storage in (near, far):
        storage.put("a/b.json", b"{}")
    assert run_inline(near.get, "a/b.json").data == b"{}"
    assert run_inline(near.head, "a/b.json") is not None
    with pytest.raises(WouldWait):
        run_inline(near.put, "a/c.json", b"{}")
    with pytest.raises(WouldWait):
        run_inline(near.delete, "a/b.json")
    for read in (far.get, far.head):
        with pytest.raises(WouldWait):
            run_inline(read, "a/b.json")
    assert near.head("a/c.json") is None and far.get("a/b.json").data == b"{}"  # refused before storage saw it


def test_work_that_would_wait_runs_again_from_the_start_in_a_thread() -> None:
    storage = TimedBackend(MemoryBackend())
    runs: list[int] = []

    def reads() -> bytes:
        runs.append(threading.get_ident())
        return storage.get("k.json").data

    def writes() -> None:
        runs.append(threading.get_ident())
        storage.put("w.json", b"1")

    storage.put("k.json", b"v")

    async def scenario() -> None:
        here = threading.get_ident()
        assert await inline_or_blocking(reads) == b"v"
        assert runs == [here]
        runs.clear()
        await inline_or_blocking(writes)
        assert runs[0] == here and runs[1] != here and len(runs) == 2  # tried here, done in a worker thread
        assert storage.get("w.json").data == b"1"

    asyncio.run(scenario())


def _catalog(store: CatalogStore) -> None:
    store.execute(lambda s: {"op": "create_catalog", "id": "c", "name": "main", "storage_root": "memory://x",
                             "owner": "admin"}, principal="admin")


def test_a_reader_inline_does_not_wait_for_a_writer_holding_the_state() -> None:
    store = CatalogStore(TimedBackend(MemoryBackend()))
    _catalog(store)
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store._apply_lock:  # as a writer building its change, or a snapshot being prepared
            held.set()
            release.wait(30)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(WouldWait):
            run_inline(store.find, lambda state: state.catalogs["c"].name)
    finally:
        release.set()
        thread.join(30)
    assert run_inline(store.find, lambda state: state.catalogs["c"].name) == "main"


def test_a_reader_inline_does_not_wait_for_another_threads_check() -> None:
    store = CatalogStore(TimedBackend(MemoryBackend()))
    _catalog(store)
    with store._fresh:
        store._refreshing = True  # another thread is reading the log
    try:
        with store.fresh_as_of(), pytest.raises(WouldWait):
            run_inline(store.ensure_fresh)
    finally:
        with store._fresh:
            store._refreshing = False
            store._fresh.notify_all()
    with store.fresh_as_of():
        run_inline(store.ensure_fresh)


def test_a_change_is_never_made_inline() -> None:
    store = CatalogStore(TimedBackend(MemoryBackend()))
    with pytest.raises(WouldWait):
        run_inline(_catalog, store)
    assert store.seq == 0
    _catalog(store)
    assert store.seq == 1


# -- through the application -----------------------------------------------------------------------------------


def _load_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread each loadTable's TableService.locate ran on, in order."""
    threads: list[int] = []
    original = TableService.locate

    def recorded(self: TableService, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TableService, "locate", recorded)
    return threads


async def _loads(storage: StorageBackend, window_ms: int, rounds: int) -> list[int]:
    settings = ServerSettings(warehouse=storage.url, read_freshness_ms=window_ms)
    app = asgi_app(settings, storage=TimedBackend(storage))
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Iceberg-Access-Delegation": "vended-credentials"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t",
                                 headers=headers) as client:
        prefix = (await client.get("/iceberg/v1/config?warehouse=main")).json()["overrides"]["prefix"]
        base = f"/iceberg/v1/{prefix}/namespaces"
        assert (await client.post(base, json={"namespace": ["db"]})).status_code == 200
        assert (await client.post(f"{base}/db/tables", json={"name": "t", "schema": SCHEMA})).status_code == 200
        statuses = [(await client.get(f"{base}/db/tables/t")).status_code for _ in range(rounds)]
    assert statuses == [200] * rounds
    return statuses


@pytest.mark.parametrize("window_ms", [0, 60_000])
def test_loads_from_a_local_disk_run_on_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       window_ms: int) -> None:
    monkeypatch.setenv("ARCO_ADMIN_TOKEN", TOKEN)
    threads = _load_threads(monkeypatch)
    asyncio.run(_loads(LocalBackend(str(tmp_path / "wh")), window_ms, rounds=3))
    assert threads == [threading.get_ident()] * 3


def test_far_storage_loads_inline_only_inside_the_read_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARCO_ADMIN_TOKEN", TOKEN)
    threads = _load_threads(monkeypatch)
    here = threading.get_ident()
    # Every load asks storage: each attempt stops at its first read (before the load proper), and the load runs
    # in a thread.
    asyncio.run(_loads(FarAway(), 0, rounds=2))
    assert len(threads) == 2 and here not in threads
    threads.clear()
    asyncio.run(_loads(FarAway(), 60_000, rounds=3))  # the first asks storage; the next are answered from memory
    assert threads[-2:] == [here, here]
