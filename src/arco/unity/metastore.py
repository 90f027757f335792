"""The primary metastore: made with the warehouse, with an id that stays the same for every server.

Its id is kept in a small record written create-only (so concurrent first starts agree on it), and its entry in
Tier 1 (owner, settings, the ``primary`` mark; :mod:`arco.catalog.tenancy`) is made on the first start after that.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from arco.auth.subjects import METASTORE_OWNER
from arco.catalog.securables import securable_key
from arco.catalog.state import CatalogState, Operation
from arco.catalog.store import CatalogStore
from arco.storage.base import DoesNotExist, StorageBackend

METASTORE_KEY = "_catalog/unity/metastore.json"


def _record(storage: StorageBackend) -> dict[str, Any]:
    found = storage.get_or_none(METASTORE_KEY)
    if found is not None:
        return orjson.loads(found.data)
    record = {"metastore_id": str(uuid.uuid4()), "name": "arco", "created_at": int(time.time() * 1000)}
    if storage.put(METASTORE_KEY, orjson.dumps(record), DoesNotExist()).ok:
        return record
    return orjson.loads(storage.get(METASTORE_KEY).data)  # another server made it first


def ensure_primary_metastore(store: CatalogStore) -> str:
    """The primary metastore's id, after making sure Tier 1 holds its entry (one write, on a first start)."""
    record = _record(store.storage)
    metastore_id = str(record["metastore_id"])

    def build(state: CatalogState) -> Operation:
        entry = state.securables.get(securable_key("metastore", metastore_id))
        if entry is None:
            return {"op": "create_securable", "id": str(uuid.uuid4()), "type": "metastore", "name": metastore_id,
                    "owner": METASTORE_OWNER, "comment": record.get("name", "arco"),
                    "fields": {"primary": True, "storage_root": store.storage.url.rstrip("/"),
                               "created_at": record["created_at"]}}
        if not entry.fields.get("primary"):  # made by an updateMetastore before metastores were tenants
            return {"op": "update_securable", "type": "metastore", "name": metastore_id,
                    "fields": {"primary": True, "storage_root": store.storage.url.rstrip("/"),
                               "created_at": record["created_at"]}}
        raise _Done

    with store.read() as state:
        if state.primary_metastore_id == metastore_id:
            return metastore_id
    try:
        store.execute(build, principal=METASTORE_OWNER)
    except _Done:
        pass
    return metastore_id


class _Done(Exception):
    pass
