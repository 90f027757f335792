"""The second half of a staged create (Spark CTAS/RTAS, DuckDB CREATE TABLE): an updateTable request with
``assert-create``, whose updates make the table's first metadata; the entry and the file are created together."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NoReturn

from pyiceberg.table.metadata import TableMetadata

from arco.auth.principals import Principal
from arco.catalog import locations
from arco.catalog.errors import AlreadyExistsError
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.names import check_name
from arco.iceberg import commit_rules, table_requirements
from arco.iceberg.errors import AlreadyExists, CommitFailed
from arco.iceberg.file_names import attempt_part, metadata_file_location, metadata_folder
from arco.iceberg.name_conflicts import NameTaken
from arco.iceberg.tables import TableService
from arco.storage.urls import local_path, normalize


def create_by_commit(tables: TableService, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                     requirements: list[Any], updates: list[Any], principal: str,
                     source: dict[str, Any], tag: str | None, who: Principal | None) -> tuple[str, TableMetadata]:
    """Create the table whose first metadata ``updates`` make; its metadata file's location and the metadata."""
    check_name("table", name)
    try:
        tables.entry_absent(catalog, namespace, name)
    except NameTaken as taken:
        _refuse_taken(taken)
    table_requirements.check_requirements(requirements, None)
    new = commit_rules.apply_updates(None, updates, None)
    # A staged table lives where it was staged: the prefix Arco allocated to its uuid, or a location the caller
    # may use inside an external location (CREATE TABLE ... LOCATION); decided by the same rule as a create.
    place = tables.placer(catalog, namespace, name, new, who)
    with tables.store.read() as state:
        place(state)
    commit_rules.check_guardrails(updates, allowed_location=new.location)
    locations.check_write_paths(new.properties, new.location)
    location = metadata_file_location(new.location, 0, attempt_part(tag), new.properties)
    try:
        tables.register_new(catalog, namespace, name, new, location, principal, source, tag=tag, place=place)
    except NameTaken as taken:  # made meanwhile, by another request
        _refuse_taken(taken)
    except (AlreadyExists, AlreadyExistsError):  # a table of this uuid
        raise CommitFailed("Requirement failed: table already exists") from None
    return location, new


def _refuse_taken(taken: NameTaken) -> NoReturn:
    """A table holds the name: the assert-create requirement failed (409 CommitFailed, the reference's words); a view
    holds it: 409 AlreadyExists, "View with same name already exists" (what Java's createTransaction expects)."""
    if taken.taken_by == "view":
        raise taken
    raise CommitFailed("Requirement failed: table already exists") from None


def make_local_metadata_folder(location: str, properties: Mapping[str, str]) -> None:
    """A table staged on a local disk gets its metadata folder at once (object stores have no folders): DuckDB
    writes a CTAS's manifests there before the table exists, and its local file system, unlike Hadoop's, makes no
    parent folders. ``location`` is the staged one, placed and checked as a create's (and ``write.metadata.path``
    lies inside it); a stage never committed leaves an empty folder in its own place."""
    canonical = normalize(metadata_folder(location, properties))
    if canonical.startswith("file://"):
        os.makedirs(local_path(canonical), exist_ok=True)
