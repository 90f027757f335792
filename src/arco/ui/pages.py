"""What each page shows, read through the same services (and so the same grants) as the APIs, as the signed-in
principal. Pure data: :mod:`arco.ui.routes` renders it as HTML or JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from starlette.datastructures import State

from arco.api.errors import ApiError
from arco.auth.principals import Principal
from arco.catalog.errors import CatalogError, NotFoundError
from arco.iceberg.errors import IcebergError
from arco.pipeline.runs import RUNS_PREFIX
from arco.unity.common import split_full_name
from arco.unity.errors import from_catalog_error
from arco.unity.named import KINDS_BY_TYPE

PAGE_SIZE = 1000  # the UC services' own page limit: a metastore's catalogs, a catalog's schemas, a schema's tables
RUNS_SHOWN = 100


class PageError(Exception):
    """A page that cannot be shown to this caller: 403 or 404, with a message the page shows."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def page_error(exc: Exception) -> PageError:
    """The services' errors (UC, Iceberg, catalog) as one kind, keeping their status and wording."""
    if isinstance(exc, PageError):
        return exc
    if isinstance(exc, NotFoundError):
        return PageError(404, from_catalog_error(exc).message)
    if isinstance(exc, CatalogError):
        return PageError(400, from_catalog_error(exc).message)
    if isinstance(exc, ApiError):
        return PageError(exc.status, exc.message)
    if isinstance(exc, IcebergError):
        return PageError(exc.status, str(exc))
    raise exc


SERVICE_ERRORS = (PageError, CatalogError, ApiError, IcebergError)


def full_name_parts(full_name: str) -> tuple[str, str, str]:
    try:
        catalog, schema, table = split_full_name(full_name, 3)
    except ApiError as exc:
        raise PageError(404, exc.message) from None
    return catalog, schema, table


@dataclass(frozen=True)
class Overview:
    metastore: dict[str, Any] | None
    catalogs: list[dict[str, Any]]


def overview(app: State, caller: Principal) -> Overview:
    try:
        metastore = app.metastores.summary(caller)
    except SERVICE_ERRORS:
        metastore = None  # no metastore for this workspace: the catalog list below says so too
    try:
        catalogs, _ = app.unity.list_catalogs(PAGE_SIZE, None, caller)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    return Overview(metastore, catalogs)


@dataclass(frozen=True)
class CatalogPage:
    catalog: dict[str, Any]
    schemas: list[dict[str, Any]]


def catalog_page(app: State, caller: Principal, name: str) -> CatalogPage:
    try:
        catalog = app.unity.get_catalog(name, caller)
        schemas, _ = app.unity.list_schemas(name, PAGE_SIZE, None, caller)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    return CatalogPage(catalog, schemas)


@dataclass(frozen=True)
class SchemaPage:
    schema: dict[str, Any]
    tables: list[dict[str, Any]]


def schema_page(app: State, caller: Principal, catalog: str, schema: str) -> SchemaPage:
    try:
        info = app.unity.get_schema(f"{catalog}.{schema}", caller)
        tables, _ = app.unity.list_tables(catalog, schema, PAGE_SIZE, None, caller, omit_columns=True)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    return SchemaPage(info, tables)


@dataclass(frozen=True)
class SharesPage:
    shares: list[dict[str, Any]]
    recipients: list[dict[str, Any]]


def shares_page(app: State, caller: Principal) -> SharesPage:
    """Shares and recipients the caller may see (their owners and admins: :class:`arco.unity.named.Kind`)."""
    try:
        shares, _ = app.named.list(KINDS_BY_TYPE["share"], PAGE_SIZE, None, caller)
        recipients, _ = app.named.list(KINDS_BY_TYPE["recipient"], PAGE_SIZE, None, caller)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    for recipient in recipients:  # an activation link is a secret: the API shows it to owners, the page does not
        for token in recipient.get("tokens", []):
            token["activation_url"] = "(not shown)" if token.get("activation_url") else ""
    return SharesPage(shares, recipients)


@dataclass(frozen=True)
class RunsPage:
    runs: list[dict[str, Any]]
    total: int


def runs_page(app: State, caller: Principal) -> RunsPage:
    """Pipeline runs, newest first: warehouse-wide operations, so account admins only."""
    if not caller.is_account_admin:
        raise PageError(403, f"{caller.name} may not see pipeline runs: they are shown to account admins")
    storage = app.services.storage
    keys = sorted((m.key for m in storage.list(RUNS_PREFIX) if m.key.endswith(".json")), reverse=True)
    runs = []
    for key in keys[:RUNS_SHOWN]:  # run ids are UUIDv7: the key order is the start order
        found = storage.get_or_none(key)
        if found is not None:
            record = orjson.loads(found.data)
            record["seconds"] = max(0, (record.get("ended_at_ms") or 0) - record.get("started_at_ms", 0)) / 1000
            runs.append(record)
    return RunsPage(runs, len(keys))
