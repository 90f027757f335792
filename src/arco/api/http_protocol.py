"""uvicorn's httptools protocol with a bound on a request's head (request line and headers).

llhttp, under httptools, sets no limit of its own on the head, and uvicorn's protocol keeps whatever it is given:
a client could send megabytes of headers (or a header that never ends) and the server would hold them all in
memory before the application saw the request. Browsers, proxies and servers cap a head at 8-64 KB; this one
answers ``431 Request Header Fields Too Large`` past :data:`MAX_HEAD_BYTES` and closes the connection, as
uvicorn's own h11 protocol does past its (smaller) limit; the body is the error shape of the API the path names
(as far as the path has arrived). A bearer token, the largest header a catalog client sends, is a few kilobytes.

The count is of the bytes received while a head is incomplete, checked after each chunk is parsed, and starts with
the chunk after the one the head began in: a chunk that carries a small head and the start of a large body, or many
pipelined requests, is never mistaken for a large head; the memory held is bounded by the limit plus two reads.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from arco.api.errors import error_body, surface_of

MAX_HEAD_BYTES = 64 * 1024
_TOO_LARGE = f"a request's line and headers may take at most {MAX_HEAD_BYTES // 1024} KB; send less"


class BoundedHeadProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that refuses a head longer than :data:`MAX_HEAD_BYTES` with a 431."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = False  # a request has begun and its headers have not all arrived
        self._head_began_now = False  # ... and it began in the chunk being parsed
        self._head_bytes = 0

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head, self._head_began_now, self._head_bytes = True, True, 0

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        self._head_began_now = False
        super().data_received(data)
        if self._in_head and not self._head_began_now and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._refuse_head()

    def _refuse_head(self) -> None:
        self.logger.info("Refused a request whose head is over %d bytes", MAX_HEAD_BYTES)
        path = self.url.split(b"?", 1)[0].decode("latin-1")
        body = error_body(surface_of(path), 431, "BadRequestException", _TOO_LARGE)
        self.transport.write(b"".join((
            b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
            b"content-type: application/json\r\n",
            b"content-length: ", str(len(body)).encode("ascii"), b"\r\n",
            b"connection: close\r\n\r\n", body,
        )))
        self.transport.close()
