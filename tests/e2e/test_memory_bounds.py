"""A long-running server's memory does not grow with its tables' histories.

Each commit makes a table's metadata larger, and a server that loads every version another server wrote parses
each one. Its caches are bounded by size (``--metadata-cache-mb``), so its resident memory levels off; bounded by
count alone, as they were, this workload grew the reading server by ~350 MB (a soak grew one by 740 MB in 94
minutes). Memory is read from ``/proc``; the bound is far above the noise and far below the unbounded growth.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, ONE_COLUMN_SCHEMA, RunningServer, arco_server

pytestmark = pytest.mark.timeout(600)

COMMITS = 300
PROPERTY = "x" * 4096  # each commit adds one: the metadata grows 4 KB a version, to 1.2 MB
GROWTH_BOUND_MB = 120


def rss_mb(server: RunningServer) -> float:
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[RunningServer, RunningServer]]:
    warehouse = tmp_path / "warehouse"
    with arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN) as writer, \
            arco_server(warehouse, tmp_path, admin_token=ARCO_TOKEN,
                        extra_args=("--metadata-cache-mb", "16")) as reader:
        yield writer, reader


def test_a_reader_of_a_growing_table_keeps_its_memory_bounded(
        servers: tuple[RunningServer, RunningServer]) -> None:
    writer, reader = servers
    headers = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    with httpx.Client(base_url=f"{writer.iceberg_uri}/v1/main", headers=headers, timeout=60) as w, \
            httpx.Client(base_url=f"{reader.iceberg_uri}/v1/main", headers=headers, timeout=60) as r:
        assert w.post("/namespaces", json={"namespace": ["lake"]}).status_code == 200
        assert w.post("/namespaces/lake/tables", json={"name": "t", "schema": ONE_COLUMN_SCHEMA}).status_code == 200
        for _ in range(20):  # the reader's own start-up allocations first
            assert r.get("/namespaces/lake/tables/t").status_code == 200
        before = rss_mb(reader)
        for n in range(COMMITS):
            committed = w.post("/namespaces/lake/tables/t", json={
                "requirements": [], "updates": [{"action": "set-properties", "updates": {f"p{n}": PROPERTY}}]})
            assert committed.status_code == 200, committed.text
            loaded = r.get("/namespaces/lake/tables/t")
            assert loaded.status_code == 200 and len(loaded.json()["metadata"]["properties"]) >= n + 1
        grown = rss_mb(reader) - before
    assert grown < GROWTH_BOUND_MB, f"the reader grew by {grown:.0f} MB over {COMMITS} versions"
