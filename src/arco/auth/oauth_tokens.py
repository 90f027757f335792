"""Stateless OAuth2 access tokens: what ``/iceberg/v1/oauth/tokens`` issues for client credentials.

An exchange writes nothing: the token is the signed claim itself, so token traffic never grows the Tier 1 log, any
server's memory, or a cold start. ::

    arco_oat_<payload>.<signature>     payload = base64url(JSON {"sub", "kid", "iat", "exp"}), times in ms
                                       signature = base64url(HMAC-SHA256(signing key, payload))
                                       (a token sealed by :mod:`arco.auth.sealed`, with no purpose)

The signing keys live in the warehouse, ``_catalog/auth/oauth-keys/{kid}.json``, each created once with a
create-only put (two servers racing to create it agree on the winner's) and never changed, so every server can
verify every token and caches keys for good. A token is accepted while all of these hold:

* its signature verifies with the key it names, and that key is the current one: Tier 1 records the current key
  id once it has been rotated (:data:`INITIAL_KEY_ID` before), so a rotation ends every token signed before it,
  on every server at its next request;
* it has not expired (:data:`LIFETIME_S`, announced as ``expires_in``);
* it was issued after its principal's "not before" time, which Tier 1 records only when the principal's tokens
  are revoked (or its client secret is replaced);
* its principal is an active service principal.

Times come from the clocks of the servers that issue, verify and revoke, which are assumed to agree within
seconds: a token issued by a server whose clock runs ahead of the revoking one by more than the time between the
issue and the revocation outlives the revocation (rotating the key ends it regardless of clocks).
"""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from arco.auth.principals import Principal
from arco.auth.sealed import BadToken, b64, seal, unb64, unseal, unverified_fields
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.storage.base import DoesNotExist, StorageBackend

PREFIX = "arco_oat_"
LIFETIME_S = 3600
INITIAL_KEY_ID = "initial"
KEYS = "_catalog/auth/oauth-keys"
MAX_TOKEN_LENGTH = 4096
CLOCK_SKEW_MS = 60_000  # a token "issued" this far in the future (another server's clock) is still accepted


@dataclass(frozen=True)
class Claims:
    subject: str
    key_id: str
    issued_at_ms: int
    expires_at_ms: int


def sign(claims: Claims, key: bytes) -> str:
    """The token for ``claims`` (pure)."""
    return PREFIX + seal(key, {"sub": claims.subject, "kid": claims.key_id, "iat": claims.issued_at_ms,
                               "exp": claims.expires_at_ms})


def _claims(token: str, read: Callable[[str], dict[str, Any]]) -> Claims | None:
    """The claims ``read`` finds in the sealed part of a token; None if it is not shaped like one of these tokens."""
    if not token.startswith(PREFIX) or len(token) > MAX_TOKEN_LENGTH:
        return None
    try:
        fields = read(token[len(PREFIX):])
        return Claims(str(fields["sub"]), str(fields["kid"]), int(fields["iat"]), int(fields["exp"]))
    except (BadToken, KeyError, TypeError, ValueError):
        return None


def unverified_claims(token: str) -> Claims | None:
    """The claims a token states, before any check (pure); None if it is not shaped like one of these tokens."""
    return _claims(token, unverified_fields)


def check(token: str, key: bytes, now_ms: int) -> Claims | None:
    """The claims of a token whose signature verifies with ``key`` and that has not expired (pure)."""
    claims = _claims(token, lambda sealed: unseal(key, sealed))
    if claims is None:
        return None
    if claims.expires_at_ms <= now_ms or claims.issued_at_ms > now_ms + CLOCK_SKEW_MS:
        return None
    return claims


def current_key_id(state: CatalogState) -> str:
    return state.oauth_key_id or INITIAL_KEY_ID


def principal_for(state: CatalogState, claims: Claims) -> Principal | None:
    """Whether a verified token still stands in this state: current key, not revoked, principal active."""
    if claims.key_id != current_key_id(state):
        return None
    not_before = state.oauth_not_before.get(claims.subject.casefold())
    if not_before is not None and claims.issued_at_ms <= not_before:
        return None
    entry = state.principals.get(claims.subject.casefold())
    if entry is None or not entry.active or entry.kind != "service_principal":
        return None
    return Principal(name=entry.name, kind="service_principal", is_account_admin=entry.account_admin,
                     credential_expires_at_ms=claims.expires_at_ms, oauth=True)


class SigningKeys:
    """The warehouse's signing keys, created on first use and cached (they never change once written)."""

    def __init__(self, storage: StorageBackend) -> None:
        self.storage = storage
        self._keys: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def key(self, key_id: str, *, create: bool = False) -> bytes | None:
        with self._lock:
            if key_id in self._keys:
                return self._keys[key_id]
        storage_key = f"{KEYS}/{key_id}.json"
        found = self.storage.get_or_none(storage_key)
        if found is None:
            if not create:
                return None
            body = orjson.dumps({"kid": key_id, "secret": b64(secrets.token_bytes(32)),
                                 "created_at_ms": int(time.time() * 1000)})
            if not self.storage.put(storage_key, body, DoesNotExist()).ok:
                pass  # another server created it first: use theirs
            found = self.storage.get(storage_key)
        secret = unb64(orjson.loads(found.data)["secret"])
        with self._lock:
            self._keys[key_id] = secret
        return secret

    def issue(self, state: CatalogState, subject: str, now_ms: int | None = None) -> str:
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        key_id = current_key_id(state)
        key = self.key(key_id, create=True)
        assert key is not None
        return sign(Claims(subject, key_id, now_ms, now_ms + LIFETIME_S * 1000), key)

    def authenticate(self, state: CatalogState, token: str, now_ms: int | None = None) -> Principal | None:
        claims = unverified_claims(token)
        if claims is None or claims.key_id != current_key_id(state):
            return None
        key = self.key(claims.key_id)
        if key is None:
            return None
        verified = check(token, key, int(time.time() * 1000) if now_ms is None else now_ms)
        return principal_for(state, verified) if verified is not None else None


def revoke_tokens(store: CatalogStore, principal: str, *, by: str) -> None:
    """End every OAuth token issued to ``principal`` so far (one Tier 1 entry, whatever the number of tokens)."""
    store.execute(lambda state: {"op": "revoke_oauth_tokens", "subject": state.principal(principal).name},
                  principal=by)


def rotate_key(store: CatalogStore, keys: SigningKeys, *, by: str) -> str:
    """A new signing key; every token signed with an earlier one stops working. Returns the new key id."""
    key_id = uuid.uuid4().hex
    keys.key(key_id, create=True)  # written before Tier 1 names it, so every server can read it then
    store.execute(lambda state: {"op": "rotate_oauth_key", "key_id": key_id}, principal=by)
    return key_id
