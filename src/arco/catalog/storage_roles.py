"""Which role a table's (or any path's) storage credentials are minted with (pure).

An external location names the storage credential that reaches it; when that is an AWS role, everything vended
for a path inside the location is minted with that role, so it can allow no more than the role does (a read-only
role makes read-only credentials, whatever the grant). Managed storage is reached with the server's own role
(None), also where a catalog's managed root lies inside an external location. Every API that vends (Iceberg REST,
Unity Catalog's temporary credentials, Delta Sharing) asks here."""

from __future__ import annotations

from arco.catalog import locations
from arco.catalog.model import TableEntry
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.storage.urls import BadLocation, normalize, within


def table_role(state: CatalogState, entry: TableEntry) -> str | None:
    """The role a table's credentials are minted with: the server's (None) for a managed table, else that of the
    storage credential behind the external location the table lies in."""
    return None if entry.managed else external_role(state, entry.location,
                                                    state.catalogs[entry.catalog_id].metastore_id)


def location_role(state: CatalogState, location: str, metastore_id: str | None) -> str | None:
    """The role for a table at ``location`` that Tier 1 may not hold yet (a create, a staged create): the server's
    inside managed storage, else the role behind the external location it lies in."""
    try:
        url = normalize(location)
    except BadLocation:
        return None
    if any(within(url, claim.url) for claim in locations.managed_root_claims(state)):
        return None
    return external_role(state, url, metastore_id)


def external_role(state: CatalogState, location: str, metastore_id: str | None) -> str | None:
    """The role behind the external location ``location`` lies in (None: the server's)."""
    return role_of(state, locations.containing_external_location(state, locations.canonical(location),
                                                                 metastore_id))


def role_of(state: CatalogState, location: SecurableEntry | None) -> str | None:
    """The IAM role of the storage credential behind an external location, if it is an AWS role."""
    if location is None:
        return None
    try:
        credential = state.securable("storage_credential", location.fields.get("credential_name", ""),
                                     location.metastore_id)
    except Exception:  # noqa: BLE001 - a location whose credential is gone vends with the server's role
        return None
    return (credential.fields.get("details") or {}).get("role_arn") if credential.fields.get("kind") == \
        "aws_iam_role" else None
