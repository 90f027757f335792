"""Sealed tokens (pure): a JSON object and its HMAC-SHA256 under a warehouse key, ``<payload>.<mac>``.

What a server hands a client to bring back later (an OAuth2 access token; a Delta Sharing file URL, page token or
refresh token) is sealed, so that any server of the warehouse can trust what comes back without keeping state, and
a client cannot bend it to another principal, file, table, version or time. ``purpose`` is mixed into the MAC: a
token made for one purpose never opens another, even where the fields would parse.
"""

from __future__ import annotations

import base64
import hmac
from typing import Any

import orjson

MAX_TOKEN = 8192


class BadToken(ValueError):
    """A token that is malformed (``reason == "malformed"``) or whose MAC does not match (``"signature"``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, purpose: bytes, payload: str) -> str:
    # hmac.digest is the one-shot C path: a query answer seals one URL per file.
    return b64(hmac.digest(key, purpose + payload.encode(), "sha256"))


def seal(key: bytes, fields: dict[str, Any], purpose: bytes = b"") -> str:
    payload = b64(orjson.dumps(fields))
    return f"{payload}.{_mac(key, purpose, payload)}"


def unseal(key: bytes, token: object, purpose: bytes = b"") -> dict[str, Any]:
    """The fields a token was sealed with, or :class:`BadToken`; the MAC is compared in constant time."""
    payload, mac = _parts(token)
    # Compared as seal() spells it: a base64 decoder ignores the last character's two spare bits, so comparing
    # decoded bytes would take four spellings of one MAC.
    try:
        matches = hmac.compare_digest(_mac(key, purpose, payload), mac)
    except (TypeError, UnicodeEncodeError):  # not ASCII
        raise BadToken("malformed") from None
    if not matches:
        raise BadToken("signature")
    return _fields(payload)


def unverified_fields(token: object) -> dict[str, Any]:
    """The fields a token states, before its MAC is checked (to find which key checks it), or :class:`BadToken`."""
    return _fields(_parts(token)[0])


def _parts(token: object) -> tuple[str, str]:
    if not isinstance(token, str) or len(token) > MAX_TOKEN:
        raise BadToken("malformed")
    payload, dot, mac = token.partition(".")
    if not dot or not payload or not mac:
        raise BadToken("malformed")
    return payload, mac


def _fields(payload: str) -> dict[str, Any]:
    try:
        fields = orjson.loads(unb64(payload))
    except (ValueError, orjson.JSONDecodeError):
        raise BadToken("malformed") from None
    if not isinstance(fields, dict):
        raise BadToken("malformed")
    return fields
