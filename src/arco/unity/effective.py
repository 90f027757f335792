"""Effective permissions (``GET /effective-permissions/{type}/{full_name}``), and the Permissions API for the
securable types this server added after :mod:`arco.unity.permissions`: volumes, functions, registered models.

What "effective" means here, given Arco's model (:mod:`arco.auth.decisions`: no inheritance from catalog to
schema to table, no DENY):

* Every privilege granted on the securable itself, per principal holding the grant, each as
  ``{"privilege": P}`` with no ``inherited_from_*`` (UC omits them for privileges assigned on the securable
  itself). Since no privilege flows down from a parent in Arco, none carries ``inherited_from_type`` /
  ``inherited_from_name``: reporting a catalog grant as inherited would claim access Arco does not give.
* ``principal=<p>``: what ``p`` holds, directly or through its groups. A user's (or service principal's)
  groups, nested groups and ``account users`` count; each group's grants are listed under the group's name, as
  UC lists a privilege under the principal it was granted to (its EffectivePrivilege has no field naming a
  group). A group's own groups count for a group.
* Ownership is not a privilege assignment in UC, so an owner appears only through its grants (the securable's
  ``owner`` field says who owns it; owners hold every privilege, :func:`arco.auth.decisions.holds`).
* Privilege names are the canonical underscored spellings (``USE CATALOG`` granted by an OSS client reads as
  ``USE_CATALOG``), sorted, without repeats.

Who may ask: metastore admins and the securable's owner for everyone; anyone for themselves or a group they are
in. Paging follows the Databricks rules for ``max_results`` (absent: everything; 0: the server's page; 1-149: 400).
"""

from __future__ import annotations

from typing import Any

from arco.auth import decisions as can
from arco.auth.decisions import Securable
from arco.auth.principals import Principal
from arco.auth.subjects import subject_of
from arco.catalog.access import ACCOUNT_USERS, principal_key
from arco.catalog.paging import page
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.unity import permissions as base
from arco.unity.errors import UnityError

# securable type as clients send it -> the type grants are stored under. Databricks names a registered model's
# securable type FUNCTION; the OSS spec says registered_model.
OBJECT_TYPES = {"volume": "volume", "function": "function", "registered_model": "registered_model",
                "model": "registered_model"}


def object_type(raw: str) -> str | None:
    return OBJECT_TYPES.get(raw.lower().replace("-", "_"))


def resolve(state: CatalogState, raw_type: str, full_name: str, caller: Principal) -> tuple[str, str, Securable]:
    """(stored securable type, securable id, owner and grants) of any securable the Permissions API knows."""
    return base.resolve(state, base.normalize_type(raw_type), full_name, caller)


def _rows(state: CatalogState, grants: dict[str, list[str]], holders: set[str] | None) -> list[dict[str, Any]]:
    rows = []
    for key, privileges in sorted(grants.items()):
        if holders is not None and key not in holders:
            continue
        found = state.principals.get(key)
        names = sorted({can.canonical(p) for p in privileges})
        rows.append({"principal": found.name if found else key, "privileges": names})
    return rows


def _holders(state: CatalogState, principal: str) -> set[str]:
    """``principal`` and every group whose grants reach it."""
    key = principal_key(principal)
    found = state.principals.get(key)
    groups = set(state.groups_of(principal))
    if found is not None and found.kind == "group" or key == ACCOUNT_USERS:
        groups.discard(ACCOUNT_USERS)  # account users holds every user, not every group
    return {key} | groups


class EffectivePermissions:
    def __init__(self, store: CatalogStore) -> None:
        self.store = store

    def get(self, raw_type: str, full_name: str, principal: str | None, max_results: Any, token: str | None,
            caller: Principal, size_field: str = "max_results") -> dict[str, Any]:
        size = base.assignment_page_size(max_results, size_field)
        with self.store.read() as state:
            _, _, target = resolve(state, raw_type, full_name, caller)
            if not can.can_read_effective_grants(subject_of(state, caller), target, principal):
                raise UnityError(403, "PERMISSION_DENIED", "Only admin users or the owner of the securable can read "
                                                           "other principals' effective permissions.")
            holders = _holders(state, principal) if principal else None
            rows = _rows(state, dict(target.grants), holders)
        chunk, next_token = page(rows, lambda r: r["principal"].casefold(), token, size)
        body: dict[str, Any] = {"privilege_assignments": [
            {"principal": r["principal"], "privileges": [{"privilege": p} for p in r["privileges"]]} for r in chunk]}
        if next_token:
            body["next_page_token"] = next_token
        return body
