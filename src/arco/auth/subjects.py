"""From catalog state to the engine's inputs: the caller as a :class:`Subject`, an entry as a :class:`Securable`."""

from __future__ import annotations

from arco.auth.decisions import Securable, Subject
from arco.auth.principals import Principal
from arco.catalog.model import CatalogEntry, NamespaceEntry, TableEntry
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.tenancy import Tenant

METASTORE_OWNER = "admin"  # the bootstrap admin owns the primary metastore; account admins are metastore admins too

SECURABLE_TYPES = {"catalog": CatalogEntry, "schema": NamespaceEntry, "table": TableEntry}


def subject_of(state: CatalogState, principal: Principal) -> Subject:
    """The caller, as a metastore admin or not of the metastore its workspace works in."""
    groups = state.groups_of(principal.name)
    tenant = state.tenant_or_none(principal.workspace_id)
    admin = tenant is not None and _administers(principal, groups, tenant)
    return Subject(principal.name, groups, metastore_admin=admin or principal.is_account_admin,
                   account_admin=principal.is_account_admin)


def admins_metastore(state: CatalogState, principal: Principal, tenant: Tenant) -> bool:
    """Whether ``principal`` is an admin of ``tenant``, whichever workspace it called from."""
    return principal.is_account_admin or _administers(principal, state.groups_of(principal.name), tenant)


def subject_in(state: CatalogState, name: str, metastore_id: str | None) -> Subject:
    """A principal as a subject of one metastore (a metastore admin or not of that one): for decisions made
    without a request of theirs, such as what a share's owner may still share."""
    groups = state.groups_of(name)
    scope = metastore_id or state.primary_metastore_id
    tenant = state.tenant(scope) if scope is not None else None
    admin = tenant is not None and _administers(Principal(name), groups, tenant)
    return Subject(name, groups, metastore_admin=admin, account_admin=False)


def _administers(principal: Principal, groups: frozenset[str], tenant: Tenant) -> bool:
    """A metastore's admins: its owner, or the members of the group that owns it."""
    owner = tenant.owner.casefold()
    return principal.name.casefold() == owner or owner in groups


def securable(state: CatalogState, securable_type: str,
              entry: CatalogEntry | NamespaceEntry | TableEntry | SecurableEntry) -> Securable:
    return Securable(entry.owner, state.grants_on(securable_type, entry.id))


def metastore(state: CatalogState, tenant: Tenant) -> Securable:
    return Securable(tenant.owner, state.grants_on("metastore", tenant.id))
