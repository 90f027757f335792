"""Sealed tokens (pure): a JSON object and its HMAC-SHA256 under a warehouse key, ``<payload>.<mac>``.

What a server hands a client to bring back later (an OAuth2 access token; a Delta Sharing file URL, page token or
refresh token) is sealed, so that any server of the warehouse can trust what comes back without keeping state, and
a client cannot bend it to another principal, file, table, version or time. ``purpose`` is mixed into the MAC: a
token made for one purpose never opens another, even where the fields would parse.

A token that travels further than its client (a Delta Sharing file URL, handed to an engine's workers and written
to their logs) is sealed *privately* (:func:`seal_private`): its fields are encrypted (AES-GCM, under a key derived
from the warehouse key) before the MAC, so the token tells nobody the storage path or the recipient it names.
"""

from __future__ import annotations

import base64
import functools
import hmac
import os
from typing import Any

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

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
    return _fields(_checked_payload(key, token, purpose))


_NONCE_BYTES = 12


def seal_private(key: bytes, fields: dict[str, Any], purpose: bytes = b"") -> str:
    """As :func:`seal`, with the fields encrypted: the token's holder learns nothing from it."""
    nonce = os.urandom(_NONCE_BYTES)
    payload = b64(nonce + _cipher(key).encrypt(nonce, orjson.dumps(fields), None))
    return f"{payload}.{_mac(key, purpose, payload)}"


def unseal_private(key: bytes, token: object, purpose: bytes = b"") -> dict[str, Any]:
    """The fields of a :func:`seal_private` token, or :class:`BadToken`."""
    payload = _checked_payload(key, token, purpose)
    try:
        sealed = unb64(payload)
    except ValueError:
        raise BadToken("malformed") from None
    try:
        plain = _cipher(key).decrypt(sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:], None)
    except (InvalidTag, ValueError):  # a MAC that holds over a payload not made here: the key's, so never
        raise BadToken("signature") from None
    return _fields_of(plain)


@functools.lru_cache(maxsize=8)
def _cipher(key: bytes) -> AESGCM:
    """AES-256-GCM under a key of its own, derived from the warehouse key (never the MAC's key itself)."""
    return AESGCM(hmac.digest(key, b"arco sealed-token encryption", "sha256"))


def _checked_payload(key: bytes, token: object, purpose: bytes) -> str:
    payload, mac = _parts(token)
    # Compared as seal() spells it: a base64 decoder ignores the last character's two spare bits, so comparing
    # decoded bytes would take four spellings of one MAC.
    try:
        matches = hmac.compare_digest(_mac(key, purpose, payload), mac)
    except (TypeError, UnicodeEncodeError):  # not ASCII
        raise BadToken("malformed") from None
    if not matches:
        raise BadToken("signature")
    return payload


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
        return _fields_of(unb64(payload))
    except ValueError:
        raise BadToken("malformed") from None


def _fields_of(data: bytes) -> dict[str, Any]:
    try:
        fields = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise BadToken("malformed") from None
    if not isinstance(fields, dict):
        raise BadToken("malformed")
    return fields
