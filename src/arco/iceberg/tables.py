"""Iceberg tables: create (also staged), load, commit, drop, rename, register.

Who is authoritative for what (seed section 1): Tier 1 holds the name -> table uuid mapping, the location and
the format; the pointer holds the current metadata location; the metadata file holds everything else.

Orders of writes, chosen so a crash between any two leaves nothing visible half-done:

* create: metadata file, then pointer (create-only), then the Tier 1 entry (the commit point). A crash before the
  last write leaves an unreferenced pointer and file, which garbage collection can identify and remove.
* commit: the seed's flow; see :mod:`arco.iceberg.commit`.
* drop: the Tier 1 entry goes first (the commit point: the name is free), then the pointer becomes a tombstone,
  so a commit that resolved the name before the drop either lands before the tombstone or fails with 404.
* rename: one Tier 1 operation; the uuid, pointer and files stay where they are.

Where a new or registered table may live is decided by :mod:`arco.iceberg.placement` (pure).
"""

from __future__ import annotations

import contextvars
import functools
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder

from arco.auth.principals import Principal
from arco.catalog import locations
from arco.catalog.errors import CatalogError
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.catalog.names import check_name
from arco.catalog.state import CatalogState, dotted
from arco.catalog.store import CatalogStore
from arco.events import after_answer
from arco.events.receipts import write_iceberg_receipt
from arco.iceberg import field_checks, json_shapes, side_writes
from arco.iceberg.claim_beside import ClaimGate, ClaimNotOwned
from arco.iceberg.commit_rules import (
    check_field_defaults,
    check_property_values,
    check_reserved_properties,
    keep_field_defaults,
    with_row_lineage,
)
from arco.iceberg.errors import AlreadyExists, BadRequest, IcebergError, NoSuchTable, UnsupportedOperation
from arco.iceberg.file_names import attempt_part, metadata_file_location
from arco.iceberg.group_commit import Coalescer, GroupRecords
from arco.iceberg.malformed import MALFORMED, check_schema_limits, describe, parse_strictly
from arco.iceberg.metadata_files import DEFAULT_BUDGETS, MetadataCacheBudgets, MetadataFiles, ViewFiles
from arco.iceberg.name_conflicts import refuse_rename_onto, refuse_taken
from arco.iceberg.paging import page
from arco.iceberg.placement import Placement, Placements, Placer
from arco.iceberg.pointer import PointerStore, TablePointer, VersionedPointer, in_read_window
from arco.iceberg.transactions import PointerResolver, TxnRecords
from arco.inline import refuse_to_wait
from arco.storage.base import StorageBackend, StorageError
from arco.storage.urls import within

# Written into every new table unless its creator says otherwise, as Java's TableMetadata.newTableMetadata does: Java
# writers fall back to gzip for Parquet on a table without the property (the default of tables made before 1.4).
NEW_TABLE_DEFAULTS = {"write.parquet.compression-codec": "zstd"}
# Pointer reads started ahead of the catalog check they run beside (one per load in flight; threads on demand).
_AHEAD = ThreadPoolExecutor(max_workers=32, thread_name_prefix="arco-read-ahead")
# A known table's uuid and its pointer's read, started before the catalog check that confirms the name.
PointerAhead = tuple[str, Future[VersionedPointer | None]]


@dataclass(frozen=True)
class LocatedTable:
    """A table's catalog entry and its pointer as read now: where its current metadata file is."""

    entry: TableEntry
    pointer: VersionedPointer

    @property
    def metadata_location(self) -> str:
        return self.pointer.pointer.current_metadata_location


@dataclass(frozen=True)
class LoadedTable:
    entry: TableEntry
    pointer: VersionedPointer
    metadata: TableMetadata


