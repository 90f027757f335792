"""The Permissions API: who holds which privileges on a metastore, catalog, schema, table, volume, function,
registered model, storage credential or external location.

PATCH applies incremental changes (add/remove per principal) as one Tier 1 operation, so two administrators
granting on one securable at once both land; PUT (2.0's replacePermissions) replaces the whole list.
"""

from __future__ import annotations

from typing import Any

from arco.auth import decisions as can
from arco.auth.decisions import InvalidPrivilege, Securable, check_privileges
from arco.auth.principals import Principal
from arco.auth.subjects import metastore, securable, subject_of
from arco.catalog.access import ACCOUNT_USERS
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.unity.common import catalog_in, split_full_name, tenant_of
from arco.unity.errors import UnityError, invalid

TYPES = {"metastore", "catalog", "schema", "table", "storage_credential", "external_location", "volume", "function",
         "registered_model"}
SCHEMA_OBJECTS = {"volume", "function", "registered_model"}  # arco.catalog.schema_objects

ALIASES = {"credential": "storage_credential", "model": "registered_model"}  # the OSS 2.1 names


def normalize_type(raw: str) -> str:
    kind = raw.lower().replace("-", "_")
    kind = ALIASES.get(kind, kind)
    if kind not in TYPES:
        raise invalid(f"unknown securable type {raw!r}; one of {sorted(TYPES)}")
    return kind


def resolve(state: CatalogState, kind: str, full_name: str, caller: Principal) -> tuple[str, str, Securable]:
    """(the type grants are stored under, the securable's id, its owner and grants), in the caller's metastore."""
    from arco.unity import objects

    tenant = tenant_of(state, caller)
    if kind == "metastore":
        if full_name != tenant.id:
            raise UnityError(404, "METASTORE_DOES_NOT_EXIST", f"Metastore '{full_name}' is not the metastore of "
                                                              f"workspace {caller.workspace_id} ({tenant.id}).")
        return kind, tenant.id, metastore(state, tenant)
    if kind in ("storage_credential", "external_location"):
        named = state.securable(kind, full_name, tenant.scope)
        return kind, named.id, securable(state, kind, named)
    if kind in SCHEMA_OBJECTS:
        try:
            _, found = objects.find(state, caller, kind, full_name)
        except UnityError:
            if kind != "function":
                raise
            # Databricks names a registered model's securable type FUNCTION: fall back to a model of that name.
            kind = "registered_model"
            _, found = objects.find(state, caller, kind, full_name)
        return kind, found.id, securable(state, kind, found)
    if kind == "catalog":
        entry: Any = catalog_in(state, caller, full_name)
    elif kind == "schema":
        catalog_name, schema_name = split_full_name(full_name, 2)
        entry = state.namespace(catalog_in(state, caller, catalog_name).id, (schema_name,))
    else:
        catalog_name, schema_name, name = split_full_name(full_name, 3)
        entry = state.table(catalog_in(state, caller, catalog_name).id, (schema_name,), name)
    return kind, entry.id, securable(state, kind, entry)


def assignments(state: CatalogState, grants: dict[str, list[str]], only: str | None) -> dict[str, Any]:
    rows = []
    for key, privileges in sorted(grants.items()):
        if only is not None and key != only.casefold():
            continue
        found = state.principals.get(key)
        rows.append({"principal": found.name if found else key, "privileges": sorted(privileges)})
    return {"privilege_assignments": rows}


class PermissionsService:
    def __init__(self, store: CatalogStore) -> None:
        self.store = store

    def get(self, raw_type: str, full_name: str, only: str | None, caller: Principal) -> dict[str, Any]:
        kind = normalize_type(raw_type)
        with self.store.read() as state:
            _, _, target = resolve(state, kind, full_name, caller)
            if not can.can_read_grants(subject_of(state, caller), target, only):
                raise UnityError(403, "PERMISSION_DENIED", "Only admin users or the owner of the securable can read "
                                                           "other users' permissions.")
            return assignments(state, dict(target.grants), only)

    def update(self, raw_type: str, full_name: str, body: dict[str, Any], caller: Principal, *,
               replace: bool = False) -> dict[str, Any]:
        kind = normalize_type(raw_type)
        changes = self._changes(kind, body, replace)
        found: dict[str, str] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            stored, securable_id, target = resolve(state, kind, full_name, caller)
            if stored != kind:  # a registered model named as FUNCTION: its privileges are checked as a model's
                self._changes(stored, body, replace)
            if not can.can_manage_grants(subject_of(state, caller), target):
                raise UnityError(403, "PERMISSION_DENIED", f"{caller.name} may not change permissions on "
                                                           f"{stored} {full_name}: only its owner or an admin may.")
            for change in changes:
                if change["principal"].casefold() != ACCOUNT_USERS and \
                        change["principal"].casefold() not in state.principals:
                    raise invalid(f"principal {change['principal']!r} does not exist")
            found.update(kind=stored, id=securable_id)
            return {"op": "update_grants", "securable_type": stored, "securable_id": securable_id,
                    "changes": changes, "replace": replace}

        self.store.execute(build, principal=caller.name)
        with self.store.read() as state:
            return assignments(state, dict(state.grants_on(found["kind"], found["id"])), None)

    @staticmethod
    def _changes(kind: str, body: dict[str, Any], replace: bool) -> list[dict[str, Any]]:
        raw = body.get("privilege_assignments") if replace else body.get("changes")
        if not isinstance(raw, list):
            raise invalid("'privilege_assignments' must be a list" if replace else "'changes' must be a list")
        changes = []
        for item in raw:
            if not isinstance(item, dict) or not isinstance(item.get("principal"), str) or not item["principal"]:
                raise invalid("every change needs a 'principal'")
            try:
                add = check_privileges(kind, item.get("privileges" if replace else "add") or [])
                remove = [] if replace else check_privileges(kind, item.get("remove") or [])
            except InvalidPrivilege as exc:
                raise invalid(str(exc)) from None
            changes.append({"principal": item["principal"], "add": add, "remove": remove})
        return changes
