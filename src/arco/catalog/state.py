"""Tier 1 state in memory, and the pure rules that change it.

Every catalog change is an *operation*: a JSON-ready dict ``{"op": <name>, ...arguments}``. For each name there
is a ``check`` (may this operation be applied to this state? raises a :mod:`arco.catalog.errors` error if not)
and an ``apply`` (change the state; never fails for an operation that passed ``check`` on the same state).
Writers check, append the operation to the catalog log, then apply; readers replaying the log only apply. So
``apply`` must be deterministic: ids and times come in the operation, never from the clock or a random source.

No I/O happens here; :mod:`arco.catalog.log` stores operations and :mod:`arco.catalog.service` drives both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any

from arco.catalog.access import ACCESS_RULES, AccessState
from arco.catalog.schema_objects import SCHEMA_OBJECT_RULES, objects_in_schema, remove_schema_objects
from arco.catalog.securables import SECURABLE_RULES, SecurablesState
from arco.catalog.tenancy import TenancyState, apply_drop_metastore, check_drop_metastore
from arco.catalog.errors import (
    AlreadyExistsError,
    CatalogNotFound,
    InvalidRequestError,
    NamespaceNotFound,
    NotEmptyError,
    TableNotFound,
)
from arco.catalog.model import (
    CatalogEntry,
    NamespaceEntry,
    NamespacePath,
    TableEntry,
    name_key,
    path_key,
)

Operation = dict[str, Any]


def dotted(path: Iterable[str]) -> str:
    return ".".join(path)


def catalog_key(metastore_id: str | None, name: str) -> tuple[str, str]:
    return metastore_id or "", name_key(name)


class CatalogState(AccessState, SecurablesState, TenancyState):
    """Every catalog, namespace and table of one warehouse, indexed for the lookups the APIs make, who may use
    them (:mod:`arco.catalog.access`), and which metastore each belongs to (:mod:`arco.catalog.tenancy`)."""

    def __init__(self, warehouse_url: str = "memory://state") -> None:
        self.warehouse_url = warehouse_url  # the storage root of the warehouse this state describes
        self._init_access()
        self._init_securables()
        self.seq = 0  # the last log entry applied
        self.catalogs: dict[str, CatalogEntry] = {}
        self.catalog_by_name: dict[tuple[str, str], str] = {}  # (metastore id or "", name key) -> catalog id
        self.namespaces: dict[str, NamespaceEntry] = {}
        self.namespace_by_path: dict[tuple[str, tuple[str, ...]], str] = {}
        # (catalog id, parent path key) -> {child name key: namespace id}
        self.children: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}
        self.tables: dict[str, TableEntry] = {}
        # (catalog id, namespace path key) -> {table name key: table id}
        self.tables_in: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}

    # -- lookups ---------------------------------------------------------------------------------------------

    def catalog(self, name: str, metastore_id: str | None = None) -> CatalogEntry:
        """The catalog named ``name`` in a metastore (None: the primary one)."""
        catalog_id = self.catalog_by_name.get(catalog_key(metastore_id, name))
        if catalog_id is None:
            raise CatalogNotFound(name)
        return self.catalogs[catalog_id]

    def namespace(self, catalog_id: str, path: NamespacePath) -> NamespaceEntry:
        ns_id = self.namespace_by_path.get((catalog_id, path_key(path)))
        if ns_id is None:
            raise NamespaceNotFound(dotted(path))
        return self.namespaces[ns_id]

    def has_namespace(self, catalog_id: str, path: NamespacePath) -> bool:
        return (catalog_id, path_key(path)) in self.namespace_by_path

    def table(self, catalog_id: str, namespace: NamespacePath, name: str) -> TableEntry:
        table_id = self.tables_in.get((catalog_id, path_key(namespace)), {}).get(name_key(name))
        if table_id is None:
            raise TableNotFound(dotted((*namespace, name)))
        return self.tables[table_id]

    def child_namespaces(self, catalog_id: str, parent: NamespacePath) -> list[NamespaceEntry]:
        ids = self.children.get((catalog_id, path_key(parent)), {})
        return sorted((self.namespaces[i] for i in ids.values()), key=lambda n: path_key(n.path))

    def tables_of(self, catalog_id: str, namespace: NamespacePath) -> list[TableEntry]:
        ids = self.tables_in.get((catalog_id, path_key(namespace)), {})
        return sorted((self.tables[i] for i in ids.values()), key=lambda t: name_key(t.name))

    # -- snapshots -------------------------------------------------------------------------------------------

    def to_snapshot(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "catalogs": [asdict(c) for c in self.catalogs.values()],
            "namespaces": [asdict(n) for n in self.namespaces.values()],
            "tables": [asdict(t) for t in self.tables.values()],
            **self.access_snapshot(),
            **self.securables_snapshot(),
        }

    @classmethod
    def from_snapshot(cls, snapshot: dict[str, Any], warehouse_url: str = "memory://state") -> CatalogState:
        state = cls(warehouse_url)
        state.seq = int(snapshot["seq"])
        for c in snapshot["catalogs"]:
            _add_catalog(state, CatalogEntry(**c))
        for n in snapshot["namespaces"]:
            _add_namespace(state, NamespaceEntry(**{**n, "path": tuple(n["path"])}))
        for t in snapshot["tables"]:
            _add_table(state, TableEntry(**{**t, "namespace": tuple(t["namespace"])}))
        state.load_access(snapshot)
        state.load_securables(snapshot)
        return state


# -- index maintenance (shared by apply and snapshot loading) ------------------------------------------------


def _add_catalog(state: CatalogState, entry: CatalogEntry) -> None:
    state.catalogs[entry.id] = entry
    state.catalog_by_name[catalog_key(entry.metastore_id, entry.name)] = entry.id


def _add_namespace(state: CatalogState, entry: NamespaceEntry) -> None:
    state.namespaces[entry.id] = entry
    state.namespace_by_path[(entry.catalog_id, path_key(entry.path))] = entry.id
    parent = (entry.catalog_id, path_key(entry.path[:-1]))
    state.children.setdefault(parent, {})[name_key(entry.path[-1])] = entry.id


def _remove_namespace(state: CatalogState, entry: NamespaceEntry) -> None:
    del state.namespaces[entry.id]
    del state.namespace_by_path[(entry.catalog_id, path_key(entry.path))]
    parent = (entry.catalog_id, path_key(entry.path[:-1]))
    siblings = state.children[parent]
    del siblings[name_key(entry.path[-1])]
    if not siblings:
        del state.children[parent]


def _add_table(state: CatalogState, entry: TableEntry) -> None:
    state.tables[entry.id] = entry
    state.tables_in.setdefault((entry.catalog_id, path_key(entry.namespace)), {})[name_key(entry.name)] = entry.id


def _remove_table(state: CatalogState, entry: TableEntry) -> None:
    del state.tables[entry.id]
    where = (entry.catalog_id, path_key(entry.namespace))
    del state.tables_in[where][name_key(entry.name)]
    if not state.tables_in[where]:
        del state.tables_in[where]


def _apply_common_changes(entry: CatalogEntry | NamespaceEntry | TableEntry, op: Operation) -> None:
    """Owner, comment and property changes, which every securable's update operation may carry."""
    if "owner" in op:
        entry.owner = op["owner"]
    if "comment" in op:
        entry.comment = op["comment"]
    removals = set(op.get("removals", ()))
    entry.properties = {k: v for k, v in entry.properties.items() if k not in removals}
    entry.properties.update(op.get("updates", {}))
    entry.updated_at_ms = op["at_ms"]
    entry.updated_by = op.get("principal")


