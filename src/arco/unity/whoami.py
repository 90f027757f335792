"""Who the caller is: UC's user info (``/userinfo/me``, ``/userinfo/mygroups``) and SCIM ``Me``, which the
Databricks SDK's ``current_user.me()`` calls."""

from __future__ import annotations

from typing import Any

from arco.auth.principals import Principal
from arco.auth.subjects import subject_of
from arco.catalog.access import ACCOUNT_USERS
from arco.catalog.store import CatalogStore


def my_info(store: CatalogStore, caller: Principal) -> dict[str, Any]:
    with store.read() as state:
        return {"is_metastore_admin": subject_of(state, caller).metastore_admin}


def my_groups(store: CatalogStore, caller: Principal) -> dict[str, Any]:
    with store.read() as state:
        groups = [state.principals[g].name if g in state.principals else g for g in state.groups_of(caller.name)]
    return {"group_name": sorted(groups, key=lambda g: (g != ACCOUNT_USERS, g.casefold()))}


def scim_me(store: CatalogStore, caller: Principal) -> dict[str, Any]:
    with store.read() as state:
        entry = state.principals.get(caller.name.casefold())
        groups = sorted(state.groups_of(caller.name))
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "id": entry.id if entry else caller.name, "userName": caller.name,
        "displayName": (entry.display_name if entry else None) or caller.name, "active": True,
        "emails": [{"value": caller.name, "primary": True}] if "@" in caller.name else [],
        "groups": [{"display": g, "value": g} for g in groups],
    }
