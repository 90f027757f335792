"""Turn a bearer token into a principal.

The stored bootstrap hash is re-read at most every few seconds when an unknown token arrives, so a token
rotated by the CLI takes effect on running servers without a restart, and a flood of bad tokens costs no
storage reads beyond that.
"""

from __future__ import annotations

import threading
import time

from arco.auth.bootstrap import read_stored_admin_hash
from arco.auth.identity import principal_for_token
from arco.auth.principals import BOOTSTRAP_ADMIN, Principal
from arco.auth.tokens import hash_token
from arco.catalog.store import CatalogStore
from arco.storage.base import StorageBackend

REFRESH_INTERVAL_S = 5.0


class Authenticator:
    def __init__(self, storage: StorageBackend, env_token_hashes: frozenset[str], stored_hash: str | None,
                 extra: dict[str, Principal] | None = None, store: CatalogStore | None = None) -> None:
        self._storage = storage
        self._store = store  # personal access tokens and OAuth2 tokens live in the catalog log
        self._env_hashes = env_token_hashes
        self._extra = dict(extra or {})  # token hash -> principal, for in-process callers (the pipeline)
        self._stored_hash = stored_hash
        self._checked_at = time.monotonic()
        self._lock = threading.Lock()

    def authenticate(self, token: str) -> Principal | None:
        digest = hash_token(token)
        if digest in self._env_hashes or digest == self._stored_hash:
            return BOOTSTRAP_ADMIN
        if digest in self._extra:
            return self._extra[digest]
        if self._store is not None:
            # A fresh read: a token revoked on any server stops working on the next request here.
            with self._store.read() as state:
                principal = principal_for_token(state, token)
            if principal is not None:
                return principal
        if self._refresh() and digest == self._stored_hash:
            return BOOTSTRAP_ADMIN
        return None

    def _refresh(self) -> bool:
        with self._lock:
            if time.monotonic() - self._checked_at < REFRESH_INTERVAL_S:
                return False
            self._checked_at = time.monotonic()
        self._stored_hash = read_stored_admin_hash(self._storage)
        return True
