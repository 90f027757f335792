"""What can go wrong with a catalog operation, independent of the API it came through.

Each API maps these to its own error shape (Iceberg ``NoSuchNamespaceException``, UC ``SCHEMA_DOES_NOT_EXIST``...).
"""

from __future__ import annotations

SHOWN_NAME_LIMIT = 1024  # past every storable full name (3 levels of 255 characters); only a lookup's is longer


def shown(name: str) -> str:
    """A name as an error message shows it: a name no catalog could hold is cut short, not echoed whole."""
    if len(name) <= SHOWN_NAME_LIMIT:
        return name
    return f"{name[:SHOWN_NAME_LIMIT]}... ({len(name):,} characters)"


class CatalogError(Exception):
    kind = "catalog"


class NotFoundError(CatalogError):
    """``name`` is inside ``catalog`` when one is given (a schema's or table's name without its catalog: Iceberg
    REST names it so, inside the warehouse it serves; Unity Catalog adds the catalog)."""

    def __init__(self, kind: str, name: str, catalog: str | None = None) -> None:
        super().__init__(f"{kind} does not exist: {shown(name)}")
        self.kind = kind
        self.name = name
        self.catalog = catalog


class CatalogNotFound(NotFoundError):
    def __init__(self, name: str) -> None:
        super().__init__("catalog", name)


class NamespaceNotFound(NotFoundError):
    def __init__(self, name: str, catalog: str | None = None) -> None:
        super().__init__("namespace", name, catalog)


class TableNotFound(NotFoundError):
    def __init__(self, name: str, catalog: str | None = None) -> None:
        super().__init__("table", name, catalog)


class ViewNotFound(NotFoundError):
    def __init__(self, name: str) -> None:
        super().__init__("view", name)


class AlreadyExistsError(CatalogError):
    """``catalog``: as for :class:`NotFoundError`."""

    def __init__(self, kind: str, name: str, catalog: str | None = None) -> None:
        super().__init__(f"{kind} already exists: {shown(name)}")
        self.kind = kind
        self.name = name
        self.catalog = catalog


class NotEmptyError(CatalogError):
    def __init__(self, kind: str, name: str, what: str) -> None:
        super().__init__(f"{kind} {shown(name)} is not empty: it still contains {what}")
        self.kind = kind
        self.name = name
        self.what = what


class InvalidRequestError(CatalogError):
    """The request is malformed or asks for something not allowed (a bad name, a reserved property)."""


class ConflictError(CatalogError):
    """A concurrent change made the operation impossible; retrying may succeed."""


class ReadOnlyCatalogError(CatalogError):
    """A change to the read-only ``system`` catalog, which only Arco's pipeline writes (403)."""
