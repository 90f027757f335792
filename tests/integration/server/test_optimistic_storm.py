"""Commits without a key under optimistic views, many at once on one table, while another server changes the catalog
(which makes views stale): every acknowledged commit is in the table once, nothing else is, and the metadata log is
one chain. Two real in-process servers on one warehouse whose catalog check is a round trip (as on object storage),
so the optimistic path and group commits are both taken."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import httpx
import pytest

from arco.api.embedded import in_process_server
from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.iceberg.file_names import is_group_file
from arco.iceberg.metadata_files import MetadataFiles
from arco.metrics import REGISTRY
from arco.storage.local import LocalBackend
from arco.storage.timed import TimedBackend

pytestmark = pytest.mark.timeout(300)

TOKEN = "storm-admin-token"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}
TABLE = "/iceberg/v1/main/namespaces/db/tables/t"
WRITERS, COMMITS = 8, 12


def object_store_like(root: Path) -> TimedBackend:
    """A local warehouse whose reads are treated as round trips: the server takes the optimistic path."""
    timed = TimedBackend(LocalBackend(root))
    timed.capabilities = replace(timed.capabilities, cheap_reads=False)
    return timed


@pytest.fixture
def two_servers(tmp_path: Path) -> Iterator[tuple[str, str, LocalBackend]]:
    with in_process_server(object_store_like(tmp_path / "wh"), {TOKEN: BOOTSTRAP_ADMIN}, "storm-a") as a, \
            in_process_server(object_store_like(tmp_path / "wh"), {TOKEN: BOOTSTRAP_ADMIN}, "storm-b") as b:
        yield a, b, LocalBackend(tmp_path / "wh")


def test_unkeyed_commits_under_views_land_once_each_while_the_catalog_moves(
        two_servers: tuple[str, str, LocalBackend]) -> None:
    a, b, storage = two_servers
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=a, headers=headers, timeout=60) as admin:
        assert admin.post("/iceberg/v1/main/namespaces", json={"namespace": ["db"]}).status_code == 200
        assert admin.post("/iceberg/v1/main/namespaces/db/tables",
                          json={"name": "t", "schema": SCHEMA}).status_code == 200
    acked: set[str] = set()
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(WRITERS + 1)

    def writer(w: int) -> None:
        with httpx.Client(base_url=a, headers=headers, timeout=60) as client:
            start.wait()
            for n in range(COMMITS):
                name = f"w{w}-{n}"
                r = client.post(TABLE, json={"requirements": [], "updates": [
                    {"action": "set-properties", "updates": {name: "1"}}]})
                with lock:
                    (acked.add(name) if r.status_code == 200 else failures.append(f"{r.status_code} {r.text}"))

    writing = threading.Event()
    writing.set()

    def catalog_churn() -> None:  # Tier 1 changes on the other server while the commits run: views on a go stale
        with httpx.Client(base_url=b, headers=headers, timeout=60) as client:
            start.wait()
            n = 0
            while writing.is_set() and n < 500:
                assert client.post("/iceberg/v1/main/namespaces", json={"namespace": [f"churn{n}"]}).status_code == 200
                # A creation alone leaves a commit's view standing (arco.optimistic.CREATIONS); a change to something
                # that exists makes it stale.
                assert client.post(f"/iceberg/v1/main/namespaces/churn{n}/properties",
                                   json={"updates": {"n": str(n)}}).status_code == 200
                n += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    churn = threading.Thread(target=catalog_churn)
    deleted_before = deletes()
    for thread in (*threads, churn):
        thread.start()
    for thread in threads:
        thread.join(240)
    writing.clear()
    churn.join(60)

    assert not failures, failures[:3]
    assert deletes() > deleted_before, "no view went stale: the test did not test the stale path"
    assert len(acked) == WRITERS * COMMITS
    with httpx.Client(base_url=b, headers=headers, timeout=60) as client:
        loaded = client.get(TABLE).json()
    properties = loaded["metadata"]["properties"]
    assert acked <= set(properties)
    versions = [e["metadata-file"] for e in loaded["metadata"]["metadata-log"]] + [loaded["metadata-location"]]
    files = MetadataFiles(storage)
    for older, newer in pairwise(versions[-50:]):  # one chain (the log keeps the latest versions)
        assert files.read(newer).metadata_log[-1].metadata_file == older
    assert any(is_group_file(v) for v in versions), "eight writers on one server always meet"
    # Files written on a stale view were deleted: the metadata folder holds the history and nothing else.
    folder = files.key_of(loaded["metadata"]["location"].rstrip("/") + "/metadata/")
    on_disk = {m.key for m in storage.list(folder) if m.key.endswith(".metadata.json")}
    assert on_disk == {files.key_of(v) for v in versions}


def deletes() -> float:
    """Storage deletes made in this process so far (a metadata file written on a stale view is deleted)."""
    return REGISTRY.get_sample_value("arco_storage_operation_duration_seconds_count",
                                     {"operation": "delete", "outcome": "ok"}) or 0.0
