"""Who owns which storage prefix, and which locations a caller may name (pure: Tier 1 state in, a decision out).

Every prefix of a warehouse belongs to at most one owner:

* Arco itself: ``_catalog`` (the log, identities, tokens, markers, receipts) and the local backend's ``.arco-*``;
* a catalog's managed root (and a metastore's storage root), under which Arco allocates managed tables; a catalog
  created with a ``storage_root`` gets a folder of its own under that root, inside an external location on which
  its creator holds CREATE_MANAGED_STORAGE (:func:`check_managed_storage_root`);
* a managed table: the prefix Arco allocated to its uuid (:func:`allocate_table_location`);
* an external table: a prefix inside a UC external location, named by a caller holding CREATE_EXTERNAL_TABLE on
  that location (:func:`check_external_table_location`);
* a volume: managed, the prefix Arco allocated to its id (the same shape as a table's); external, a prefix inside
  an external location on which its creator holds CREATE_EXTERNAL_VOLUME (:func:`check_external_volume_location`);
* a registered model: the prefix Arco allocated to its id (its versions' files live under it).

External tables, volumes and models claim storage alike (:func:`table_claims` yields them all), so no table
overlaps a volume and the other way round, and purge of either deletes nothing another one lives in or around.

Owners never overlap, locations are compared only in their canonical form (:mod:`arco.storage.urls`), and purge
deletes a prefix only if Arco allocated it to that very table and nothing else lives inside it or around it
(:func:`purge_prefix`). Both APIs (Iceberg REST and Unity Catalog) decide through this module and nothing else.

Scanning every table is linear in the catalog's size; it happens only on the rare paths (a client-chosen
location, register, purge, a new external location), never on loads or commits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from arco.auth import decisions as can
from arco.auth.decisions import Securable, Subject
from arco.catalog.errors import InvalidRequestError
from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry, path_key
from arco.catalog.names import slug
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.storage.urls import BadLocation, as_given, normalize, overlaps, within

ARCO_FOLDERS = ("_catalog",)
MANAGED_STORAGE_FOLDER = "__unitystorage"  # Unity Catalog's name for the managed folders under a storage_root
TABLE_FOLDER = re.compile(r"-[0-9a-f]{32}$")
# Table properties that tell engines where to write; each must stay inside the table's own location.
WRITE_PATH_PROPERTIES = ("write.data.path", "write.metadata.path", "write.object-storage.path",
                         "write.folder-storage.path")


class LocationRefused(InvalidRequestError):
    """A location the caller may not use; ``rule`` names the rule that failed (for tests and logs)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class Claim:
    """A prefix someone owns: ``what`` is how an error names the owner."""

    url: str
    what: str
    table_id: str | None = None
    chosen: bool = False  # managed storage its creator placed in an external location (a storage_root)


def canonical(raw: object, what: str = "location") -> str:
    try:
        return normalize(raw)
    except BadLocation as exc:
        raise LocationRefused("malformed", f"{what}: {exc}") from None


# -- allocation ------------------------------------------------------------------------------------------------


def namespace_folder(level: str) -> str:
    """A namespace level's folder. A slug that looks like a table's folder gets a trailing ``_``, so no table's
    allocated prefix can ever lie inside another's (a namespace named ``t-<uuid hex>`` would otherwise do it)."""
    folder = slug(level)
    return folder + "_" if TABLE_FOLDER.search(folder) else folder


def table_folder(name: str, table_id: str) -> str:
    return f"{slug(name)}-{table_id.replace('-', '')}"


def managed_root(state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath) -> tuple[str, NamespacePath]:
    """Where the managed objects of ``namespace`` go, and the levels of it to make folders of: its schema's storage
    location (a schema created with a storage_root) and the levels below the schema, else the catalog's managed
    root and every level."""
    if namespace:
        schema_id = state.namespace_by_path.get((catalog.id, path_key(namespace[:1])))
        schema = state.namespaces.get(schema_id) if schema_id is not None else None
        if schema is not None and schema.storage_location:
            return schema.storage_location, namespace[1:]
    return catalog.storage_root, namespace


