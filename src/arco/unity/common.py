"""What the services of every Unity Catalog securable share: names, full names, page sizes and the common fields
of a body as a request gives them, the caller's metastore and the catalogs in it, and the refusal they answer
with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import BOOTSTRAP_ADMIN, Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog.access import ACCOUNT_USERS, principal_key
from arco.catalog.model import CatalogEntry, TableEntry
from arco.catalog.names import MAX_NAME_LENGTH, check_name
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.catalog.tenancy import Tenant
from arco.storage.urls import same_place
from arco.unity.errors import UnityError, invalid

MAX_RESULTS = 1000


def uc_name(kind: str, raw: Any) -> str:
    return check_name(kind, raw).lower() if isinstance(raw, str) else check_name(kind, raw)


def split_full_name(full_name: str, parts: int, last: str = "table") -> list[str]:
    """The names of a full name, each one a name the catalog could hold (400 otherwise, before any lookup: a
    control or text-reordering character is refused, not echoed back in a "does not exist")."""
    names = full_name.split(".")
    kinds = ["catalog", "schema", last][:parts]
    if len(names) != parts or not all(names):
        shape = ".".join(f"<{kind}>" for kind in kinds)
        raise invalid(f"{full_name!r} is not a full name of the form {shape}")
    for kind, name in zip(kinds, names, strict=True):
        looked_up(kind, name)
    return names


def looked_up(kind: str, name: str) -> str:
    """A name to look up, refused (400) if it holds a character no name may hold; an over-long one is looked up
    and not found (404, as Iceberg REST answers it), the message cutting it short."""
    return name if len(name) > MAX_NAME_LENGTH else check_name(kind, name)


def page_size(raw: Any) -> int:
    if raw in (None, ""):
        return MAX_RESULTS
    try:
        size = int(raw)
    except (TypeError, ValueError):
        raise invalid(f"max_results must be an integer, got {raw!r}") from None
    if size < 0:
        raise invalid("max_results must not be negative")
    return MAX_RESULTS if size == 0 else min(size, MAX_RESULTS)


def tenant_of(state: CatalogState, caller: Principal) -> Tenant:
    """The metastore the caller's workspace works in (404 METASTORE_DOES_NOT_EXIST when it has none)."""
    return state.tenant_of_workspace(caller.workspace_id)


def table_by_id(state: CatalogState, caller: Principal, table_id: Any) -> TableEntry:
    """A table of the caller's metastore by id (404 TABLE_DOES_NOT_EXIST otherwise: a table of another metastore is
    not there for this caller, whose admins are not that one's)."""
    entry = state.tables.get(str(table_id))
    if entry is None or state.catalogs[entry.catalog_id].metastore_id != tenant_of(state, caller).scope:
        raise UnityError(404, "TABLE_DOES_NOT_EXIST", f"Table with id '{table_id}' does not exist.")
    return entry


def check_table(state: CatalogState, caller: Principal, entry: TableEntry, rule: Any, what: str, needs: str,
                **kwargs: Any) -> None:
    """403 unless ``rule`` (an :mod:`arco.auth.decisions` table rule) allows the caller ``what`` on the table."""
    catalog = state.catalogs[entry.catalog_id]
    schema = state.namespace(catalog.id, entry.namespace)
    if not rule(subject_of(state, caller), securable(state, "catalog", catalog), securable(state, "schema", schema),
                securable(state, "table", entry), **kwargs):
        raise denied(caller, f"{what} {catalog.name}.{'.'.join(entry.namespace)}.{entry.name} (needs {needs})")


def catalog_in(state: CatalogState, caller: Principal, name: str) -> CatalogEntry:
    """A catalog of the caller's metastore: names are unique per metastore (a name no catalog could have: 400)."""
    return state.catalog(looked_up("catalog", name), tenant_of(state, caller).scope)


def usable_catalog(state: CatalogState, caller: Principal, name: str) -> CatalogEntry:
    """:func:`catalog_in`, once the caller may use the catalog (403 otherwise): what lies inside a catalog the
    caller may not use is refused alike whether it exists or not, as the reference server and Iceberg REST answer,
    so a lookup does not tell which names exist."""
    catalog = catalog_in(state, caller, name)
    if not can.can_use_catalog(subject_of(state, caller), securable(state, "catalog", catalog)):
        raise denied(caller, f"use catalog {catalog.name} (needs USE_CATALOG)")
    return catalog


def staging_table_is_callers(state: CatalogState, caller: Principal, staged: SecurableEntry) -> bool:
    """Whether the caller may use a staging table (write its data, promote it): its creator, who owns it, or an
    admin."""
    who = subject_of(state, caller)
    return can.admin(who) or can.owns(who, securable(state, "staging_table", staged))


