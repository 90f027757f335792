"""A request's head (its line and headers) is bounded: past 64 KB the answer is a 431 and the connection is closed,
before the server holds the rest; heads within the bound, large bodies and pipelined requests are served as ever."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from arco.api.http_protocol import MAX_HEAD_BYTES
from support.arco_server import ARCO_TOKEN, RunningServer

pytestmark = pytest.mark.timeout(120)

AUTH = b"Authorization: Bearer " + ARCO_TOKEN.encode() + b"\r\n"


def port_of(server: RunningServer) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def exchange(server: RunningServer, data: bytes, *, stop_sending_at: int | None = None) -> bytes:
    """Send ``data`` (or its first ``stop_sending_at`` bytes, the connection left open) and read until the server
    closes the connection."""
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=20) as raw:
        try:
            raw.sendall(data if stop_sending_at is None else data[:stop_sending_at])
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused part-way: the answer was written before the server closed
        answer = b""
        try:
            while chunk := raw.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
        return answer


def get(path: str, extra: bytes = b"") -> bytes:
    return b"GET /iceberg/v1/main" + path.encode() + b" HTTP/1.1\r\nHost: arco\r\n" + AUTH + extra


def error_of(answer: bytes) -> dict:
    """The JSON body of a raw HTTP answer."""
    return json.loads(answer.split(b"\r\n\r\n", 1)[1])


def assert_still_serving(client: httpx.Client, server: RunningServer) -> None:
    assert client.get("/namespaces/db/tables/t").status_code == 200
    assert "Traceback" not in server.log()


@pytest.mark.parametrize("extra", [
    b"".join(b"X-Pad-%d: %s\r\n" % (i, b"v" * 1000) for i in range(2000)) + b"\r\n",  # 2 MB of headers
    b"X-Endless: " + b"v" * (4 * 1024 * 1024),  # one header that never ends
], ids=["many-headers", "endless-header"])
def test_a_head_past_the_bound_is_refused(client: httpx.Client, server: RunningServer, extra: bytes) -> None:
    # The connection stays open after the bytes are sent: the refusal must come from the bound, not from an EOF.
    answer = exchange(server, get("/namespaces/db/tables/t", extra), stop_sending_at=len(extra))
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    error = error_of(answer)["error"]  # the Iceberg REST error shape: the path says which API
    assert error["code"] == 431 and error["type"] == "BadRequestException" and "64 KB" in error["message"]
    assert_still_serving(client, server)


def test_the_refusal_speaks_the_unity_catalog_shape_on_its_paths(client: httpx.Client, server: RunningServer) -> None:
    head = b"GET /api/2.1/unity-catalog/catalogs HTTP/1.1\r\nHost: arco\r\n" + AUTH + b"X-Pad: " + b"v" * 200_000
    error = error_of(exchange(server, head, stop_sending_at=len(head)))
    assert error["error_code"] == "BAD_REQUEST" and "64 KB" in error["message"]


def test_an_endless_request_line_is_refused(client: httpx.Client, server: RunningServer) -> None:
    answer = exchange(server, b"GET /iceberg/v1/main/namespaces?page=" + b"x" * (1024 * 1024))
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert_still_serving(client, server)


def test_a_head_within_the_bound_is_served(client: httpx.Client, server: RunningServer) -> None:
    pad = b"X-Pad: " + b"v" * (MAX_HEAD_BYTES - 4096) + b"\r\n"
    answer = exchange(server, get("/namespaces/db/tables/t", pad + b"Connection: close\r\n\r\n"))
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


def test_a_small_head_with_a_large_body_is_not_taken_for_a_large_head(client: httpx.Client,
                                                                      server: RunningServer) -> None:
    body = b'{"namespace": ["big_body"], "properties": {"pad": "' + b"p" * (900 * 1024) + b'"}}'
    answer = exchange(server, b"POST /iceberg/v1/main/namespaces HTTP/1.1\r\nHost: arco\r\n" + AUTH
                      + b"Content-Type: application/json\r\nConnection: close\r\nContent-Length: "
                      + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
    assert client.get("/namespaces/big_body").status_code == 200


def test_pipelined_requests_past_the_bound_together_are_each_served(client: httpx.Client,
                                                                     server: RunningServer) -> None:
    one = get("/namespaces/db/tables/t", b"X-Pad: " + b"v" * 400 + b"\r\n\r\n")
    count = 2 * MAX_HEAD_BYTES // len(one) + 1  # sent in one write, more bytes than one head may have
    last = get("/namespaces/db/tables/t", b"Connection: close\r\n\r\n")
    answer = exchange(server, one * count + last)
    assert answer.count(b"HTTP/1.1 200 ") == count + 1
    assert b"HTTP/1.1 431" not in answer
