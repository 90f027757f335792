"""Request bodies (pure ASGI, no server): a body that stops arriving is refused after a pause, not waited for."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.requests import Request

from arco.api import requests
from arco.api.requests import BodyError, read_json


def stalled_request(first: bytes) -> Request:
    """A request whose body's first part arrives and whose next part never does."""
    parts = [{"type": "http.request", "body": first, "more_body": True}]

    async def receive() -> dict[str, Any]:
        if parts:
            return parts.pop()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    scope = {"type": "http", "method": "POST", "path": "/x", "headers": [(b"content-length", b"100")],
             "query_string": b""}
    return Request(scope, receive)


def test_a_body_that_stops_arriving_is_refused_after_the_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requests, "BODY_IDLE_S", 0.05)
    with pytest.raises(BodyError) as refused:
        asyncio.run(read_json(stalled_request(b'{"a": '), 1000))
    assert refused.value.status == 408 and "no part of the request body arrived" in refused.value.message


def test_a_whole_body_is_read() -> None:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b'{"a": 1}', "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/x", "headers": [], "query_string": b""}
    assert asyncio.run(read_json(Request(scope, receive), 1000)) == {"a": 1}
