"""Over HTTP, a commit's answer does not wait for its committed receipt (seed step 10, best effort), which is
written once the answer has been sent, nor does a catalog change's answer wait for its catalog receipt; a server
that stops (the in-process one, or the application's lifespan shutdown that ``arco serve`` runs on SIGTERM)
writes what it queued first."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.testclient import TestClient
from uuid6 import uuid7

from arco.api.app import asgi_app
from arco.api.embedded import in_process_server
from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.events import after_answer
from arco.events.receipts import EVENTS
from arco.settings import ServerSettings
from arco.storage.base import Precondition, WriteResult
from arco.storage.local import LocalBackend

pytestmark = pytest.mark.timeout(120)

TOKEN = "after-answer-token"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}
TABLE = "/iceberg/v1/main/namespaces/db/tables/t"


class HeldReceipts(LocalBackend):
    """A local warehouse whose committed-receipt writes (those under ``held``) wait until the test lets them go."""

    def __init__(self, root: Path, held: str = "/iceberg/committed/") -> None:
        super().__init__(root)
        self.held = held
        self.release = threading.Event()
        self.release.set()
        self.waiting = threading.Event()

        self.receipt_threads: list[str] = []

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        if self.held in key and not self.release.is_set():
            self.waiting.set()
            assert self.release.wait(30)
        written = super().put(key, data, precondition)
        if "/iceberg/committed/" in key:
            self.receipt_threads.append(threading.current_thread().name)  # once written
        return written


def make_table(client: httpx.Client | TestClient) -> None:
    assert client.post("/iceberg/v1/main/namespaces", json={"namespace": ["db"]}).status_code == 200
    assert client.post("/iceberg/v1/main/namespaces/db/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200


def commit_with_receipt_held(storage: HeldReceipts, client: httpx.Client | TestClient,
                             headers: dict[str, str] | None = None) -> httpx.Response:
    """A commit answered while its committed receipt's write is held (it has begun, and waits for release)."""
    storage.release.clear()
    answer = client.post(TABLE, headers=headers or {}, json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "1"}}]})
    assert answer.status_code == 200, answer.text
    assert storage.waiting.wait(10)
    return answer


def committed_receipts(storage: LocalBackend) -> list[dict[str, Any]]:
    return [orjson.loads(storage.get(m.key).data) for m in storage.list(f"{EVENTS}/")
            if "/iceberg/committed/" in m.key]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[HeldReceipts, httpx.Client]]:
    storage = HeldReceipts(tmp_path / "wh")
    with in_process_server(storage, {TOKEN: BOOTSTRAP_ADMIN}, "after-answer-test") as base:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            make_table(client)
            yield storage, client
        storage.release.set()


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_the_answer_does_not_wait_for_the_committed_receipt(served: tuple[HeldReceipts, httpx.Client],
                                                            keyed: bool) -> None:
    storage, client = served
    assert after_answer.drain(10)
    before = len(committed_receipts(storage))
    # The receipt's write has begun, and is held: the answer came without it.
    answer = commit_with_receipt_held(storage, client, {"Idempotency-Key": str(uuid7())} if keyed else None)
    assert len(committed_receipts(storage)) == before
    loaded = client.get(TABLE).json()
    assert loaded["metadata-location"] == answer.json()["metadata-location"]
    storage.release.set()
    assert after_answer.drain(10)
    receipts = committed_receipts(storage)
    assert len(receipts) == before + 1
    assert any(r["metadata_location"] == answer.json()["metadata-location"] for r in receipts)


def test_a_stopping_in_process_server_writes_what_it_queued(tmp_path: Path) -> None:
    storage = HeldReceipts(tmp_path / "wh")
    with in_process_server(storage, {TOKEN: BOOTSTRAP_ADMIN}, "after-answer-stop") as base:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            make_table(client)
            answer = commit_with_receipt_held(storage, client)
        threading.Timer(0.2, storage.release.set).start()  # let go while the server stops
    locations = {r["metadata_location"] for r in committed_receipts(storage)}
    assert answer.json()["metadata-location"] in locations


def test_a_server_shutting_down_writes_what_it_queued_before_it_stops(tmp_path: Path) -> None:
    """The application's lifespan shutdown (what ``arco serve`` runs on SIGTERM) completes only once the writes
    queued after answers are made."""
    storage = HeldReceipts(tmp_path / "wh")
    app = asgi_app(ServerSettings(warehouse=storage.url, host="127.0.0.1", port=0), storage,
                   {TOKEN: BOOTSTRAP_ADMIN})
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        make_table(client)
        answer = commit_with_receipt_held(storage, client)
        threading.Timer(0.3, storage.release.set).start()
    # The shutdown waited for the held write: the receipt is there the moment it completed.
    locations = {r["metadata_location"] for r in committed_receipts(storage)}
    assert answer.json()["metadata-location"] in locations


def test_with_the_queue_full_a_request_writes_its_receipt_off_the_event_loop(
        served: tuple[HeldReceipts, httpx.Client], monkeypatch: pytest.MonkeyPatch) -> None:
    storage, client = served
    assert after_answer.drain(10)
    monkeypatch.setattr(after_answer, "MAX_BACKLOG", 0)
    storage.receipt_threads.clear()
    answer = client.post(TABLE, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"full": "1"}}]})
    assert answer.status_code == 200
    deadline = time.monotonic() + 10
    while not storage.receipt_threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(storage.receipt_threads) == 1 and after_answer.queued() == 0
    thread = storage.receipt_threads[0]
    # Neither the queue's threads nor the server's event loop (which runs on the thread the server is named by).
    assert not thread.startswith("arco-after-answer") and thread != "after-answer-test"
    assert any(r["metadata_location"] == answer.json()["metadata-location"] for r in committed_receipts(storage))


def test_a_catalog_change_is_answered_before_its_catalog_receipt_is_written(tmp_path: Path) -> None:
    """A namespace's and a table's creation (Tier 1 changes) are answered while their catalog receipts' writes are
    held; the receipts land once let go, one per log entry."""
    storage = HeldReceipts(tmp_path / "wh", held="/catalog/committed/")
    with in_process_server(storage, {TOKEN: BOOTSTRAP_ADMIN}, "after-answer-catalog") as base:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            assert after_answer.drain(10)
            before = [m.key for m in storage.list(f"{EVENTS}/") if "/catalog/committed/" in m.key]
            storage.release.clear()
            make_table(client)  # both answered 200 while the receipts wait
            assert storage.waiting.wait(10)
            assert [m.key for m in storage.list(f"{EVENTS}/") if "/catalog/committed/" in m.key] == before
            storage.release.set()
            assert after_answer.drain(10)
            written = [orjson.loads(storage.get(m.key).data) for m in storage.list(f"{EVENTS}/")
                       if "/catalog/committed/" in m.key and m.key not in before]
    assert sorted(r["op"] for r in written) == ["create_namespace", "create_table"]
