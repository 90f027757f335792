"""The metastore: one per warehouse, with an id that stays the same for every server (made once, create-only)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import orjson

from arco.storage.base import DoesNotExist, StorageBackend

METASTORE_KEY = "_catalog/unity/metastore.json"


def ensure_metastore(storage: StorageBackend) -> dict[str, Any]:
    found = storage.get_or_none(METASTORE_KEY)
    if found is not None:
        return orjson.loads(found.data)
    record = {"metastore_id": str(uuid.uuid4()), "name": "arco", "created_at": int(time.time() * 1000)}
    if storage.put(METASTORE_KEY, orjson.dumps(record), DoesNotExist()).ok:
        return record
    return orjson.loads(storage.get(METASTORE_KEY).data)  # another server made it first