def pointer_for(table_uuid: str, location: str, metadata: TableMetadata, previous: str | None,
                updated_by: dict[str, Any]) -> TablePointer:
    return TablePointer(
        table_uuid=table_uuid,
        current_metadata_location=location,
        current_snapshot_id=metadata.current_snapshot_id,
        refs={name: ref.model_dump(by_alias=True, exclude_none=True) for name, ref in metadata.refs.items()},
        last_sequence_number=getattr(metadata, "last_sequence_number", 0) or 0,
        previous_metadata_location=previous,
        updated_by=updated_by,
    )


# A live pointer that no catalog entry names and nothing wrote for this long is an interrupted registration's.
ORPHANED_POINTER_AGE_S = 3600


def execute_or_withdraw(store: CatalogStore, pointers: PointerStore, pointer: TablePointer, written: str,
                        build: Callable[[CatalogState], dict[str, Any]], **kwargs: Any) -> None:
    """The Tier 1 operation that names a pointer just written (the commit point of a create or registration); if
    the catalog refuses it (the name taken meanwhile, say), the pointer is withdrawn again, so that nothing is
    left that would refuse the next registration of the same files. A storage fault leaves it: the operation may
    have landed."""
    try:
        store.execute(build, **kwargs)
    except (CatalogError, IcebergError) as exc:
        if not isinstance(exc, IcebergError) or 400 <= exc.status < 500:
            pointers.withdraw(pointer, written)
        raise


