"""What each page shows, read through the same services (and so the same grants) as the APIs, as the signed-in
principal. Pure data: :mod:`arco.ui.routes` renders it as HTML or JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from pyiceberg.table.metadata import TableMetadata
from starlette.datastructures import State

from arco.api.errors import ApiError
from arco.auth.principals import Principal
from arco.catalog.errors import CatalogError, NotFoundError
from arco.iceberg.errors import IcebergError
from arco.iceberg.metadata_files import MissingMetadataFile, UnreadableMetadataFile
from arco.pipeline.runs import RUNS_PREFIX
from arco.unity.common import catalog_in
from arco.unity.errors import from_catalog_error
from arco.unity.functions import FunctionService
from arco.unity.named import KINDS_BY_TYPE
from arco.unity.volumes import VolumeService

PAGE_SIZE = 1000  # the UC services' own page limit: a metastore's catalogs, a catalog's schemas, a schema's tables
RUNS_SHOWN = 100
UNREADABLE_METADATA = 500  # a file that is no table metadata, as loadTable answers it (arco.api.faults.answer_for)


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
    if isinstance(exc, MissingMetadataFile):  # as loadTable answers it (arco.api.faults.answer_for)
        return PageError(404, exc.message)
    if isinstance(exc, NotFoundError):
        return PageError(404, from_catalog_error(exc).message)
    if isinstance(exc, CatalogError):
        return PageError(400, from_catalog_error(exc).message)
    if isinstance(exc, ApiError):
        return PageError(exc.status, exc.message)
    if isinstance(exc, IcebergError):
        return PageError(exc.status, str(exc))
    raise exc


SERVICE_ERRORS = (PageError, CatalogError, ApiError, IcebergError, MissingMetadataFile)


def table_metadata(app: State, catalog: Any, namespace: tuple[str, ...], name: str) -> tuple[str, TableMetadata]:
    """A table's current metadata location and metadata, read as loadTable reads them (TableService.
    locate_for_load), so a missing file is 404 here as there, warm or cold. A file that is there but is no metadata
    document is said so."""
    tables = app.iceberg.tables
    location = tables.locate_for_load(catalog, namespace, name).metadata_location
    try:
        return location, tables.files.read(location)
    except UnreadableMetadataFile as exc:
        raise PageError(UNREADABLE_METADATA, exc.message[:1].upper() + exc.message[1:] + ".") from None


@dataclass(frozen=True)
class Paging:
    """Where a list page is: the UC services' page token it was asked with and the one for the next page (None on
    the last), passed through as they are (links carry them; the JSON says them)."""

    page_token: str | None = None
    next_page_token: str | None = None
    max_results: int | None = None  # as asked (the services cap it at PAGE_SIZE); None: PAGE_SIZE
    # The list's name search ("q"): only names holding it, ignoring case, across every page (the page tokens are
    # names, so they page through the matches).
    query: str | None = None


def _paged(list_page: Any, paging: Paging) -> tuple[list[dict[str, Any]], Paging]:
    items, next_token = list_page(paging.max_results or PAGE_SIZE, paging.page_token or None)
    return items, Paging(paging.page_token, next_token or None, paging.max_results, paging.query)


@dataclass(frozen=True)
class Overview:
    metastore: dict[str, Any] | None
    catalogs: list[dict[str, Any]]
    paging: Paging  # in the JSON as it is in UC's lists: next_page_token, None on the last page


def overview(app: State, caller: Principal, paging: Paging = Paging()) -> Overview:
    try:
        metastore = app.metastores.summary(caller)
    except SERVICE_ERRORS:
        metastore = None  # no metastore for this workspace: the catalog list below says so too
    try:
        catalogs, paging = _paged(lambda n, token: app.unity.list_catalogs(n, token, caller, paging.query), paging)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    return Overview(metastore, catalogs, paging)


@dataclass(frozen=True)
class CatalogPage:
    catalog: dict[str, Any]
    schemas: list[dict[str, Any]]
    paging: Paging
    nested: bool = False  # some schema holds namespaces of its own (Iceberg), which these pages do not list


def catalog_page(app: State, caller: Principal, name: str, paging: Paging = Paging()) -> CatalogPage:
    try:
        catalog = app.unity.get_catalog(name, caller)
        schemas, paging = _paged(lambda n, token: app.unity.list_schemas(name, n, token, caller, paging.query),
                                  paging)
        with app.iceberg.store.read() as state:
            entry = catalog_in(state, caller, name)
            nested = any(state.child_namespaces(entry.id, (s["name"],)) for s in schemas)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    return CatalogPage(catalog, schemas, paging, nested)


@dataclass(frozen=True)
class SchemaPage:
    schema: dict[str, Any]
    tables: list[dict[str, Any]]
    paging: Paging
    volumes: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    more_objects: bool = False  # more than PAGE_SIZE volumes or functions: the page says so (the UC API has them all)


def schema_page(app: State, caller: Principal, catalog: str, schema: str, paging: Paging = Paging()) -> SchemaPage:
    """A schema's tables and views (paged), and the volumes and functions in it the caller may use."""
    try:
        info = app.unity.get_schema(f"{catalog}.{schema}", caller)
        tables, paging = _paged(lambda n, token: app.unity.list_tables(
            catalog, schema, n, token, caller, omit_columns=True, name_contains=paging.query), paging)
        volumes, more_volumes = VolumeService(app.unity.store, app.unity.tables).list(
            catalog, schema, PAGE_SIZE, None, caller)
        functions, more_functions = FunctionService(app.unity.store).list(catalog, schema, PAGE_SIZE, None, caller)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    return SchemaPage(info, tables, paging, volumes, functions, bool(more_volumes or more_functions))