def refuse_taken_name(state: CatalogState, catalog_id: str, namespace: NamespacePath, name: str,
                       allowed_id: str | None = None) -> None:
    existing = state.tables_in.get((catalog_id, path_key(namespace)), {}).get(name_key(name))
    if existing is not None and existing != allowed_id:
        kind = "view" if state.tables[existing].kind == "VIEW" else "table"
        raise AlreadyExistsError(kind, dotted((*namespace, name)))


# -- the operations ------------------------------------------------------------------------------------------


def _catalog_of(state: CatalogState, catalog_id: str) -> CatalogEntry:
    entry = state.catalogs.get(catalog_id)
    if entry is None:
        raise CatalogNotFound(catalog_id)
    return entry


def _check_create_catalog(state: CatalogState, op: Operation) -> None:
    if op.get("metastore_id"):
        state.securable("metastore", op["metastore_id"])
    if catalog_key(op.get("metastore_id"), op["name"]) in state.catalog_by_name:
        raise AlreadyExistsError("catalog", op["name"])
    if op["id"] in state.catalogs:
        raise AlreadyExistsError("catalog id", op["id"])


def _apply_create_catalog(state: CatalogState, op: Operation) -> None:
    _add_catalog(state, CatalogEntry(
        id=op["id"], name=op["name"], storage_root=op["storage_root"], owner=op["owner"], comment=op.get("comment"),
        properties=dict(op.get("properties", {})), created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"), metastore_id=op.get("metastore_id"),
    ))


