"""The Permissions API: who holds which privileges on a metastore, catalog, schema, table, volume, function,
registered model, storage credential or external location.

PATCH applies incremental changes (add/remove per principal) as one Tier 1 operation, so two administrators
granting on one securable at once both land; PUT (2.0's replacePermissions) replaces the whole list.

Privileges are stored as granted, and read back in the spelling the reader's API speaks (:func:`spelled`): the
2.1 spec's enum (``USE CATALOG``, which the OSS client's models validate against) on the 2.1 paths, Databricks'
(``USE_CATALOG``, the only one the Databricks SDKs parse) to those SDKs, and as granted on 2.0's paths. Both
clients call the same 2.1 path, so it is the reader, not the path alone, that decides; a grant made by one reads
back correctly in the other.
"""

from __future__ import annotations

from typing import Any, Literal

from arco.auth import decisions as can
from arco.auth.decisions import PRIVILEGES, InvalidPrivilege, Securable, canonical, check_privileges
from arco.auth.principals import Principal
from arco.auth.subjects import metastore, securable, subject_of
from arco.catalog.access import ACCOUNT_USERS
from arco.catalog.errors import NotFoundError
from arco.catalog.paging import page
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.unity.common import catalog_in, denied, split_full_name, tenant_of
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
    tenant = tenant_of(state, caller)
    if kind == "metastore":
        # By its id, or by the word itself, as the reference server names the one metastore it serves.
        if full_name != tenant.id and full_name.casefold() != "metastore":
            raise UnityError(404, "METASTORE_DOES_NOT_EXIST", f"Metastore '{full_name}' is not the metastore of "
                                                              f"workspace {caller.workspace_id} ({tenant.id}).")
        return kind, tenant.id, metastore(state, tenant)
    if kind in ("storage_credential", "external_location"):
        named = state.securable(kind, full_name, tenant.scope)
        return kind, named.id, securable(state, kind, named)
    if kind == "catalog":
        entry: Any = catalog_in(state, caller, full_name)
        return kind, entry.id, securable(state, kind, entry)
    catalog_name = split_full_name(full_name, 2 if kind == "schema" else 3)[0]
    catalog = catalog_in(state, caller, catalog_name)  # a missing catalog is 404: catalogs are the metastore's
    try:
        kind, entry = _inside(state, caller, kind, full_name)
    except (NotFoundError, UnityError) as missing:
        if isinstance(missing, UnityError) and missing.status != 404:
            raise
        if not _may_use(state, caller, catalog):
            raise _refused(caller, catalog) from None
        raise
    found = securable(state, kind, entry)
    # What lies in a catalog the caller may not use is refused alike whether it exists or not (as
    # arco.unity.common.usable_catalog rules for every API), unless the caller owns it: grants tell no names.
    if not _may_use(state, caller, catalog) and not can.owns(subject_of(state, caller), found):
        raise _refused(caller, catalog)
    return kind, entry.id, found


def _inside(state: CatalogState, caller: Principal, kind: str, full_name: str) -> tuple[str, Any]:
    """(the type grants are stored under, the entry) of a securable inside a catalog."""
    from arco.unity import objects

    if kind in SCHEMA_OBJECTS:
        try:
            return kind, objects.find(state, caller, kind, full_name, gated=False)[1]
        except UnityError as missing:
            if kind != "function":
                raise
            # Databricks names a registered model's securable type FUNCTION: fall back to a model of that name
            # (and say the function is missing when neither is there).
            try:
                return "registered_model", objects.find(state, caller, "registered_model", full_name, gated=False)[1]
            except UnityError:
                raise missing from None
    if kind == "schema":
        catalog_name, schema_name = split_full_name(full_name, 2)
        return kind, state.namespace(catalog_in(state, caller, catalog_name).id, (schema_name,))
    catalog_name, schema_name, name = split_full_name(full_name, 3)
    return kind, state.table(catalog_in(state, caller, catalog_name).id, (schema_name,), name)


def _may_use(state: CatalogState, caller: Principal, catalog: Any) -> bool:
    return can.can_use_catalog(subject_of(state, caller), securable(state, "catalog", catalog))


def _refused(caller: Principal, catalog: Any) -> UnityError:
    return denied(caller, f"use catalog {catalog.name} (needs USE_CATALOG)")


Spelling = Literal["as_granted", "oss", "databricks"]
# The 2.1 spec's Privilege enum, the OSS clients' (spaced) spelling.
OSS_PRIVILEGES = frozenset({
    "CREATE CATALOG", "USE CATALOG", "CREATE SCHEMA", "USE SCHEMA", "CREATE TABLE", "SELECT", "MODIFY",
    "CREATE FUNCTION", "EXECUTE", "CREATE VOLUME", "READ VOLUME", "CREATE MODEL", "CREATE EXTERNAL LOCATION",
    "READ FILES", "WRITE FILES", "CREATE EXTERNAL TABLE", "CREATE EXTERNAL VOLUME", "CREATE MANAGED STORAGE",
    "CREATE STORAGE CREDENTIAL"})