@dataclass(frozen=True)
class SharesPage:
    shares: list[dict[str, Any]]
    recipients: list[dict[str, Any]]
    more: bool = False  # more than PAGE_SIZE of either: the page says so (the UC API pages through them all)


def shares_page(app: State, caller: Principal) -> SharesPage:
    """Shares and recipients the caller may see (their owners and admins: :class:`arco.unity.named.Kind`)."""
    try:
        shares, more_shares = app.named.list(KINDS_BY_TYPE["share"], PAGE_SIZE, None, caller)
        recipients, more_recipients = app.named.list(KINDS_BY_TYPE["recipient"], PAGE_SIZE, None, caller)
    except SERVICE_ERRORS as exc:
        raise page_error(exc) from None
    for recipient in recipients:  # an activation link is a secret: the API shows it to owners, the page does not
        for token in recipient.get("tokens", []):
            token["activation_url"] = "(not shown)" if token.get("activation_url") else ""
    return SharesPage(shares, recipients, bool(more_shares or more_recipients))


@dataclass(frozen=True)
class RunsPage:
    runs: list[dict[str, Any]]
    total: int
    unreadable: list[str]  # run records that could not be read (a torn write, another version's format): skipped


def run_record(data: bytes) -> dict[str, Any] | None:
    """A run record as the page shows it, or None if it is not one (not JSON, or not the shape the page needs)."""
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("run_id"), str):
        return None
    counts, errors = record.get("counts"), record.get("errors")
    record["counts"] = {str(k): v for k, v in counts.items() if isinstance(v, int)} if isinstance(counts, dict) else {}
    record["errors"] = [str(e) for e in errors] if isinstance(errors, list) else []
    started, ended = record.get("started_at_ms"), record.get("ended_at_ms")
    started = started if isinstance(started, int) else None
    ended = ended if isinstance(ended, int) else None
    record["started_at_ms"], record["ended_at_ms"] = started, ended
    record["seconds"] = max(0, ended - started) / 1000 if started is not None and ended is not None else 0.0
    for key in ("job", "status"):
        record[key] = str(record.get(key) or "")
    return record


def runs_page(app: State, caller: Principal) -> RunsPage:
    """Pipeline runs, newest first: warehouse-wide operations, so account admins only."""
    if not caller.is_account_admin:
        raise PageError(403, f"{caller.name} may not see pipeline runs: they are shown to account admins")
    storage = app.services.storage
    keys = sorted((m.key for m in storage.list(RUNS_PREFIX) if m.key.endswith(".json")), reverse=True)
    runs, unreadable = [], []
    for key in keys[:RUNS_SHOWN]:  # run ids are UUIDv7: the key order is the start order
        found = storage.get_or_none(key)
        if found is not None:
            record = run_record(found.data)
            if record is None:
                unreadable.append(key.rsplit("/", 1)[-1])
            else:
                runs.append(record)
    return RunsPage(runs, len(keys), unreadable)
