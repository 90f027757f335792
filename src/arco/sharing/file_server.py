"""Serving the signed file URLs (``/delta-sharing/files/<token>/<name>``) as a raw ASGI app.

A recipient's client reads each shared file with many small requests: the Python client's fsspec HTTP filesystem
asks ``HEAD`` (for the size) and ``GET`` (to see whether the URL is a "directory") several times per file, then
reads the Parquet footer and row groups with ranged ``GET``s, one file after the other. So the cost of one request
bounds a read of many small files. This path therefore skips the Starlette router and middleware (the token is
the whole credential: an HMAC check against the key held in memory, no catalog state), stats and reads local files
with plain syscalls (small reads straight from the page cache, large ones in a worker thread, chunk by chunk), and
answers ``HEAD`` with the size, ``Accept-Ranges: bytes``, single, open-ended, suffix and multiple ranges.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import orjson

from arco.api.errors import ApiError
from arco.sharing.audit import Reader
from arco.storage.base import NotFound
from arco.storage.urls import local_path

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

PREFIX = "/delta-sharing/files/"
ROUTE = "/delta-sharing/files/{token}/{name}"
INLINE_READ = 1 << 20  # bytes read on the event loop: a page-cache read this small costs less than a thread hop
CHUNK = 1 << 20  # bytes per read (and per send) of a larger body
BOUNDARY = "arco-byteranges-7d3f1c"

Ranges = list[tuple[int, int]]  # inclusive (start, end) byte positions


class Unsatisfiable(ValueError):
    """A Range header none of whose ranges overlaps the file: 416."""


def parse_ranges(header: str | None, size: int) -> Ranges | None:
    """The byte ranges a ``Range`` header asks of a ``size``-byte file, sorted and coalesced; None for the whole
    file (no header, another unit, or a malformed one, which RFC 9110 says to ignore)."""
    if not header:
        return None
    unit, eq, spec = header.partition("=")
    if not eq or unit.strip().lower() != "bytes":
        return None
    asked: Ranges = []
    try:
        for part in spec.split(","):
            first, dash, last = part.strip().partition("-")
            if not dash:
                return None
            if first == "":  # the last N bytes
                n = int(last)
                if n < 0:
                    return None
                if n == 0:
                    continue
                asked.append((max(size - n, 0), size - 1))
                continue
            start = int(first)
            end = int(last) if last else None
            if start < 0 or (end is not None and end < start):
                return None
            if start >= size:
                continue  # not satisfiable on its own; the others may be
            asked.append((start, size - 1 if end is None else min(end, size - 1)))
    except ValueError:
        return None
    if not asked:
        raise Unsatisfiable(header)
    asked.sort()
    merged: Ranges = [asked[0]]
    for start, end in asked[1:]:
        if start <= merged[-1][1] + 1:  # overlapping or adjacent: one range (RFC 9110 allows coalescing)
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class SignedFiles:
    """The ASGI app for ``/delta-sharing/files/...``; ``server`` is the :class:`SharingServer` (or, when None,
    the one in the Starlette app's state, for the same handler mounted as a route)."""

    def __init__(self, server: Any = None) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = self.server if self.server is not None else scope["app"].state.delta_sharing
        record = scope.get("arco.request")
        if record is not None:
            record.route = ROUTE
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await _error(send, ApiError(405, "METHOD_NOT_ALLOWED", "signed file URLs answer GET and HEAD only"),
                         {"allow": "GET, HEAD"})
            return
        token = (scope.get("path_params") or {}).get("token")  # mounted as a Starlette route
        if token is None:
            path: str = scope["path"]
            token = path[path.index(PREFIX) + len(PREFIX):].split("/", 1)[0] if PREFIX in path else ""
        head = method == "HEAD"
        try:
            grant = server.open_file(token)
            if grant.url.startswith("file:"):
                sent = await _serve_local(local_path(grant.url), _header(scope, b"range"), head, send)
            else:
                try:
                    data = await anyio.to_thread.run_sync(server.read_object, grant.url)
                except NotFound:
                    raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", "the file no longer exists") from None
                sent = await _serve_bytes(data, _header(scope, b"range"), head, send)
        except ApiError as exc:
            await _error(send, exc)
            return
        downloads = getattr(server, "downloads", None)
        if head or grant.reader is None or downloads is None:
            return
        # Counted once the answer is sent; a due tally is written off the event loop (every few seconds at most).
        client = scope.get("client")
        events = downloads.note(Reader(*grant.reader), grant.url.rstrip("/").rsplit("/", 1)[-1], sent,
                                client[0] if client else None, _header(scope, b"user-agent"))
        if events:
            await anyio.to_thread.run_sync(downloads.write, events)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


async def _error(send: Send, exc: ApiError, extra: dict[str, str] | None = None) -> None:
    body = orjson.dumps({"errorCode": exc.error_type, "message": exc.message})
    headers = {**(exc.headers or {}), **(extra or {})}
    await send({"type": "http.response.start", "status": exc.status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *((k.lower().encode(), v.encode()) for k, v in headers.items())]})
    await send({"type": "http.response.body", "body": body})


