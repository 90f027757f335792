"""Paged and refreshable Delta Sharing answers, and sealed tokens (pure rules)."""

from __future__ import annotations

import pytest

from arco.auth.sealed import BadToken, seal, unseal
from arco.sharing import paging, protocol
from arco.sharing.errors import SharingError

KEY = b"k" * 32
NOW = 1_700_000_000_000
LINES = [b"protocol\n", b"metadata\n", *(f"file {i}\n".encode() for i in range(5))]
QUERY = paging.checksum({"predicateHints": None, "version": None})


def test_sealed_tokens_open_only_with_their_key_and_purpose() -> None:
    token = seal(KEY, {"a": 1}, b"one")
    assert unseal(KEY, token, b"one") == {"a": 1}
    for key, purpose in ((KEY, b"two"), (b"x" * 32, b"one")):
        with pytest.raises(BadToken, match="signature"):
            unseal(key, token, purpose)
    payload, _, mac = token.partition(".")
    forged = seal(b"x" * 32, {"a": 2}, b"one").partition(".")[0]
    for bad in (f"{forged}.{mac}", payload, "", "é.é", "a" * 9000, 5, f"{payload}.{mac}x"):
        with pytest.raises(BadToken):
            unseal(KEY, bad, b"one")


def test_pages_repeat_the_head_and_cut_the_rest() -> None:
    first = paging.cut(LINES, paging.Paging(max_files=2))
    assert first.lines == [*LINES[:2], *LINES[2:4]] and first.next_start == 2
    last = paging.cut(LINES, paging.Paging(max_files=2, start=4))
    assert last.lines == [*LINES[:2], LINES[6]] and last.next_start is None
    exact = paging.cut(LINES, paging.Paging(max_files=5))
    assert exact.lines == LINES and exact.next_start is None
    rest = paging.cut(LINES, paging.Paging(start=3))  # a later page without maxFiles: all that is left
    assert rest.lines == [*LINES[:2], *LINES[5:]] and rest.next_start is None


def test_a_page_token_brings_back_its_pin_and_position_for_its_own_query_only() -> None:
    token = paging.page_token(KEY, table_id="t1", reader="acme", query=QUERY, pin=paging.Pin(7, 9), start=4,
                              now_ms=NOW)
    at = paging.read_page_token(KEY, token, table_id="t1", reader="acme", query=QUERY, now_ms=NOW + 1)
    assert (at.start, at.pin) == (4, paging.Pin(7, 9))
    refusals = {"another table": dict(table_id="t2", reader="acme", query=QUERY, now_ms=NOW),
                "another recipient": dict(table_id="t1", reader="other", query=QUERY, now_ms=NOW),
                "other parameters": dict(table_id="t1", reader="acme", query="changed", now_ms=NOW),
                "expired": dict(table_id="t1", reader="acme", query=QUERY,
                                now_ms=NOW + paging.PAGE_TOKEN_LIFETIME_MS)}
    for why, where in refusals.items():
        with pytest.raises(SharingError) as refused:
            paging.read_page_token(KEY, token, **where)
        assert refused.value.status == 400, why
    refresh = paging.refresh_token(KEY, table_id="t1", reader="acme", version=7, now_ms=NOW)
    with pytest.raises(SharingError, match="not a token"):  # a refresh token is no page token
        paging.read_page_token(KEY, refresh, table_id="t1", reader="acme", query=QUERY, now_ms=NOW)


def test_a_refresh_token_pins_its_version_for_its_table_and_recipient() -> None:
    token = paging.refresh_token(KEY, table_id="t1", reader="acme", version=7, now_ms=NOW)
    assert paging.read_refresh_token(KEY, token, table_id="t1", reader="acme", now_ms=NOW) == paging.Pin(7)
    for table_id, reader, now in (("t2", "acme", NOW), ("t1", "x", NOW),
                                  ("t1", "acme", NOW + paging.REFRESH_TOKEN_LIFETIME_MS)):
        with pytest.raises(SharingError):
            paging.read_refresh_token(KEY, token, table_id=table_id, reader=reader, now_ms=now)


@pytest.mark.parametrize("raw", [0, -1, "x", 1.5, True, [], "0"])
def test_max_files_must_be_a_positive_integer(raw: object) -> None:
    with pytest.raises(SharingError, match="maxFiles"):
        paging.max_files(raw)


def test_max_files_is_capped_and_read_from_query_strings() -> None:
    assert paging.max_files("3") == 3 and paging.max_files(None) is None
    assert paging.max_files(10**9) == paging.MAX_PAGE_FILES


@pytest.mark.parametrize(("body", "message"), [
    ({"version": 1, "includeRefreshToken": True}, "includeRefreshToken cannot"),
    ({"startingVersion": 1, "refreshToken": "x"}, "refreshToken cannot"),
    ({"pageToken": "x", "includeRefreshToken": True}, "first page"),
    ({"pageToken": "x", "refreshToken": "y"}, "first page"),
    ({"pageToken": 5}, "pageToken"),
    ({"refreshToken": ""}, "refreshToken"),
    ({"idempotencyKey": "k" * 300}, "idempotencyKey"),
    ({"idempotencyKey": 7}, "idempotencyKey"),
    ({"maxFiles": 0}, "maxFiles"),
])
def test_query_bodies_refuse_what_the_reference_server_refuses(body: dict[str, object], message: str) -> None:
    with pytest.raises(SharingError, match=message):
        protocol.query_body(body)


def test_a_query_body_keeps_paging_out_of_what_it_asks() -> None:
    first = protocol.query_body({"predicateHints": ["a = 1"], "maxFiles": 2, "includeRefreshToken": True})
    later = protocol.query_body({"predicateHints": ["a = 1"], "maxFiles": 3, "pageToken": "t"})
    assert first.params() == later.params() and first.max_files == 2 and later.page_token == "t"
    assert protocol.query_body({"predicateHints": ["a = 2"]}).params() != first.params()
