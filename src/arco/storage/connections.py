"""Keep-alive HTTP/1.1 connections to one origin: plain sockets, answers parsed by ``httptools`` (llhttp).

Why not a general-purpose client: an object store's commit makes several sequential calls, each a small
request and a small answer, under one interpreter lock shared with the request handlers. Measured on this
project's 2-core reference machine (a signed 600-byte PUT to SeaweedFS on loopback, one process, 500 calls):
urllib3 cost 640-760 us a call, the standard library's ``http.client`` 340-440 us (used here until then: 140-160
us of CPU a call, most of it ``email``-based header parsing, and the headers and the body went out as two
writes), one write and llhttp's parser 35-50 us of CPU (``httptools``, which uvicorn already parses requests
with). What a general client adds that these calls need is small, and here: a thread-safe pool of idle
connections, a check that an idle connection was not closed by the server before it is reused, separate connect
and read timeouts, TLS verified against a CA bundle, and answers delimited by length, by chunks or by the end of
the connection. Proxies are not supported (nor were they before).
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import threading
from dataclasses import dataclass

import certifi
import httptools

_RECEIVE_BYTES = 256 * 1024
_NO_BODY_STATUS = frozenset({204, 304})


def requests_ca_bundle() -> str:
    """The CA bundle libraries built on ``requests`` verify TLS with (the Azure and GCS SDKs): its environment
    override, else certifi's."""
    return os.environ.get("REQUESTS_CA_BUNDLE") or certifi.where()


class TransportError(Exception):
    """The request did not get an answer (connection refused or reset, timeout, a malformed answer); whether it
    reached the server is unknown."""


class NotConnected(TransportError):
    """No connection could be made (refused, unreachable, a failed TLS handshake): the request was never sent."""


class TimedOut(TransportError):
    """The request was sent and no answer came within the read timeout: the store is hung or overloaded, and sending
    it again would wait as long again (:func:`arco.storage.object_calls.send_with_retries` does not)."""


class Headers(dict[str, str]):
    """An answer's headers, their names lower-cased; ``get`` and ``[]`` take a name in any case. A repeated header's
    values are joined with ``", "`` (RFC 9110, 5.3)."""

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower())

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name.lower() if isinstance(name, str) else name)


@dataclass(frozen=True)
class Response:
    status: int
    headers: Headers
    data: bytes


class _Answer:
    """llhttp's callbacks for one answer; ``complete`` once its body is read (at once for an answer to HEAD)."""

    __slots__ = ("headers", "body", "headers_done", "complete", "keep_alive", "framed", "_parser", "_head")

    def __init__(self, head: bool) -> None:
        self.headers = Headers()
        self.body: list[bytes] = []
        self.headers_done = self.complete = self.keep_alive = False
        self.framed = False  # delimited by Content-Length or chunks (else: by the end of the connection)
        self._head = head
        self._parser = httptools.HttpResponseParser(self)

    def feed(self, data: bytes) -> None:
        self._parser.feed_data(data)

    @property
    def status(self) -> int:
        return self._parser.get_status_code()

    def on_header(self, name: bytes, value: bytes) -> None:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        seen = dict.get(self.headers, key)
        dict.__setitem__(self.headers, key, text if seen is None else f"{seen}, {text}")

    def on_headers_complete(self) -> None:
        self.headers_done = True
        self.keep_alive = self._parser.should_keep_alive()
        self.framed = ("content-length" in self.headers or "chunked" in self.headers.get("transfer-encoding", "")
                       or self.status in _NO_BODY_STATUS or self.status < 200)
        if self._head:  # its Content-Length describes the object, not bytes that follow
            self.complete = True

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


def host_header(scheme: str, host: str, port: int | None) -> str:
    """The Host header for ``scheme://host:port``: the port only where it is not the scheme's default."""
    shown = f"[{host}]" if ":" in host else host  # an IPv6 literal
    return shown if port in (None, 443 if scheme == "https" else 80) else f"{shown}:{port}"


class ConnectionPool:
    """Connections to ``scheme://host:port``; thread-safe. Each request takes an idle connection (or opens one)
    and gives it back once its answer is read, unless either side asked to close it."""

    def __init__(self, scheme: str, host: str, port: int | None, *, max_idle: int = 32,
                 connect_timeout_s: float = 5, read_timeout_s: float = 30, ca_file: str | None = None) -> None:
        if scheme not in ("http", "https"):
            raise ValueError(f"unsupported scheme {scheme!r}")
        self._host, self._port = host, port or (443 if scheme == "https" else 80)
        self.host_header = host_header(scheme, host, port)
        self._max_idle = max_idle
        self._connect_timeout_s, self._read_timeout_s = connect_timeout_s, read_timeout_s
        self._tls = ssl.create_default_context(cafile=ca_file) if scheme == "https" else None
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()

    def request(self, method: str, target: str, headers: dict[str, str], body: bytes | None) -> Response:
        """Send one request (``target``: the path and query) and read its whole answer. ``body`` is sent with its
        ``Content-Length`` (a PUT of an empty object sends ``b""``); ``None`` sends none.

        Raises :class:`TransportError` if no answer came. The request is sent once: a caller that may repeat it
        decides so itself."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}"]
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        # One write: a request split in two waits on the peer's delayed acknowledgement of the first part.
        message = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
        connection = self._take()
        try:
            connection.sendall(message)
            answer = self._read_answer(connection, head=method == "HEAD")
        except (OSError, httptools.HttpParserError, TransportError) as exc:
            connection.close()
            if isinstance(exc, TransportError):
                raise
            if isinstance(exc, TimeoutError):
                raise TimedOut(f"timed out: no answer within {self._read_timeout_s:g} s") from exc
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        if answer.keep_alive and answer.framed:
            self._give_back(connection)
        else:
            connection.close()
        return Response(answer.status, answer.headers, b"".join(answer.body))

    @staticmethod
    def _read_answer(connection: socket.socket, head: bool) -> _Answer:
        answer = _Answer(head)
        while not answer.complete:
            data = connection.recv(_RECEIVE_BYTES)
            if not data:
                if answer.headers_done and not answer.framed:
                    answer.keep_alive = False
                    return answer  # a body delimited by the end of the connection
                raise TransportError("the server closed the connection before its answer was complete")
            answer.feed(data)
        return answer

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take(self) -> socket.socket:
        while True:
            with self._lock:
                connection = self._idle.pop() if self._idle else None
            if connection is None:
                return self._open()
            if not _dropped(connection):
                return connection
            connection.close()

    def _give_back(self, connection: socket.socket) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(connection)
                return
        connection.close()

    def _open(self) -> socket.socket:
        try:
            connection = socket.create_connection((self._host, self._port), timeout=self._connect_timeout_s)
        except OSError as exc:
            raise NotConnected(f"cannot connect to {self._host}:{self._port}: {exc}") from exc
        try:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                connection = self._tls.wrap_socket(connection, server_hostname=self._host)
            connection.settimeout(self._read_timeout_s)
        except OSError as exc:
            connection.close()
            raise NotConnected(f"cannot connect to {self._host}:{self._port}: {exc}") from exc
        return connection


def _dropped(connection: socket.socket) -> bool:
    """Whether an idle connection was closed (or sent something unasked): readable means end of file or junk."""
    poller = select.poll()  # not select(): a server holds more than FD_SETSIZE (1024) descriptors
    try:
        poller.register(connection, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True