def _plan(range_header: str | None, size: int) -> tuple[int, list[tuple[bytes, bytes]], Ranges, list[bytes]]:
    """Status, headers, the ranges to send and, for a multipart answer, each part's header block."""
    base = [(b"accept-ranges", b"bytes")]
    try:
        ranges = parse_ranges(range_header, size)
    except Unsatisfiable:
        return 416, [*base, (b"content-range", f"bytes */{size}".encode()), (b"content-length", b"0")], [], []
    if ranges is None:
        return 200, [*base, (b"content-type", b"application/octet-stream"),
                     (b"content-length", str(size).encode())], [(0, size - 1)] if size else [], []
    if len(ranges) == 1:
        start, end = ranges[0]
        return 206, [*base, (b"content-type", b"application/octet-stream"),
                     (b"content-range", f"bytes {start}-{end}/{size}".encode()),
                     (b"content-length", str(end - start + 1).encode())], ranges, []
    parts = [(f"\r\n--{BOUNDARY}\r\nContent-Type: application/octet-stream\r\n"
              f"Content-Range: bytes {s}-{e}/{size}\r\n\r\n").encode() for s, e in ranges]
    closing = f"\r\n--{BOUNDARY}--\r\n".encode()
    length = sum(len(p) for p in parts) + sum(e - s + 1 for s, e in ranges) + len(closing)
    return 206, [*base, (b"content-type", f"multipart/byteranges; boundary={BOUNDARY}".encode()),
                 (b"content-length", str(length).encode())], ranges, [*parts, closing]


async def _serve_local(path: Path, range_header: str | None, head: bool, send: Send) -> int:
    """Sends the file (or its ranges); gives the number of file bytes sent."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        raise ApiError(404, "RESOURCE_DOES_NOT_EXIST",
                       "the file no longer exists (the table may have been vacuumed)") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", "the file no longer exists")
        status, headers, ranges, parts = _plan(range_header, info.st_size)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        sent = 0
        if head or not ranges:
            await send({"type": "http.response.body", "body": b""})
            return 0
        for i, (start, end) in enumerate(ranges):
            if parts:
                await send({"type": "http.response.body", "body": parts[i], "more_body": True})
            position = start
            while position <= end:
                n = min(CHUNK, end - position + 1)
                if n <= INLINE_READ and end - start < INLINE_READ:
                    chunk = os.pread(fd, n, position)
                else:
                    chunk = await anyio.to_thread.run_sync(os.pread, fd, n, position)
                if not chunk:
                    break  # the file shrank under us; the client sees a short body
                position += len(chunk)
                sent += len(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": parts[-1] if parts else b""})
        return sent
    finally:
        os.close(fd)


async def _serve_bytes(data: bytes, range_header: str | None, head: bool, send: Send) -> int:
    status, headers, ranges, parts = _plan(range_header, len(data))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    if head or not ranges:
        await send({"type": "http.response.body", "body": b""})
        return 0
    sent = sum(end - start + 1 for start, end in ranges)
    if not parts:
        start, end = ranges[0]
        await send({"type": "http.response.body", "body": data[start:end + 1]})
        return sent
    body = b"".join(p + data[s:e + 1] for p, (s, e) in zip(parts, ranges, strict=False)) + parts[-1]
    await send({"type": "http.response.body", "body": body})
    return sent
