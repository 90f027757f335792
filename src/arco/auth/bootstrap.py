"""The bootstrap admin: the first principal of a warehouse, whose token is set or generated at start-up.

``ARCO_ADMIN_TOKEN=<t>`` makes ``<t>`` a token of the bootstrap admin for that server process. Without it, the
first server (or CLI command) to initialise a warehouse generates a token, stores only its hash in the warehouse
(created with a create-only write, so two starting at once cannot both do it) and hands the token to its caller
to print once. Later starts find the hash and print nothing secret.

The hash lives in two places. ``_catalog/auth/bootstrap-admin.json`` is the record a first start creates (and
older warehouses only have). Tier 1 (the catalog log) holds it too, as a securable of type
``bootstrap_admin_token``: every server reads the log on every authenticated request anyway (that is how a revoked
personal access token stops working at once), so a rotation written there takes effect on the next request of
every server on the warehouse. Where Tier 1 has the entry, it is the truth; the file is kept in step.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import orjson

from arco.auth.tokens import hash_token, new_token
from arco.catalog.securables import securable_key
from arco.storage.base import DoesNotExist, StorageBackend

if TYPE_CHECKING:
    from arco.catalog.state import CatalogState, Operation
    from arco.catalog.store import CatalogStore

BOOTSTRAP_ADMIN_KEY = "_catalog/auth/bootstrap-admin.json"
ADMIN_TOKEN_TYPE = "bootstrap_admin_token"  # a Tier 1 securable type no API lists
ADMIN_TOKEN_NAME = "admin"
_ADMIN_KEY = securable_key(ADMIN_TOKEN_TYPE, ADMIN_TOKEN_NAME)


def ensure_bootstrap_admin(storage: StorageBackend, env_token: str | None,
                           store: CatalogStore | None = None) -> str | None:
    """Make sure the warehouse has a bootstrap admin token; return a newly generated one (to print once) or None."""
    if env_token or read_stored_admin_hash(storage) is not None:
        # An operator who sets the token wants exactly that token; do not mint a second secret behind their back.
        return None
    token = new_token()
    if not storage.put(BOOTSTRAP_ADMIN_KEY, _record(token), DoesNotExist()).ok:
        return None  # another process created it first; its token is the one that was printed
    if store is not None:
        record_admin_hash(store, hash_token(token))
    return token


def rotate_bootstrap_admin(storage: StorageBackend, store: CatalogStore | None = None) -> str:
    """Replace the bootstrap admin token with a new one and return it (the old one stops working).

    With ``store``, the new hash goes to Tier 1 first, so every server refuses the old token from its next request.
    """
    token = new_token()
    if store is not None:
        record_admin_hash(store, hash_token(token))
    storage.put(BOOTSTRAP_ADMIN_KEY, _record(token))
    return token


def record_admin_hash(store: CatalogStore, token_sha256: str) -> None:
    """Make ``token_sha256`` the bootstrap admin's token hash in Tier 1 (one log entry)."""
    fields = {"token_sha256": token_sha256}

    def build(state: CatalogState) -> Operation:
        if _ADMIN_KEY in state.securables:
            return {"op": "update_securable", "type": ADMIN_TOKEN_TYPE, "name": ADMIN_TOKEN_NAME, "fields": fields}
        return {"op": "create_securable", "id": str(uuid.uuid4()), "type": ADMIN_TOKEN_TYPE,
                "name": ADMIN_TOKEN_NAME, "owner": ADMIN_TOKEN_NAME, "comment": "the bootstrap admin's token",
                "fields": fields}

    store.execute(build, principal=ADMIN_TOKEN_NAME)


def admin_hash_in(state: CatalogState) -> str | None:
    """The bootstrap admin's token hash as Tier 1 has it (None on warehouses whose token was never recorded)."""
    entry = state.securables.get(_ADMIN_KEY)
    return None if entry is None else str(entry.fields["token_sha256"])


def read_stored_admin_hash(storage: StorageBackend) -> str | None:
    found = storage.get_or_none(BOOTSTRAP_ADMIN_KEY)
    if found is None:
        return None
    return str(orjson.loads(found.data)["token_sha256"])


def _record(token: str) -> bytes:
    return orjson.dumps({"token_sha256": hash_token(token), "created_at_ms": int(time.time() * 1000)})
