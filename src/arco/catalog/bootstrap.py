"""What a new warehouse starts with, made the same way by ``arco serve``, by every CLI command that opens a
warehouse, and by the application itself: the bootstrap admin's token, the default catalog ``main`` and the
primary metastore. Each step is idempotent and safe against concurrent first starts (create-only writes and
Tier 1 operations validated against the state they land on), so calling this on every start costs a few reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from arco.auth.bootstrap import ensure_bootstrap_admin
from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.catalog.catalogs import ensure_default_catalog
from arco.catalog.store import CatalogStore
from arco.catalog.warehouse_format import ensure_format
from arco.storage.base import StorageBackend


@dataclass(frozen=True)
class Initialised:
    store: CatalogStore
    generated_admin_token: str | None  # made by this call: the caller prints it, once
    metastore_id: str


def initialise_warehouse(storage: StorageBackend, *, env_token: str | None = None, admin_token: bool = True,
                         store: CatalogStore | None = None, admin_token_if_new: bool = False) -> Initialised:
    """Make sure the warehouse has its bootstrap admin token (unless ``admin_token`` is False, or ``env_token`` is
    the operator's own), the catalog ``main`` (only on an empty catalog log) and the primary metastore.

    ``admin_token_if_new``: make the token only for a warehouse this call found new. A CLI command opening a
    warehouse whose servers run with ``ARCO_ADMIN_TOKEN`` (so none is stored) then leaves it so, instead of minting
    a second admin secret behind the operator's back (``arco admin-token --rotate`` makes one on purpose)."""
    from arco.unity.metastore import ensure_primary_metastore

    ensure_format(storage)  # before a byte is read or written in a form this version may not know
    store = store or CatalogStore(storage)
    new = ensure_default_catalog(store, owner=BOOTSTRAP_ADMIN.name)  # first: it only acts on an empty catalog log
    metastore_id = ensure_primary_metastore(store)
    wanted = admin_token and (new or not admin_token_if_new)
    generated = ensure_bootstrap_admin(storage, env_token, store) if wanted else None
    return Initialised(store, generated, metastore_id)
