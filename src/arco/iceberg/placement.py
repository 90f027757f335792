"""Where a new table or view lives, and which metadata files may be registered: the storage governance rules of
:mod:`arco.catalog.locations` asked the questions creates and registers raise, with what the service knows (the
warehouse's URL, how a location maps to a storage key).

Pure: no I/O. Each decision is made before any byte is read or written, and again inside the Tier 1 operation that
creates the entry, against the state it lands on, so a grant revoked or a location taken meanwhile cannot slip
through.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from arco.auth.principals import Principal
from arco.auth.subjects import subject_of
from arco.catalog import locations
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.state import CatalogState
from arco.iceberg.errors import BadRequest, Forbidden
from arco.storage.base import StorageError


@dataclass(frozen=True)
class Placement:
    """Where a new table lives, and whether Arco allocated it (managed: purge may delete it) or the caller chose it
    inside an external location (external: purge never deletes its files)."""

    location: str
    managed: bool


# The placement decision, made again against the state a Tier 1 operation is checked on.
Placer = Callable[[CatalogState], Placement]


@dataclass(frozen=True)
class Placements:
    """The placement decisions for one warehouse."""

    warehouse_url: str
    key_of: Callable[[str], str]  # a location's storage key: two spellings name the same objects iff keys match
    # Who last committed to a table (or view), by its uuid, as its pointer says (None: unknown).
    last_committer: Callable[[str], str | None] = lambda table_id: None

    def for_new(self, state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                object_uuid: str, requested: str | None, who: Principal | None, kind: str = "table") -> Placement:
        """Where a new table (or view: ``kind``) goes: the prefix Arco allocates, or a location the caller asked for,
        if the storage governance rules let this caller use it."""
        allocated = locations.allocate_table_location(state, catalog, namespace, name, object_uuid)
        if requested in (None, "") or locations.canonical(requested) == locations.canonical(allocated):
            return Placement(allocated, True)
        if who is None:
            raise BadRequest(f"'location' cannot be chosen here: Arco assigns {kind} locations under the catalog's "
                             "root")
        url = locations.check_external_table_location(
            state, subject_of(state, who), requested, self.warehouse_url, catalog.metastore_id,
            must_be_writable=True, inside_warehouse=True, kind=kind)
        self.check_plain_spelling(requested, url)
        return Placement(url, False)

    def _again(self, state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath, location: str,
               table_id: str, who: Principal | None) -> str | None:
        """The folder of a table of ``namespace`` dropped without purge, if the caller may bring it back: the one
        who last committed to it (it had the table's files in hand), its schema's or catalog's owner, or a
        metastore admin; anyone else who may create tables there could read, and purge, files that were not
        theirs (403). None if it is no such folder."""
        again = locations.check_reregistration(state, location, catalog, table_id, namespace)
        if not again or who is None:
            return again
        committer = self.last_committer(table_id)
        if committer is not None and committer.casefold() == who.name.casefold():
            return again
        if not locations.may_reregister(subject_of(state, who), state, catalog, namespace):
            raise Forbidden(f"{who.name} may not register a dropped table's files again: the one who last "
                            "committed to it, its schema's owner, its catalog's owner or a metastore admin may")
        return again

    def check_plain_spelling(self, raw: str, url: str) -> None:
        """Files are written where the client's spelling points, decisions are made on the canonical form: the two
        must name the same objects (``file:/x`` and ``file:///x/`` do; ``%6d`` and ``m`` do not). A location
        outside the warehouse is refused for that, however it is spelled."""
        try:
            key = self.key_of(url)
        except StorageError:
            raise BadRequest(f"location {url} is outside this server's warehouse {self.warehouse_url}; Arco reads "
                             "and writes Iceberg metadata only inside it") from None
        try:
            same = self.key_of(raw.rstrip("/")) == key
        except StorageError:  # a spelling no key can be made of
            same = False
        if not same:
            raise BadRequest(f"write the location {raw!r} plainly, as {url}: escapes, '.' segments and doubled "
                             "slashes are not accepted in locations")

    def check_registrable(self, state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath,
                          location: str, who: Principal | None) -> None:
        """Before a byte of it is read: a metadata file may be registered from inside an external location the
        caller may create tables in, or from the folder Arco allocated to a table of this namespace that was
        dropped without purge (registering it again, :meth:`_again`)."""
        url = locations.canonical(location, "metadata-location")
        if not url.endswith(".metadata.json"):
            raise BadRequest("metadata-location must name an Iceberg metadata file (*.metadata.json)")
        self.check_plain_spelling(location, url)
        folder = url.rsplit("/", 1)[0]
        table_folder = folder.rsplit("/", 1)[0] if folder.endswith("/metadata") else folder
        table_id = _uuid_of_folder(table_folder)
        if table_id and self._again(state, catalog, namespace, table_folder, table_id, who):
            return
        if who is None:
            raise BadRequest("metadata-location is not registrable here")
        locations.check_external_table_location(state, subject_of(state, who), table_folder, self.warehouse_url,
                                                catalog.metastore_id, must_be_writable=False, inside_warehouse=True)

    def for_registered(self, state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath, location: str,
                       object_uuid: str, who: Principal | None, kind: str = "table",
                       write_paths: Mapping[str, str] | None = None) -> Placement:
        """Where a registered table (or view) lives: the location its metadata names, which must be the folder Arco
        allocated to it before (registered again after a drop) or lie inside an external location the caller may
        write; ``write_paths``, the metadata's properties, must then keep its files inside it."""
        self.check_plain_spelling(location, locations.canonical(location))
        again = self._again(state, catalog, namespace, location, object_uuid, who)
        if again:
            return Placement(again, True)
        if who is None:
            raise BadRequest(f"the {kind}'s location is not registrable here")
        url = locations.check_external_table_location(
            state, subject_of(state, who), location, self.warehouse_url, catalog.metastore_id,
            must_be_writable=True, inside_warehouse=True)
        if write_paths is not None:
            locations.check_write_paths(write_paths, url)
        return Placement(url, False)


def _uuid_of_folder(folder: str) -> str | None:
    """The table uuid at the end of an allocated folder's name (``<name>-<32 hex>``), if it has one."""
    tail = folder.rsplit("-", 1)[-1]
    if len(tail) != 32 or any(c not in "0123456789abcdef" for c in tail):
        return None
    return str(uuid.UUID(tail))
