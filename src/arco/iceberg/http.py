"""The plumbing of the Iceberg REST handlers: services, errors in Iceberg's shape, names from paths, bodies."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any
from urllib.parse import unquote

import orjson
from starlette.requests import Request
from starlette.responses import Response

from arco.api.errors import error_body
from arco.api.rate_limit import RateLimiter
from arco.api.requests import BodyError, client_source, inline_or_blocking, principal_of, read_json
from arco.api.responses import JsonResponse
from arco.auth.principals import Principal, is_pipeline
from arco.catalog.errors import CatalogError, InvalidRequestError, shown
from arco.catalog.landing import require_on_landing
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.names import check_name, check_namespace
from arco.catalog.store import CatalogStore
from arco.catalog.system import is_system, refusal
from arco.iceberg import errors
from arco.iceberg.access import StorageAccess, TableAccess
from arco.iceberg.authz import IcebergGuard
from arco.iceberg.idempotency import IdempotencyMarkers, Outcome
from arco.iceberg.metadata_files import MetadataCacheBudgets
from arco.iceberg.metrics import report_limiter
from arco.iceberg.mutations import Caller, Mutations
from arco.iceberg.namespaces import NamespaceService
from arco.iceberg.plan_store import PlanStore
from arco.iceberg.responses import LoadResultCache, metadata_json, table_etag
from arco.iceberg.tables import TableService
from arco.settings import ServerSettings
from arco.storage.base import StorageBackend

NAMESPACE_SEPARATOR = "\x1f"


@dataclass
class IcebergServices:
    settings: ServerSettings
    store: CatalogStore
    storage: StorageBackend
    namespaces: NamespaceService
    tables: TableService
    load_results: LoadResultCache
    mutations: Mutations
    guard: IcebergGuard
    access: StorageAccess
    plans: PlanStore
    metrics_limiter: RateLimiter = field(default_factory=report_limiter)  # per process: see arco.iceberg.metrics

    @classmethod
    def build(cls, settings: ServerSettings, store: CatalogStore, storage: StorageBackend) -> IcebergServices:
        budgets = MetadataCacheBudgets.of(settings.metadata_cache_mb << 20)
        namespaces, tables = NamespaceService(store), TableService(store, storage, budgets)
        markers = IdempotencyMarkers(storage, settings.idempotency_in_progress_timeout_s)
        return cls(settings, store, storage, namespaces, tables, LoadResultCache(budget=budgets.answers),
                   Mutations(store, namespaces, tables, markers), IcebergGuard(store),
                   StorageAccess(settings, settings.storage_options),
                   PlanStore(storage, settings.scan_plan_lifetime_s, settings.scan_plan_heartbeat_timeout_s))


async def allow(request: Request, check: str, *args: Any) -> None:
    """Raise 403 unless the caller may do this (:mod:`arco.iceberg.authz`); account admins pass at no cost."""
    principal = principal_of(request)
    if _writes(check, args) and is_system(args[0]) and not is_pipeline(principal):
        raise errors.Forbidden(f"Forbidden: {refusal(args[0].name)}")  # account admins too: only the pipeline
    guard = services(request).guard
    if not principal.is_account_admin:
        await inline_or_blocking(getattr(guard, check), principal, *args)
        # ... and made again on the state each change of this request lands on (arco.catalog.landing).
        require_on_landing(lambda state: guard.decide(state, principal, check, *args))
    if check == "table" and args[-1] == "modify":
        await inline_or_blocking(guard.writable_storage, *args[:-1])  # account admins too: the location's rule


def _writes(check: str, args: tuple[Any, ...]) -> bool:
    """Whether an :func:`allow` check is for a change (of a table, view or namespace) rather than a read."""
    if check in ("create_table", "create_view"):
        return True
    action = args[-1] if args else None
    return check in ("table", "view", "namespace") and action not in ("read", "see")


def caller_of(request: Request) -> Caller:
    principal = principal_of(request)
    return Caller(principal.name, client_source(request), request.headers.get("idempotency-key"), principal)


def render(svc: IcebergServices, outcome: Outcome, *,
           access: Callable[[str], TableAccess] | None = None) -> Response:
    """A mutation's answer; a table result is rebuilt from its (immutable) metadata file, with the storage access
    ``access`` gives for the table's location (a created or registered table: its owner's, read-write)."""
    if outcome.status == 204:
        return Response(status_code=204)
    if outcome.metadata_location is None:
        body = {k: v for k, v in (outcome.body or {}).items() if v is not None}
        return JsonResponse(body, status_code=outcome.status)
    written = svc.tables.files.written_bytes(outcome.metadata_location) if access is None else None
    if written is not None:  # the file just written is the answer's metadata, byte for byte (metadata_json)
        head = b'{"metadata-location":' + orjson.dumps(outcome.metadata_location) + b',"metadata":'
        return Response(head + written + b"}", status_code=outcome.status, media_type="application/json",
                        headers={"ETag": table_etag(outcome.metadata_location, "all")})
    metadata = svc.tables.files.read(outcome.metadata_location)
    body: dict[str, Any] = {"metadata-location": outcome.metadata_location, "metadata": metadata_json(metadata)}
    granted = TableAccess()
    if access is not None:
        granted = access(metadata.location) if outcome.status == 200 else TableAccess()
        body["config"] = granted.config
        if granted.credentials:
            body["storage-credentials"] = granted.credentials
    return JsonResponse(body, status_code=outcome.status,
                        headers={"ETag": table_etag(outcome.metadata_location, "all", granted.etag_part())})


Handler = Callable[[Request], Awaitable[Response]]


def iceberg_errors(handler: Handler) -> Handler:
    """Turn every error a handler meets into the Iceberg error shape and status."""

    @wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except errors.IcebergError as exc:
            return error_response(exc)
        except CatalogError as exc:
            return error_response(errors.from_catalog_error(exc))
        except BodyError as exc:
            return error_response(errors.PayloadTooLarge(exc.message) if exc.status == 413
                                  else errors.BadRequest(exc.message))

    return wrapped


def error_response(exc: errors.IcebergError) -> Response:
    body = orjson.dumps({"error": {"message": exc.message, "type": exc.error_type, "code": exc.status}})
    return Response(body, status_code=exc.status, media_type="application/json", headers=exc.headers)


def services(request: Request) -> IcebergServices:
    return request.app.state.iceberg


def decode_namespace(raw: str) -> NamespacePath:
    return check_namespace([_unescape(level) for level in raw.split(NAMESPACE_SEPARATOR)])


def existing_namespace(raw: str) -> NamespacePath:
    """:func:`decode_namespace` for a namespace that must exist (a lookup, a drop, a change, a listing of its
    tables): a name Arco would never store names nothing (404, as the reference implementation answers, so a client
    dropping it learns it is absent), where creating it is refused (400)."""
    try:
        return decode_namespace(raw)
    except InvalidRequestError:
        raise errors.NoSuchNamespace(f"Namespace does not exist: {_shown(raw.split(NAMESPACE_SEPARATOR))}") from None


def existing_table_path(request: Request) -> tuple[NamespacePath, str]:
    """:func:`table_path` for a lookup: a name Arco would never store is a table that does not exist (404)."""
    try:
        return table_path(request)
    except InvalidRequestError:
        levels = [*request.path_params["namespace"].split(NAMESPACE_SEPARATOR), request.path_params["table"]]
        raise errors.NoSuchTable(f"Table does not exist: {_shown(levels)}") from None


def _shown(levels: list[str]) -> str:
    return shown(".".join(_unescape(level) for level in levels))


def _unescape(segment: str) -> str:
    """Path segments under ``/iceberg`` keep an encoded slash as :data:`ENCODED_SLASH` (see
    :func:`keep_encoded_slashes`); restore it here, so a name with a slash is refused by the name rules instead of
    being routed somewhere else."""
    return segment.replace(ENCODED_SLASH, "/")


def identifier(raw: Any, kind: str = "table") -> tuple[NamespacePath, str]:
    if not isinstance(raw, dict) or not isinstance(raw.get("namespace"), list):
        raise errors.BadRequest(f"a {kind} identifier must be an object with 'namespace' (a list) and 'name'")
    return check_namespace(raw["namespace"]), check_name(kind, raw.get("name"))


def lookup_catalog(store: CatalogStore, principal: Principal, name: str) -> CatalogEntry:
    """The catalog ``name`` of the metastore the caller's workspace works in (:mod:`arco.catalog.tenancy`)."""
    return store.find(lambda state: state.catalog(name, state.tenant_of_workspace(principal.workspace_id).scope))


