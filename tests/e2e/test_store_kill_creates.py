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
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from uuid6 import uuid7

from arco.storage.s3 import create_bucket
from support import emulators
from support.arco_server import ARCO_TOKEN, arco_server
from support.retries import send_until_answered

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
    seaweedfs = emulators.restartable_seaweedfs(tmp_path / "store")
    with ExitStack() as stack:
        store = stack.enter_context(seaweedfs.start())
        bucket = f"creates-{uuid7().hex[:8]}"
        create_bucket(bucket, store.options())
        args = tuple(f"--storage-option={k}={v}" for k, v in store.options().items())
        servers = [stack.enter_context(arco_server(f"s3://{bucket}/wh", tmp_path, admin_token=ARCO_TOKEN,
                                                   extra_args=("--idempotency-in-progress-timeout", "1", *args)))
                   for _ in range(2)]
        prefixes = [f"{s.iceberg_uri}/v1/main" for s in servers]
        for namespace in ["shared", *(f"own{c}" for c in range(CLIENTS))]:
            httpx.post(f"{prefixes[0]}/namespaces", json={"namespace": [namespace]},
                       headers=HEADERS).raise_for_status()
        kills = 0

        def killer() -> None:
            nonlocal kills, store
            rng = random.Random(5)
            for _ in range(STORE_KILLS):
                time.sleep(rng.uniform(0.4, 1.2))
                emulators.kill(store)
                kills += 1
                time.sleep(rng.uniform(0.1, 0.5))
                store = stack.enter_context(seaweedfs.start())

        results = _fork.Queue()
        clients = [_fork.Process(target=_creator, args=(prefixes, c, results)) for c in range(CLIENTS)]
        for p in clients:
            p.start()
        killing = threading.Thread(target=killer)
        killing.start()
        outcomes = [results.get(timeout=500) for _ in clients]
        killing.join(120)
        for p in clients:
            p.join(30)
            assert p.exitcode == 0
        assert kills == STORE_KILLS

        answers = [answer for answered, _ in outcomes for answer in answered]
        other_5xx = {name: n for _, stats in outcomes for name, n in stats.items()
                     if name.startswith("status_") and name != "status_503"}
        assert not other_5xx, other_5xx
        assert {status for _, _, status in answers} == {200}, [a for a in answers if a[2] != 200]
        for namespace in ["shared", *(f"own{c}" for c in range(CLIENTS))]:
            listed = httpx.get(f"{prefixes[1]}/namespaces/{namespace}/tables", headers=HEADERS).json()
            names = [identifier["name"] for identifier in listed["identifiers"]]
            assert sorted(names) == sorted(n for ns, n, _ in answers if ns == namespace)
            for name in names:
                loaded = httpx.get(f"{prefixes[0]}/namespaces/{namespace}/tables/{name}", headers=HEADERS)
                assert loaded.status_code == 200, (namespace, name, loaded.text)
        busy = sum(stats.get("status_503", 0) for _, stats in outcomes)
        print(f"\n{len(answers)} creates, {kills} store kills, {busy} answers of 503 retried with the same key")
