"""The tables of a warehouse, held by namespace and loaded when a request first needs them.

A catalog of a million tables can neither live whole in every server's memory nor be rewritten whole by every
snapshot, so Tier 1 keeps its tables in *chunks*, one per namespace, keyed by the namespace's id (renaming a
namespace moves nothing). A snapshot stores each chunk that changed in a file of its own and refers to the others
where they already are (:mod:`arco.catalog.snapshots`); a process reads a chunk's file the first time it needs that
namespace. Lookups by table id go through the *id index* (table id -> namespace id), stored in buckets by the id's
leading hex digits and read the same way.

Log entries applied after the snapshot a chunk comes from are kept with the chunk as *pending* operations, in log
order: an unloaded chunk gets them replayed when it is loaded, so catching up with the log never reads a chunk, and
a loaded chunk may be dropped from memory at any time (beyond ``max_loaded_tables``) and rebuilt the same way. A
newer snapshot *rebases* the chunks onto its files and forgets the pending operations it covers.

Everything here is deterministic and does no I/O of its own: files are read through the injected
:class:`ChunkSource`. Without one (unit tests, a legacy whole-state snapshot) every chunk lives in memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from arco.catalog.errors import TableNotFound
from arco.catalog.model import NamespaceEntry, TableEntry, name_key

Operation = dict[str, Any]
TABLE_OPS = frozenset({"create_table", "update_table", "rename_table", "drop_table"})
# Loaded chunks beyond this many tables are dropped from memory, least recently used first (they are rebuilt from
# their snapshot file and pending operations when asked for again).
MAX_LOADED_TABLES = 200_000
# The id index is split into 16**k buckets by the first k hex digits of the id, k chosen per snapshot so that a
# bucket holds about this many ids at most: a snapshot rewrites only the buckets its changes touched.
IDS_PER_BUCKET = 1024
MAX_LOADED_ID_BUCKETS = 1024  # id buckets kept in memory (about 1,000 ids each)


class ChunkSource(Protocol):
    def read_chunk(self, key: str) -> list[dict[str, Any]]: ...

    def read_id_bucket(self, key: str) -> dict[str, str]: ...


def table_from_json(raw: dict[str, Any]) -> TableEntry:
    return TableEntry(**{**raw, "namespace": tuple(raw["namespace"])})


def bucket_digits(table_count: int) -> int:
    digits = 0
    while table_count > IDS_PER_BUCKET * 16 ** digits and digits < 4:
        digits += 1
    return digits


def bucket_of(table_id: str, digits: int) -> str:
    return table_id.replace("-", "")[:digits].lower()


@dataclass
class Chunk:
    """The tables of one namespace: a snapshot file (or nothing) plus the operations logged since."""

    ns_id: str
    base_key: str | None = None  # the snapshot file holding this chunk as of ``base_seq``; None: empty then
    base_seq: int = 0
    count: int = 0  # tables in the chunk now, loaded or not
    pending: list[tuple[int, Operation]] = field(default_factory=list)  # (seq, op) after base_seq, in order
    by_name: dict[str, TableEntry] | None = None  # None: not in memory
    by_id: dict[str, TableEntry] = field(default_factory=dict)
    pinned: bool = False  # content with no file behind it (a legacy whole-state snapshot): never dropped

    @property
    def dirty(self) -> bool:
        """Whether the chunk differs from its snapshot file."""
        return bool(self.pending) or (self.pinned and self.count > 0)


class TableIndex:
    """Tables by id and by (namespace, name), chunk by chunk; see the module docstring."""

    def __init__(self, namespace_of: Callable[[str], NamespaceEntry | None], source: ChunkSource | None = None,
                 max_loaded_tables: int = MAX_LOADED_TABLES) -> None:
        self._namespace_of = namespace_of
        self.source = source
        self.max_loaded_tables = max_loaded_tables
        self.chunks: dict[str, Chunk] = {}
        self._lru: OrderedDict[str, None] = OrderedDict()  # loaded chunks that can be dropped, oldest first
        self._loaded_tables = 0
        self.id_digits = 0
        self.id_base: dict[str, str] = {}  # bucket -> snapshot file
        self.id_base_seq = 0
        self._id_loaded: dict[str, dict[str, str]] = {}
        self._id_changes: dict[str, tuple[int, str | None]] = {}  # id -> (seq, namespace id or None: gone)
        # Tables Arco did not place (external and registered elsewhere): their locations are checked against every
        # new location a client names, so they are kept whole, with the root, not in chunks. id -> (name, location)
        self.external: dict[str, tuple[str, str]] = {}
        self.loads = 0  # chunk files read, for tests and metrics

    # -- reading ---------------------------------------------------------------------------------------------

    def in_namespace(self, ns_id: str) -> dict[str, TableEntry]:
        """The namespace's tables by name key (loads the chunk); do not change the mapping."""
        chunk = self.chunks.get(ns_id)
        return self._load(chunk) if chunk is not None else {}

    def count_in(self, ns_id: str) -> int:
        chunk = self.chunks.get(ns_id)
        return chunk.count if chunk is not None else 0

    def get(self, table_id: str, default: TableEntry | None = None) -> TableEntry | None:
        ns_id = self.namespace_id_of(table_id)
        if ns_id is None or ns_id not in self.chunks:
            return default
        self._load(self.chunks[ns_id])
        return self.chunks[ns_id].by_id.get(table_id, default)

    def __getitem__(self, table_id: str) -> TableEntry:
        found = self.get(table_id)
        if found is None:
            raise KeyError(table_id)
        return found

    def __contains__(self, table_id: object) -> bool:
        return isinstance(table_id, str) and self.get(table_id) is not None

    def __len__(self) -> int:
        return sum(chunk.count for chunk in self.chunks.values())

    def __iter__(self) -> Iterator[str]:
        return (entry.id for entry in self.values())

    def values(self) -> list[TableEntry]:
        """Every table of the warehouse: reads every chunk, so it is for batch jobs and small warehouses."""
        return [entry for ns_id in list(self.chunks) for entry in self.in_namespace(ns_id).values()]

    def namespace_id_of(self, table_id: str) -> str | None:
        """The namespace id the index holds for ``table_id`` (a stale one if its namespace was dropped)."""
        changed = self._id_changes.get(table_id)
        if changed is not None:
            return changed[1]
        return self._bucket_file(bucket_of(table_id, self.id_digits)).get(table_id)

    # -- changing (called by the pure rules of arco.catalog.state, in log order) -------------------------------

    def apply(self, op: Operation, seq: int) -> None:
        """Apply a logged table operation at ``seq``; to the chunks it touches, now if loaded, else on load."""
        if op["op"] == "create_table":
            target = self._chunk(op["ns_id"])
            self._record(target, op, seq)
            target.count += 1
            self._id_changes[op["id"]] = (seq, target.ns_id)
            if not op.get("managed", True) and op.get("location"):
                self.external[op["id"]] = (op["name"], op["location"])
            return
        if op["id"] in self.external:
            if op["op"] == "drop_table":
                del self.external[op["id"]]
            elif op["op"] == "rename_table":
                self.external[op["id"]] = (op["name"], self.external[op["id"]][1])
        source_ns = op.get("from_ns_id") or self._locate(op["id"])
        source = self._chunk(source_ns)
        if op["op"] == "rename_table" and op["ns_id"] != source_ns:
            if "entry" not in op:  # a legacy entry: the moved table's fields come from its loaded chunk
                self._load(source)
                op = {**op, "entry": asdict(source.by_id[op["id"]])}
            self._record(source, {"op": "move_out", "id": op["id"]}, seq)
            source.count -= 1
            target = self._chunk(op["ns_id"])
            self._record(target, {**op, "op": "move_in"}, seq)
            target.count += 1
            self._id_changes[op["id"]] = (seq, target.ns_id)
            return
        self._record(source, op, seq)
        if op["op"] == "drop_table":
            source.count -= 1
            self._id_changes[op["id"]] = (seq, None)

    def drop_namespace(self, ns_id: str) -> None:
        """The namespace is gone, with its tables (their ids now name a namespace that does not exist)."""
        chunk = self.chunks.pop(ns_id, None)
        if chunk is not None and chunk.by_name is not None:
            self._forget(chunk)
        if self.external:
            self.external = {i: v for i, v in self.external.items() if self.namespace_id_of(i) != ns_id}

    def renamed_namespace(self, namespace: NamespaceEntry) -> None:
        chunk = self.chunks.get(namespace.id)
        if chunk is not None and chunk.by_name is not None:
            for entry in chunk.by_name.values():
                entry.namespace = namespace.path

    # -- snapshots -------------------------------------------------------------------------------------------

    def set_base(self, chunks: dict[str, dict[str, Any]], ids: dict[str, Any], external: dict[str, list[str]],
                 seq: int) -> None:
        """Start from a chunked snapshot taken at ``seq`` (nothing is read until asked for)."""
        self.chunks = {ns_id: Chunk(ns_id, ref["key"], seq, int(ref["count"])) for ns_id, ref in chunks.items()}
        self.id_digits, self.id_base, self.id_base_seq = int(ids["digits"]), dict(ids["buckets"]), seq
        self.external = {table_id: (name, location) for table_id, (name, location) in external.items()}

    def pin(self, entries: list[TableEntry], ns_id_of: Callable[[TableEntry], str]) -> None:
        """Hold ``entries`` in memory for good (a legacy whole-state snapshot, which has no chunk files)."""
        for entry in entries:
            chunk = self._chunk(ns_id_of(entry))
            chunk.pinned = True
            if chunk.by_name is None:
                chunk.by_name = {}
            _put(chunk, entry)
            chunk.count += 1
            self._id_changes[entry.id] = (0, chunk.ns_id)
            if not entry.managed and entry.location:
                self.external[entry.id] = (entry.name, entry.location)

    def rebase(self, chunks: dict[str, dict[str, Any]], ids: dict[str, Any], seq: int) -> None:
        """A snapshot at ``seq`` (not newer than what is applied here) holds these files: start from them."""
        for ns_id, chunk in self.chunks.items():
            ref = chunks.get(ns_id)
            if chunk.base_seq > seq:
                continue
            chunk.base_key, chunk.base_seq = (ref["key"] if ref else None), seq
            chunk.pending = [(s, op) for s, op in chunk.pending if s > seq]
            if chunk.pinned:
                chunk.pinned = False
                if chunk.by_name is not None:
                    self._lru[ns_id] = None
                    self._loaded_tables += len(chunk.by_name)
        if seq >= self.id_base_seq:
            digits, base = int(ids["digits"]), dict(ids["buckets"])
            if digits != self.id_digits:
                self._id_loaded.clear()
            else:  # a bucket whose file is the same need not be read again
                for bucket in [b for b in self._id_loaded if base.get(b) != self.id_base.get(b)]:
                    del self._id_loaded[bucket]
            self.id_digits, self.id_base, self.id_base_seq = digits, base, seq
            self._id_changes = {i: c for i, c in self._id_changes.items() if c[0] > seq}
        self._evict()

    def changed_id_buckets(self, digits: int) -> dict[str, dict[str, str]]:
        """The buckets (at ``digits``) that differ from their files, each whole as it is now, live ids only."""
        if digits != self.id_digits:  # the split changed: every bucket is new
            rows: dict[str, dict[str, str]] = {}
            for table_id, ns_id in self._all_ids().items():
                rows.setdefault(bucket_of(table_id, digits), {})[table_id] = ns_id
            return rows
        return {bucket: self._bucket_now(bucket, changes) for bucket, changes in self._changes_by_bucket().items()}

    def dirty_chunks(self) -> list[Chunk]:
        return [chunk for chunk in self.chunks.values() if chunk.dirty]

    def entries_of(self, chunk: Chunk) -> list[TableEntry]:
        """The chunk's tables now, sorted by name (loads it)."""
        loaded = self._load(chunk)
        return [loaded[k] for k in sorted(loaded)]

    # -- inside ----------------------------------------------------------------------------------------------

    def _changes_by_bucket(self) -> dict[str, dict[str, str | None]]:
        grouped: dict[str, dict[str, str | None]] = {}
        for table_id, (_, ns_id) in self._id_changes.items():
            grouped.setdefault(bucket_of(table_id, self.id_digits), {})[table_id] = ns_id
        return grouped

    def _bucket_now(self, bucket: str, changes: dict[str, str | None]) -> dict[str, str]:
        """A bucket's file with the changes since applied; live ids only."""
        rows = {**self._bucket_file(bucket), **changes}
        return {i: ns for i, ns in rows.items() if ns is not None and ns in self.chunks}

    def _bucket_file(self, bucket: str) -> dict[str, str]:
        found = self._id_loaded.get(bucket)
        if found is None:
            key = self.id_base.get(bucket)
            found = self._id_loaded[bucket] = dict(self.source.read_id_bucket(key)) if key and self.source else {}
            if len(self._id_loaded) > MAX_LOADED_ID_BUCKETS:  # files never change: the oldest read goes first
                del self._id_loaded[next(iter(self._id_loaded))]
        return found

    def _all_ids(self) -> dict[str, str]:
        changes = self._changes_by_bucket()
        return {i: ns for bucket in set(self.id_base) | set(changes)
                for i, ns in self._bucket_now(bucket, changes.get(bucket, {})).items()}

    def _chunk(self, ns_id: str) -> Chunk:
        chunk = self.chunks.get(ns_id)
        if chunk is None:
            chunk = self.chunks[ns_id] = Chunk(ns_id, None, 0, 0, by_name={} if self.source is None else None)
            if chunk.by_name is not None:
                chunk.pinned = True
        return chunk

    def _locate(self, table_id: str) -> str:
        ns_id = self.namespace_id_of(table_id)
        if ns_id is None or ns_id not in self.chunks:
            raise TableNotFound(table_id)
        return ns_id

    def _record(self, chunk: Chunk, op: Operation, seq: int) -> None:
        if not chunk.pinned:
            chunk.pending.append((seq, op))
        if chunk.by_name is not None:
            before = len(chunk.by_name)
            _effect(chunk, op, self._namespace_of(chunk.ns_id))
            if not chunk.pinned:
                self._loaded_tables += len(chunk.by_name) - before

    def _load(self, chunk: Chunk) -> dict[str, TableEntry]:
        if chunk.by_name is not None:
            if chunk.ns_id in self._lru:
                self._lru.move_to_end(chunk.ns_id)
            return chunk.by_name
        namespace = self._namespace_of(chunk.ns_id)
        chunk.by_name, chunk.by_id = {}, {}
        try:
            if chunk.base_key is not None and self.source is not None:
                self.loads += 1
                for raw in self.source.read_chunk(chunk.base_key):
                    _put(chunk, table_from_json(raw))
            for _, op in chunk.pending:
                _effect(chunk, op, namespace)
        except BaseException:
            # Not read whole (a read that failed, or an inline attempt that would wait for the file, which raises
            # arco.inline.WouldWait): the chunk stays out of memory, to be read again when next asked for. Left
            # in memory part-built, it would hide its tables for good while its count still holds them.
            chunk.by_name, chunk.by_id = None, {}
            raise
        if namespace is not None:
            for entry in chunk.by_name.values():
                entry.namespace = namespace.path
        self._loaded_tables += len(chunk.by_name)
        self._lru[chunk.ns_id] = None
        self._evict(keep=chunk.ns_id)
        return chunk.by_name

    def _forget(self, chunk: Chunk) -> None:
        self._loaded_tables -= len(chunk.by_name or {})
        chunk.by_name, chunk.by_id = None, {}
        self._lru.pop(chunk.ns_id, None)

    def _evict(self, keep: str | None = None) -> None:
        while self._loaded_tables > self.max_loaded_tables and len(self._lru) > (1 if keep else 0):
            ns_id = next(iter(self._lru))
            if ns_id == keep:
                self._lru.move_to_end(ns_id)
                continue
            chunk = self.chunks.get(ns_id)
            if chunk is None or chunk.by_name is None:
                self._lru.pop(ns_id, None)
                continue
            self._forget(chunk)


