"""Temporary table and path credentials: the endpoints and their authorization.

A local-directory warehouse needs no credentials: the answer names the location and carries none. For object
storage, vending short-lived scoped credentials is not built yet, and the answer says so (501) instead of handing
out the server's own keys.
"""

from __future__ import annotations

import time
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog.store import CatalogStore
from arco.unity.service import tenant_of
from arco.unity.errors import UnityError, invalid

TABLE_OPERATIONS = {"READ": can.can_read_table, "READ_WRITE": can.can_modify_table}
PATH_OPERATIONS = {"PATH_READ", "PATH_READ_WRITE", "PATH_CREATE_TABLE"}
LIFETIME_MS = 3600 * 1000


def _answer(location: str) -> dict[str, Any]:
    if location.startswith("file:") or location.startswith("/"):
        return {"expiration_time": int(time.time() * 1000) + LIFETIME_MS, "url": location}
    raise UnityError(501, "NOT_IMPLEMENTED", f"credential vending is not configured for this storage ({location}): "
                                             "give readers their own storage credentials for now")


def table_credentials(store: CatalogStore, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
    operation = str(body.get("operation") or "").upper()
    rule = TABLE_OPERATIONS.get(operation)
    if rule is None:
        raise invalid(f"operation must be one of {sorted(TABLE_OPERATIONS)}")
    table_id = body.get("table_id")
    with store.read() as state:
        entry = state.tables.get(str(table_id))
        # A table of another metastore is not there for this caller: its admins are not this one's.
        if entry is None or state.catalogs[entry.catalog_id].metastore_id != tenant_of(state, caller).scope:
            raise UnityError(404, "TABLE_DOES_NOT_EXIST", f"Table with id '{table_id}' does not exist.")
        catalog = state.catalogs[entry.catalog_id]
        schema = state.namespace(catalog.id, entry.namespace)
        if not rule(subject_of(state, caller), securable(state, "catalog", catalog),
                    securable(state, "schema", schema), securable(state, "table", entry)):
            raise UnityError(403, "PERMISSION_DENIED", f"{caller.name} may not {operation} table "
                                                       f"{catalog.name}.{'.'.join(entry.namespace)}.{entry.name}")
    return _answer(entry.location)


def path_credentials(store: CatalogStore, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
    operation = str(body.get("operation") or "").upper()
    if operation not in PATH_OPERATIONS:
        raise invalid(f"operation must be one of {sorted(PATH_OPERATIONS)}")
    url = body.get("url")
    if not isinstance(url, str) or "://" not in url:
        raise invalid("url must be an absolute storage URL")
    with store.read() as state:
        if not can.admin(subject_of(state, caller)):
            raise UnityError(403, "PERMISSION_DENIED", "path credentials need an external location grant, and "
                                                       "external locations are not served yet: ask an admin")
    return _answer(url)
