"""A small HTTP/1.1 server on loopback, for tests that need a server to misbehave on cue (an emulator cannot be
told to answer 503, drop a connection or stall at a chosen request)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """Keep-alive, no access log; ``answer`` (to override) serves every method."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def answer(self) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:  # noqa: N802 - the names http.server dispatches to
        self.answer()

    do_PUT = do_HEAD = do_DELETE = do_GET  # noqa: N815


@contextmanager
def serving(handler: type[QuietHandler]) -> Iterator[int]:
    """Serve ``handler`` on a free loopback port (yielded) until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