async def catalog_of(request: Request) -> CatalogEntry:
    name = request.path_params["prefix"]
    store = services(request).store

    def lookup() -> CatalogEntry:
        return lookup_catalog(store, principal_of(request), name)

    catalog = await inline_or_blocking(lookup)
    await allow(request, "catalog", catalog)
    return catalog


def table_path(request: Request) -> tuple[NamespacePath, str]:
    name = check_name("table", _unescape(request.path_params["table"]))
    return decode_namespace(request.path_params["namespace"]), name


async def json_body(request: Request) -> Any:
    body = await read_json(request, services(request).settings.max_body_bytes,
                           unique_keys="idempotency-key" in request.headers)
    if not isinstance(body, dict):
        raise errors.BadRequest("the request body must be a JSON object")
    return body


ENCODED_SLASH = "\x00"  # an encoded slash inside an Iceberg path segment; no name may hold a control character
_ENCODED_SLASH_ESCAPE = re.compile("%2f", re.IGNORECASE)


def keep_encoded_slashes(app: Any) -> Any:
    """ASGI wrapper: route on the raw path, decoding every escape except ``%2F`` inside a segment.

    Under ``/iceberg`` an encoded slash becomes :data:`ENCODED_SLASH`, which no escape a client sends can be
    confused with: a name holding the text ``%2F`` arrives as ``%252F`` and is that text once decoded. Elsewhere
    (Unity Catalog's dotted full names) it stays the text ``%2F``, the name a client that does not encode ``%``
    sends for such a name."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and raw and raw.startswith(b"/iceberg/") and b"%00" in raw.split(b"?", 1)[0]:
            # A NUL the client sent would read as an encoded slash; no name holds one: refused as such.
            body = error_body("iceberg", 400, "BadRequestException",
                              "a path segment holds a NUL character (%00), which no name may hold")
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and raw and b"%2f" in raw.lower():
            path = raw.decode("latin-1").split("?", 1)[0]
            kept = "%00" if path.startswith("/iceberg/") else "%252F"
            segments = [unquote(_ENCODED_SLASH_ESCAPE.sub(kept, s)) for s in path.split("/")]
            scope = {**scope, "path": "/".join(segments)}
        await app(scope, receive, send)

    return wrapped


async def identifier_page(request: Request, lister: Callable[..., tuple[list[Any], str | None]]) -> Response:
    """listTables / listViews: one page of a namespace's entries that the caller may see, as identifiers."""
    from arco.iceberg.paging import parse_page_size

    catalog = await catalog_of(request)
    namespace = existing_namespace(request.path_params["namespace"])
    size = parse_page_size(request.query_params.get("pageSize"))
    token = request.query_params.get("pageToken") or None
    items, next_token = await inline_or_blocking(lister, catalog, namespace, token, size)
    if not principal_of(request).is_account_admin:
        await allow(request, "namespace", catalog, namespace, "see")
        items = await inline_or_blocking(services(request).guard.visible_tables, principal_of(request), catalog,
                                         namespace, items)
    body: dict[str, Any] = {"identifiers": [{"namespace": list(e.namespace), "name": e.name} for e in items]}
    if next_token:
        body["next-page-token"] = next_token
    return JsonResponse(body)
