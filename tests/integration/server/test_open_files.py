"""A server started with the soft open-file limit many systems give processes (1,024) raises it, so it keeps
accepting connections past a thousand clients instead of failing with "Too many open files"."""

from __future__ import annotations

import resource
import socket
from pathlib import Path

import httpx
import pytest

from support.arco_server import arco_server

CLIENTS = 1_200  # held open at once: past a soft limit of 1,024 descriptors


def _soft_open_files(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-file limit in /proc")


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="needs Linux's /proc")
def test_a_server_started_at_a_soft_limit_of_1024_files_serves_more_clients_than_that(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 4 * CLIENTS:
        pytest.skip(f"the hard open-file limit ({hard}) leaves no room above 1,024 to raise to")
    if soft < 2 * CLIENTS + 100:  # this test process holds its side of every connection
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * CLIENTS), hard))
    with arco_server(tmp_path / "warehouse", tmp_path, open_files_soft_limit=1024) as server:
        assert _soft_open_files(server.process.pid) > 2 * CLIENTS
        host, port = server.base_url.removeprefix("http://").split(":")
        held = [socket.create_connection((host, int(port)), timeout=10) for _ in range(CLIENTS)]
        try:
            # Each held connection is accepted (a descriptor in the server); a request on the last one and on a
            # new one is answered.
            held[-1].sendall(b"GET /health HTTP/1.1\r\nHost: arco\r\n\r\n")
            assert held[-1].recv(100).startswith(b"HTTP/1.1 200")
            assert httpx.get(f"{server.base_url}/health", timeout=10).status_code == 200
        finally:
            for connection in held:
                connection.close()
        assert "Too many open files" not in server.log()
