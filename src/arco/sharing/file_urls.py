"""Signed, expiring URLs to single files (pure apart from the key's storage).

A recipient has no storage credentials and no Arco principal: for a local warehouse Arco itself serves each file
it lists, at ``<external url>/delta-sharing/files/<payload>.<mac>``. The payload names exactly one storage URL
and an expiry; the MAC (HMAC-SHA256 under a key kept in the warehouse) makes the pair unforgeable, so the URL
needs no bearer token and cannot be bent to another file or a later time. The payload is encrypted
(:func:`arco.auth.sealed.seal_private`): the URL does not tell whoever it is passed to where the warehouse lies,
the table's id or the recipient's name.

The key is created once, create-only, under ``_catalog/`` so that every server of the warehouse signs and
verifies with the same secret; it is never derived from anything public.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

from arco.auth.sealed import BadToken, seal_private, unseal_private
from arco.storage.base import DoesNotExist, StorageBackend

KEY_PATH = "_catalog/sharing/url-signing-key"
FILES_PATH = "/delta-sharing/files/"
EXPIRY_PROBE = "file:///"  # signing this tells a signer's expiry without naming a real file


class BadSignedUrl(ValueError):
    """A file token that is malformed, tampered with or expired: answered 403."""


@dataclass(frozen=True)
class FileGrant:
    url: str  # the storage URL of the one file this token opens
    expires_ms: int
    reader: tuple[str, ...] | None = None  # recipient, share, schema, table, table id: whom the URL was made for


def sign(key: bytes, url: str, expires_ms: int, reader: tuple[str, ...] | None = None) -> str:
    """The token for one file until ``expires_ms``; ``reader`` (signed with it) names whom it was made for, so
    that the download can be audited per recipient without any state on the file path."""
    fields: dict[str, object] = {"u": url, "e": expires_ms}
    if reader is not None:
        fields["r"] = list(reader)
    return seal_private(key, fields)


def verify(key: bytes, token: str, now_ms: int) -> FileGrant:
    """The file a token opens, or :class:`BadSignedUrl`."""
    try:
        fields = unseal_private(key, token)
    except BadToken as exc:
        raise BadSignedUrl("the file URL's signature does not match" if exc.reason == "signature"
                           else "malformed file token") from None
    try:
        reader = fields.get("r")
        grant = FileGrant(str(fields["u"]), int(fields["e"]),
                          tuple(str(x) for x in reader) if isinstance(reader, list) and len(reader) == 5 else None)
    except (ValueError, TypeError, KeyError):
        raise BadSignedUrl("malformed file token") from None
    if grant.expires_ms <= now_ms:
        raise BadSignedUrl("the file URL has expired")
    return grant


class SigningKey:
    """The warehouse's URL-signing key, read (or created, once for all servers) on first use."""

    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage
        self._key: bytes | None = None
        self._lock = threading.Lock()

    def get(self) -> bytes:
        with self._lock:
            if self._key is None:
                self._key = self._load()
            return self._key

    def _load(self) -> bytes:
        existing = self.storage.get_or_none(KEY_PATH)
        if existing is None:
            # Create-only: two servers racing both end up with whichever key landed first.
            self.storage.put(KEY_PATH, secrets.token_bytes(32).hex().encode(), DoesNotExist())
            existing = self.storage.get(KEY_PATH)
        return bytes.fromhex(existing.data.decode().strip())
