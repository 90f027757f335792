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
from arco.catalog.errors import (
    AlreadyExistsError,
    CatalogNotFound,
    InvalidRequestError,
    NamespaceNotFound,
    NotEmptyError,
    TableNotFound,
)
from arco.catalog.log import FENCE
from arco.catalog.model import (
    CatalogEntry,
    NamespaceEntry,
    NamespacePath,
    TableEntry,
    name_key,
    path_key,
)
from arco.catalog.schema_objects import SCHEMA_OBJECT_RULES, objects_in_schema, remove_schema_objects
from arco.catalog.securables import SECURABLE_RULES, SecurablesState, securable_key
from arco.catalog.table_index import MAX_LOADED_TABLES, ChunkSource, TableIndex, apply_common_changes, table_from_json
from arco.catalog.tenancy import TenancyState, apply_drop_metastore, check_drop_metastore

Operation = dict[str, Any]


def dotted(path: Iterable[str]) -> str:
    return ".".join(path)


def catalog_key(metastore_id: str | None, name: str) -> tuple[str, str]:
    return metastore_id or "", name_key(name)


class CatalogState(AccessState, SecurablesState, TenancyState):
    """Every catalog, namespace and table of one warehouse, indexed for the lookups the APIs make, who may use
    them (:mod:`arco.catalog.access`), and which metastore each belongs to (:mod:`arco.catalog.tenancy`)."""

    def __init__(self, warehouse_url: str = "memory://state", source: ChunkSource | None = None,
                 max_loaded_tables: int = MAX_LOADED_TABLES) -> None:
        self.warehouse_url = warehouse_url  # the storage root of the warehouse this state describes
        self._init_access()
        self._init_securables()
        self.seq = 0  # the last log entry applied
        self.applying = 0  # the log entry being applied (table operations are kept with it for chunks not loaded)
        self.catalogs: dict[str, CatalogEntry] = {}
        self.catalog_by_name: dict[tuple[str, str], str] = {}  # (metastore id or "", name key) -> catalog id
        self.namespaces: dict[str, NamespaceEntry] = {}
        self.namespace_by_path: dict[tuple[str, tuple[str, ...]], str] = {}
        # (catalog id, parent path key) -> {child name key: namespace id}
        self.children: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}
        # Tables by id and by namespace, chunk by chunk, read from the snapshot when first needed.
        self.tables = TableIndex(self.namespaces.get, source, max_loaded_tables)

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
            raise NamespaceNotFound(dotted(path), self.catalog_name(catalog_id))
        return self.namespaces[ns_id]

    def catalog_name(self, catalog_id: str) -> str | None:
        entry = self.catalogs.get(catalog_id)
        return entry.name if entry is not None else None

    def has_namespace(self, catalog_id: str, path: NamespacePath) -> bool:
        return (catalog_id, path_key(path)) in self.namespace_by_path

    def table(self, catalog_id: str, namespace: NamespacePath, name: str) -> TableEntry:
        entry = self.table_or_none(catalog_id, namespace, name)
        if entry is None:
            raise TableNotFound(dotted((*namespace, name)), self.catalog_name(catalog_id))
        return entry

    def table_or_none(self, catalog_id: str, namespace: NamespacePath, name: str) -> TableEntry | None:
        ns_id = self.namespace_by_path.get((catalog_id, path_key(namespace)))
        return self.tables.in_namespace(ns_id).get(name_key(name)) if ns_id is not None else None

    def namespace_id_of_table(self, entry: TableEntry) -> str:
        return self.namespace_by_path[(entry.catalog_id, path_key(entry.namespace))]

    def child_namespaces(self, catalog_id: str, parent: NamespacePath) -> list[NamespaceEntry]:
        ids = self.children.get((catalog_id, path_key(parent)), {})
        return sorted((self.namespaces[i] for i in ids.values()), key=lambda n: path_key(n.path))

    def tables_of(self, catalog_id: str, namespace: NamespacePath) -> list[TableEntry]:
        ns_id = self.namespace_by_path.get((catalog_id, path_key(namespace)))
        found = self.tables.in_namespace(ns_id) if ns_id is not None else {}
        return [found[k] for k in sorted(found)]

    def table_count_in(self, catalog_id: str, namespace: NamespacePath) -> int:
        ns_id = self.namespace_by_path.get((catalog_id, path_key(namespace)))
        return self.tables.count_in(ns_id) if ns_id is not None else 0

    # -- snapshots -------------------------------------------------------------------------------------------

    def root_snapshot(self) -> dict[str, Any]:
        """Everything but the tables (which a chunked snapshot stores namespace by namespace)."""
        return {
            "seq": self.seq,
            "catalogs": [asdict(c) for c in self.catalogs.values()],
            "namespaces": [asdict(n) for n in self.namespaces.values()],
            **self.access_snapshot(),
            **self.securables_snapshot(),
        }

    def to_snapshot(self) -> dict[str, Any]:
        """The whole state in one document (reads every chunk: for tests and small warehouses)."""
        return {**self.root_snapshot(), "tables": [asdict(t) for t in self.tables.values()]}

    @classmethod
    def from_snapshot(cls, snapshot: dict[str, Any], warehouse_url: str = "memory://state",
                      source: ChunkSource | None = None, max_loaded_tables: int = MAX_LOADED_TABLES) -> CatalogState:
        """A state from a whole-state snapshot (``tables`` inline) or a chunked one (``chunks``: read from
        ``source`` when first needed)."""
        state = cls(warehouse_url, source, max_loaded_tables)
        state.seq = int(snapshot["seq"])
        for c in snapshot["catalogs"]:
            _add_catalog(state, CatalogEntry(**c))
        for n in snapshot["namespaces"]:
            _add_namespace(state, NamespaceEntry(**{**n, "path": tuple(n["path"])}))
        if "chunks" in snapshot:
            state.tables.set_base(snapshot["chunks"], snapshot["ids"], snapshot.get("external", {}), state.seq)
        else:
            state.tables.pin([table_from_json(t) for t in snapshot["tables"]], state.namespace_id_of_table)
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


