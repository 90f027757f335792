"""Paged and refreshable query answers (pure): ``maxFiles`` / ``pageToken`` and ``includeRefreshToken`` /
``refreshToken``, as Delta Sharing's reference server serves them.

A query's first page fixes what every later page reads (a :class:`Pin`: the snapshot's version, or the last
version of a change range), so the pages of one query always come from one table state, whatever is committed
meanwhile. The pin, the query's other parameters (by checksum), the table, the recipient and the position travel
in a sealed page token (:mod:`arco.auth.sealed`): any server of the warehouse serves the next page, nothing is
kept, and a token cannot be bent to another table, version or query. A refresh token pins the version of a
latest-snapshot query, so the client can ask for fresh file URLs of the very files it was given.

Each page repeats the protocol and metadata lines; the lines after them are cut into pages of at most
``maxFiles``, and a page with more to come ends with an EndStreamAction carrying ``nextPageToken``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from arco.auth.sealed import BadToken, seal, unseal
from arco.sharing.errors import bad_request

PAGE_TOKEN_LIFETIME_MS = 3 * 24 * 3600 * 1000  # as the reference server's default
REFRESH_TOKEN_LIFETIME_MS = 3600 * 1000
MAX_PAGE_FILES = 10_000  # a larger maxFiles is served in pages of this size ("the server may return fewer")
_PAGE = b"delta-sharing-page\x00"
_REFRESH = b"delta-sharing-refresh\x00"


@dataclass(frozen=True)
class Pin:
    """What the first answer read: the snapshot ``version``, and for a change range its ``ending`` version."""

    version: int | None = None
    ending: int | None = None


@dataclass(frozen=True)
class Paging:
    """A request's paging: at most ``max_files`` lines after the head (None: one page), from ``start``."""

    max_files: int | None = None
    start: int = 0
    pin: Pin | None = None  # from the page token: the first page's


@dataclass(frozen=True)
class Page:
    lines: list[bytes]
    next_start: int | None  # where the next page starts, if there is one


def checksum(params: dict[str, Any]) -> str:
    """The query's parameters other than paging, as the page token remembers them."""
    return hashlib.sha256(orjson.dumps(params, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def max_files(raw: Any) -> int | None:
    """``maxFiles`` from a body (an integer) or a query string (its text): positive, else 400."""
    if raw is None:
        return None
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw) if len(raw.strip()) <= 20 else MAX_PAGE_FILES  # any more digits: past the cap anyway
    if not isinstance(raw, int) or isinstance(raw, bool) or raw <= 0:
        raise bad_request("maxFiles must be a positive integer")
    return min(raw, MAX_PAGE_FILES)


def cut(lines: list[bytes], paging: Paging) -> Page:
    """One page of an answer: its two head lines, then the rest from ``start``, at most ``max_files`` of them."""
    head, body = lines[:2], lines[2:]
    if paging.max_files is None:
        return Page([*head, *body[paging.start:]], None)
    end = paging.start + paging.max_files
    return Page([*head, *body[paging.start:end]], end if end < len(body) else None)


def page_token(key: bytes, *, table_id: str, reader: str, query: str, pin: Pin, start: int, now_ms: int) -> str:
    return seal(key, {"t": table_id, "r": reader, "q": query, "v": pin.version, "e": pin.ending, "i": start,
                      "x": now_ms + PAGE_TOKEN_LIFETIME_MS}, _PAGE)


def read_page_token(key: bytes, token: Any, *, table_id: str, reader: str, query: str, now_ms: int) -> Paging:
    """Where a page token says the next page starts, and what the first page read; 400 for a token this query
    did not hand out (another table, recipient or set of parameters), a tampered or an expired one."""
    fields = _open(key, token, _PAGE, "pageToken")
    if fields.get("t") != table_id or fields.get("r") != reader:
        raise bad_request("pageToken was not issued for this table")
    if fields.get("q") != query:
        raise bad_request("pageToken belongs to a query with other parameters: the parameters of a query cannot "
                          "change between its pages")
    _check_expiry(fields, now_ms, "pageToken")
    start, version, ending = fields.get("i"), fields.get("v"), fields.get("e")
    if not _whole(start) or not (version is None or _whole(version)) or not (ending is None or _whole(ending)):
        raise bad_request("pageToken is malformed")
    return Paging(start=start, pin=Pin(version, ending))


def refresh_token(key: bytes, *, table_id: str, reader: str, version: int, now_ms: int) -> str:
    return seal(key, {"t": table_id, "r": reader, "v": version, "x": now_ms + REFRESH_TOKEN_LIFETIME_MS}, _REFRESH)


def read_refresh_token(key: bytes, token: Any, *, table_id: str, reader: str, now_ms: int) -> Pin:
    """The version a refresh token pins; 400 for a token of another table or recipient, tampered or expired."""
    fields = _open(key, token, _REFRESH, "refreshToken")
    if fields.get("t") != table_id or fields.get("r") != reader:
        raise bad_request("refreshToken was not issued for this table")
    _check_expiry(fields, now_ms, "refreshToken")
    if not _whole(fields.get("v")):
        raise bad_request("refreshToken is malformed")
    return Pin(version=fields["v"])


def _open(key: bytes, token: Any, purpose: bytes, field: str) -> dict[str, Any]:
    try:
        return unseal(key, token, purpose)
    except BadToken:
        raise bad_request(f"{field} is not a token this server issued") from None


def _check_expiry(fields: dict[str, Any], now_ms: int, field: str) -> None:
    expires = fields.get("x")
    if not _whole(expires) or expires <= now_ms:
        raise bad_request(f"{field} has expired: start the query again")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
