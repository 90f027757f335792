"""An idle keep-alive connection outlives the idle time clients keep theirs for (httpx closes its own after 5 s):
a server that closed it first could close it as the client sends its next request, a request lost in flight."""

from __future__ import annotations

import time

from arco.cli.main import KEEP_ALIVE_S
from support.arco_server import ARCO_TOKEN, RunningServer
from support.keepalive import Connection

HTTPX_IDLE_S = 5.0


def test_a_connection_idle_longer_than_httpx_keeps_one_is_still_open(server: RunningServer) -> None:
    assert KEEP_ALIVE_S > 15  # aiohttp's idle time, the longest of the usual clients'
    connection = Connection(server.base_url, ARCO_TOKEN)
    assert connection.request("GET", "/iceberg/v1/config?warehouse=main")[0] == 200
    time.sleep(HTTPX_IDLE_S + 1)  # past uvicorn's default (5 s), which closed it here
    assert connection.request("GET", "/iceberg/v1/config?warehouse=main")[0] == 200
    assert (connection.idle_closes, connection.dropped) == (0, 0)