def refuse_taken_name(state: CatalogState, catalog_id: str, namespace: NamespacePath, name: str,
                       allowed_id: str | None = None) -> None:
    existing = state.table_or_none(catalog_id, namespace, name)
    if existing is not None and existing.id != allowed_id:
        raise AlreadyExistsError("view" if existing.kind == "VIEW" else "table", dotted((*namespace, name)),
                                 state.catalog_name(catalog_id))


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


def catalog_entry_of(op: Operation) -> CatalogEntry:
    """The catalog a committed ``create_catalog`` made (also what its creator is answered, should the catalog be
    dropped by another server before the answer is read back)."""
    return CatalogEntry(
        id=op["id"], name=op["name"], storage_root=op["storage_root"], owner=op["owner"], comment=op.get("comment"),
        properties=dict(op.get("properties", {})), created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"), metastore_id=op.get("metastore_id"),
        requested_root=op.get("requested_root"),
    )


def _apply_create_catalog(state: CatalogState, op: Operation) -> None:
    _add_catalog(state, catalog_entry_of(op))


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
    apply_common_changes(entry, op)


def _check_drop_catalog(state: CatalogState, op: Operation) -> None:
    entry = _catalog_of(state, op["id"])
    if not op.get("force") and state.children.get((entry.id, ())):
        raise NotEmptyError("catalog", entry.name, "schemas")


def _apply_drop_catalog(state: CatalogState, op: Operation) -> None:
    remove_catalog(state, state.catalogs[op["id"]])


def remove_catalog(state: CatalogState, entry: CatalogEntry) -> None:
    """The catalog and everything in it, gone from the state (a dropped catalog, or a dropped metastore's)."""
    del state.catalogs[entry.id]
    del state.catalog_by_name[catalog_key(entry.metastore_id, entry.name)]
    for ns in sorted((n for n in state.namespaces.values() if n.catalog_id == entry.id),
                     key=lambda n: -len(n.path)):
        state.tables.drop_namespace(ns.id)
        remove_schema_objects(state, ns.id)
        _remove_namespace(state, ns)


def _check_create_namespace(state: CatalogState, op: Operation) -> None:
    catalog = _catalog_of(state, op["catalog_id"])
    path = tuple(op["path"])
    if state.has_namespace(catalog.id, path):
        raise AlreadyExistsError("namespace", dotted(path), catalog.name)
    if len(path) > 1 and not state.has_namespace(catalog.id, path[:-1]):
        raise NamespaceNotFound(dotted(path[:-1]), catalog.name)


def namespace_entry_of(op: Operation) -> NamespaceEntry:
    """The namespace a committed ``create_namespace`` made (see :func:`catalog_entry_of`)."""
    return NamespaceEntry(
        id=op["id"], catalog_id=op["catalog_id"], path=tuple(op["path"]), owner=op["owner"],
        comment=op.get("comment"), properties=dict(op.get("properties", {})),
        created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"),
        storage_location=op.get("storage_location"), requested_root=op.get("requested_root"),
    )


def _apply_create_namespace(state: CatalogState, op: Operation) -> None:
    _add_namespace(state, namespace_entry_of(op))


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
            raise AlreadyExistsError("namespace", dotted((*entry.path[:-1], new_name)),
                                     state.catalog_name(entry.catalog_id))
        if state.children.get((entry.catalog_id, path_key(entry.path))):
            raise InvalidRequestError(f"cannot rename namespace {dotted(entry.path)}: it has child namespaces")


def _apply_update_namespace(state: CatalogState, op: Operation) -> None:
    entry = state.namespaces[op["id"]]
    if op.get("new_name"):
        _remove_namespace(state, entry)
        entry.path = (*entry.path[:-1], op["new_name"])
        _add_namespace(state, entry)
        state.tables.renamed_namespace(entry)  # tables are kept by namespace id: only their shown path changes
    apply_common_changes(entry, op)


