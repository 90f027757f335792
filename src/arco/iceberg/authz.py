"""The grant model on Iceberg REST: the same decisions (:mod:`arco.auth.decisions`) UC makes, 403 when denied.

Listing and loading need USAGE on the catalog and the namespace plus SELECT (or ownership) on the table; creating
needs CREATE on the namespace (on the catalog for a top-level namespace); committing needs MODIFY; dropping needs
ownership. Lists show only what the caller may see. Account admins skip every check without reading state, so
the bootstrap admin's requests cost nothing extra.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arco.auth import decisions as can
from arco.auth.decisions import Securable, Subject
from arco.auth.principals import Principal, is_pipeline
from arco.auth.subjects import may_look_up_tables, securable, subject_of
from arco.catalog.errors import NotFoundError
from arco.catalog.locations import read_only_location
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.catalog.system import is_system
from arco.iceberg.errors import Forbidden

TableRule = Callable[[Subject, Securable, Securable, Securable], bool]
# What each table action needs, said in its refusal (as Unity Catalog's refusals say it).
TABLE_NEEDS = {
    "read": "needs USE_CATALOG, USE_SCHEMA and SELECT",
    "modify": "needs USE_CATALOG, USE_SCHEMA and MODIFY",
    "drop": "needs ownership of the table, its schema or its catalog",
    "rename": "needs ownership of the table, USE_CATALOG, USE_SCHEMA and CREATE_TABLE on its schema",
}


class IcebergGuard:
    def __init__(self, store: CatalogStore) -> None:
        self.store = store

    def _deny(self, principal: Principal, what: str) -> Forbidden:
        return Forbidden(f"Forbidden: {principal.name} may not {what}")

    def catalog(self, principal: Principal, catalog: CatalogEntry) -> None:
        self._decide_now(principal, "catalog", catalog)

    def namespace(self, principal: Principal, catalog: CatalogEntry, path: NamespacePath, action: str) -> None:
        """``action``: see, create (a namespace at ``path``), update, drop."""
        self._decide_now(principal, "namespace", catalog, path, action)

    def create_table(self, principal: Principal, catalog: CatalogEntry, namespace: NamespacePath) -> None:
        self._decide_now(principal, "create_table", catalog, namespace)

    def table(self, principal: Principal, catalog: CatalogEntry, namespace: NamespacePath, name: str,
              action: str) -> None:
        """``action``: read (SELECT), modify (MODIFY), drop or rename (ownership)."""
        self._decide_now(principal, "table", catalog, namespace, name, action)

    def writable_storage(self, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> None:
        """403, for every caller, admins too, on a change to a table or view inside a read-only external location:
        each change writes a metadata file there, and the location's read-only flag says nothing is written there
        (its credentials are read-only for the same reason, :mod:`arco.unity.credentials`). A location made
        read-only after the table was created is how this happens; creating one there is refused already."""
        with self.store.read() as state:
            try:
                entry = state.table(catalog.id, namespace, name)
            except NotFoundError:
                return  # the service answers (404)
            container = read_only_location(state, entry.location, catalog.metastore_id) if entry.location else None
        if container is not None:
            raise Forbidden(f"Forbidden: {'.'.join((*namespace, name))} lies in external location {container.name}, "
                            "which is read-only, and every change writes a metadata file there: ask its owner to "
                            "make it writable (read_only false), or only read the table")

    def _decide_now(self, principal: Principal, check: str, *args: Any) -> None:
        """:meth:`decide` on the current state; account admins pass without reading it."""
        if principal.is_account_admin:
            return
        with self.store.read() as state:
            self.decide(state, principal, check, *args)

    def decide(self, state: CatalogState, principal: Principal, check: str, *args: Any) -> None:
        """The check named ``check`` (a method above) on ``state`` (pure): raises 403 where it refuses. The one
        place the decisions are made, on arrival and again on the state a change lands on (arco.catalog.landing)."""
        if principal.is_account_admin:
            return
        decision = {"catalog": self._catalog, "namespace": self._namespace, "create_table": self._create_table,
                    "table": self._table}[check]
        decision(state, principal, *args)

    def _catalog(self, state: CatalogState, principal: Principal, catalog: CatalogEntry) -> None:
        entry = state.catalogs.get(catalog.id, catalog)
        if not can.can_use_catalog(subject_of(state, principal), securable(state, "catalog", entry)):
            raise self._deny(principal, f"use catalog {catalog.name} (needs USE_CATALOG)")

    def _namespace(self, state: CatalogState, principal: Principal, catalog: CatalogEntry, path: NamespacePath,
                   action: str) -> None:
        if catalog.id not in state.catalogs:
            return  # the service answers (404)
        who = subject_of(state, principal)
        parent = securable(state, "catalog", state.catalogs[catalog.id])
        if action == "create":
            if len(path) > 1 and not state.has_namespace(catalog.id, path[:-1]):
                return  # the service answers (404)
            allowed = (can.can_create_schema(who, parent) if len(path) == 1 else
                       can.holds(who, securable(state, "schema", state.namespace(catalog.id, path[:-1])),
                                 "CREATE") and can.can_use_catalog(who, parent))
        elif not state.has_namespace(catalog.id, path):
            return  # the service answers (404, or a replayed answer for an Idempotency-Key)
        else:
            schema = securable(state, "schema", state.namespace(catalog.id, path))
            allowed = {"see": lambda: can.can_see_schema(who, parent, schema),
                       "update": lambda: can.can_update_schema(who, parent, schema, owner_only=False,
                                                               renames=False),
                       "drop": lambda: can.can_delete_schema(who, parent, schema)}[action]()
        if not allowed:
            raise self._deny(principal, f"{action} namespace {'.'.join(path)}")

    def _create_table(self, state: CatalogState, principal: Principal, catalog: CatalogEntry,
                      namespace: NamespacePath) -> None:
        if catalog.id not in state.catalogs:
            return  # the service answers (404)
        schema = state.namespace(catalog.id, namespace)
        if not can.can_create_table(subject_of(state, principal), securable(state, "catalog",
                                                                           state.catalogs[catalog.id]),
                                    securable(state, "schema", schema)):
            raise self._deny(principal, f"create tables in {'.'.join(namespace)} "
                                        "(needs USE_CATALOG, USE_SCHEMA and CREATE_TABLE)")

    def _table(self, state: CatalogState, principal: Principal, catalog: CatalogEntry, namespace: NamespacePath,
               name: str, action: str) -> None:
        rules: dict[str, TableRule] = {
            "read": can.can_read_table, "modify": can.can_modify_table, "drop": can.can_delete_table,
            "rename": lambda s, c, n, t: can.can_update_table(s, c, n, t, owner_only=False, renames=True),
        }
        args = self._table_securables(state, catalog, namespace, name)
        if args is None:
            self._reach_tables(state, principal, catalog, namespace, name, action)
        elif not rules[action](subject_of(state, principal), *args):
            raise self._deny(principal, f"{action} table {'.'.join((*namespace, name))} ({TABLE_NEEDS[action]})")

    def _reach_tables(self, state: CatalogState, principal: Principal, catalog: CatalogEntry,
                      namespace: NamespacePath, name: str, action: str) -> None:
        """For a table that is not there: 403 all the same where the caller may not use its namespace (as for one
        that is: the answer must not tell which names exist); else the service answers (404)."""
        if not may_look_up_tables(state, principal, catalog, namespace):
            raise self._deny(principal, f"{action} table {'.'.join((*namespace, name))} ({TABLE_NEEDS[action]})")

    def may_write(self, principal: Principal, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> bool:
        """Whether storage access for this table may be read-write (MODIFY), not only read (SELECT)."""
        if is_system(catalog) and not is_pipeline(principal):
            return False  # the system catalog is read-only (arco.catalog.system)
        if principal.is_account_admin:
            return True
        with self.store.read() as state:
            args = self._table_securables(state, catalog, namespace, name)
            return args is not None and can.can_modify_table(subject_of(state, principal), *args)

    @staticmethod
    def _table_securables(state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath,
                          name: str) -> tuple[Securable, Securable, Securable] | None:
        if catalog.id not in state.catalogs:
            return None  # dropped meanwhile: the service answers
        try:
            schema, table = state.namespace(catalog.id, namespace), state.table(catalog.id, namespace, name)
        except NotFoundError:
            return None  # the service answers NoSuchTable/NoSuchNamespace itself
        return (securable(state, "catalog", state.catalogs[catalog.id]), securable(state, "schema", schema),
                securable(state, "table", table))

    def visible_namespaces(self, principal: Principal, catalog: CatalogEntry,
                           paths: list[NamespacePath]) -> list[NamespacePath]:
        if principal.is_account_admin:
            return paths
        with self.store.read() as state:
            who = subject_of(state, principal)
            parent = securable(state, "catalog", state.catalogs[catalog.id])
            return [p for p in paths if state.has_namespace(catalog.id, p) and can.can_see_schema(
                who, parent, securable(state, "schema", state.namespace(catalog.id, p)))]

    def visible_tables(self, principal: Principal, catalog: CatalogEntry, namespace: NamespacePath,
                       entries: list[Any]) -> list[Any]:
        if principal.is_account_admin:
            return entries
        with self.store.read() as state:
            who = subject_of(state, principal)
            visible = []
            for entry in entries:
                args = self._table_securables(state, catalog, namespace, entry.name)
                if args is not None and can.can_read_table(who, *args):
                    visible.append(entry)
            return visible
