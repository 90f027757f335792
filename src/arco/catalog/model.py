"""The Tier 1 catalog model: metastore (a tenant of the warehouse) -> catalog -> schema (= Iceberg namespace) ->
table / view.

These are the facts Tier 1 is authoritative for: identity (names to ids), existence, storage location, format,
ownership, comments and properties. Iceberg table state (schemas, snapshots) lives in Iceberg metadata files
behind per-table pointers, not here.

Names are case-preserving and case-insensitive, as in Unity Catalog: ``name_key`` is how a name is compared.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any, Literal

TableFormat = Literal["ICEBERG", "DELTA", "PARQUET", "CSV", "JSON", "AVRO", "ORC", "TEXT", "UNITY_CATALOG"]
TableKind = Literal["TABLE", "VIEW"]  # UC MANAGED and EXTERNAL are both TABLE (see ``managed``)

NamespacePath = tuple[str, ...]


def name_key(name: str) -> str:
    """How names compare: ignoring case, and in Unicode NFC, so that a name an earlier version stored decomposed
    (``e`` and a combining accent, refused in new names) is found by its composed spelling, and taken by it."""
    if name.isascii():  # nearly every name: no normalization to do
        return name.casefold()
    return unicodedata.normalize("NFC", name).casefold()


def path_key(path: NamespacePath) -> tuple[str, ...]:
    return tuple(name_key(level) for level in path)


@dataclass
class CatalogEntry:
    id: str
    name: str
    storage_root: str  # where managed tables of this catalog live (absolute URL)
    owner: str
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    created_at_ms: int = 0
    updated_at_ms: int = 0
    created_by: str | None = None
    updated_by: str | None = None
    metastore_id: str | None = None  # None: the warehouse's primary metastore (catalog names are unique per metastore)
    requested_root: str | None = None  # the storage_root its creator named (storage_root is then a folder under it)


@dataclass
class NamespaceEntry:
    id: str
    catalog_id: str
    path: NamespacePath
    owner: str
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    created_at_ms: int = 0
    updated_at_ms: int = 0
    created_by: str | None = None
    updated_by: str | None = None
    # A schema created with a storage_root: the folder under it where its managed tables, volumes and models go
    # (else they go under the catalog's managed root), and the root its creator named.
    storage_location: str | None = None
    requested_root: str | None = None


@dataclass
class TableEntry:
    id: str  # the table uuid; for Iceberg tables it equals the metadata's table-uuid
    catalog_id: str
    namespace: NamespacePath
    name: str
    kind: TableKind
    format: TableFormat
    location: str
    owner: str
    managed: bool = True
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    created_at_ms: int = 0
    updated_at_ms: int = 0
    created_by: str | None = None
    updated_by: str | None = None
    # Kept here for tables whose format Tier 1 cannot read (Delta, Parquet, ... and views); an Iceberg table's
    # columns come from its current metadata instead.
    columns: list[dict[str, Any]] = field(default_factory=list)
    view_definition: str | None = None
    view_dependencies: dict[str, Any] | None = None  # a UC DependencyList, as given on create
    storage_credential_name: str | None = None
    # A managed Delta table whose commits Unity Catalog coordinates: the commits not yet backfilled, and the latest
    # (arco.unity.delta_commits); None for every other table.
    delta_commits: list[dict[str, Any]] | None = None