def _check_update_catalog(state: CatalogState, op: Operation) -> None:
    entry = _catalog_of(state, op["id"])
    new_name = op.get("new_name")
    if new_name and name_key(new_name) != name_key(entry.name) and \
            catalog_key(entry.metastore_id, new_name) in state.catalog_by_name:
        raise AlreadyExistsError("catalog", new_name)


def _apply_update_catalog(state: CatalogState, op: Operation) -> None:
    entry = state.catalogs[op["id"]]
    if op.get("new_name"):
        del state.catalog_by_name[catalog_key(entry.metastore_id, entry.name)]
        entry.name = op["new_name"]
        state.catalog_by_name[catalog_key(entry.metastore_id, entry.name)] = entry.id
    _apply_common_changes(entry, op)


def _check_drop_catalog(state: CatalogState, op: Operation) -> None:
    entry = _catalog_of(state, op["id"])
    if not op.get("force") and (state.children.get((entry.id, ())) or state.tables_in.get((entry.id, ()))):
        raise NotEmptyError("catalog", entry.name, "schemas")


def _apply_drop_catalog(state: CatalogState, op: Operation) -> None:
    remove_catalog(state, state.catalogs[op["id"]])


def remove_catalog(state: CatalogState, entry: CatalogEntry) -> None:
    """The catalog and everything in it, gone from the state (a dropped catalog, or a dropped metastore's)."""
    del state.catalogs[entry.id]
    del state.catalog_by_name[catalog_key(entry.metastore_id, entry.name)]
    for table in [t for t in state.tables.values() if t.catalog_id == entry.id]:
        _remove_table(state, table)
    for ns in sorted((n for n in state.namespaces.values() if n.catalog_id == entry.id),
                     key=lambda n: -len(n.path)):
        remove_schema_objects(state, ns.id)
        _remove_namespace(state, ns)


def _check_create_namespace(state: CatalogState, op: Operation) -> None:
    catalog = _catalog_of(state, op["catalog_id"])
    path = tuple(op["path"])
    if state.has_namespace(catalog.id, path):
        raise AlreadyExistsError("namespace", dotted(path))
    if len(path) > 1 and not state.has_namespace(catalog.id, path[:-1]):
        raise NamespaceNotFound(dotted(path[:-1]))


def _apply_create_namespace(state: CatalogState, op: Operation) -> None:
    _add_namespace(state, NamespaceEntry(
        id=op["id"], catalog_id=op["catalog_id"], path=tuple(op["path"]), owner=op["owner"],
        comment=op.get("comment"), properties=dict(op.get("properties", {})),
        created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"),
    ))


def _namespace_of(state: CatalogState, ns_id: str) -> NamespaceEntry:
    entry = state.namespaces.get(ns_id)
    if entry is None:
        raise NamespaceNotFound(ns_id)
    return entry


def _check_update_namespace(state: CatalogState, op: Operation) -> None:
    entry = _namespace_of(state, op["id"])
    new_name = op.get("new_name")
    if new_name and name_key(new_name) != name_key(entry.path[-1]):
        if state.has_namespace(entry.catalog_id, (*entry.path[:-1], new_name)):
            raise AlreadyExistsError("namespace", dotted((*entry.path[:-1], new_name)))
        if state.children.get((entry.catalog_id, path_key(entry.path))):
            raise InvalidRequestError(f"cannot rename namespace {dotted(entry.path)}: it has child namespaces")


def _apply_update_namespace(state: CatalogState, op: Operation) -> None:
    entry = state.namespaces[op["id"]]
    if op.get("new_name"):
        tables = [state.tables[i] for i in state.tables_in.get((entry.catalog_id, path_key(entry.path)), {}).values()]
        for table in tables:
            _remove_table(state, table)
        _remove_namespace(state, entry)
        entry.path = (*entry.path[:-1], op["new_name"])
        _add_namespace(state, entry)
        for table in tables:
            table.namespace = entry.path
            _add_table(state, table)
    _apply_common_changes(entry, op)


def _check_drop_namespace(state: CatalogState, op: Operation) -> None:
    entry = _namespace_of(state, op["id"])
    where = (entry.catalog_id, path_key(entry.path))
    if state.children.get(where):
        raise NotEmptyError("namespace", dotted(entry.path), "namespaces")
    if state.tables_in.get(where) and not op.get("force"):
        raise NotEmptyError("namespace", dotted(entry.path), "tables or views")
    held = objects_in_schema(state, entry.id)
    if held and not op.get("force"):
        raise NotEmptyError("namespace", dotted(entry.path),
                            ", ".join(sorted({e.type.replace("_", " ") + "s" for e in held})))


