"""The bootstrap admin: the first principal of a warehouse, whose token is set or generated at start-up.

``ARCO_ADMIN_TOKEN=<t>`` makes ``<t>`` a token of the bootstrap admin for that server process. Without it, the
first server to start on a warehouse generates a token, stores only its hash in the warehouse (created with a
create-only write, so two servers starting at once cannot both do it) and hands the token to its caller to print
once. Later starts find the hash and print nothing secret.
"""

from __future__ import annotations

import time

import orjson

from arco.auth.tokens import hash_token, new_token
from arco.storage.base import DoesNotExist, StorageBackend

BOOTSTRAP_ADMIN_KEY = "_catalog/auth/bootstrap-admin.json"


def ensure_bootstrap_admin(storage: StorageBackend, env_token: str | None) -> str | None:
    """Make sure the warehouse has a bootstrap admin token; return a newly generated one (to print once) or None."""
    if env_token or read_stored_admin_hash(storage) is not None:
        # An operator who sets the token wants exactly that token; do not mint a second secret behind their back.
        return None
    token = new_token()
    record = {"token_sha256": hash_token(token), "created_at_ms": int(time.time() * 1000)}
    if storage.put(BOOTSTRAP_ADMIN_KEY, orjson.dumps(record), DoesNotExist()).ok:
        return token
    return None  # another server created it first; its token is the one that was printed


def rotate_bootstrap_admin(storage: StorageBackend) -> str:
    """Replace the stored bootstrap admin token with a new one and return it (the old one stops working)."""
    token = new_token()
    record = {"token_sha256": hash_token(token), "created_at_ms": int(time.time() * 1000)}
    storage.put(BOOTSTRAP_ADMIN_KEY, orjson.dumps(record))
    return token


def read_stored_admin_hash(storage: StorageBackend) -> str | None:
    found = storage.get_or_none(BOOTSTRAP_ADMIN_KEY)
    if found is None:
        return None
    return str(orjson.loads(found.data)["token_sha256"])
