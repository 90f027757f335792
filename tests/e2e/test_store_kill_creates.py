"""Creates through two servers while the store itself (SeaweedFS) is killed and started again: each create is a
Tier 1 entry, a metadata file and a pointer, and the store may die between any two of them.

Clients create tables with Idempotency-Keys, in a namespace of their own and in one they share, retrying every 5xx
with the same key. At the end every create was answered 201/200 once for all (never 409 for a create that had
landed), every table is listed once and loads (no entry without its pointer or metadata), and no answer was a 5xx
other than 503.
"""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path

import httpx
import pytest
from uuid6 import uuid7

from support.arco_server import ARCO_TOKEN
from support.retries import send_until_answered
from support.store_kill import run_clients, servers_on_a_killable_store

pytestmark = pytest.mark.timeout(600)

_fork = multiprocessing.get_context("fork")
CLIENTS, CREATES, STORE_KILLS = 6, 15, 3
HEADERS = {"Authorization": f"Bearer {ARCO_TOKEN}"}
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}


def _creator(prefixes: list[str], client: int, results: object) -> None:
    random.seed(client)
    stats: dict[str, int] = {}
    answers: list[tuple[str, str, int]] = []
    for i in range(CREATES):
        namespace = "shared" if i % 2 else f"own{client}"
        name = f"t{client}_{i}"
        urls = [f"{prefix}/namespaces/{namespace}/tables" for prefix in prefixes]
        status = send_until_answered(urls, {"name": name, "schema": SCHEMA}, str(uuid7()), stats, HEADERS)
        answers.append((namespace, name, status))
    results.put((answers, stats))  # type: ignore[attr-defined]


def test_keyed_creates_land_once_and_whole_while_the_store_is_killed(tmp_path: Path) -> None:
    with servers_on_a_killable_store(tmp_path, extra_args=("--idempotency-in-progress-timeout", "1")) as killable:
        prefixes = [f"{s.iceberg_uri}/v1/main" for s in killable.servers]
        namespaces = ["shared", *(f"own{c}" for c in range(CLIENTS))]
        for namespace in namespaces:
            httpx.post(f"{prefixes[0]}/namespaces", json={"namespace": [namespace]},
                       headers=HEADERS).raise_for_status()
        outcomes = run_clients(_creator, [(prefixes, c) for c in range(CLIENTS)], killable.killer(STORE_KILLS, 5))
        assert killable.kills == STORE_KILLS

        answers = [answer for answered, _ in outcomes for answer in answered]
        other_5xx = {name for _, stats in outcomes for name in stats
                     if name.startswith("status_") and name != "status_503"}
        assert not other_5xx, other_5xx
        assert {status for _, _, status in answers} == {200}, [a for a in answers if a[2] != 200]
        for namespace in namespaces:
            listed = httpx.get(f"{prefixes[1]}/namespaces/{namespace}/tables", headers=HEADERS).json()
            names = [identifier["name"] for identifier in listed["identifiers"]]
            assert sorted(names) == sorted(n for ns, n, _ in answers if ns == namespace)
            for name in names:
                loaded = httpx.get(f"{prefixes[0]}/namespaces/{namespace}/tables/{name}", headers=HEADERS)
                assert loaded.status_code == 200, (namespace, name, loaded.text)
        for server in killable.servers:
            assert "Traceback" not in server.log()  # an outage is summarized, not a traceback per request
        busy = sum(stats.get("status_503", 0) for _, stats in outcomes)
        print(f"\n{len(answers)} creates, {killable.kills} store kills, {busy} answers of 503 retried with the same "
              "key")