# -- what each table operation does to a loaded chunk -----------------------------------------------------------


def _put(chunk: Chunk, entry: TableEntry) -> None:
    assert chunk.by_name is not None
    chunk.by_name[name_key(entry.name)] = entry
    chunk.by_id[entry.id] = entry


def _take(chunk: Chunk, table_id: str) -> TableEntry:
    assert chunk.by_name is not None
    entry = chunk.by_id.pop(table_id)
    del chunk.by_name[name_key(entry.name)]
    return entry


def _effect(chunk: Chunk, op: Operation, namespace: NamespaceEntry | None) -> None:
    kind = op["op"]
    if kind == "create_table":
        _put(chunk, new_table(op, namespace.path if namespace else tuple(op["namespace"])))
    elif kind == "move_in":
        moved = table_from_json(op["entry"])
        moved.namespace = namespace.path if namespace else tuple(op["namespace"])
        moved.name, moved.updated_at_ms = op["name"], op["at_ms"]
        _with_changes(moved, op)
        _put(chunk, moved)
    elif kind in ("move_out", "drop_table"):
        _take(chunk, op["id"])
    elif kind == "rename_table":
        entry = _take(chunk, op["id"])
        entry.name, entry.updated_at_ms = op["name"], op["at_ms"]
        _with_changes(entry, op)
        _put(chunk, entry)
    elif kind == "update_table":
        update_table(chunk.by_id[op["id"]], op)
    else:
        raise ValueError(f"not a table operation: {kind}")