# 2.0's names, as the current ones on each securable type (the 2.1 enum has neither USAGE nor CREATE).
CURRENT_NAMES = {("catalog", "USAGE"): "USE_CATALOG", ("schema", "USAGE"): "USE_SCHEMA",
                 ("catalog", "CREATE"): "CREATE_SCHEMA", ("schema", "CREATE"): "CREATE_TABLE",
                 ("metastore", "CREATE"): "CREATE_CATALOG"}


def spelling_for(path: str, user_agent: str | None) -> Spelling:
    """The spelling a reader of ``path`` parses: see the module docstring."""
    if "/api/2.0/" in path:
        return "as_granted"
    return "databricks" if "databricks-sdk" in (user_agent or "").lower() else "oss"


def spelled(kind: str, privileges: list[str], spelling: Spelling) -> list[str]:
    """``privileges`` of a ``kind`` securable as a reader with ``spelling`` reads them, sorted, each once.

    The OSS clients validate each name against the 2.1 enum, and one name outside it fails the whole answer, so
    an OSS reader gets ALL_PRIVILEGES as what it amounts to on that securable (each privilege of the type the enum
    names), and no privilege the enum cannot name (WRITE_VOLUME, APPLY_TAG, the Delta Sharing ones): the
    Databricks SDK and the 2.0 paths read them as granted."""
    if spelling == "as_granted":
        return sorted(privileges)
    out = set()
    for privilege in privileges:
        name = canonical(privilege)
        if spelling == "oss":
            names = sorted(PRIVILEGES.get(kind, ())) if name == "ALL_PRIVILEGES" else [name]
            spaced = (CURRENT_NAMES.get((kind, n), n).replace("_", " ") for n in names)
            out.update(n for n in spaced if n in OSS_PRIVILEGES)
        else:
            out.add(CURRENT_NAMES.get((kind, name), name))
    return sorted(out)


def assignments(state: CatalogState, kind: str, grants: dict[str, list[str]], only: str | None,
                spelling: Spelling = "as_granted") -> dict[str, Any]:
    rows = []
    for key, privileges in sorted(grants.items()):
        if only is not None and key != only.casefold():
            continue
        found = state.principals.get(key)
        rows.append({"principal": found.name if found else key, "privileges": spelled(kind, privileges, spelling)})
    return {"privilege_assignments": rows}


ASSIGNMENTS_PAGE = 1000


def assignment_page_size(raw: Any, field: str) -> int | None:
    """A page length of privilege assignments as Databricks defines it: none (all), 0 (the server's), or at least
    150 (so a page holds at least one principal's whole assignment), capped at the server's."""
    if raw in (None, ""):
        return None
    try:
        size = int(raw)
    except (TypeError, ValueError):
        raise invalid(f"{field} must be an integer, got {raw!r}") from None
    if size < 0 or 0 < size < 150:
        raise invalid(f"{field} must be 0 (the server's page length) or at least 150")
    return ASSIGNMENTS_PAGE if size == 0 else min(size, ASSIGNMENTS_PAGE)


class PermissionsService:
    def __init__(self, store: CatalogStore) -> None:
        self.store = store

    def get_page(self, raw_type: str, full_name: str, only: str | None, page_size: Any, token: str | None,
                 caller: Principal, spelling: Spelling) -> dict[str, Any]:
        """:meth:`get` a page at a time, each principal's assignment whole on one page: Databricks' paginated
        form (``/privilege-assignments``, which its SDK's ``grants.list`` calls)."""
        size = assignment_page_size(page_size, "page_size")
        rows = self.get(raw_type, full_name, only, caller, spelling)["privilege_assignments"]
        chunk, next_token = page(rows, lambda r: r["principal"].casefold(), token, size)
        return {"privilege_assignments": chunk, **({"next_page_token": next_token} if next_token else {})}

    def get(self, raw_type: str, full_name: str, only: str | None, caller: Principal,
            spelling: Spelling = "as_granted") -> dict[str, Any]:
        kind = normalize_type(raw_type)
        with self.store.read() as state:
            stored, _, target = resolve(state, kind, full_name, caller)
            if not can.can_read_grants(subject_of(state, caller), target, only):
                raise UnityError(403, "PERMISSION_DENIED", "Only admin users or the owner of the securable can read "
                                                           "other users' permissions.")
            return assignments(state, stored, dict(target.grants), only, spelling)

    def update(self, raw_type: str, full_name: str, body: dict[str, Any], caller: Principal, *,
               replace: bool = False, spelling: Spelling = "as_granted") -> dict[str, Any]:
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
            return assignments(state, found["kind"], dict(state.grants_on(found["kind"], found["id"])), None,
                               spelling)

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