def denied(caller: Principal, what: str) -> UnityError:
    return UnityError(403, "PERMISSION_DENIED", f"{caller.name} may not {what}")


def changes_owner_only(body: dict[str, Any]) -> bool:
    return {k for k, v in body.items() if v is not None} <= {"owner"}


class NothingToUpdate(Exception):  # noqa: N818 - an outcome, not an error: the object is answered as it is
    """An update whose body changes nothing: nothing is written (no new ``updated_at``), as the reference server
    answers it."""


# What names the object in an ``update_schema_object`` operation (a volume, function or model), beside its changes.
SCHEMA_OBJECT_KEYS = frozenset({"op", "type", "schema_id", "name", "metastore_id"})


def check_changes(op: dict[str, Any], unchanged_keys: frozenset[str] = frozenset({"op", "id"})) -> dict[str, Any]:
    """``op`` if it changes anything beyond naming its object; else :class:`NothingToUpdate`."""
    if set(op) <= unchanged_keys:
        raise NothingToUpdate
    return op


def update_by_id(store: CatalogStore, build: Callable[[CatalogState], dict[str, Any]], principal: str) -> str:
    """Execute the update ``build`` makes (an operation naming its object by ``id``), unless it changes nothing;
    the object's id either way."""
    named: list[str] = []

    def checked(state: CatalogState) -> dict[str, Any]:
        op = build(state)
        named.append(op["id"])
        return check_changes(op)

    try:
        store.execute(checked, principal=principal)
    except NothingToUpdate:
        pass
    return named[-1]


def new_name_in(body: dict[str, Any], current: str) -> str | None:
    """A rename asked for by ``new_name`` (2.1) or by a different ``name`` (2.0's partial Info)."""
    raw = body.get("new_name")
    if raw is not None and not isinstance(raw, str):
        raise invalid("new_name must be a string")
    if raw == "":
        raise invalid("new_name cannot be empty")
    if raw:
        return raw
    name = body.get("name")
    return name if isinstance(name, str) and name and name.lower() != current.lower() else None


def properties_of(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise invalid("properties must be an object of string keys and string values")
    return dict(raw)


def refuse_relocation(body: dict[str, Any], field: str, current: str | None) -> None:
    """An update naming another storage place for a securable is refused, not ignored: its data stays where it is,
    and its storage ownership (:mod:`arco.catalog.locations`) was decided on create. The same place (a client
    sending the object back as read) is no change."""
    given = body.get(field)
    if given not in (None, "") and not same_place(given, current or ""):
        raise invalid(f"{field} cannot be changed by an update: create a new object at the new place instead")


def text_of(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise invalid(f"{key} must be a string")
    return value


def comment_of(body: dict[str, Any]) -> str | None:
    """The ``comment`` a create or update body gives, an empty one being no comment: the 2.1 spec gives comment
    ``minLength: 1``, and clients built from it (unitycatalog-client) fail to read an object answered with
    ``"comment": ""`` (a whole list_volumes fails on one such volume). So ``""`` is stored as absent, and on an
    update it clears the comment, as a null does."""
    return text_of(body, "comment") or None


def known_principal(state: CatalogState, name: str) -> bool:
    """Whether ``name`` is a user, group or service principal of the warehouse (``account users`` included),
    as a grant's principal must be; the bootstrap admin too, which owns what it made (``main`` among them) and
    is no entry of the principal list."""
    key = principal_key(name)
    return key in state.principals or key in (ACCOUNT_USERS, principal_key(BOOTSTRAP_ADMIN.name))


def owner_in(state: CatalogState, body: dict[str, Any]) -> str | None:
    """The new owner an update ``body`` asks for (None: no change), refused as a grant to the same principal is
    (400) unless it exists: an object owned by nobody could only be changed by admins after that."""
    owner = body.get("owner")
    if owner is None:
        return None
    if not isinstance(owner, str) or not owner:
        raise invalid("owner must be a non-empty string")
    if not known_principal(state, owner):
        raise invalid(f"principal {owner!r} does not exist")
    return owner


def replacing(current: dict[str, str], new: dict[str, str]) -> dict[str, Any]:
    """The update/removal operation fields that make ``current`` properties into ``new`` (PATCH replaces them)."""
    return {"updates": new, "removals": sorted(set(current) - set(new))}


def common_updates(state: CatalogState, op: dict[str, Any], entry: Any, body: dict[str, Any]) -> None:
    """The owner, comment and properties an update ``body`` changes, into the Tier 1 operation ``op``."""
    owner = owner_in(state, body)
    if owner is not None:
        op["owner"] = owner
    if "comment" in body:
        op["comment"] = comment_of(body)
    if "properties" in body and body["properties"] is not None:
        op.update(replacing(entry.properties, properties_of(body["properties"])))