def namespace_location(state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath) -> str:
    """The folder a namespace's managed objects are allocated in: ``<managed root>/<namespace folders>``
    (:func:`managed_root`)."""
    root, levels = managed_root(state, catalog, namespace)
    return "/".join([root.rstrip("/"), *(namespace_folder(level) for level in levels)])


def allocate_table_location(state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                            table_id: str) -> str:
    """The unique prefix of a new managed table (or volume, or model): ``<namespace location>/<name>-<uuid>``.
    Refused where that managed storage lies in an external location made read-only since it was placed there:
    nothing new is written in it (its owner said so), as no commit is."""
    location = f"{namespace_location(state, catalog, namespace)}/{table_folder(name, table_id)}"
    read_only = read_only_location(state, normalize(location), catalog.metastore_id)
    if read_only is not None:
        raise LocationRefused("read-only", f"the managed storage of {catalog.name}.{'.'.join(namespace)} lies in "
                                           f"external location {read_only.name}, which is read-only: nothing new "
                                           "is created there (its owner may make it writable again)")
    return location


def managed_roots_of(state: CatalogState, catalog: CatalogEntry) -> list[str]:
    """The catalog's managed root and the storage locations of its schemas created with a storage_root."""
    schemas = [n.storage_location for n in state.child_namespaces(catalog.id, ()) if n.storage_location]
    return [catalog.storage_root, *schemas]


def is_allocated(state: CatalogState, location: str, catalog: CatalogEntry, table_id: str) -> bool:
    """Whether ``location`` has the shape Arco gives table ``table_id`` under one of ``catalog``'s managed roots
    (it survives renames: the folder keeps the name the table was created with)."""
    try:
        url = normalize(location)
        roots = [normalize(root) for root in managed_roots_of(state, catalog)]
    except BadLocation:
        return False
    if not url.endswith("-" + table_id.replace("-", "")):
        return False
    # Only the last folder may look like a table's (namespace folders never do: ``namespace_folder``), so two
    # allocated prefixes can never nest: one overlaps another only by being it, which takes the same id.
    return any(url != root and within(url, root) and
               not any(TABLE_FOLDER.search(folder) for folder in url[len(root):].strip("/").split("/")[:-1])
               for root in roots)


# -- who owns what ---------------------------------------------------------------------------------------------


def arco_claims(warehouse_url: str) -> list[Claim]:
    root = normalize(warehouse_url)
    return [Claim(f"{root}/{folder}", "Arco's own catalog files") for folder in ARCO_FOLDERS]


def managed_root_claims(state: CatalogState) -> Iterator[Claim]:
    for catalog in state.catalogs.values():
        yield Claim(normalize(catalog.storage_root), f"the managed storage of catalog {catalog.name}",
                    chosen=catalog.requested_root is not None)
    for schema in state.namespaces.values():
        if schema.storage_location:
            yield Claim(normalize(schema.storage_location), f"the managed storage of schema {'.'.join(schema.path)}",
                        chosen=True)
    for entry in state.securables_in_every_metastore("metastore"):
        root = entry.fields.get("storage_root")
        if root and not entry.fields.get("primary"):  # the primary metastore's root is the warehouse itself
            yield Claim(normalize(root), f"the managed storage of metastore {entry.fields.get('name', entry.name)}")


CLAIMING_SECURABLES = ("volume", "registered_model")  # schema-level objects with storage (arco.catalog.schema_objects)


def table_claims(state: CatalogState, exclude_id: str | None = None) -> Iterator[Claim]:
    """Every prefix an external table, volume or registered model holds (all but ``exclude_id``'s).

    Managed tables need no claims of their own: each lies inside its catalog's managed root, which
    :func:`managed_root_claims` covers, at a prefix allocated to its id (:func:`is_allocated`), which no other
    allocated prefix can overlap. So this never reads the tables of a million-table catalog."""
    for table_id, (name, location) in state.tables.external.items():
        if table_id != exclude_id:
            try:
                yield Claim(normalize(location), f"table {name}", table_id)
            except BadLocation:
                continue  # a legacy entry with an unreadable location claims nothing it can be compared with
    yield from storage_object_claims(state, exclude_id)


