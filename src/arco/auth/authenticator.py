"""Turn a bearer token into a principal.

Every token but ``ARCO_ADMIN_TOKEN`` (fixed per process) and in-process callers' is checked against a fresh view
of Tier 1: the same one freshness check (one storage read that finds no new log entry, in the common case) that
the request's handler makes anyway, shared by concurrent requests. So a personal access token revoked, or a
bootstrap admin token rotated, on any server or from the CLI stops working on the next request of every server.

Warehouses whose admin token hash is only in ``_catalog/auth/bootstrap-admin.json`` (never rotated since Tier 1
records it) fall back to that file, re-read at most every few seconds when an unknown token arrives.
"""

from __future__ import annotations

import threading
import time

from arco.auth.bootstrap import admin_hash_in, read_stored_admin_hash
from arco.auth.identity import principal_for_token
from arco.auth.oauth_tokens import PREFIX as OAUTH_PREFIX
from arco.auth.oauth_tokens import SigningKeys
from arco.auth.principals import BOOTSTRAP_ADMIN, Principal
from arco.auth.tokens import hash_token
from arco.catalog.store import CatalogStore
from arco.storage.base import StorageBackend

REFRESH_INTERVAL_S = 5.0


class Authenticator:
    def __init__(self, storage: StorageBackend, env_token_hashes: frozenset[str], stored_hash: str | None,
                 extra: dict[str, Principal] | None = None, store: CatalogStore | None = None) -> None:
        self._storage = storage
        self._store = store  # personal access tokens, OAuth2 tokens and the admin token's hash live in Tier 1
        self._env_hashes = env_token_hashes
        self._extra = dict(extra or {})  # token hash -> principal, for in-process callers (the pipeline)
        self._stored_hash = stored_hash
        self._checked_at = time.monotonic()
        self._lock = threading.Lock()
        self.oauth_keys = SigningKeys(storage)  # verifies (and the OAuth endpoint signs) stateless OAuth tokens

    def authenticate(self, token: str) -> Principal | None:
        digest = hash_token(token)
        if digest in self._env_hashes:
            return BOOTSTRAP_ADMIN
        if digest in self._extra:
            return self._extra[digest]
        if self._store is None:
            return BOOTSTRAP_ADMIN if digest == self._stored_hash or (self._refresh() and
                                                                      digest == self._stored_hash) else None
        # A fresh read: a token revoked or rotated on any server stops working on the next request here.
        if token.startswith(OAUTH_PREFIX):
            with self._store.read() as state:
                return self.oauth_keys.authenticate(state, token)
        with self._store.read() as state:
            admin_hash = admin_hash_in(state)
            principal = principal_for_token(state, token) if digest != admin_hash else None
        if admin_hash is not None:
            return BOOTSTRAP_ADMIN if digest == admin_hash else principal
        if principal is not None:
            return principal
        if digest == self._stored_hash or (self._refresh() and digest == self._stored_hash):
            return BOOTSTRAP_ADMIN
        return None

    def _refresh(self) -> bool:
        with self._lock:
            if time.monotonic() - self._checked_at < REFRESH_INTERVAL_S:
                return False
            self._checked_at = time.monotonic()
        self._stored_hash = read_stored_admin_hash(self._storage)
        return True
