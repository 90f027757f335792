"""Metastores and workspaces: which tenant of the warehouse a request works in (pure, no I/O).

A warehouse holds one or more metastores. The first, the *primary*, is made when the warehouse is; the catalogs
and named securables that carry no ``metastore_id`` are its. More come from ``createMetastore``, each with
catalogs, storage credentials, external locations, shares, recipients and providers of its own (names are unique
per metastore). Users, groups, service principals and tokens are account-level: one set for all metastores.

    securable "metastore"  name = the metastore id; owner = its metastore admin; fields: name, storage_root,
                           Delta Sharing settings, ``primary`` on the first one
    securable "workspace"  name = the workspace id; fields: metastore_id (None: unassigned),
                           default_catalog_name

A request works in a workspace (:mod:`arco.api.auth` says which) and so in the metastore assigned to it.
Workspace 0, the one clients get when they name none, is assigned to the primary metastore until someone
assigns it elsewhere; every other workspace has no metastore until one is assigned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arco.catalog.errors import InvalidRequestError, NotEmptyError, NotFoundError
from arco.catalog.securables import SecurableEntry, securable_key

DEFAULT_WORKSPACE = 0
DEFAULT_CATALOG_NAME = "main"
# The securable types that live inside one metastore (the others, "metastore" and "workspace", are account-level).
METASTORE_SCOPED = ("storage_credential", "external_location", "share", "recipient", "provider")


class MetastoreNotAssigned(NotFoundError):
    def __init__(self, workspace_id: int) -> None:
        super().__init__("metastore", f"(none is assigned to workspace {workspace_id})")
        self.workspace_id = workspace_id


@dataclass(frozen=True)
class Tenant:
    """The metastore a request works in: its entry, and the scope its catalogs and securables are kept under."""

    entry: SecurableEntry

    @property
    def id(self) -> str:
        return self.entry.name

    @property
    def primary(self) -> bool:
        return bool(self.entry.fields.get("primary"))

    @property
    def scope(self) -> str | None:
        """The ``metastore_id`` stored on the catalogs and securables of this metastore (None for the primary)."""
        return None if self.primary else self.entry.name

    @property
    def owner(self) -> str:
        return self.entry.owner


class TenancyState:
    """The tenancy part of :class:`arco.catalog.state.CatalogState` (mixed in)."""

    securables: dict[tuple[str, str, str], SecurableEntry]
    primary_metastore_id: str | None
    catalogs: dict[str, Any]
    grants: dict[tuple[str, str], dict[str, list[str]]]

    def metastore_entry(self, metastore_id: str) -> SecurableEntry:
        found = self.securables.get(securable_key("metastore", metastore_id))
        if found is None:
            raise NotFoundError("metastore", metastore_id)
        return found

    def tenant(self, metastore_id: str) -> Tenant:
        return Tenant(self.metastore_entry(metastore_id))

    def primary_tenant(self) -> Tenant | None:
        if self.primary_metastore_id is None:
            return None
        return self.tenant(self.primary_metastore_id)

    def assignment(self, workspace_id: int) -> tuple[str | None, str]:
        """(metastore id or None when unassigned, default catalog name) of a workspace."""
        entry = self.securables.get(securable_key("workspace", str(workspace_id)))
        if entry is not None:
            return entry.fields.get("metastore_id"), entry.fields.get("default_catalog_name", DEFAULT_CATALOG_NAME)
        if workspace_id == DEFAULT_WORKSPACE:
            return self.primary_metastore_id, DEFAULT_CATALOG_NAME
        return None, DEFAULT_CATALOG_NAME

    def tenant_of_workspace(self, workspace_id: int) -> Tenant:
        """The metastore a workspace works in; :class:`MetastoreNotAssigned` if it has none."""
        metastore_id, _ = self.assignment(workspace_id)
        if metastore_id is None or securable_key("metastore", metastore_id) not in self.securables:
            raise MetastoreNotAssigned(workspace_id)
        return self.tenant(metastore_id)

    def tenant_or_none(self, workspace_id: int) -> Tenant | None:
        try:
            return self.tenant_of_workspace(workspace_id)
        except MetastoreNotAssigned:
            return None

    def metastore_contents(self, tenant: Tenant) -> list[str]:
        """What a metastore still holds (its catalogs and named securables), for deleteMetastore without force."""
        scope = tenant.scope or ""
        held = [f"catalog {c.name}" for c in self.catalogs.values() if (c.metastore_id or "") == scope]
        held += [f"{t.replace('_', ' ')} {e.name}" for (t, m, _), e in self.securables.items()
                 if m == scope and t in METASTORE_SCOPED]
        return sorted(held)


# -- the operation that removes a metastore (catalog removal itself lives in arco.catalog.state) ---------------


def check_drop_metastore(state: Any, op: dict[str, Any]) -> None:
    tenant = state.tenant(op["metastore_id"])
    if tenant.primary:
        raise InvalidRequestError(f"metastore {tenant.id} is the warehouse's primary metastore and cannot be deleted")
    contents = state.metastore_contents(tenant)
    if contents and not op.get("force"):
        raise NotEmptyError("metastore", tenant.id, ", ".join(contents[:10]) + (" ..." if len(contents) > 10 else ""))


def apply_drop_metastore(state: Any, op: dict[str, Any], remove_catalog: Any) -> None:
    metastore_id = op["metastore_id"]
    for catalog in [c for c in state.catalogs.values() if c.metastore_id == metastore_id]:
        remove_catalog(state, catalog)
    dropped = [k for k in state.securables if k[1] == metastore_id] + [securable_key("metastore", metastore_id)]
    for key in dropped:
        entry = state.securables.pop(key)
        state.grants.pop((entry.type, entry.id), None)
    state.grants.pop(("metastore", metastore_id), None)
    for (kind, _, _), entry in state.securables.items():
        if kind == "workspace" and entry.fields.get("metastore_id") == metastore_id:
            entry.fields = {**entry.fields, "metastore_id": None}