def storage_object_claims(state: CatalogState, exclude_id: str | None = None) -> Iterator[Claim]:
    for kind in CLAIMING_SECURABLES:
        for entry in state.securables_in_every_metastore(kind):
            location = entry.fields.get("storage_location")
            if entry.id != exclude_id and location:
                try:
                    yield Claim(normalize(location), f"{kind.replace('_', ' ')} {entry.fields.get('name', '')}",
                                entry.id)
                except BadLocation:
                    continue


def first_overlap(url: str, claims: Iterable[Claim]) -> Claim | None:
    return next((c for c in claims if overlaps(url, c.url)), None)


# -- decisions -------------------------------------------------------------------------------------------------


def check_external_location_url(state: CatalogState, raw: object, warehouse_url: str,
                                exclude_id: str | None = None) -> str:
    """A new (or moved) UC external location: canonical, and clear of Arco's files, managed roots, the warehouse
    root itself, other external locations and external tables it would swallow."""
    url = canonical(raw, "url")
    root = normalize(warehouse_url)
    if within(root, url):
        raise LocationRefused("warehouse-root", f"url {url} contains the whole warehouse {root}; choose a folder "
                                                "outside the catalogs' managed storage")
    managed = list(managed_root_claims(state))
    # Managed storage placed in an external location (a storage_root) may lie inside one: never around one.
    clash = first_overlap(url, [*arco_claims(warehouse_url), *(c for c in managed if not c.chosen)]) or next(
        (c for c in managed if c.chosen and within(url, c.url)), None)
    if clash is not None:
        raise LocationRefused("managed", f"url {url} overlaps {clash.what} ({clash.url}); external locations "
                                         "must lie outside storage that Arco manages")
    for other in state.securables_in_every_metastore("external_location"):
        if other.id != exclude_id and overlaps(url, canonical(other.fields["url"])):
            raise LocationRefused("overlap", f"url {url} overlaps the external location {other.name} "
                                             f"({other.fields['url']})")
    for claim in storage_object_claims(state):  # an external location inside one external volume would own it
        if within(url, claim.url) and url != claim.url:
            raise LocationRefused("inside-volume", f"url {url} is inside {claim.what}'s location {claim.url}")
    return as_given(raw)  # decided on the canonical form, kept as the client spelled it


def check_external_table_location(state: CatalogState, who: Subject, raw: object, warehouse_url: str,
                                  metastore_id: str | None, *, must_be_writable: bool,
                                  inside_warehouse: bool, kind: str = "table") -> str:
    """A location a client asks for a new external table (Iceberg create/register with a location, UC EXTERNAL):
    its canonical form, if it lies inside an external location of the caller's metastore on which the caller
    holds CREATE_EXTERNAL_TABLE (or owns it, or is a metastore admin), and overlaps no other owner.
    ``kind="volume"``: the same for an external volume, with CREATE_EXTERNAL_VOLUME; ``kind="view"``: for an Iceberg
    view, with CREATE_EXTERNAL_TABLE (only the messages name it a view)."""
    url = canonical(raw)
    root = normalize(warehouse_url)
    if within(root, url):
        raise LocationRefused("warehouse-root", f"location {url} contains the whole warehouse")
    # The caller's right to the place is decided before what lies there is looked at: a refusal that named the
    # table or volume a location overlaps would tell a caller with no rights there what others keep in it.
    container = containing_external_location(state, url, metastore_id)
    volume = kind == "volume"
    if container is not None and not (can_create_external_volume(who, state, container) if volume else
                                      can_create_external_table(who, state, container)):
        # A view's location takes the privilege of a table's.
        raise LocationRefused("privilege", f"{who.name} may not create external {kind}s in external location "
                                           f"{container.name} (needs CREATE_EXTERNAL_"
                                           f"{'VOLUME' if volume else 'TABLE'} on it)")
    clash = first_overlap(url, [*arco_claims(warehouse_url), *managed_root_claims(state), *table_claims(state)])
    if clash is not None:
        raise LocationRefused("taken", f"location {url} overlaps {clash.what} ({clash.url}); every {kind} needs "
                                       "a prefix of its own: choose a new folder inside an external location")
    if container is None:
        raise _no_external_location("location", url, f"the location to let Arco place the {kind}")
    if must_be_writable and container.fields.get("read_only"):
        raise LocationRefused("read-only", f"external location {container.name} is read-only, and Arco writes "
                                           f"this {kind}'s metadata files")
    if inside_warehouse and not within(url, root):
        raise LocationRefused("outside-warehouse", f"location {url} is outside this server's warehouse {root}; "
                                                   "Arco writes Iceberg metadata only inside it: create the "
                                                   "external location under the warehouse")
    return as_given(raw)  # decided on the canonical form, kept as the client spelled it


