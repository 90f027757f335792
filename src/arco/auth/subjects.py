"""From catalog state to the engine's inputs: the caller as a :class:`Subject`, an entry as a :class:`Securable`."""

from __future__ import annotations

from arco.auth.decisions import Securable, Subject, can_reach_tables
from arco.auth.principals import Principal
from arco.catalog.model import CatalogEntry, NamespaceEntry, NamespacePath, TableEntry
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


def may_look_up_tables(state: CatalogState, principal: Principal, catalog: CatalogEntry,
                       namespace: NamespacePath) -> bool:
    """Whether a lookup of a table in ``namespace`` may be answered, found or not (:func:`can_reach_tables`):
    false only where the namespace exists and the caller may neither use it nor administer the metastore (a
    missing namespace is the service's to answer). Iceberg REST, Unity Catalog and the web UI ask it alike."""
    if catalog.id not in state.catalogs or not state.has_namespace(catalog.id, namespace):
        return True
    return can_reach_tables(subject_of(state, principal), securable(state, "catalog", state.catalogs[catalog.id]),
                            securable(state, "schema", state.namespace(catalog.id, namespace)))
