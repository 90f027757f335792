"""Generate Temporary Table Credential: read-only cloud credentials for a shared table's directory.

Instead of a pre-signed URL per file, a recipient whose engine reads the Delta log itself may ask for a short-lived
credential scoped to the table's directory (the same scoped credentials Unity Catalog vends, :mod:`arco.vending`,
read-only, minted with the role of the storage credential behind an external table's location). Direct access
reads everything under the directory: every version of the log, every partition. So it is offered only for a Delta
table the share shares whole (with its history, from its first version, without a partition filter); for any
other, the answer is 403 and the query API, which applies those limits, is the way in. A warehouse on a local
directory has no cloud credential to give: 501.

Table listings and the table's metadata say which way each table may be read (``accessModes``): ``url`` always,
and ``dir`` with the table's ``location`` where this endpoint would vend for it (:func:`directory_access`).
Without it a client assumes URL access only, and the protocol asks a server that offers directory access to say
so.
"""

from __future__ import annotations

from typing import Any

from arco.catalog import locations
from arco.catalog.storage_roles import table_role
from arco.catalog.store import CatalogStore
from arco.sharing.errors import SharingError, bad_request, forbidden, malformed
from arco.sharing.history import history_shared
from arco.sharing.table_reads import SharedTable
from arco.storage.urls import within
from arco.unity.credentials import vend
from arco.vending.model import Access
from arco.vending.vendor import CredentialVendor


def directory_access(vendor: CredentialVendor, t: SharedTable, role: str | None) -> dict[str, Any]:
    """The fields a listing gives ``t`` (``role``: :func:`~arco.catalog.storage_roles.table_role`): ``accessModes``,
    and the table's root as ``location`` where the recipient may read the directory itself (the protocol asks
    for it then, and only then is the storage location of any use to the recipient)."""
    if t.table.format != "DELTA" or _limits(t) or not vendor.offers(t.table.location, role):
        return {"accessModes": ["url"]}
    return {"location": locations.canonical(t.table.location), "accessModes": ["url", "dir"]}


def _limits(t: SharedTable) -> list[str]:
    """Why direct access would show the recipient more than the share does (empty: it would not)."""
    return [what for what, limited in (
        ("its history is not shared", not history_shared(t.obj)),
        ("it is shared from a later version", bool(t.obj.get("start_version"))),
        ("it is shared with a partition filter", bool(t.obj.get("partition_specification")))) if limited]


def table_credentials(store: CatalogStore, vendor: CredentialVendor, t: SharedTable, body: Any,
                      recipient: str) -> dict[str, Any]:
    """``{"credentials": {...}}`` for the table's location, or for ``body["location"]`` inside it."""
    if body is not None and not isinstance(body, dict):
        raise malformed("the request body must be a JSON object")
    shown = f"{t.share.name}.{t.schema}.{t.name}"
    root = locations.canonical(t.table.location)
    target = root
    asked = (body or {}).get("location")
    if asked is not None:
        if not isinstance(asked, str):
            raise bad_request("location must be a string")
        try:
            target = locations.canonical(asked)
        except locations.LocationRefused as exc:
            raise bad_request(str(exc)) from None
        if not within(target, root):
            raise forbidden(f"{asked} is not a location of the shared table {shown}")
    if t.table.format != "DELTA":
        raise bad_request(f"{shown} is not a Delta table: read it through the query API")
    limits = _limits(t)
    if limits:
        raise forbidden(f"direct access to the files of {shown} is not offered because {' and '.join(limits)}: "
                        "read it through the query API")
    with store.read() as state:
        role = table_role(state, t.table)
    credential = vend(vendor, target, Access.READ, f"recipient:{recipient}", role, error=SharingError,
                      hint="; read the table through the query API")
    if credential is None:
        raise SharingError(501, "NOT_IMPLEMENTED", f"{shown} is on a local directory, which has no cloud credentials: "
                                                   "read it through the query API")
    return {"credentials": credential.sharing()}