def _apply_drop_namespace(state: CatalogState, op: Operation) -> None:
    entry = state.namespaces[op["id"]]
    for table_id in list(state.tables_in.get((entry.catalog_id, path_key(entry.path)), {}).values()):
        _remove_table(state, state.tables[table_id])
    remove_schema_objects(state, entry.id)
    _remove_namespace(state, entry)


def _check_create_table(state: CatalogState, op: Operation) -> None:
    catalog = _catalog_of(state, op["catalog_id"])
    namespace = tuple(op["namespace"])
    if not state.has_namespace(catalog.id, namespace):
        raise NamespaceNotFound(dotted(namespace))
    refuse_taken_name(state, catalog.id, namespace, op["name"])
    if op["id"] in state.tables:
        raise AlreadyExistsError("table uuid", op["id"])


def _apply_create_table(state: CatalogState, op: Operation) -> None:
    _add_table(state, TableEntry(
        id=op["id"], catalog_id=op["catalog_id"], namespace=tuple(op["namespace"]), name=op["name"],
        kind=op.get("kind", "TABLE"), format=op.get("format", "ICEBERG"), location=op["location"],
        owner=op["owner"], managed=op.get("managed", True), comment=op.get("comment"),
        properties=dict(op.get("properties", {})), created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"), columns=list(op.get("columns", [])),
        view_definition=op.get("view_definition"), storage_credential_name=op.get("storage_credential_name"),
    ))


def _table_of(state: CatalogState, table_id: str) -> TableEntry:
    entry = state.tables.get(table_id)
    if entry is None:
        raise TableNotFound(table_id)
    return entry


def _check_update_table(state: CatalogState, op: Operation) -> None:
    _table_of(state, op["id"])


def _apply_update_table(state: CatalogState, op: Operation) -> None:
    entry = state.tables[op["id"]]
    if "columns" in op:
        entry.columns = list(op["columns"])
    if "view_definition" in op:
        entry.view_definition = op["view_definition"]
    if "format" in op:
        entry.format = op["format"]
    _apply_common_changes(entry, op)


def _check_rename_table(state: CatalogState, op: Operation) -> None:
    entry = _table_of(state, op["id"])
    target_ns = tuple(op["namespace"])
    if not state.has_namespace(entry.catalog_id, target_ns):
        raise NamespaceNotFound(dotted(target_ns))
    refuse_taken_name(state, entry.catalog_id, target_ns, op["name"], allowed_id=entry.id)


def _apply_rename_table(state: CatalogState, op: Operation) -> None:
    entry = state.tables[op["id"]]
    _remove_table(state, entry)
    entry.namespace = tuple(op["namespace"])
    entry.name = op["name"]
    entry.updated_at_ms = op["at_ms"]
    _add_table(state, entry)


def _check_drop_table(state: CatalogState, op: Operation) -> None:
    _table_of(state, op["id"])


def _apply_drop_table(state: CatalogState, op: Operation) -> None:
    _remove_table(state, state.tables[op["id"]])


Rule = tuple[Callable[[CatalogState, Operation], None], Callable[[CatalogState, Operation], None]]

RULES: dict[str, Rule] = {
    "create_catalog": (_check_create_catalog, _apply_create_catalog),
    "update_catalog": (_check_update_catalog, _apply_update_catalog),
    "drop_catalog": (_check_drop_catalog, _apply_drop_catalog),
    "create_namespace": (_check_create_namespace, _apply_create_namespace),
    "update_namespace": (_check_update_namespace, _apply_update_namespace),
    "drop_namespace": (_check_drop_namespace, _apply_drop_namespace),
    "create_table": (_check_create_table, _apply_create_table),
    "update_table": (_check_update_table, _apply_update_table),
    "rename_table": (_check_rename_table, _apply_rename_table),
    "drop_table": (_check_drop_table, _apply_drop_table),
    **ACCESS_RULES,
    **SECURABLE_RULES,
    **SCHEMA_OBJECT_RULES,
    "drop_metastore": (check_drop_metastore, lambda state, op: apply_drop_metastore(state, op, remove_catalog)),
}


def check(state: CatalogState, op: Operation) -> None:
    rule = RULES.get(op.get("op", ""))
    if rule is None:
        raise InvalidRequestError(f"unknown catalog operation {op.get('op')!r}")
    rule[0](state, op)


def apply(state: CatalogState, op: Operation, seq: int) -> None:
    """Apply a logged operation; ``seq`` is its position in the log, which must follow ``state.seq``."""
    if seq != state.seq + 1:
        raise ValueError(f"log entry {seq} applied to state at {state.seq}")
    RULES[op["op"]][1](state, op)
    state.seq = seq
