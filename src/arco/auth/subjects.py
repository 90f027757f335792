"""From catalog state to the engine's inputs: the caller as a :class:`Subject`, an entry as a :class:`Securable`."""

from __future__ import annotations

from arco.auth.decisions import Securable, Subject
from arco.auth.principals import Principal
from arco.catalog.model import CatalogEntry, NamespaceEntry, TableEntry
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState

METASTORE_OWNER = "admin"  # the bootstrap admin owns the metastore; account admins are metastore admins too

SECURABLE_TYPES = {"catalog": CatalogEntry, "schema": NamespaceEntry, "table": TableEntry}


def metastore_owner(state: CatalogState) -> str:
    """The metastore's owner: the bootstrap admin unless an account admin handed it on (updateMetastore)."""
    # Every non-admin authorization asks this: a plain scan, no sorted listing (there is one metastore entry).
    return next((entry.owner for (kind, _), entry in state.securables.items() if kind == "metastore"),
                METASTORE_OWNER)


def subject_of(state: CatalogState, principal: Principal) -> Subject:
    groups = state.groups_of(principal.name)
    owner = metastore_owner(state).casefold()
    return Subject(principal.name, groups,
                   metastore_admin=principal.is_account_admin or principal.name.casefold() == owner or owner in groups,
                   account_admin=principal.is_account_admin)


def securable(state: CatalogState, securable_type: str,
              entry: CatalogEntry | NamespaceEntry | TableEntry | SecurableEntry) -> Securable:
    return Securable(entry.owner, state.grants_on(securable_type, entry.id))


def metastore(state: CatalogState, metastore_id: str) -> Securable:
    return Securable(metastore_owner(state), state.grants_on("metastore", metastore_id))
