"""One keep-alive HTTP/1.1 connection to a server under test, which notices if the server closes it."""

from __future__ import annotations

import http.client
import select
import socket
from typing import Any

import orjson


class Connection:
    """One keep-alive HTTP/1.1 connection that notices if the server closes it.

    A close after an answer is counted in ``dropped``; a close of the idle connection (the server's keep-alive
    timeout) is counted in ``idle_closes`` and reconnected before the next request, as urllib3 does for its pool."""

    def __init__(self, base: str, token: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.token = token
        self.http = http.client.HTTPConnection(host, int(port), timeout=30)
        self._connect()
        self.dropped = self.idle_closes = 0

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
        payload = orjson.dumps(body) if body is not None else None
        all_headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", **(headers or {})}
        if self._closed_while_idle():
            self.idle_closes += 1
            self.http.close()
            self._connect()
        self.http.request(method, path, body=payload, headers=all_headers)
        response = self.http.getresponse()
        data = response.read()
        if self.http.sock is None or self.http.sock is not self.socket:
            self.dropped += 1  # the server closed the connection after this response
            self._connect()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, orjson.loads(data) if data else None

    def _connect(self) -> None:
        self.http.connect()
        self.socket = self.http.sock

    def _closed_while_idle(self) -> bool:
        poll = select.poll()  # not select.select, which fails on descriptors past 1024
        poll.register(self.socket, select.POLLIN)
        try:
            return bool(poll.poll(0)) and self.socket.recv(1, socket.MSG_PEEK) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.http.close()