def rename_with_changes(update: Operation, namespace: list[str], name: str) -> Operation:
    """A ``rename_table`` operation that also makes an ``update_table``'s changes (Unity Catalog's update with a
    ``new_name``): one operation, so the two land together or not at all."""
    rename: Operation = {"op": "rename_table", "id": update["id"], "namespace": namespace, "name": name}
    changes = {k: v for k, v in update.items() if k not in ("op", "id")}
    if changes:
        rename["changes"] = changes
    return rename


def _with_changes(entry: TableEntry, rename: Operation) -> None:
    changes = rename.get("changes")
    if changes:
        update_table(entry, {**changes, "at_ms": rename["at_ms"], "principal": rename.get("principal")})


def new_table(op: Operation, namespace: tuple[str, ...]) -> TableEntry:
    return TableEntry(
        id=op["id"], catalog_id=op["catalog_id"], namespace=namespace, name=op["name"],
        kind=op.get("kind", "TABLE"), format=op.get("format", "ICEBERG"), location=op["location"],
        owner=op["owner"], managed=op.get("managed", True), comment=op.get("comment"),
        properties=dict(op.get("properties", {})), created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"), columns=list(op.get("columns", [])),
        view_definition=op.get("view_definition"), view_dependencies=op.get("view_dependencies"),
        storage_credential_name=op.get("storage_credential_name"),
    )


def update_table(entry: TableEntry, op: Operation) -> None:
    if "columns" in op:
        entry.columns = list(op["columns"])
    if "view_definition" in op:
        entry.view_definition = op["view_definition"]
    if "format" in op:
        entry.format = op["format"]
    if "delta_commits" in op:
        entry.delta_commits = op["delta_commits"]
    apply_common_changes(entry, op)


def apply_common_changes(entry: Any, op: Operation) -> None:
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
