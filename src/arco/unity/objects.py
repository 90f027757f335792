"""What volumes, functions and registered models share: finding one by its full name, its parents' grants,
input checks in UC's error shape, and ``tables/{name}/exists``.

Tier 1 keeps them as schema-level securables (:mod:`arco.catalog.schema_objects`); a securable type's grants are
stored under ``(type, object id)`` like every other securable's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arco.auth import decisions as can
from arco.auth.decisions import Securable, Subject
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog.errors import NotFoundError
from arco.catalog.model import CatalogEntry, NamespaceEntry
from arco.catalog.schema_objects import object_key_name, schema_object
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.unity.common import denied, split_full_name, uc_name, usable_catalog
from arco.unity.errors import UnityError, invalid
from arco.unity.infos import drop_none

WORDS = {"volume": "Volume", "function": "Function", "registered_model": "Registered model",
         "model_version": "Model version"}


def not_found(kind: str, name: str) -> UnityError:
    return UnityError(404, "RESOURCE_DOES_NOT_EXIST", f"{WORDS.get(kind, kind)} '{name}' does not exist.")


@dataclass(frozen=True)
class Place:
    """A schema and its catalog: where a schema-level object lives."""

    catalog: CatalogEntry
    schema: NamespaceEntry

    def prefix(self) -> str:
        return f"{self.catalog.name}.{self.schema.path[-1]}"

    def parents(self, state: CatalogState) -> tuple[Securable, Securable]:
        return securable(state, "catalog", self.catalog), securable(state, "schema", self.schema)


def place(state: CatalogState, caller: Principal, catalog_name: Any, schema_name: Any) -> Place:
    catalog = usable_catalog(state, caller, uc_name("catalog", catalog_name))
    return Place(catalog, state.namespace(catalog.id, (uc_name("schema", schema_name),)))


def find(state: CatalogState, caller: Principal, kind: str, full_name: str,
         gated: bool = True) -> tuple[Place, SecurableEntry]:
    """The ``kind`` object named ``catalog.schema.name`` in the caller's metastore (404 in UC's shape if not).
    ``gated=False``: also for one who may not use the schema (the Permissions API, which decides for itself, as it
    does for tables: a principal reads its own grants there)."""
    catalog_name, schema_name, name = split_full_name(full_name, 3, kind.replace("registered_", ""))
    where = place(state, caller, catalog_name, schema_name)
    try:
        found = schema_object(state, kind, where.schema.id, name.lower(), where.catalog.metastore_id)
    except NotFoundError:
        found = None
    # One who may not use the schema is refused alike whether the object exists or not (its owner excepted), as
    # for a table: a 404 or an operation's own refusal would tell which names exist.
    who = subject_of(state, caller)
    if gated and not can.can_reach_tables(who, *where.parents(state)) and not (
            found is not None and can.owns(who, securable(state, kind, found))):
        raise denied(caller, f"use schema {where.prefix()} (needs USE_CATALOG and USE_SCHEMA)")
    if found is None:
        raise not_found(kind, full_name)
    return where, found


def full_name_of(state: CatalogState, entry: SecurableEntry) -> tuple[str, str, str]:
    schema = state.namespaces[entry.fields["schema_id"]]
    return state.catalogs[schema.catalog_id].name, schema.path[-1], entry.fields["name"]


def key_name(where: Place, name: str) -> str:
    return object_key_name(where.schema.id, name)


def check(state: CatalogState, caller: Principal, where: Place, allowed: Any, what: str, needs: str) -> Subject:
    """``allowed(subject, catalog, schema)`` or 403 naming what was refused."""
    who = subject_of(state, caller)
    if not allowed(who, *where.parents(state)):
        raise denied(caller, f"{what} in {where.prefix()} (needs {needs})")
    return who


# -- input checks ----------------------------------------------------------------------------------------------


def text(body: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise invalid(f"{key} is required")
        return None
    if not isinstance(value, str) or (required and not value):
        raise invalid(f"{key} must be a {'non-empty ' if required else ''}string")
    return value


def boolean(body: dict[str, Any], key: str) -> bool:
    value = body.get(key)
    if not isinstance(value, bool):
        raise invalid(f"{key} is required and must be a boolean")
    return value


def choice(body: dict[str, Any], key: str, allowed: tuple[str, ...], *, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or value.upper() not in allowed:
        raise invalid(f"{key} must be one of {list(allowed)}, got {value!r}")
    return value.upper()


def new_name(body: dict[str, Any], kind: str, current: str) -> str | None:
    raw = body.get("new_name")
    if raw is None or raw == "":
        return None
    name = uc_name(kind, raw)
    return None if name == current else name


def common_info(state: CatalogState, entry: SecurableEntry, id_key: str) -> dict[str, Any]:
    catalog_name, schema_name, name = full_name_of(state, entry)
    catalog = state.catalogs[state.namespaces[entry.fields["schema_id"]].catalog_id]
    return drop_none({
        "name": name, "catalog_name": catalog_name, "schema_name": schema_name,
        "full_name": f"{catalog_name}.{schema_name}.{name}", "comment": entry.comment or None, "owner": entry.owner,
        "metastore_id": catalog.metastore_id or state.primary_metastore_id, id_key: entry.id,
        "created_at": entry.created_at_ms, "created_by": entry.created_by or entry.owner,
        "updated_at": entry.updated_at_ms, "updated_by": entry.updated_by or entry.owner,
    })


def usable(state: CatalogState, caller: Principal, where: Place, kind: str, entry: SecurableEntry,
           privilege: str) -> bool:
    """Whether the caller may use ``entry`` (USE_CATALOG, USE_SCHEMA and ``privilege``, or ownership)."""
    return can.can_use_object(subject_of(state, caller), *where.parents(state), securable(state, kind, entry),
                              privilege)


def page_in_schema(store: Any, caller: Principal, kind: str, privilege: str, catalog_name: Any, schema_name: Any,
                   max_results: Any, token: str | None,
                   render: Any) -> tuple[list[dict[str, Any]], str | None]:
    """One page of a schema's ``kind`` objects that the caller may use, rendered; listing needs USE_CATALOG and
    USE_SCHEMA."""
    from arco.catalog.paging import page
    from arco.catalog.schema_objects import objects_in_schema
    from arco.unity.common import page_size

    if not catalog_name or not schema_name:
        raise invalid("catalog_name and schema_name are both required")
    with store.read() as state:
        where = place(state, caller, catalog_name, schema_name)
        check(state, caller, where, can.can_list_in_schema, f"list {kind}s", "USE_CATALOG and USE_SCHEMA")
        visible = [e for e in objects_in_schema(state, where.schema.id, kind)
                   if usable(state, caller, where, kind, e, privilege)]
        chunk, next_token = page(visible, lambda e: e.fields["name"].casefold(), token, page_size(max_results),
                                 plain=str.casefold)
        return [render(state, e) for e in chunk], next_token


# -- tables/{full_name}/exists ---------------------------------------------------------------------------------


def table_exists(store: Any, full_name: str, caller: Principal) -> dict[str, bool]:
    """``{"table_exists": bool}``. A missing catalog or schema is a 404, as for getTable; the caller must be
    allowed to see the table (or, when there is none, to use the schema): otherwise 403, as in UC."""
    catalog_name, schema_name, name = split_full_name(full_name, 3)
    with store.read() as state:
        where = place(state, caller, catalog_name, schema_name)
        try:
            table = state.table(where.catalog.id, (where.schema.path[-1],), name)
        except NotFoundError:
            table = None
        target = securable(state, "table", table) if table is not None else None
        if not can.can_see_table_exists(subject_of(state, caller), *where.parents(state), target):
            raise denied(caller, f"see whether {full_name} exists (needs USE_CATALOG, USE_SCHEMA and, for an "
                                 "existing table, SELECT or ownership)")
        return {"table_exists": table is not None}
