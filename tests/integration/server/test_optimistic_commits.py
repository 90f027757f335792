"""Table commits decided on a server's catalog state and checked beside their first write (arco.optimistic), the
metadata file's (with an Idempotency-Key, the marker's claim beside it too); through the whole HTTP stack of two
in-process servers on one warehouse.

The check is still made for every commit; what changes is that it no longer stands, a round trip of its own, in
front of the commit's writes. The tests show both halves: the round trip is gone, and a change made on the other
server (a grant given or taken away, a drop) decides the very next commit here, as it did when the check came
first, with or without a key.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from uuid6 import uuid7

from arco.api.app import asgi_app
from arco.events import after_answer
from arco.metrics import REGISTRY
from arco.settings import ServerSettings
from arco.storage.faults import FaultyBackend
from arco.storage.local import LocalBackend
from arco.storage.timed import TimedBackend
from support.arco_server import run_cli
from support.rounds import LATENCY_S, Slowed

ADMIN = "optimistic-admin-token"
ANN = "ann@x.com"
TABLE = "/iceberg/v1/main/namespaces/db/tables/t"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}


@dataclass
class Server:
    client: TestClient
    storage: FaultyBackend
    timed: TimedBackend

    def call(self, token: str, method: str, path: str, key: str | None = None, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {token}", **({"Idempotency-Key": key} if key else {})}
        return self.client.request(method, path, headers=headers, **kwargs)

    def commit(self, token: str, value: str, key: str | None = None, keyed: bool = True) -> Any:
        return self.call(token, "POST", TABLE, key=key or (str(uuid7()) if keyed else None), json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": {"v": value}}]})


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, Server, str]]:
    monkeypatch.setenv("ARCO_ADMIN_TOKEN", ADMIN)
    warehouse = tmp_path / "warehouse"
    run_cli(warehouse, "user", "create", ANN)
    ann = run_cli(warehouse, "token", "create", ANN).strip()
    made = []
    for _ in range(2):
        faulty = FaultyBackend(LocalBackend(warehouse))
        timed = TimedBackend(faulty)
        # Reads side by side where they could be (a local disk would make them one after the other).
        timed.capabilities = replace(timed.capabilities, cheap_reads=False)
        client = TestClient(asgi_app(ServerSettings(warehouse=str(warehouse)), storage=timed))
        made.append(Server(client.__enter__(), faulty, timed))
    a, b = made
    assert a.call(ADMIN, "POST", "/iceberg/v1/main/namespaces", json={"namespace": ["db"]}).status_code == 200
    assert a.call(ADMIN, "POST", "/iceberg/v1/main/namespaces/db/tables",
                  json={"name": "t", "schema": SCHEMA}).status_code == 200
    try:
        yield a, b, ann
    finally:
        for server in made:
            server.client.__exit__(None, None, None)


def grants(server: Server, change: str, *pairs: tuple[str, str, str]) -> None:
    for kind, name, privilege in pairs:
        r = server.call(ADMIN, "PATCH", f"/api/2.1/unity-catalog/permissions/{kind}/{name}",
                        json={"changes": [{"principal": ANN, change: [privilege]}]})
        assert r.status_code == 200, r.text


ANN_MAY_COMMIT = (("catalog", "main", "USE_CATALOG"), ("schema", "main.db", "USE_SCHEMA"),
                  ("table", "main.db.t", "SELECT"), ("table", "main.db.t", "MODIFY"))


def measured(server: Server, keyed: bool, value: str | None = None) -> tuple[Any, Slowed]:
    """One commit with every storage call slowed and recorded (its receipt after the answer included)."""
    slow = Slowed(server.storage.inner)
    server.storage.inner = slow  # type: ignore[assignment]
    try:
        response = server.commit(ADMIN, value or str(uuid7()), keyed=keyed)
        assert after_answer.drain(10)
    finally:
        server.storage.inner = slow.inner
    assert response.status_code == 200, response.text
    return response, slow


def warm_then_measured(server: Server, keyed: bool) -> tuple[Any, Slowed]:
    """A commit to warm the server, then one :func:`measured`."""
    assert server.commit(ADMIN, "warm", keyed=keyed).status_code == 200
    assert after_answer.drain(10)
    counted = commits_counted()
    response, slow = measured(server, keyed, "measured")
    # The request metrics name the route of the optimistic run whose answer was sent.
    assert commits_counted() == counted + 1
    return response, slow


def test_a_warm_keyed_commit_over_http_waits_for_two_storage_rounds_and_reads_nothing_first(
        servers: tuple[Server, Server, str]) -> None:
    """The metadata file (the marker's claim, the pending receipt and the catalog check beside it), then the CAS.
    The marker's finalization and the committed receipt follow the answer, side by side."""
    a, _, _ = servers
    response, slow = warm_then_measured(a, keyed=True)
    assert response.json()["metadata"]["properties"]["v"] == "measured"
    # (The test client returns once the application is done, so the writes after the answer have started by then.)
    assert slow.rounds() == 3
    [receipt] = [start for start, op, key in slow.started if "/iceberg/committed/" in key]
    [_, finalized] = sorted(start for start, op, key in slow.started if key.startswith("_catalog/iceberg_idempotency/"))
    [cas] = [start for start, op, key in slow.started if op == "put" and key.startswith("_catalog/iceberg_pointers/")]
    assert abs(finalized - receipt) < LATENCY_S / 2 and finalized > cas + LATENCY_S / 2
    # Nothing before the first writes; the claim and the catalog check were made all the same, beside them.
    [claim, *_] = sorted(start for start, op, key in slow.started if key.startswith("_catalog/iceberg_idempotency/"))
    [check] = [start for start, op, key in slow.started if op in ("get", "head") and key.startswith("_catalog/core/")]
    [written] = [start for start, op, key in slow.started if op == "put" and key.endswith(".metadata.json")]
    assert abs(check - written) < LATENCY_S / 2 and abs(claim - written) < LATENCY_S / 2
    assert min(start for start, _, _ in slow.started) >= written - LATENCY_S / 2


def test_a_warm_unkeyed_commit_over_http_waits_for_two_storage_rounds_and_reads_nothing_first(
        servers: tuple[Server, Server, str]) -> None:
    """PyIceberg sends no key: the metadata file (with the pending receipt and the catalog check beside it), then
    the CAS. The committed receipt follows the answer."""
    a, _, _ = servers
    response, slow = warm_then_measured(a, keyed=False)
    assert response.json()["metadata"]["properties"]["v"] == "measured"
    # (The test client returns once the application is done, so the receipt after the answer has started by then.)
    assert slow.rounds(leaving_out="/iceberg/committed/") == 2 and slow.rounds() == 3
    # The catalog check went beside the metadata file's write, not in front of it.
    [check] = [start for start, op, key in slow.started if op in ("get", "head") and key.startswith("_catalog/core/")]
    [written] = [start for start, op, key in slow.started if op == "put" and key.endswith(".metadata.json")]
    assert abs(check - written) < LATENCY_S / 2


def ran_again(slow: Slowed, keyed: bool) -> bool:
    """Whether the commit went stale and ran a second time: its marker was released and claimed again (keyed), or
    the metadata file written on the stale view was deleted (unkeyed)."""
    if keyed:
        return sum(op == "put" and key.startswith("_catalog/iceberg_idempotency/") for _, op, key in slow.started) > 2
    return any(op == "delete" for _, op, _ in slow.started)


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_tables_and_namespaces_created_on_another_server_leave_a_commit_here_optimistic(
        servers: tuple[Server, Server, str], keyed: bool) -> None:
    """Creations cannot change what a commit of an existing table decided (arco.optimistic.CREATIONS): the view
    stands, and the commit runs once (its check reads the new log entries). A change to something that exists
    still makes it stale."""
    a, b, _ = servers
    assert a.commit(ADMIN, "warm", keyed=keyed).status_code == 200
    assert b.call(ADMIN, "POST", "/iceberg/v1/main/namespaces", json={"namespace": ["other"]}).status_code == 200
    assert b.call(ADMIN, "POST", "/iceberg/v1/main/namespaces/db/tables",
                  json={"name": "u", "schema": SCHEMA}).status_code == 200
    assert not ran_again(measured(a, keyed)[1], keyed)

    assert b.call(ADMIN, "POST", "/iceberg/v1/main/namespaces/db/properties",
                  json={"updates": {"owner-team": "x"}}).status_code == 200
    assert ran_again(measured(a, keyed)[1], keyed)  # the control: the same measurement sees a stale view


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_a_grant_given_on_another_server_lets_the_next_commit_here_through(
        servers: tuple[Server, Server, str], keyed: bool) -> None:
    a, b, ann = servers
    assert a.commit(ann, "refused", keyed=keyed).status_code == 403
    grants(b, "add", *ANN_MAY_COMMIT)
    response = a.commit(ann, "granted", keyed=keyed)
    assert response.status_code == 200, response.text


def commits_counted() -> float:
    return REGISTRY.get_sample_value("arco_http_request_duration_seconds_count", {
        "route": "/iceberg/v1/{prefix}/namespaces/{namespace}/tables/{table}", "method": "POST",
        "status": "200"}) or 0.0


def test_a_grant_taken_away_on_another_server_refuses_the_next_unkeyed_commit_here(
        servers: tuple[Server, Server, str]) -> None:
    """Without a key the metadata file is written beside the check: the check finds the grant gone, the file is
    deleted, and the request, run again on the checked view, is refused."""
    a, b, ann = servers
    grants(b, "add", *ANN_MAY_COMMIT)
    assert a.commit(ann, "one", keyed=False).status_code == 200
    assert a.commit(ann, "two", keyed=False).status_code == 200  # server a's state has the grant: optimistic
    before = metadata_files(a)
    failed = failed_commits()
    grants(b, "remove", ("table", "main.db.t", "MODIFY"))
    refused = a.commit(ann, "three", keyed=False)
    assert refused.status_code == 403, refused.text
    assert failed_commits() == failed  # the run on the stale view is no outcome of its own
    assert b.call(ADMIN, "GET", TABLE).json()["metadata"]["properties"]["v"] == "two"
    assert metadata_files(a) == before  # the file written on the stale view is gone
    deleted = [c.key for c in a.storage.calls if c.op == "delete"]
    assert len(deleted) == 1 and deleted[0].endswith(".metadata.json")


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_a_grant_taken_away_between_creations_on_another_server_still_refuses_the_commit_here(
        servers: tuple[Server, Server, str], keyed: bool) -> None:
    """Creations alone leave a commit's view standing; a revocation among them does not slip through."""
    a, b, ann = servers
    grants(b, "add", *ANN_MAY_COMMIT)
    assert a.commit(ann, "one", keyed=keyed).status_code == 200
    assert a.commit(ann, "two", keyed=keyed).status_code == 200  # server a's state has the grant: optimistic
    assert b.call(ADMIN, "POST", "/iceberg/v1/main/namespaces", json={"namespace": ["before"]}).status_code == 200
    grants(b, "remove", ("table", "main.db.t", "MODIFY"))
    assert b.call(ADMIN, "POST", "/iceberg/v1/main/namespaces/db/tables",
                  json={"name": "after", "schema": SCHEMA}).status_code == 200
    refused = a.commit(ann, "three", keyed=keyed)
    assert refused.status_code == 403, refused.text
    assert b.call(ADMIN, "GET", TABLE).json()["metadata"]["properties"]["v"] == "two"


def failed_commits() -> float:
    return REGISTRY.get_sample_value("arco_iceberg_commits_total", {"outcome": "failed"}) or 0.0


def metadata_files(server: Server) -> set[str]:
    location = server.call(ADMIN, "GET", TABLE).json()["metadata"]["location"]
    prefix = location.split("/warehouse/", 1)[1] + "/metadata/"
    return {m.key for m in server.storage.list(prefix) if m.key.endswith(".metadata.json")}


def test_a_grant_taken_away_on_another_server_refuses_the_next_commit_here(
        servers: tuple[Server, Server, str]) -> None:
    a, b, ann = servers
    grants(b, "add", *ANN_MAY_COMMIT)
    assert a.commit(ann, "one").status_code == 200
    assert a.commit(ann, "two").status_code == 200  # server a's state now has the grant: the optimistic path
    grants(b, "remove", ("table", "main.db.t", "MODIFY"))
    key = str(uuid7())
    refused = a.commit(ann, "three", key=key)
    assert refused.status_code == 403, refused.text
    loaded = b.call(ADMIN, "GET", TABLE).json()
    assert loaded["metadata"]["properties"]["v"] == "two"
    # The claim made before the check was released, not left in progress: once granted again, the same key goes
    # ahead at once (a 403 is not replayed: it was never this request's answer on a current view).
    grants(b, "add", ("table", "main.db.t", "MODIFY"))
    again = a.commit(ann, "three", key=key)
    assert again.status_code == 200, again.text
    assert b.call(ADMIN, "GET", TABLE).json()["metadata"]["properties"]["v"] == "three"


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_a_table_dropped_on_another_server_is_not_committed_to_here(servers: tuple[Server, Server, str],
                                                                    keyed: bool) -> None:
    a, b, _ = servers
    assert a.commit(ADMIN, "before", keyed=keyed).status_code == 200
    assert b.call(ADMIN, "DELETE", TABLE).status_code == 204
    gone = a.commit(ADMIN, "after", keyed=keyed)
    assert gone.status_code == 404, gone.text
    assert gone.json()["error"]["type"] == "NoSuchTableException"


def test_the_same_keyed_commit_sent_to_both_servers_at_once_gets_one_answer_and_no_503(
        servers: tuple[Server, Server, str]) -> None:
    """A retry racing its first attempt (a client's timeout, a proxy's retry) through another server: the one whose
    claim loses waits for the other's answer instead of answering 503, on the optimistic path, over HTTP."""
    a, b, _ = servers

    def send(server: Server, value: str, key: str, start: threading.Barrier, answers: list[Any]) -> None:
        start.wait(10)
        answers.append(server.commit(ADMIN, value, key=key))

    for i in range(12):
        key, start, answers = str(uuid7()), threading.Barrier(2), []
        threads = [threading.Thread(target=send, args=(server, f"v{i}", key, start, answers)) for server in (a, b)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert [answer.status_code for answer in answers] == [200, 200], [answer.text for answer in answers]
        assert answers[0].json()["metadata-location"] == answers[1].json()["metadata-location"]
    assert after_answer.drain(10)
    log = a.call(ADMIN, "GET", TABLE).json()["metadata"]["metadata-log"]
    assert len(log) == 12  # the create's version and eleven of the twelve commits: each landed once