def _check_drop_namespace(state: CatalogState, op: Operation) -> None:
    entry = _namespace_of(state, op["id"])
    if state.children.get((entry.catalog_id, path_key(entry.path))):
        raise NotEmptyError("namespace", dotted(entry.path), "namespaces")
    if state.tables.count_in(entry.id) and not op.get("force"):
        raise NotEmptyError("namespace", dotted(entry.path), "tables or views")
    held = objects_in_schema(state, entry.id)
    if held and not op.get("force"):
        raise NotEmptyError("namespace", dotted(entry.path),
                            ", ".join(sorted({e.type.replace("_", " ") + "s" for e in held})))


def _apply_drop_namespace(state: CatalogState, op: Operation) -> None:
    entry = state.namespaces[op["id"]]
    state.tables.drop_namespace(entry.id)
    remove_schema_objects(state, entry.id)
    _remove_namespace(state, entry)


def _check_create_table(state: CatalogState, op: Operation) -> None:
    catalog = _catalog_of(state, op["catalog_id"])
    namespace = tuple(op["namespace"])
    if not state.has_namespace(catalog.id, namespace):
        raise NamespaceNotFound(dotted(namespace), catalog.name)
    refuse_taken_name(state, catalog.id, namespace, op["name"])
    if op["id"] in state.tables:
        raise AlreadyExistsError("table uuid", op["id"])
    if "promotes" in op:
        state.securable("staging_table", op["promotes"])  # not promoted yet (NotFound otherwise)


def _apply_create_table(state: CatalogState, op: Operation) -> None:
    ns_id = state.namespace_by_path[(op["catalog_id"], path_key(tuple(op["namespace"])))]
    state.tables.apply({**op, "ns_id": ns_id}, state.applying)
    if "promotes" in op:  # a staging table, now this table: its storage is the table's, governed by its grants
        del state.securables[securable_key("staging_table", op["promotes"])]


def _table_of(state: CatalogState, table_id: str) -> TableEntry:
    entry = state.tables.get(table_id)
    if entry is None:
        raise TableNotFound(table_id)
    return entry


def _check_update_table(state: CatalogState, op: Operation) -> None:
    _table_of(state, op["id"])


def _apply_table_change(state: CatalogState, op: Operation) -> None:
    state.tables.apply(op, state.applying)


def _check_rename_table(state: CatalogState, op: Operation) -> None:
    entry = _table_of(state, op["id"])
    target_ns = tuple(op["namespace"])
    if not state.has_namespace(entry.catalog_id, target_ns):
        raise NamespaceNotFound(dotted(target_ns), state.catalog_name(entry.catalog_id))
    refuse_taken_name(state, entry.catalog_id, target_ns, op["name"], allowed_id=entry.id)


def _apply_rename_table(state: CatalogState, op: Operation) -> None:
    catalog_id = state.namespaces[op["from_ns_id"]].catalog_id if "from_ns_id" in op \
        else state.tables[op["id"]].catalog_id
    ns_id = state.namespace_by_path[(catalog_id, path_key(tuple(op["namespace"])))]
    state.tables.apply({**op, "ns_id": ns_id}, state.applying)


def _check_drop_table(state: CatalogState, op: Operation) -> None:
    _table_of(state, op["id"])


def _check_fence(state: CatalogState, op: Operation) -> None:
    raise InvalidRequestError("a fence is written by the log alone (arco.catalog.log.CatalogLog.fence)")


def _apply_fence(state: CatalogState, op: Operation) -> None:
    """Nothing: a fence only holds its position (an unanswered append's)."""


Rule = tuple[Callable[[CatalogState, Operation], None], Callable[[CatalogState, Operation], None]]

RULES: dict[str, Rule] = {
    "create_catalog": (_check_create_catalog, _apply_create_catalog),
    "update_catalog": (_check_update_catalog, _apply_update_catalog),
    "drop_catalog": (_check_drop_catalog, _apply_drop_catalog),
    "create_namespace": (_check_create_namespace, _apply_create_namespace),
    "update_namespace": (_check_update_namespace, _apply_update_namespace),
    "drop_namespace": (_check_drop_namespace, _apply_drop_namespace),
    "create_table": (_check_create_table, _apply_create_table),
    "update_table": (_check_update_table, _apply_table_change),
    "rename_table": (_check_rename_table, _apply_rename_table),
    "drop_table": (_check_drop_table, _apply_table_change),
    **ACCESS_RULES,
    **SECURABLE_RULES,
    **SCHEMA_OBJECT_RULES,
    "drop_metastore": (check_drop_metastore, lambda state, op: apply_drop_metastore(state, op, remove_catalog)),
    FENCE: (_check_fence, _apply_fence),
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
    state.applying = seq
    RULES[op["op"]][1](state, op)
    state.seq = seq


def annotate(state: CatalogState, op: Operation) -> None:
    """Add what a later reader needs to apply ``op`` without reading more of the state than it touches: the
    namespace a table operation finds its table in, and the whole entry of a table moving to another namespace."""
    if op.get("op") not in ("update_table", "rename_table", "drop_table"):
        return
    entry = state.tables.get(op.get("id", ""))
    if entry is None:
        return
    op["from_ns_id"] = state.namespace_id_of_table(entry)
    if op["op"] == "rename_table" and path_key(tuple(op["namespace"])) != path_key(entry.namespace):
        op["entry"] = asdict(entry)
