"""A table's or view's name already held, answered in the reference implementation's words (Iceberg's
CatalogTests and ViewCatalogTests match on them): for creates and registers, and for renames."""

from __future__ import annotations

from arco.catalog.model import CatalogEntry, NamespacePath, TableEntry
from arco.catalog.state import CatalogState, dotted
from arco.iceberg.errors import AlreadyExists


class NameTaken(AlreadyExists):
    """A name already held when a ``creating`` ("table" or "view") is made, in the reference implementation's words:
    "Table already exists: ns.t" for the same kind, "View with same name already exists: ns.v" for the other
    (Iceberg's CatalogTests and ViewCatalogTests match on them). ``taken_by`` says which kind holds it."""

    def __init__(self, holder: TableEntry, full_name: tuple[str, ...], creating: str) -> None:
        self.taken_by = "view" if holder.kind == "VIEW" else "table"
        same = "" if self.taken_by == creating else " with same name"
        super().__init__(f"{self.taken_by.capitalize()}{same} already exists: {dotted(full_name)}")


def refuse_taken(state: CatalogState, catalog_id: str, namespace: NamespacePath, name: str, creating: str) -> None:
    """:class:`NameTaken` if a table or view holds the name (before any write, and again inside the Tier 1
    operation that creates the entry, so that a race is answered in the same words)."""
    holder = state.table_or_none(catalog_id, namespace, name)
    if holder is not None:
        raise NameTaken(holder, (*namespace, name), creating)


def refuse_rename_onto(state: CatalogState, catalog: CatalogEntry, entry: TableEntry, source: tuple[str, ...],
                       target: NamespacePath, new_name: str) -> None:
    """A table or view renamed onto a name another object holds: the reference's "Cannot rename a to b. View
    already exists" (or "Table already exists")."""
    existing = state.table_or_none(catalog.id, target, new_name)
    if existing is not None and existing.id != entry.id:
        raise AlreadyExists(f"Cannot rename {dotted(source)} to {dotted((*target, new_name))}. "
                            f"{'View' if existing.kind == 'VIEW' else 'Table'} already exists")
