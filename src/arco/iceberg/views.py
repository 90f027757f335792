"""Iceberg views: create, load, replace, drop, rename, register, list; and their Idempotency-Key handling.

A view is kept as a table is (see :mod:`arco.iceberg.tables`): Tier 1 holds the name -> view uuid (an entry of kind
``VIEW``, format ``ICEBERG``, in the same name space as tables), the pointer (:mod:`arco.iceberg.pointer`, keyed by
the view uuid) holds the current metadata location and is changed only by compare-and-swap, and each metadata file
is written create-only and never changed. The same orders of writes make a crash between any two harmless:

* create / register: metadata file, pointer (create-only), then the Tier 1 entry (the commit point);
* replace: new metadata file, then the pointer swap (the commit point); a lost race re-reads the view, checks the
  requirements again and re-applies the updates (:mod:`arco.iceberg.view_rules`); only a failed requirement is 409;
* drop: the Tier 1 entry, then the pointer tombstone; rename: one Tier 1 operation.

Receipts: ``_catalog/events/{day}/iceberg_view/{pending|committed}/{sha256(metadata location)}.json`` for every new
metadata file (best effort, as for tables); the Tier 1 operations leave their catalog receipts as usual.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from pyiceberg.schema import Schema
from pyiceberg.view.metadata import ViewMetadata
from uuid6 import uuid7

from arco.auth.principals import Principal
from arco.catalog import locations
from arco.catalog.errors import TableNotFound
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.catalog.names import check_name
from arco.catalog.state import CatalogState, dotted
from arco.catalog.store import CatalogStore
from arco.events.receipts import EVENTS, SCHEMA_VERSION, commit_key, day_of, write_receipt
from arco.iceberg import view_builder, view_rules
from arco.iceberg.errors import AlreadyExists, BadRequest, CommitFailed, NoSuchView
from arco.iceberg.file_names import attempt_part, carries_tag, metadata_file_location, metadata_sequence
from arco.iceberg.idempotency import Keyed, Marker, Outcome, Recover, check_key
from arco.iceberg.metadata_files import view_metadata_bytes
from arco.iceberg.mutations import Caller, Mutations, keyed_on
from arco.iceberg.name_conflicts import refuse_rename_onto, refuse_taken
from arco.iceberg.paging import page
from arco.iceberg.placement import Placement
from arco.iceberg.pointer import PointerStore, TablePointer, VersionedPointer, in_read_window
from arco.iceberg.run_once import run_once
from arco.iceberg.tables import TableService, drop_entry, execute_or_withdraw
from arco.storage.base import StorageBackend
from arco.storage.urls import within

MAX_COMMIT_ATTEMPTS = 10


def view_metadata_json(metadata: ViewMetadata) -> dict[str, Any]:
    return orjson.loads(view_metadata_bytes(metadata))


def write_view_receipt(storage: StorageBackend, kind: str, *, view_uuid: str, metadata_location: str,
                       metadata: ViewMetadata, previous_metadata_location: str | None, source: dict[str, Any],
                       identifier: dict[str, Any] | None) -> bool:
    """``IcebergViewCommitPending`` / ``IcebergViewCommitCommitted`` (best effort, create-only)."""
    version = next((v for v in metadata.versions if v.version_id == metadata.current_version_id), None)
    event = {
        "event_type": "IcebergViewCommitPending" if kind == "pending" else "IcebergViewCommitCommitted",
        "schema_version": SCHEMA_VERSION, "event_id": str(uuid7()), "commit_key": commit_key(metadata_location),
        "view_uuid": view_uuid, "identifier": identifier, "metadata_location": metadata_location,
        "previous_metadata_location": previous_metadata_location, "format_version": metadata.format_version,
        "current_version_id": metadata.current_version_id,
        "schema_id": version.schema_id if version is not None else None,
        "dialects": view_builder.dialects_of(version) if version is not None else [],
        "source": source, "recorded_by": "commit", "recorded_at_ms": int(time.time() * 1000),
    }
    stamp = version.timestamp_ms if version is not None else int(time.time() * 1000)
    key = f"{EVENTS}/{day_of(stamp)}/iceberg_view/{kind}/{commit_key(metadata_location)}.json"
    return write_receipt(storage, key, event)


@dataclass(frozen=True)
class LoadedView:
    entry: TableEntry
    pointer: VersionedPointer
    metadata: ViewMetadata

    @property
    def location(self) -> str:
        return self.pointer.pointer.current_metadata_location


def _is_iceberg_view(entry: TableEntry) -> bool:
    return entry.kind == "VIEW" and entry.format == "ICEBERG"


def _iceberg_view(state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> TableEntry:
    try:
        entry = state.table(catalog.id, namespace, name)
    except TableNotFound:
        entry = None
    if entry is None or not _is_iceberg_view(entry):
        raise NoSuchView(f"View does not exist: {dotted((*namespace, name))}")
    return entry


def view_landed_location(pointers: PointerStore, view_uuid: str, tag: str) -> str | None:
    """The metadata file the replace tagged ``tag`` wrote, if it is the view's current or previous one (a view's
    metadata keeps no log of files, so recovery reaches back one later commit; past that, the key's marker
    times out and the retry applies the request again: view updates reuse equal versions and schemas)."""
    current = pointers.load(view_uuid)
    if current is None:
        return None
    for location in (current.pointer.current_metadata_location, current.pointer.previous_metadata_location):
        if location and carries_tag(location, tag):
            return location
    return None


class ViewService:
    def __init__(self, store: CatalogStore, storage: StorageBackend, tables: TableService) -> None:
        self.store = store
        self.storage = storage
        self.tables = tables  # placement and registration rules are the tables' own
        self.pointers = PointerStore(storage)
        self.files = tables.view_files

    # -- reading ---------------------------------------------------------------------------------------------

    def list(self, catalog: CatalogEntry, namespace: NamespacePath, token: str | None,
             size: int | None) -> tuple[list[TableEntry], str | None]:
        with self.store.read() as state:
            state.namespace(catalog.id, namespace)
            entries = [t for t in state.tables_of(catalog.id, namespace) if _is_iceberg_view(t)]
        return page(entries, lambda t: t.name.casefold(), token, size)

    def entry(self, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> TableEntry:
        with self.store.read() as state:
            return _iceberg_view(state, catalog, namespace, name)

    def load(self, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> LoadedView:
        entry = self.entry(catalog, namespace, name)
        pointer = self.pointers.load(entry.id)
        if pointer is None or pointer.pointer.dropped:
            raise NoSuchView(f"View does not exist: {dotted((*namespace, name))}")
        if not in_read_window():  # inside a read window, storage is not asked (as for a table's load)
            self.files.confirm_present(pointer.pointer.current_metadata_location)
        return LoadedView(entry, pointer, self.files.read(pointer.pointer.current_metadata_location))

    # -- creating --------------------------------------------------------------------------------------------

    def create(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any], principal: str,
               source: dict[str, Any], tag: str | None = None, who: Principal | None = None) -> str:
        request = view_rules.parse_create(body)
        name = check_name("view", request.name)
        view_uuid = str(uuid.uuid4())

        def placer(state: CatalogState) -> Placement:
            return self.tables.placements.for_new(state, catalog, namespace, name, view_uuid, request.location,
                                                  who, kind="view")

        with self.store.read() as state:
            state.namespace(catalog.id, namespace)
            refuse_taken(state, catalog.id, namespace, name, "view")
            place = placer(state)
        location = request.location if request.location and not place.managed else place.location
        metadata = view_rules.new_view_metadata(view_uuid, location.rstrip("/"), request, int(time.time() * 1000))
        locations.check_write_paths(metadata.properties, metadata.location)
        metadata_location = metadata_file_location(metadata.location, 0, attempt_part(tag), metadata.properties)
        self._register_new(catalog, namespace, name, metadata, metadata_location, principal, source, tag, placer)
        return metadata_location

    def _register_new(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, metadata: ViewMetadata,
                      metadata_location: str, principal: str, source: dict[str, Any], tag: str | None,
                      place: Callable[[CatalogState], Placement], write_metadata: bool = True) -> None:
        view_uuid = metadata.view_uuid
        if write_metadata:
            self.files.write(metadata_location, metadata)
        identity = {"catalog": catalog.name, "namespace": list(namespace), "name": name}
        receipt = {"view_uuid": view_uuid, "metadata_location": metadata_location, "metadata": metadata,
                   "previous_metadata_location": None, "source": source, "identifier": identity}
        write_view_receipt(self.storage, "pending", **receipt)
        pointer = TablePointer(table_uuid=view_uuid, current_metadata_location=metadata_location, updated_by=source)
        written = self.pointers.create_or_revive(pointer)  # a dropped view's files may be registered again
        if written is None:
            raise AlreadyExists(f"a view with uuid {view_uuid} already exists")

        def build(state: CatalogState) -> dict[str, Any]:
            state.namespace(catalog.id, namespace)
            refuse_taken(state, catalog.id, namespace, name, "view")
            if view_uuid in state.tables:
                raise AlreadyExists(f"a table or view with uuid {view_uuid} already exists")
            placement = place(state)
            return {"op": "create_table", "id": view_uuid, "catalog_id": catalog.id, "namespace": list(namespace),
                    "name": name, "kind": "VIEW", "format": "ICEBERG", "location": placement.location,
                    "owner": principal, "managed": placement.managed, "properties": {},
                    "metadata_location": metadata_location}

        execute_or_withdraw(self.store, self.pointers, pointer, written, build, principal=principal, request=tag,
                            source=source)
        write_view_receipt(self.storage, "committed", **receipt)

    def register(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any], principal: str,
                 source: dict[str, Any], tag: str | None = None, who: Principal | None = None) -> str:
        """registerView: the same storage rules as registerTable. The file's place is checked before a byte of it
        is read, and its contents are never quoted back (it may be anyone's)."""
        name = check_name("view", body.get("name"))
        location = body.get("metadata-location")
        if not isinstance(location, str) or not location:
            raise BadRequest("'metadata-location' is required")
        with self.store.read() as state:
            state.namespace(catalog.id, namespace)
            refuse_taken(state, catalog.id, namespace, name, "view")
            self.tables.placements.check_registrable(state, catalog, namespace, location, who)
        try:
            metadata = self.files.read(location)
        except Exception:  # noqa: BLE001 - never quoted back
            raise BadRequest(f"{location} is not a readable Iceberg view metadata file") from None
        if not within(locations.canonical(location), locations.canonical(metadata.location)):
            raise BadRequest("the metadata file must lie inside the location its metadata names")
        locations.check_write_paths(metadata.properties, metadata.location)

        def place(state: CatalogState) -> Placement:
            return self.tables.placements.for_registered(state, catalog, namespace, metadata.location,
                                                         metadata.view_uuid, who, kind="view")

        with self.store.read() as state:
            place(state)  # before the pointer is written
        self._register_new(catalog, namespace, name, metadata, location, principal, source, tag, place,
                           write_metadata=False)
        return location

    # -- replacing -------------------------------------------------------------------------------------------

    def replace(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, body: Any, principal: str,
                source: dict[str, Any], tag: str | None = None) -> str:
        requirements, updates = parse_replace(body)
        entry = self.entry(catalog, namespace, name)
        identity = {"catalog": catalog.name, "namespace": list(namespace), "name": name}
        for _ in range(MAX_COMMIT_ATTEMPTS):
            current = self.pointers.load(entry.id)
            if current is None or current.pointer.dropped:
                raise NoSuchView(f"View does not exist: {dotted((*namespace, name))}")
            base_location = current.pointer.current_metadata_location
            base = self.files.read_base(base_location)
            view_rules.check_requirements(requirements, base)
            new = view_rules.apply_updates(base, updates, int(time.time() * 1000))
            if new is None:
                return base_location  # nothing changes: no new file, as the reference does
            locations.check_write_paths(new.properties, new.location)
            location = metadata_file_location(new.location, metadata_sequence(base_location) + 1, attempt_part(tag),
                                              new.properties)
            self.files.write(location, new)
            receipt = {"view_uuid": entry.id, "metadata_location": location, "metadata": new,
                       "previous_metadata_location": base_location, "source": source, "identifier": identity}
            write_view_receipt(self.storage, "pending", **receipt)
            proposed = current.pointer.with_changes(current_metadata_location=location,
                                                    previous_metadata_location=base_location, updated_by=source)
            if self.pointers.swap(current.version, proposed).ok:
                write_view_receipt(self.storage, "committed", **receipt)
                return location
        raise CommitFailed(f"Commit failed: view {name} changed concurrently {MAX_COMMIT_ATTEMPTS} times; retry")

    def landed_location(self, view_uuid: str, tag: str) -> str | None:
        return view_landed_location(self.pointers, view_uuid, tag)

    # -- dropping and renaming -------------------------------------------------------------------------------

    def drop(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, principal: str,
             source: dict[str, Any] | None = None, tag: str | None = None) -> TableEntry:
        entry = drop_entry(self.store, lambda state: _iceberg_view(state, catalog, namespace, name), principal,
                           source, tag)
        self.tombstone(entry.id)
        return entry

    def tombstone(self, view_uuid: str) -> None:
        self.tables.tombstone(view_uuid)  # views' pointers live beside tables', in the same store

    def rename(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, target: NamespacePath,
               new_name: str, principal: str, source: dict[str, Any] | None = None, tag: str | None = None) -> None:
        check_name("view", new_name)

        def build(state: CatalogState) -> dict[str, Any]:
            entry = _iceberg_view(state, catalog, namespace, name)
            state.namespace(catalog.id, target)
            refuse_rename_onto(state, catalog, entry, (*namespace, name), target, new_name)
            return {"op": "rename_table", "id": entry.id, "namespace": list(target), "name": new_name}

        self.store.execute(build, principal=principal, request=tag, source=source)


def parse_replace(body: Any) -> tuple[list[view_rules.ViewRequirement], list[view_rules.ViewUpdate]]:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return view_rules.parse_requirements(body.get("requirements")), view_rules.parse_updates(body.get("updates"))


def uc_view_of(tables: TableService, entry: TableEntry) -> tuple[str | None, Schema | None, dict[str, str]]:
    """For Unity Catalog: an Iceberg view's SQL (the ``spark`` dialect's, else the first), schema and properties."""
    pointer = PointerStore(tables.storage).load(entry.id)
    if pointer is None or pointer.pointer.dropped:
        return None, None, {}
    try:
        metadata = tables.view_files.read(pointer.pointer.current_metadata_location)
    except Exception:  # noqa: BLE001 - an unreadable view shows without its definition
        return None, None, {}
    sql, schema = view_rules.view_definition(metadata)
    return sql, schema, dict(metadata.properties)


# -- Idempotency-Key -------------------------------------------------------------------------------------------


class ViewMutations:
    """Every view mutation, at most once per Idempotency-Key, recovered after a crash as the tables' are
    (:mod:`arco.iceberg.mutations`): Tier 1 changes by their tagged operation, replaces by their tagged file."""

    def __init__(self, mutations: Mutations, views: ViewService) -> None:
        self.mutations = mutations
        self.views = views

    def _keyed(self, caller: Caller, catalog: CatalogEntry, operation: str, target: str, body: Any) -> Keyed | None:
        return self.mutations._catalog_keyed(caller, catalog, operation, target, body)

    def _created(self) -> Recover:
        return self.mutations._tier1_recovery(lambda op: Outcome(200, metadata_location=op["metadata_location"]))

    def create(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any],
               caller: Caller) -> Outcome:
        return self._new("createView", self.views.create, catalog, namespace, body, caller)

    def register(self, catalog: CatalogEntry, namespace: NamespacePath, body: dict[str, Any],
                 caller: Caller) -> Outcome:
        return self._new("registerView", self.views.register, catalog, namespace, body, caller)

    def _new(self, operation: str, service: Callable[..., str], catalog: CatalogEntry, namespace: NamespacePath,
             body: dict[str, Any], caller: Caller) -> Outcome:
        keyed = self._keyed(caller, catalog, operation, _dotted(namespace), body)

        def work(tag: str | None) -> Outcome:
            location = service(catalog, namespace, body, caller.principal, caller.source, tag, who=caller.who)
            return Outcome(200, metadata_location=location)

        return run_once(keyed, work, self._created())

    def replace(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, body: dict[str, Any],
                caller: Caller) -> Outcome:
        def work(tag: str | None) -> Outcome:
            location = self.views.replace(catalog, namespace, name, body, caller.principal, caller.source, tag)
            return Outcome(200, metadata_location=location)

        if caller.key is None:
            return work(None)
        parse_replace(body)
        entry = self.views.entry(catalog, namespace, name)
        keyed = keyed_on(self.mutations.markers, catalog, check_key(caller.key), "replaceView",
                         _dotted((*namespace, name)), body, caller.principal, entry.id)

        def recover(marker: Marker) -> Outcome | None:
            location = self.views.landed_location(marker.subject or entry.id, marker.hashed_key)
            return Outcome(200, metadata_location=location) if location is not None else None

        return run_once(keyed, work, recover)

    def drop(self, catalog: CatalogEntry, namespace: NamespacePath, name: str, caller: Caller) -> Outcome:
        keyed = self._keyed(caller, catalog, "dropView", _dotted((*namespace, name)), None)

        def work(tag: str | None) -> Outcome:
            self.views.drop(catalog, namespace, name, caller.principal, caller.source, tag)
            return Outcome(204)

        def finish(op: dict[str, Any]) -> Outcome:
            self.views.tombstone(op["id"])  # the crash may have come between the Tier 1 drop and the tombstone
            return Outcome(204)

        return run_once(keyed, work, self.mutations._tier1_recovery(finish))

    def rename(self, catalog: CatalogEntry, body: dict[str, Any], source: tuple[NamespacePath, str],
               target: tuple[NamespacePath, str], caller: Caller) -> Outcome:
        keyed = self._keyed(caller, catalog, "renameView", "", body)

        def work(tag: str | None) -> Outcome:
            self.views.rename(catalog, source[0], source[1], target[0], target[1], caller.principal, caller.source,
                              tag)
            return Outcome(204)

        return run_once(keyed, work, self.mutations._tier1_recovery(lambda op: Outcome(204)))


def _dotted(path: tuple[str, ...]) -> str:
    return "\x1f".join(path)
