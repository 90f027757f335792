"""A real uvicorn server whose storage stops accepting writes for a while (the fault-injecting backend: every put
and delete fails, as on a read-only warehouse), under concurrent keep-alive clients.

During the fault: writes are answered 503 with Retry-After in each API's own error shape, reads keep working, no
keep-alive connection is dropped, and the log holds a few summary lines, not a traceback per request. After it:
every acknowledged commit is in the table exactly once and the metadata log is consistent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from uuid6 import uuid7

from arco.api import faults
from arco.api.embedded import in_process_server
from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.events import receipts
from arco.fault_log import FaultLog
from arco.storage.faults import FaultRule, FaultyBackend
from arco.storage.local import LocalBackend
from support.keepalive import Connection

pytestmark = pytest.mark.timeout(180)
TOKEN = "faults-admin-token"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}
TABLE = "/iceberg/v1/main/namespaces/db/tables/t"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[FaultyBackend, str]]:
    storage = FaultyBackend(LocalBackend(tmp_path / "wh"))
    with in_process_server(storage, {TOKEN: BOOTSTRAP_ADMIN}, "faults-test") as base:
        setup = Connection(base, TOKEN)
        assert setup.request("POST", "/iceberg/v1/main/namespaces", {"namespace": ["db"]})[0] == 200
        assert setup.request("POST", "/iceberg/v1/main/namespaces/db/tables",
                             {"name": "t", "schema": SCHEMA})[0] == 200
        setup.close()
        yield storage, base


def read_only(storage: FaultyBackend) -> None:
    for op in ("put", "delete"):
        storage.inject(FaultRule(op=op, action="fail", times=10**9))  # type: ignore[arg-type]


def test_writes_fail_with_503_in_each_shape_and_the_connection_stays(served: tuple[FaultyBackend, str]) -> None:
    storage, base = served
    conn = Connection(base, TOKEN)
    read_only(storage)
    status, headers, body = conn.request("POST", TABLE, {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"a": "1"}}]}, {"Idempotency-Key": str(uuid7())})
    assert status == 503 and int(headers["retry-after"]) >= 1
    assert body["error"]["type"] == "ServiceUnavailableException" and body["error"]["code"] == 503
    status, headers, body = conn.request("POST", TABLE, {"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"a": "1"}}]})
    assert status == 503 and body["error"]["type"] == "ServiceUnavailableException"
    status, headers, body = conn.request("POST", "/api/2.1/unity-catalog/schemas",
                                         {"catalog_name": "main", "name": "uc_schema"})
    assert status == 503 and "retry-after" in headers
    assert body["error_code"] == "TEMPORARILY_UNAVAILABLE"
    # Reads keep working, on the same connection.
    assert conn.request("GET", TABLE)[0] == 200
    assert conn.request("GET", "/api/2.1/unity-catalog/tables/main.db.t")[0] == 200
    assert conn.dropped == 0
    storage.clear()
    assert conn.request("POST", "/api/2.1/unity-catalog/schemas", {"catalog_name": "main", "name": "uc_schema"})[0] \
        == 200
    conn.close()


def test_a_write_storm_through_a_storage_outage(served: tuple[FaultyBackend, str], caplog: pytest.LogCaptureFixture,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    storage, base = served
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(faults, "FAULTS", FaultLog(faults.log))  # counted from this test's first fault
    monkeypatch.setattr(receipts, "RECEIPT_FAULTS", FaultLog(receipts.log))
    writers, readers = 4, 4
    acked: list[str] = []
    statuses: list[int] = []
    read_failures: list[int] = []
    dropped: list[int] = []
    lock = threading.Lock()
    stop_writing = threading.Event()
    stop_reading = threading.Event()

    def write(worker: int) -> None:
        # Writers run until told to stop, so the outage always meets commits in flight: a fixed number of commits
        # each could all be done before it starts on a fast machine.
        conn = Connection(base, TOKEN)
        i = 0
        while not stop_writing.is_set():
            name = f"w{worker}-{i}"
            key = str(uuid7())
            body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {name: "1"}}]}
            for _ in range(400):
                status, headers, _ = conn.request("POST", TABLE, body, {"Idempotency-Key": key})
                with lock:
                    statuses.append(status)
                if status == 200:
                    with lock:
                        acked.append(name)
                    break
                assert status == 503, status
                # Retry-After says when; the test waits less to keep the outage busy with retries.
                assert int(headers["retry-after"]) >= 1
                time.sleep(0.05)
            else:
                raise AssertionError(f"commit {name} never succeeded")
            i += 1
        with lock:
            dropped.append(conn.dropped)
        conn.close()

    def read() -> None:
        conn = Connection(base, TOKEN)
        while not stop_reading.is_set():
            status, _, _ = conn.request("GET", TABLE)
            if status != 200:
                with lock:
                    read_failures.append(status)
        with lock:
            dropped.append(conn.dropped)
        conn.close()

    def wait_for_acks(count: int) -> None:
        deadline = time.monotonic() + 60
        while len(acked) < count:
            assert time.monotonic() < deadline, f"only {len(acked)} of {count} commits acknowledged in a minute"
            time.sleep(0.01)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    threads += [threading.Thread(target=read) for _ in range(readers)]
    for t in threads:
        t.start()
    wait_for_acks(2 * writers)
    read_only(storage)
    time.sleep(1.5)
    storage.clear()
    wait_for_acks(len(acked) + 2 * writers)
    stop_writing.set()
    for t in threads[:writers]:
        t.join(120)
    stop_reading.set()
    for t in threads[writers:]:
        t.join(30)

    assert 503 in statuses, "the outage was not seen by any writer"
    assert set(statuses) <= {200, 503}
    assert read_failures == []
    assert dropped and sum(dropped) == 0, "a keep-alive connection was closed by the server"
    assert not any(t.is_alive() for t in threads), "a client thread did not finish"
    # Each writer's commits were acknowledged in order, each exactly once (a commit is retried until it is).
    for w in range(writers):
        mine = [name for name in acked if name.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(len(mine))]

    # Every acknowledged commit is in the table exactly once, and the metadata log is consistent.
    conn = Connection(base, TOKEN)
    status, _, loaded = conn.request("GET", TABLE)
    assert status == 200
    metadata = loaded["metadata"]
    assert set(acked) <= set(metadata["properties"])
    log = metadata["metadata-log"]
    # The create, then one file per group of acknowledged commits (arco.iceberg.group_commit): never more files
    # than commits, and no file twice.
    assert 1 <= len(log) <= len(acked)
    stamps = [e["timestamp-ms"] for e in log] + [metadata["last-updated-ms"]]
    assert stamps == sorted(stamps)
    files = [e["metadata-file"] for e in log] + [loaded["metadata-location"]]
    assert len(set(files)) == len(files)
    conn.close()

    # A few summary lines, not one per failed request, and no traceback.
    fault_lines = [r for r in caplog.records if "storage unavailable" in r.getMessage()]
    failed = statuses.count(503)
    assert 1 <= len(fault_lines) < max(5, failed // 4), [r.getMessage() for r in fault_lines]
    receipt_lines = [r for r in caplog.records if "receipt not written" in r.getMessage()]
    assert len(receipt_lines) < 5, [r.getMessage() for r in receipt_lines]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_a_bug_is_a_500_in_the_api_shape_without_dropping_the_connection(served: tuple[FaultyBackend, str]) -> None:
    storage, base = served
    conn = Connection(base, TOKEN)
    assert conn.request("POST", "/iceberg/v1/main/namespaces/db/tables", {"name": "bad", "schema": SCHEMA})[0] == 200
    for meta in storage.inner.list("_catalog/iceberg_pointers/"):
        storage.inner.put(meta.key, b"{not json")  # corrupt every pointer: reading one is a bug's path, not I/O
    status, _, body = conn.request("GET", TABLE)
    assert status == 500 and body["error"]["type"] == "InternalServerError"
    assert conn.request("GET", "/iceberg/v1/config")[0] == 200
    assert conn.dropped == 0
    conn.close()


# One storage fault at each named step of a table commit (arco.iceberg.commit), over HTTP.
STEPS = {
    "marker-claim": ("put", "_catalog/iceberg_idempotency/*", 1),
    "metadata-write": ("put", "*.metadata.json", 1),
    "pending-receipt": ("put", "_catalog/events/*/iceberg/pending/*", 1),
    "pointer-cas": ("put", "_catalog/iceberg_pointers/*", 1),
    "committed-receipt": ("put", "_catalog/events/*/iceberg/committed/*", 1),
    "marker-finalization": ("put", "_catalog/iceberg_idempotency/*", 2),
}
CASES = [(step, when, keyed) for step in STEPS for when in ("before", "after") for keyed in (True, False)]


@pytest.mark.parametrize(("step", "when", "keyed"), CASES,
                         ids=[f"{s}-{w}-{'keyed' if k else 'unkeyed'}" for s, w, k in CASES])
def test_a_fault_at_each_commit_step(served: tuple[FaultyBackend, str], step: str, when: str, keyed: bool) -> None:
    storage, base = served
    conn = Connection(base, TOKEN)
    before = conn.request("GET", TABLE)[2]
    op, key, nth = STEPS[step]
    storage.inject(FaultRule(op=op, key=key, when=when, action="fail", nth=nth))  # type: ignore[arg-type]
    headers = {"Idempotency-Key": str(uuid7())} if keyed else {}
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"step": step}}]}
    status, answer_headers, answer = conn.request("POST", TABLE, commit, headers)
    assert status in (200, 503), (status, answer)
    if status == 503:
        assert answer["error"]["type"] == "ServiceUnavailableException" and "retry-after" in answer_headers
    storage.clear()
    after = conn.request("GET", TABLE)[2]
    landed = after["metadata-location"] != before["metadata-location"]
    assert landed == (status == 200), "a 200 that did not land, or a 503 that did"
    if keyed:
        again = conn.request("POST", TABLE, commit, headers)
        assert again[0] == 200, again  # at once: the marker was settled
        if status == 200:
            assert again[2]["metadata-location"] == answer["metadata-location"]
    elif status == 503:
        assert conn.request("POST", TABLE, commit)[0] == 200  # the 503 said it did not take effect: retry it
    final = conn.request("GET", TABLE)[2]
    log = final["metadata"]["metadata-log"]
    assert len(log) == len(before["metadata"]["metadata-log"]) + 1, "the commit landed exactly once"
    assert final["metadata"]["properties"]["step"] == step
    assert conn.dropped == 0
    conn.close()
