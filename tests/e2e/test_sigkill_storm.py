"""Exactly once under SIGKILL: 8 clients commit with Idempotency-Keys through 2 servers while one is killed (on a
local warehouse and on S3), or while the store itself (SeaweedFS) is killed and started again.

Every client retries each request with its key against either server until it gets an answer, as the README tells
clients to. At the end, every commit that was answered 200 is in the table's history exactly once (its key's tag
is in exactly one metadata file name, or one group record), nothing else is, and after the reconciler every
request of every version has its receipt.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from uuid6 import uuid7

from arco.events.receipts import iceberg_receipt_key
from arco.events.reconcile import table_history
from arco.iceberg.file_names import carries_tag, is_group_file
from arco.iceberg.group_commit import GroupRecords
from arco.iceberg.metadata_files import MetadataFiles
from support.arco_server import ARCO_TOKEN, RunningServer, start_server
from support.net import stop
from support.retries import send_until_answered
from support.storage_targets import StorageTarget
from support.store_kill import run_clients, servers_on_a_killable_store

pytestmark = pytest.mark.timeout(600)

_fork = multiprocessing.get_context("fork")
CLIENTS, COMMITS, KILLS = 8, 20, 5
STORE_KILLS = 3
IN_PROGRESS_TIMEOUT_S = 1
HEADERS = {"Authorization": f"Bearer {ARCO_TOKEN}"}
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}


def _client(urls: list[str], client: int, results: object) -> None:
    random.seed(client)
    stats = {"connection_errors": 0}
    answered_ok, refused = [], []
    for i in range(COMMITS):
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {f"c{client}": str(i)}}]}
        while True:  # one logical commit; a 409 (retries exhausted on the server) is a new attempt with a new key
            key = str(uuid7())
            status = send_until_answered(urls, body, key, stats, HEADERS)
            if status == 200:
                answered_ok.append(key)
                break
            assert status == 409, status
            refused.append(key)
    results.put((answered_ok, refused, stats))  # type: ignore[attr-defined]


def tag(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@pytest.fixture(params=["local", "s3-seaweedfs"])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> StorageTarget:
    """Where the servers keep the table: a local directory, or a SeaweedFS bucket (S3's If-Match is then the commit
    point, and a killed server's requests are cut mid-flight on the wire)."""
    if request.param == "local":
        return StorageTarget("local", str(tmp_path / "warehouse"))
    bucket: StorageTarget = request.getfixturevalue("s3_seaweedfs_bucket")
    return StorageTarget(bucket.name, f"{bucket.url}/sigkill-{uuid7().hex[:8]}", bucket.options)


def create_table(server: RunningServer) -> str:
    api = f"{server.iceberg_uri}/v1/main"
    httpx.post(f"{api}/namespaces", json={"namespace": ["storm"]}, headers=HEADERS).raise_for_status()
    httpx.post(f"{api}/namespaces/storm/tables", headers=HEADERS, json={
        "name": "t", "schema": SCHEMA, "properties": {"write.metadata.previous-versions-max": "10000"}},
    ).raise_for_status()
    return "/v1/main/namespaces/storm/tables/t"


@dataclass
class Outcomes:
    ok: list[str]  # keys answered 200
    refused: list[str]  # keys answered 409, retried by their client with a new key
    connection_errors: int
    busy: int  # answers of 503, retried with the same key
    other_5xx: dict[str, int]  # any other 5xx answer, by status and error type


def storm(urls: list[str], killer: Callable[[], None]) -> Outcomes:
    """:data:`CLIENTS` processes commit with keys through ``urls`` while ``killer`` runs in a thread."""
    outcomes = run_clients(_client, [(urls, c) for c in range(CLIENTS)], killer)
    return Outcomes(ok=[key for answered, _, _ in outcomes for key in answered],
                    refused=[key for _, failed, _ in outcomes for key in failed],
                    connection_errors=sum(stats["connection_errors"] for _, _, stats in outcomes),
                    busy=sum(stats.get("status_503", 0) for _, _, stats in outcomes),
                    other_5xx=dict(sum((Counter({name: n for name, n in stats.items()
                                                  if name.startswith("status_") and name != "status_503"})
                                          for _, _, stats in outcomes), Counter())))


def check_applied_once(warehouse: StorageTarget, url: str, outcomes: Outcomes) -> None:
    """Every answered commit is in the table's history once, nothing else is, and after the reconciler every request
    of every version has its committed receipt."""
    ok, refused = outcomes.ok, outcomes.refused
    assert len(ok) == CLIENTS * COMMITS
    # 503, or, where the store died between a commit's write and the check of where it landed, the spec's
    # CommitStateUnknownException (a 500 that tells a client to retry with the same key, not blindly): no bug.
    assert set(outcomes.other_5xx) <= {"status_500 CommitStateUnknownException"}, outcomes.other_5xx
    storage = warehouse.open()
    files = MetadataFiles(storage)
    loaded = httpx.get(url, headers=HEADERS).json()
    versions = [location for location, _ in table_history(files, loaded["metadata-location"])]
    # Which requests each version applied: the tag in its name, or the members of its group record.
    groups = GroupRecords(storage)
    sent_tags = [tag(key) for key in ok + refused]
    applied: list[str | None] = []
    members_of: dict[str, int] = {}
    for version in versions[:-1]:  # the oldest is the create
        record = groups.read(loaded["metadata"]["table-uuid"], version) if is_group_file(version) else None
        assert record is not None or not is_group_file(version), f"group file {version} without its record"
        if record is not None:
            tags = [m.tag for m in record.members]
        else:  # the tag of the one request whose digits the name carries (the name itself if none does)
            tags = [t for t in sent_tags if carries_tag(version, t)] or [version]
        members_of[version] = len(tags)
        applied += tags
    for key in ok:
        assert applied.count(tag(key)) == 1, f"commit {key} not applied exactly once"
    for key in refused:
        assert tag(key) not in applied, f"refused commit {key} was applied"
    assert len(applied) == len(ok)  # one application per answered commit: nothing doubled, nothing else
    final = loaded["metadata"]["properties"]
    assert all(final[f"c{c}"] == str(COMMITS - 1) for c in range(CLIENTS))

    reconcile = subprocess.run([sys.executable, "-m", "arco.cli.main", "reconcile", "--warehouse", warehouse.url,
                                *warehouse.cli_options()], capture_output=True, text=True, timeout=300)
    assert reconcile.returncode == 0, reconcile.stderr
    for location, updated_ms in table_history(files, loaded["metadata-location"]):
        for member in range(members_of.get(location, 1)):  # one receipt per request of a group
            key = iceberg_receipt_key("committed", location, updated_ms, member)
            assert storage.head(key) is not None, (location, member)


def test_commits_are_applied_exactly_once_while_a_server_is_killed(warehouse: StorageTarget, tmp_path: Path) -> None:
    args = ("--idempotency-in-progress-timeout", str(IN_PROGRESS_TIMEOUT_S), *warehouse.cli_options())
    steady = start_server(warehouse.url, tmp_path, admin_token=ARCO_TOKEN, extra_args=args)
    victim: list[RunningServer] = [start_server(warehouse.url, tmp_path, admin_token=ARCO_TOKEN, extra_args=args)]
    port = victim[0].base_url.rsplit(":", 1)[1]
    try:
        path = create_table(steady)
        urls = [f"{s.iceberg_uri}{path}" for s in (steady, victim[0])]
        kills = 0

        def killer() -> None:
            nonlocal kills
            rng = random.Random(7)
            for _ in range(KILLS):
                time.sleep(rng.uniform(0.3, 1.2))
                victim[0].kill()  # SIGKILL: no cleanup, markers stay IN_PROGRESS, writes stop mid-flow
                kills += 1
                time.sleep(rng.uniform(0.05, 0.3))
                victim[0] = start_server(warehouse.url, tmp_path, admin_token=ARCO_TOKEN, extra_args=args,
                                         port=int(port))

        outcomes = storm(urls, killer)
        assert kills == KILLS
        check_applied_once(warehouse, urls[0], outcomes)
        print(f"\n{len(outcomes.ok)} commits, {len(outcomes.refused)} refused and retried with new keys, {kills} "
              f"kills, {outcomes.connection_errors} connection errors and {outcomes.busy} answers of 503 retried")
    finally:
        stop(steady.process)
        stop(victim[0].process)


def test_commits_are_applied_exactly_once_while_the_store_is_killed(tmp_path: Path) -> None:
    """SeaweedFS itself killed mid-storm, three times, and started again on the same data and ports: requests in
    flight lose their store between any two calls (a claim made and its metadata file not, a pointer's put sent and
    never answered). Commits are answered 503 (or, where a CAS was in flight and the store stayed away,
    CommitStateUnknownException), and their retries with the same key find where they landed."""
    args = ("--idempotency-in-progress-timeout", str(IN_PROGRESS_TIMEOUT_S))
    with servers_on_a_killable_store(tmp_path, extra_args=args) as killable:
        path = create_table(killable.servers[0])
        urls = [f"{s.iceberg_uri}{path}" for s in killable.servers]
        outcomes = storm(urls, killable.killer(STORE_KILLS, seed=11))
        assert killable.kills == STORE_KILLS
        check_applied_once(killable.warehouse, urls[0], outcomes)
        for server in killable.servers:
            assert "Traceback" not in server.log()
        print(f"\n{len(outcomes.ok)} commits, {len(outcomes.refused)} refused and retried with new keys, "
              f"{killable.kills} store kills, {outcomes.connection_errors} connection errors and {outcomes.busy} "
              f"answers of 503 and {outcomes.other_5xx or 'no other 5xx'} retried")