def _external_location_for(state: CatalogState, url: str, metastore_id: str | None, field: str,
                           omitted: str) -> SecurableEntry:
    """The external location containing ``url`` (the value of ``field``), or a refusal saying what to do."""
    container = containing_external_location(state, url, metastore_id)
    if container is None:
        raise _no_external_location(field, url, omitted)
    return container


def _no_external_location(field: str, url: str, omitted: str) -> LocationRefused:
    return LocationRefused("no-external-location", f"{field} {url} is in no external location; ask a metastore "
                                                   f"admin to create one that contains it, or omit {omitted}")


def containing_external_location(state: CatalogState, url: str, metastore_id: str | None) -> SecurableEntry | None:
    for entry in state.securables_of("external_location", metastore_id):
        try:
            if within(url, normalize(entry.fields["url"])):
                return entry
        except BadLocation:
            continue
    return None


def read_only_location(state: CatalogState, url: str, metastore_id: str | None) -> SecurableEntry | None:
    """The read-only external location ``url`` lies in, if it lies in one: nothing there is written through
    Arco's credentials, whatever a table's or volume's grants say (the location's owner said so)."""
    container = containing_external_location(state, url, metastore_id)
    return container if container is not None and container.fields.get("read_only") else None


def can_create_external_table(who: Subject, state: CatalogState, location: SecurableEntry) -> bool:
    target = can.Securable(location.owner, state.grants_on("external_location", location.id))
    # CREATE_TABLE is the 2.0 spelling of CREATE_EXTERNAL_TABLE on an external location.
    return can.admin(who) or can.holds(who, target, "CREATE_EXTERNAL_TABLE") or can.holds(who, target, "CREATE_TABLE")


def managed_storage_location(root: str, kind: str, object_id: str) -> str:
    """The managed location of a catalog (``kind`` "catalogs") or schema ("schemas") created with ``storage_root``
    ``root``: a folder of its own under the root, as Unity Catalog makes it (``<root>/__unitystorage/catalogs/<id>``),
    so several may name one root."""
    return f"{root.rstrip('/')}/{MANAGED_STORAGE_FOLDER}/{kind}/{object_id}"


