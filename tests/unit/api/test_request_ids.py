"""Request ids (kept when plausible, else made) and JSON log lines that carry the current request's id."""

from __future__ import annotations

import io
import logging

import orjson
import pytest

from arco.api.observability import JsonLines, incoming_request_id, request_id


def scope_with(value: bytes | None) -> dict:
    return {"headers": [(b"x-request-id", value)] if value is not None else []}


@pytest.mark.parametrize("value", [b"abc", b"4bf92f3577b34da6a3ce929d0e0e4736", b"trace.1:span-2_x", b"a" * 128])
def test_plausible_ids_are_kept(value: bytes) -> None:
    assert incoming_request_id(scope_with(value)) == value.decode()


@pytest.mark.parametrize("value", [b"", b"a" * 129, b"x" * 10_000, b"evil\x1b[31m", b"a\nb", b"a\x00", b"sp ace",
                                   b'q"uote', "\u00fcml".encode(), b"a\tb", None])
def test_missing_or_hostile_ids_are_refused(value: bytes | None) -> None:
    assert incoming_request_id(scope_with(value)) is None


def test_an_error_logged_while_serving_a_request_carries_its_id_on_one_line() -> None:
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("arco.test-json-lines")
    logger.addHandler(handler)
    logger.propagate = False
    token = request_id.set("req-1")
    try:
        try:
            raise RuntimeError("storage down\nsecond line")
        except RuntimeError:
            logger.exception("unexpected error on %s %s", "GET", "/x")
    finally:
        request_id.reset(token)
        logger.removeHandler(handler)
    lines = sink.getvalue().splitlines()
    assert len(lines) == 1  # the traceback is inside the JSON, not spread over lines
    entry = orjson.loads(lines[0])
    assert entry["request_id"] == "req-1" and entry["level"] == "error"
    assert entry["message"] == "unexpected error on GET /x" and "RuntimeError: storage down" in entry["error"]