class TableService:
    def __init__(self, store: CatalogStore, storage: StorageBackend,
                 cache: MetadataCacheBudgets = DEFAULT_BUDGETS) -> None:
        self.store = store
        self.storage = storage
        self.pointers = PointerStore(storage)
        self.resolver = PointerResolver(self.pointers, TxnRecords(storage))
        self.files = MetadataFiles(storage, cache_budget=cache.tables)
        self.view_files = ViewFiles(storage, cache_budget=cache.views)
        self.placements = Placements(storage.url, self.files.key_of, self.last_committer)
        # Commits to one table that meet in this process go together (arco.iceberg.group_commit).
        self.committer = Coalescer()
        self.groups = GroupRecords(storage)

    def last_committer(self, table_uuid: str) -> str | None:
        """Who last committed to a table or view, as its pointer says (a dropped one's is kept, and may not be
        tombstoned yet right after the drop); None if unknown or unreadable."""
        try:
            found = self.pointers.load(table_uuid)
        except StorageError:
            return None
        if found is None:
            return None
        principal = found.pointer.updated_by.get("principal")
        return principal if isinstance(principal, str) else None

    # -- reading ---------------------------------------------------------------------------------------------

    def list(self, catalog: CatalogEntry, namespace: NamespacePath, token: str | None,
             size: int | None) -> tuple[list[TableEntry], str | None]:
        """The namespace's Iceberg tables: a Delta (or other) table made through Unity Catalog shares the
        namespace, but loadTable would answer it is no Iceberg table, so it is not listed either."""
        with self.store.read() as state:
            state.namespace(catalog.id, namespace)
            entries = [t for t in state.tables_of(catalog.id, namespace) if t.kind == "TABLE" and t.format == "ICEBERG"]
        return page(entries, lambda t: t.name.casefold(), token, size)

    def entry(self, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> TableEntry:
        # A missing namespace is NoSuchTable here, as in the reference implementation: Spark probes the metadata
        # table db.t.snapshots as table "snapshots" in namespace db.t and only falls back on NoSuchTable.
        return self.store.find(lambda state: _iceberg_table(state, catalog, namespace, name))

    def entry_absent(self, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> None:
        """Raise unless the namespace exists and has no table or view of this name (:class:`NameTaken`)."""
        with self.store.read() as state:
            state.namespace(catalog.id, namespace)
            refuse_taken(state, catalog.id, namespace, name, "table")

    def known_entry(self, catalog: CatalogEntry | str, namespace: NamespacePath, name: str,
                    principal: Principal | None = None) -> TableEntry | None:
        """The table as this process last knew it, without asking storage (None if unknown): a guess, for work
        that may start before the catalog check confirms it (the check runs beside it, and decides)."""
        try:
            with self.store.read_cached() as state:
                if isinstance(catalog, str):
                    if principal is None:
                        return None
                    catalog = state.catalog(catalog, state.tenant_of_workspace(principal.workspace_id).scope)
                return _iceberg_table(state, catalog, namespace, name)
        except (CatalogError, IcebergError, StorageError):  # a guess: the check that follows decides
            return None

    @property
    def reads_ahead(self) -> bool:
        """Whether a known table's pointer is worth reading beside the catalog check (:meth:`pointer_ahead`):
        not where reads cost less than a hand-over to a side thread (a local disk), since both then run inline."""
        return not self.store.storage.capabilities.cheap_reads

    def pointer_ahead(self, catalog: CatalogEntry | str, namespace: NamespacePath, name: str,
                      principal: Principal | None = None) -> PointerAhead | None:
        """For a table this process knows, where it pays (:attr:`reads_ahead`) and the request's catalog check is
        still to come: its pointer's read, started now on a side thread (in the caller's request scope) so that it
        runs beside that check. None otherwise: the pointer is then read after the check."""
        if not self.reads_ahead or self.store.is_fresh():
            return None
        known = self.known_entry(catalog, namespace, name, principal)
        if known is None:
            return None
        refuse_to_wait()  # an inline attempt would wait for the side thread's answer: it goes to a thread instead
        return known.id, _AHEAD.submit(contextvars.copy_context().run, self.resolver.for_read, known.id)

    def load(self, catalog: CatalogEntry, namespace: NamespacePath, name: str,
             ahead: PointerAhead | None = None) -> LoadedTable:
        """The table now, its current metadata parsed (:meth:`locate`, then the metadata file)."""
        located = self.locate(catalog, namespace, name, ahead)
        return LoadedTable(located.entry, located.pointer, self.files.read(located.metadata_location))

    def locate(self, catalog: CatalogEntry, namespace: NamespacePath, name: str,
               ahead: PointerAhead | None = None) -> LocatedTable:
        """The table's entry and pointer now. They are two reads; when this process knows the table already, the
        pointer is read beside the catalog check (``ahead``, from :meth:`pointer_ahead`, or started here), so this
        waits for one storage round trip. The catalog check decides: if the name now names another table, that
        table's pointer is read."""
        if ahead is None:
            ahead = self.pointer_ahead(catalog, namespace, name)
        try:
            entry = self.entry(catalog, namespace, name)
        except BaseException:
            if ahead is not None:
                ahead[1].cancel()
            raise
        if ahead is not None and ahead[0] == entry.id:
            pointer = ahead[1].result()
        else:
            pointer = self.resolver.for_read(entry.id)
        if pointer is None or pointer.pointer.dropped:
            raise NoSuchTable(f"Table does not exist: {dotted((*namespace, name))}")
        return LocatedTable(entry, pointer)

    def locate_for_load(self, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                        ahead: PointerAhead | None = None,
                        answered_from_memory: Callable[[str], bool] = lambda _: True) -> LocatedTable:
        """:meth:`locate`, for an answer that may come from memory (loadTable, the web UI's table page): outside a
        read window, the current metadata file is confirmed present first, so a file deleted outside the catalog is
        reported alike by every server, warm or cold (MetadataFiles.confirm_present). A caller that can tell it
        will read the file anyway (``answered_from_memory`` false for its location) is spared the look: the read
        reports a missing file the same way."""
        located = self.locate(catalog, namespace, name, ahead)
        if not in_read_window() and answered_from_memory(located.metadata_location):
            self.files.confirm_present(located.metadata_location)
        return located

    # -- creating --------------------------------------------------------------------------------------------

    def build_create_metadata(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any],
                              table_uuid: str, who: Principal | None = None) -> tuple[TableMetadata, Placement]:
        """The first metadata of a table from a CreateTableRequest (field ids reassigned, as the spec asks)."""
        name = check_name("table", body.get("name"))
        requested = body.get("location")
        if requested is not None and not isinstance(requested, str):
            raise BadRequest("'location' must be a string")
        properties = body.get("properties") or {}
        if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
            raise BadRequest("'properties' must be an object of string values")
        check_reserved_properties(list(properties))
        check_property_values(properties)
        with self.store.read() as state:
            place = self.placements.for_new(state, catalog, namespace, name, table_uuid, requested, who)
        # The client's spelling is kept in the metadata (engines compare it with what they sent); Tier 1 keeps
        # the canonical form that every governance decision uses.
        location = requested if requested and not place.managed else place.location
        locations.check_write_paths(properties, location)
        try:
            check_schema_limits(body.get("schema"))
            json_shapes.check_schema_json(body.get("schema"))
            json_shapes.check_spec_json(body.get("partition-spec"))
            json_shapes.check_order_json(body.get("write-order"), "write order")
            schema = parse_strictly(Schema, body.get("schema"))
            spec = parse_strictly(PartitionSpec, _with_fields(body, "partition-spec")) \
                if body.get("partition-spec") is not None else UNPARTITIONED_PARTITION_SPEC
            order = parse_strictly(SortOrder, _with_fields(body, "write-order")) \
                if body.get("write-order") is not None else UNSORTED_SORT_ORDER
            field_checks.check_schema(schema)
            field_checks.check_spec(spec, schema)
            field_checks.check_sort_order(order, schema)
            metadata = with_row_lineage(new_table_metadata(
                schema, spec, order, location.rstrip("/"), properties={**NEW_TABLE_DEFAULTS, **properties},
                table_uuid=uuid.UUID(table_uuid),
            ))
            # Fresh field ids drop the fields' default values (format v3): put them back, or refuse them (v1, v2).
            fresh = keep_field_defaults(metadata.schemas[0], schema)
            check_field_defaults(fresh, metadata.format_version)
            metadata = metadata.model_copy(update={"schemas": [fresh]})
        except MALFORMED as exc:
            raise BadRequest(f"invalid table definition: {describe(exc)}") from None
        return metadata, place

    def create(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any], principal: str,
               source: dict[str, Any], tag: str | None = None, who: Principal | None = None,
               gate: ClaimGate | None = None) -> tuple[str, TableMetadata]:
        """A new table; ``gate``, an Idempotency-Key's claim made beside the metadata file, is asked before the
        pointer (:meth:`register_new`)."""
        table_uuid = str(uuid.uuid4())
        name = check_name("table", body.get("name"))
        self.entry_absent(catalog, namespace, name)
        metadata, _ = self.build_create_metadata(catalog, namespace, body, table_uuid, who)
        location = metadata_file_location(metadata.location, 0, attempt_part(None), metadata.properties)
        self.register_new(catalog, namespace, name, metadata, location, principal, source, tag=tag, gate=gate,
                          place=self.placer(catalog, namespace, name, metadata, who))
        return location, metadata

    def placer(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, metadata: TableMetadata,
               who: Principal | None) -> Placer:
        """The placement decision for a new table of this metadata, to be made against a given state (before any
        write, and again against the state the Tier 1 operation is checked on)."""
        return lambda state: self.placements.for_new(state, catalog, namespace, name, str(metadata.table_uuid),
                                                     metadata.location, who)

    def register_new(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, metadata: TableMetadata,
                     location: str, principal: str, source: dict[str, Any], *, place: Placer,
                     write_metadata: bool = True, tag: str | None = None, gate: ClaimGate | None = None) -> None:
        """Write the metadata file (unless it exists already), the pointer, then the Tier 1 entry (tagged with
        ``tag``, the commit point), with the table's first receipts around them. ``place`` decides, inside the
        Tier 1 operation, where the table lives and whether Arco manages its storage. ``gate`` (a keyed create's
        claim, made beside the metadata file: :mod:`arco.iceberg.claim_beside`) must hold before the pointer is
        written; if it does not, the file is deleted and nothing else is written.

        The pending receipt is written beside the metadata file and the pointer (:mod:`arco.iceberg.side_writes`),
        and waited for before the Tier 1 entry, so it still precedes the commit point; the committed receipts (the
        table's and the catalog's) are written after the answer. So a create without an Idempotency-Key waits for
        three writes in a row."""
        table_uuid = str(metadata.table_uuid)
        identity = {"catalog": catalog.name, "namespace": list(namespace), "name": name}
        receipt = {"table_uuid": table_uuid, "metadata_location": location, "metadata": metadata,
                   "previous_metadata_location": None, "source": source, "identifier": identity}
        pending = side_writes.start_pending_receipt(self.storage, **receipt)
        try:
            if write_metadata:
                self.files.write(location, metadata)
            if gate is not None:
                try:
                    gate.wait()
                except ClaimNotOwned:
                    if write_metadata:
                        self.files.discard(location)
                    raise
            pointer = pointer_for(table_uuid, location, metadata, None, source)
            # A dropped table's files may be registered again; so may those of a registration that was interrupted.
            written = self.pointers.create_or_revive(pointer, orphaned=self.orphaned_pointer)
            if written is None:
                raise AlreadyExists(f"a table with uuid {table_uuid} already exists")
        finally:
            side_writes.settle(pending)

        def build(state: CatalogState) -> dict[str, Any]:
            refuse_taken(state, catalog.id, namespace, name, "table")
            placement = place(state)
            return {"op": "create_table", "id": table_uuid, "catalog_id": catalog.id, "namespace": list(namespace),
                    "name": name, "kind": "TABLE", "format": "ICEBERG", "location": placement.location,
                    "owner": principal, "managed": placement.managed, "properties": {},
                    "metadata_location": location}

        execute_or_withdraw(self.store, self.pointers, pointer, written, build, principal=principal, request=tag,
                            source=source)
        # Best effort, after the answer (arco.events.after_answer): the reconciler backfills a missing one.
        after_answer.write_later(functools.partial(write_iceberg_receipt, self.storage, "committed", **receipt))

    def orphaned_pointer(self, existing: VersionedPointer) -> bool:
        """A live pointer no catalog entry names, last written long ago: a registration (or create) interrupted
        between its pointer and its catalog entry. Never a fresh one, which may be a registration in flight."""
        old = time.time() * 1000 - existing.pointer.updated_at_ms > ORPHANED_POINTER_AGE_S * 1000
        if not old:
            return False
        with self.store.read() as state:
            return existing.pointer.table_uuid not in state.tables

    def register(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any], principal: str,
                 source: dict[str, Any], tag: str | None = None,
                 who: Principal | None = None) -> tuple[str, TableMetadata]:
        name = check_name("table", body.get("name"))
        location = body.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise BadRequest("'metadata-location' is required")
        overwrite = body.get("overwrite", False)
        if not isinstance(overwrite, bool) and overwrite is not None:
            raise BadRequest("'overwrite' must be a boolean")
        if overwrite:  # as the reference answers (Catalog.registerTable's default): nothing is replaced
            raise UnsupportedOperation("Registering tables with overwrite is not supported")
        self.entry_absent(catalog, namespace, name)
        with self.store.read() as state:
            self.placements.check_registrable(state, catalog, namespace, location, who)
        try:
            metadata = self.files.read(location)
        except Exception:  # noqa: BLE001 - the file's contents are never quoted back: it may be anyone's
            raise BadRequest(f"{location} is not a readable Iceberg table metadata file") from None
        if not within(locations.canonical(location), locations.canonical(metadata.location)):
            raise BadRequest("the metadata file must lie inside the location its metadata names")

        def place(state: CatalogState) -> Placement:
            return self.placements.for_registered(state, catalog, namespace, metadata.location,
                                                  str(metadata.table_uuid), who, write_paths=metadata.properties)

        with self.store.read() as state:
            place(state)  # before the pointer is written
        self.register_new(catalog, namespace, name, metadata, location, principal, source, write_metadata=False,
                          tag=tag, place=place)
        return location, metadata

    # -- dropping and renaming -------------------------------------------------------------------------------

    def drop(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, principal: str,
             source: dict[str, Any] | None = None, tag: str | None = None) -> TableEntry:
        def find(state: CatalogState) -> TableEntry:
            # A table in a namespace that does not exist does not exist (NoSuchTable, as the reference answers):
            # Java's dropTable then returns false rather than throwing.
            return _iceberg_table(state, catalog, namespace, name)

        entry = drop_entry(self.store, find, principal, source, tag)
        self.tombstone(entry.id)
        return entry

    def last_metadata_location(self, table_uuid: str) -> str:
        """The metadata file a table (dropped or unregistered, so its pointer final) last pointed to."""
        current = self.resolver.for_write(table_uuid)
        if current is None:
            raise NoSuchTable(f"Table does not exist: {table_uuid}")
        return current.pointer.current_metadata_location

    def unregister(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, principal: str,
                   source: dict[str, Any] | None = None, tag: str | None = None) -> tuple[TableEntry, str]:
        """The catalog forgets the table, every file stays: a drop without purge (the same Tier 1 operation, the
        pointer tombstoned so a commit racing the unregister fails, as the spec asks), answering the last metadata
        location. Registering that metadata file again works as after any drop (the tombstone is replaced)."""
        entry = self.drop(catalog, namespace, name, principal, source, tag)
        return entry, self.last_metadata_location(entry.id)

    def tombstone(self, table_uuid: str) -> None:
        """Mark a dropped table's (or view's) pointer dropped, so commits resolved before the drop fail."""
        for _ in range(20):
            current = self.resolver.for_write(table_uuid)
            if current is None or current.pointer.dropped:
                return
            marked = current.pointer.with_changes(dropped=True)
            if self.pointers.swap(current.version, marked).ok:
                return

    def rename(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, target: NamespacePath,
               new_name: str, principal: str, source: dict[str, Any] | None = None, tag: str | None = None) -> None:
        check_name("table", new_name)

        def build(state: CatalogState) -> dict[str, Any]:
            state.namespace(catalog.id, target)  # first, as the reference checks them
            entry = _iceberg_table(state, catalog, namespace, name)  # NoSuchTable in a missing namespace too
            refuse_rename_onto(state, catalog, entry, (*namespace, name), target, new_name)
            return {"op": "rename_table", "id": entry.id, "namespace": list(target), "name": new_name}

        self.store.execute(build, principal=principal, request=tag, source=source)