def check_managed_storage_root(state: CatalogState, who: Subject, raw: object, warehouse_url: str,
                               metastore_id: str | None, kind: str, object_id: str) -> tuple[str, str]:
    """A ``storage_root`` a caller names for a new catalog or schema: its canonical form and the managed location
    under it (:func:`managed_storage_location`). The root must lie inside this warehouse (Arco writes the managed
    tables' metadata there) and inside an external location of the caller's metastore on which the caller holds
    CREATE_MANAGED_STORAGE (or owns it, or is a metastore admin), writable; the location must overlap no owner."""
    url = canonical(raw, "storage_root")
    root = normalize(warehouse_url)
    if within(root, url):
        raise LocationRefused("warehouse-root", f"storage_root {url} contains the whole warehouse")
    if not within(url, root):
        raise LocationRefused("outside-warehouse", f"storage_root {url} is outside this server's warehouse {root}; "
                                                   "Arco writes managed tables' metadata only inside it")
    container = _external_location_for(state, url, metastore_id, "storage_root",
                                       "storage_root to let Arco place the managed storage")
    target = can.Securable(container.owner, state.grants_on("external_location", container.id))
    if not (can.admin(who) or can.holds(who, target, "CREATE_MANAGED_STORAGE")):
        raise LocationRefused("privilege", f"{who.name} may not create managed storage in external location "
                                           f"{container.name} (needs CREATE_MANAGED_STORAGE on it)")
    if container.fields.get("read_only"):
        raise LocationRefused("read-only", f"external location {container.name} is read-only, and Arco writes the "
                                           "managed tables' metadata files")
    location = managed_storage_location(url, kind, object_id)
    clash = first_overlap(location, [*arco_claims(warehouse_url), *managed_root_claims(state), *table_claims(state)])
    if clash is not None:
        raise LocationRefused("taken", f"storage_root {url} lies inside {clash.what} ({clash.url}); choose a folder "
                                       "no table, volume or catalog owns")
    given = as_given(raw)  # decided on the canonical form, kept as the client spelled it
    return given, managed_storage_location(given, kind, object_id)


def check_external_volume_location(state: CatalogState, who: Subject, raw: object, warehouse_url: str,
                                   metastore_id: str | None) -> str:
    """An EXTERNAL volume's ``storage_location``: inside an external location on which the caller holds
    CREATE_EXTERNAL_VOLUME (or owns it, or is a metastore admin), clear of every table, volume, model, managed
    root, the warehouse root and ``_catalog``."""
    return check_external_table_location(state, who, raw, warehouse_url, metastore_id, must_be_writable=False,
                                         inside_warehouse=False, kind="volume")


def can_create_external_volume(who: Subject, state: CatalogState, location: SecurableEntry) -> bool:
    target = can.Securable(location.owner, state.grants_on("external_location", location.id))
    return can.admin(who) or can.holds(who, target, "CREATE_EXTERNAL_VOLUME")


def check_reregistration(state: CatalogState, location: str, catalog: CatalogEntry, table_id: str,
                         namespace: NamespacePath | None = None) -> str | None:
    """The canonical location if it is the prefix Arco allocated to ``table_id`` under ``catalog`` and no live
    table holds it (a table dropped without purge, registered again), in ``namespace`` if given (the folder is
    one of that namespace's: a dropped table comes back where it was); else None."""
    try:
        url = normalize(location)
    except BadLocation:
        return None
    if not is_allocated(state, url, catalog, table_id) or table_id in state.tables:
        return None
    if namespace is not None and url.rsplit("/", 1)[0] != normalize(namespace_location(state, catalog, namespace)):
        return None
    return None if first_overlap(url, table_claims(state)) is not None else url


def may_reregister(who: Subject, state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath) -> bool:
    """Who may register a dropped table's folder again (its files were nobody's to read since the drop, whoever
    may create tables there): the owner of its schema or catalog, or a metastore admin, as for an undrop."""
    schema = state.namespace(catalog.id, namespace[:1])
    return can.admin(who) or can.owns(who, Securable(catalog.owner, {})) or \
        can.owns(who, Securable(schema.owner, {}))


def check_write_paths(properties: Mapping[str, str], table_location: str) -> None:
    """``write.data.path`` and its kin must point inside the table's (or view's) own location, spelled plainly:
    files are written where the spelling points (Arco writes metadata files under ``write.metadata.path``), and
    this decision is made on the canonical form, so the two must name the same place."""
    own = normalize(table_location)
    for key in WRITE_PATH_PROPERTIES:
        if key in properties:
            url = canonical(properties[key], key)
            if not within(url, own):
                raise LocationRefused("write-path", f"{key} must lie inside the table's location {own}; "
                                                    f"got {url}")
            if not spelled_plainly(properties[key], url):
                raise LocationRefused("write-path", f"write {key} plainly, as {url}: escapes, '.' segments and "
                                                    "doubled slashes are not accepted")


def spelled_plainly(raw: str, url: str) -> bool:
    """Whether ``raw`` names the objects its canonical form ``url`` names: the same path, character for character
    (``file:/x``, ``/x`` and ``file:///x/`` do; ``/a/%62``, ``/a/./b`` and ``/a//b`` do not)."""
    return urlsplit(raw.rstrip("/")).path == urlsplit(url).path


def purge_prefix(state: CatalogState, table: TableEntry, catalog: CatalogEntry | None,
                 warehouse_url: str) -> str | None:
    """The prefix a purge of (already dropped) ``table`` may delete: its allocated location, if Arco allocated it
    to this table and no live table, volume, model, managed root or Arco folder shares, contains or lies inside
    it. None: delete nothing (an external table, a location that is not the table's alone, or one inside a
    read-only external location)."""
    return owned_prefix(state, table.id, table.location, table.managed, catalog, warehouse_url)


def owned_prefix(state: CatalogState, owner_id: str, location: str, managed: bool, catalog: CatalogEntry | None,
                 warehouse_url: str) -> str | None:
    """:func:`purge_prefix` for any storage owner (a dropped table, volume or registered model): ``location`` if
    it is managed, allocated by Arco to ``owner_id`` under ``catalog``'s root, and no one else's."""
    if not managed or catalog is None or not is_allocated(state, location, catalog, owner_id):
        return None
    url = normalize(location)
    if owner_id in state.tables:  # registered again since: the prefix is a live table's
        return None
    others = [*arco_claims(warehouse_url), *table_claims(state, exclude_id=owner_id)]
    if first_overlap(url, others) is not None:
        return None
    if any(within(claim.url, url) for claim in managed_root_claims(state)):
        return None
    if read_only_location(state, url, catalog.metastore_id) is not None:
        return None  # managed storage in a location made read-only since: its owner said nothing is written there
    return url


def tables_sharing_storage(tables: Iterable[TableEntry]) -> set[str]:
    """Ids of tables whose location overlaps another table's (possible only in warehouses written before these
    rules): batch jobs leave their files alone, since no table alone owns them. Sorted by path segments, every
    table's descendants follow it directly, so one pass with a stack of ancestors finds every overlap."""
    keyed = []
    for table in tables:
        try:
            keyed.append((normalize(table.location).split("/"), table.id))
        except BadLocation:
            continue
    keyed.sort()
    shared: set[str] = set()
    ancestors: list[tuple[list[str], str]] = []
    for segments, table_id in keyed:
        while ancestors and ancestors[-1][0] != segments[:len(ancestors[-1][0])]:
            ancestors.pop()
        if ancestors:
            shared.add(table_id)
            shared.update(ancestor_id for _, ancestor_id in ancestors)
        ancestors.append((segments, table_id))
    return shared


# -- registered models -----------------------------------------------------------------------------------------


def model_version_location(model_location: str, version: int) -> str:
    """Where a model version's files go: ``<model's allocated prefix>/versions/<n>``."""
    return f"{model_location.rstrip('/')}/versions/{int(version)}"


def model_version_purge_prefix(state: CatalogState, model: SecurableEntry, version: int,
                               catalog: CatalogEntry | None) -> str | None:
    """The prefix a deleted version's files may be deleted from: inside its model's allocated prefix (a model
    Arco placed itself), where nothing else (table, volume, another model) lives. None: delete nothing."""
    location = model.fields.get("storage_location")
    if not location or catalog is None or not is_allocated(state, location, catalog, model.id):
        return None
    url = normalize(model_version_location(location, version))
    if first_overlap(url, table_claims(state, exclude_id=model.id)) is not None:
        return None
    return url