def drop_entry(store: CatalogStore, find: Callable[[CatalogState], TableEntry], principal: str,
               source: dict[str, Any] | None, tag: str | None) -> TableEntry:
    """Drop the table or view ``find`` names in the state, in one Tier 1 operation (``drop_table``, which keeps
    what a later purge needs); the entry dropped."""
    dropped: list[TableEntry] = []

    def build(state: CatalogState) -> dict[str, Any]:
        entry = find(state)
        dropped[:] = [entry]
        return {"op": "drop_table", "id": entry.id, "location": entry.location, "managed": entry.managed,
                "catalog_id": entry.catalog_id}

    store.execute(build, principal=principal, request=tag, source=source)
    return dropped[0]


def _iceberg_table(state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> TableEntry:
    entry = state.table(catalog.id, namespace, name)
    if entry.kind == "VIEW":  # to Iceberg a view is no table: the reference's words for a missing one
        raise NoSuchTable(f"Table does not exist: {dotted((*namespace, name))}")
    if entry.kind != "TABLE" or entry.format != "ICEBERG":
        raise NoSuchTable(f"{dotted((*namespace, name))} is not an Iceberg table")
    return entry


def _with_fields(body: dict[str, Any], key: str) -> Any:
    """A create request's partition spec or sort order, which must list its ``fields`` (the spec requires them;
    PyIceberg's models would take an empty object for no fields at all)."""
    value = body[key]
    if not isinstance(value, dict) or not isinstance(value.get("fields"), list):
        raise BadRequest(f"'{key}' must be an object with a list of 'fields'")
    return value
