"""Iceberg REST routes, mounted at ``/iceberg``. Thin: parse the request, call a service, shape the answer."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any
from urllib.parse import quote, unquote

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import BodyError, blocking, client_source, principal_of, read_json
from arco.api.responses import JsonResponse
from arco.auth.principals import Principal
from arco.catalog.errors import CatalogError, CatalogNotFound
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.names import check_name, check_namespace
from arco.catalog.store import CatalogStore
from arco.iceberg import errors
from arco.iceberg.access import StorageAccess, TableAccess, TableRoute, delegation_modes
from arco.iceberg.authz import IcebergGuard
from arco.iceberg.config import catalog_config
from arco.iceberg.idempotency import IdempotencyMarkers, Outcome
from arco.iceberg.mutations import Caller, Mutations
from arco.iceberg.transactions import parse_table_changes
from arco.iceberg.oauth import issue_token
from arco.iceberg.namespaces import NamespaceService
from arco.iceberg.paging import parse_page_size
from arco.iceberg.responses import LoadResultCache, metadata_json
from arco.iceberg.tables import DroppedTable, TableService
from arco.settings import ServerSettings
from arco.storage.base import StorageBackend
from arco.vending.model import Access

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

    @classmethod
    def build(cls, settings: ServerSettings, store: CatalogStore, storage: StorageBackend) -> IcebergServices:
        namespaces, tables = NamespaceService(store), TableService(store, storage)
        markers = IdempotencyMarkers(storage, settings.idempotency_in_progress_timeout_s)
        return cls(settings, store, storage, namespaces, tables, LoadResultCache(),
                   Mutations(store, namespaces, tables, markers), IcebergGuard(store),
                   StorageAccess(settings, settings.storage_options))


async def allow(request: Request, check: str, *args: Any) -> None:
    """Raise 403 unless the caller may do this (:mod:`arco.iceberg.authz`); account admins pass at no cost."""
    principal = principal_of(request)
    if not principal.is_account_admin:
        await blocking(getattr(services(request).guard, check), principal, *args)


def caller_of(request: Request) -> Caller:
    principal = principal_of(request)
    return Caller(principal.name, client_source(request), request.headers.get("idempotency-key"), principal)


def render(svc: IcebergServices, outcome: Outcome, *, access: Callable[[str], TableAccess] | None = None) -> Response:
    """A mutation's answer; a table result is rebuilt from its (immutable) metadata file, with the storage access
    ``access`` gives for the table's location (a created or registered table: its owner's, read-write)."""
    if outcome.status == 204:
        return Response(status_code=204)
    if outcome.metadata_location is None:
        return JsonResponse({k: v for k, v in (outcome.body or {}).items() if v is not None}, status_code=outcome.status)
    metadata = svc.tables.files.read(outcome.metadata_location)
    body: dict[str, Any] = {"metadata-location": outcome.metadata_location, "metadata": metadata_json(metadata)}
    if access is not None:
        granted = access(metadata.location) if outcome.status == 200 else TableAccess()
        body["config"] = granted.config
        if granted.credentials:
            body["storage-credentials"] = granted.credentials
    return JsonResponse(body, status_code=outcome.status)


def owner_access(request: Request, catalog: CatalogEntry, namespace: NamespacePath,
                 name: str) -> Callable[[str], TableAccess]:
    """Storage access for a table the caller just made (and so owns): read-write."""
    modes = delegation_modes(request.headers.get("x-iceberg-access-delegation"))
    route = table_route(request, catalog, namespace, name)
    return lambda location: services(request).access.for_table(location, Access.READ_WRITE,
                                                               principal_of(request).name, modes, route)


def table_route(request: Request, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> TableRoute:
    base = str(request.base_url).rstrip("/") + "/iceberg"
    encoded = quote(NAMESPACE_SEPARATOR.join(namespace), safe="")
    return TableRoute(base, f"v1/{quote(catalog.name, safe='')}/namespaces/{encoded}/tables/{quote(name, safe='')}")


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


def _unescape(segment: str) -> str:
    """Path segments keep an encoded slash as ``%2F`` (see :func:`keep_encoded_slashes`); restore it here, so
    a name with a slash is refused by the name rules instead of being routed somewhere else."""
    return segment.replace("%2F", "/")


def identifier(raw: Any) -> tuple[NamespacePath, str]:
    if not isinstance(raw, dict) or not isinstance(raw.get("namespace"), list):
        raise errors.BadRequest("a table identifier must be an object with 'namespace' (a list) and 'name'")
    return check_namespace(raw["namespace"]), check_name("table", raw.get("name"))


def lookup_catalog(store: CatalogStore, principal: Principal, name: str) -> CatalogEntry:
    """The catalog ``name`` of the metastore the caller's workspace works in (:mod:`arco.catalog.tenancy`)."""
    with store.read() as state:
        return state.catalog(name, state.tenant_of_workspace(principal.workspace_id).scope)


async def catalog_of(request: Request) -> CatalogEntry:
    name = request.path_params["prefix"]
    store = services(request).store

    def lookup() -> CatalogEntry:
        return lookup_catalog(store, principal_of(request), name)

    catalog = await blocking(lookup)
    await allow(request, "catalog", catalog)
    return catalog


def table_path(request: Request) -> tuple[NamespacePath, str]:
    return decode_namespace(request.path_params["namespace"]), check_name("table", _unescape(request.path_params["table"]))


async def json_body(request: Request) -> Any:
    body = await read_json(request, services(request).settings.max_body_bytes,
                           unique_keys="idempotency-key" in request.headers)
    if not isinstance(body, dict):
        raise errors.BadRequest("the request body must be a JSON object")
    return body


# -- config ----------------------------------------------------------------------------------------------------


@iceberg_errors
async def get_config(request: Request) -> Response:
    svc = services(request)
    warehouse = request.query_params.get("warehouse") or "main"

    def lookup() -> CatalogEntry:
        return lookup_catalog(svc.store, principal_of(request), warehouse)

    try:
        catalog = await blocking(lookup)
    except CatalogNotFound:
        raise errors.NoSuchWarehouse(
            f"Catalog {warehouse!r} does not exist; set warehouse to an existing catalog name (a new warehouse has "
            "'main'), or create one with `arco catalog create`"
        ) from None
    await allow(request, "catalog", catalog)
    return JsonResponse(catalog_config(svc.settings, catalog.name))


def keep_encoded_slashes(app: Any) -> Any:
    """ASGI wrapper: route on the raw path, decoding every escape except ``%2F`` inside a segment."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        raw = scope.get("raw_path")
        if scope["type"] == "http" and raw and b"%2f" in raw.lower():
            path = raw.decode("latin-1").split("?", 1)[0]
            segments = [unquote(s.replace("%2f", "%252F").replace("%2F", "%252F")) for s in path.split("/")]
            scope = {**scope, "path": "/".join(segments)}
        await app(scope, receive, send)

    return wrapped


# -- namespaces ------------------------------------------------------------------------------------------------


@iceberg_errors
async def list_namespaces(request: Request) -> Response:
    catalog = await catalog_of(request)
    parent_raw = request.query_params.get("parent") or ""
    parent = decode_namespace(parent_raw) if parent_raw else ()
    size = parse_page_size(request.query_params.get("pageSize"))
    token = request.query_params.get("pageToken") or None
    items, next_token = await blocking(services(request).namespaces.list, catalog, parent, token, size)
    if not principal_of(request).is_account_admin:
        items = await blocking(services(request).guard.visible_namespaces, principal_of(request), catalog, items)
    body: dict[str, Any] = {"namespaces": [list(p) for p in items]}
    if next_token:
        body["next-page-token"] = next_token
    return JsonResponse(body)


@iceberg_errors
async def create_namespace(request: Request) -> Response:
    catalog = await catalog_of(request)
    body = await json_body(request)
    await allow(request, "namespace", catalog, check_namespace(body.get("namespace")), "create")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.create_namespace, catalog, body, caller_of(request)))


@iceberg_errors
async def load_namespace(request: Request) -> Response:
    catalog = await catalog_of(request)
    path = decode_namespace(request.path_params["namespace"])
    result = await blocking(services(request).namespaces.load, catalog, path)
    await allow(request, "namespace", catalog, path, "see")
    return JsonResponse(result)


@iceberg_errors
async def namespace_exists(request: Request) -> Response:
    catalog = await catalog_of(request)
    path = decode_namespace(request.path_params["namespace"])
    await blocking(services(request).namespaces.exists, catalog, path)
    await allow(request, "namespace", catalog, path, "see")
    return Response(status_code=204)


@iceberg_errors
async def drop_namespace(request: Request) -> Response:
    catalog = await catalog_of(request)
    path = decode_namespace(request.path_params["namespace"])
    await allow(request, "namespace", catalog, path, "drop")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.drop_namespace, catalog, path, caller_of(request)))


@iceberg_errors
async def update_namespace_properties(request: Request) -> Response:
    catalog = await catalog_of(request)
    path = decode_namespace(request.path_params["namespace"])
    body = await json_body(request)
    await allow(request, "namespace", catalog, path, "update")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.update_namespace_properties, catalog, path, body,
                                      caller_of(request)))


# -- tables ----------------------------------------------------------------------------------------------------


@iceberg_errors
async def list_tables(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace = decode_namespace(request.path_params["namespace"])
    size = parse_page_size(request.query_params.get("pageSize"))
    token = request.query_params.get("pageToken") or None
    items, next_token = await blocking(services(request).tables.list, catalog, namespace, token, size)
    if not principal_of(request).is_account_admin:
        await allow(request, "namespace", catalog, namespace, "see")
        items = await blocking(services(request).guard.visible_tables, principal_of(request), catalog, namespace,
                               items)
    body: dict[str, Any] = {"identifiers": [{"namespace": list(t.namespace), "name": t.name} for t in items]}
    if next_token:
        body["next-page-token"] = next_token
    return JsonResponse(body)


@iceberg_errors
async def create_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace = decode_namespace(request.path_params["namespace"])
    body = await json_body(request)
    await allow(request, "create_table", catalog, namespace)
    name = check_name("table", body.get("name"))
    access = owner_access(request, catalog, namespace, name)
    tables = services(request).tables
    if body.get("stage-create"):
        def stage() -> dict[str, Any]:
            tables.entry_absent(catalog, namespace, name)
            metadata, _ = tables.build_create_metadata(catalog, namespace, body, str(uuid.uuid4()),
                                                       principal_of(request))
            granted = access(metadata.location)  # a CTAS writes data files before the table exists
            staged: dict[str, Any] = {"metadata": metadata_json(metadata), "config": granted.config}
            if granted.credentials:
                staged["storage-credentials"] = granted.credentials
            return staged

        return JsonResponse(await blocking(stage))
    svc = services(request)
    outcome = await blocking(svc.mutations.create_table, catalog, namespace, body, caller_of(request))
    return await blocking(render, svc, outcome, access=access)


@iceberg_errors
async def register_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace = decode_namespace(request.path_params["namespace"])
    body = await json_body(request)
    await allow(request, "create_table", catalog, namespace)
    access = owner_access(request, catalog, namespace, check_name("table", body.get("name")))
    svc = services(request)
    outcome = await blocking(svc.mutations.register_table, catalog, namespace, body, caller_of(request))
    return await blocking(render, svc, outcome, access=access)


@iceberg_errors
async def load_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    snapshots = request.query_params.get("snapshots") or "all"
    if snapshots not in ("all", "refs"):
        raise errors.BadRequest(f"snapshots must be 'all' or 'refs', got {snapshots!r}")
    modes = delegation_modes(request.headers.get("x-iceberg-access-delegation"))
    svc = services(request)
    await allow(request, "table", catalog, namespace, name, "read")
    loaded = await blocking(svc.tables.load, catalog, namespace, name)
    granted = TableAccess()
    if modes:
        granted = await blocking(_granted, request, catalog, namespace, name, loaded.metadata.location, modes)
    etag = f'"{loaded.pointer.version}-{snapshots}{granted.etag_part()}"'
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers={"ETag": etag})
    location = loaded.pointer.pointer.current_metadata_location
    body = svc.load_results.get(location, loaded.metadata, snapshots)
    if granted.config or granted.credentials:
        body = with_access(body, granted)
    return Response(body, media_type="application/json", headers={"ETag": etag})


def _granted(request: Request, catalog: CatalogEntry, namespace: NamespacePath, name: str, location: str,
             modes: frozenset[str]) -> TableAccess:
    """Storage access at the caller's privilege: read-write with MODIFY, else read-only (SELECT was checked)."""
    return services(request).access.for_table(location, caller_access(request, catalog, namespace, name),
                                              principal_of(request).name, modes,
                                              table_route(request, catalog, namespace, name))


def caller_access(request: Request, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> Access:
    """Read-write storage access with MODIFY on the table, else read-only (SELECT, checked before)."""
    write = services(request).guard.may_write(principal_of(request), catalog, namespace, name)
    return Access.READ_WRITE if write else Access.READ


def with_access(body: bytes, granted: TableAccess) -> bytes:
    """A cached LoadTableResult (which ends with an empty ``config``) with this caller's storage access in it."""
    extra = {"config": granted.config, **({"storage-credentials": granted.credentials} if granted.credentials
                                         else {})}
    return body[:body.rindex(b'"config":')] + orjson.dumps(extra)[1:]


@iceberg_errors
async def table_exists(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    await blocking(services(request).tables.entry, catalog, namespace, name)
    await allow(request, "table", catalog, namespace, name, "read")
    return Response(status_code=204)


@iceberg_errors
async def update_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    body = await json_body(request)
    if body.get("identifier") is not None and identifier(body["identifier"]) != (namespace, name):
        raise errors.BadRequest("the identifier in the body does not match the table in the path")
    creates = any(isinstance(r, dict) and r.get("type") == "assert-create" for r in body.get("requirements") or [])
    if creates:
        await allow(request, "create_table", catalog, namespace)
    else:
        await allow(request, "table", catalog, namespace, name, "modify")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.commit_table, catalog, namespace, name, body, caller_of(request)))


@iceberg_errors
async def drop_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    purge = request.query_params.get("purgeRequested", "false").lower() == "true"
    await allow(request, "table", catalog, namespace, name, "drop")
    svc = services(request)
    outcome = await blocking(svc.mutations.drop_table, catalog, namespace, name, purge, caller_of(request))
    if purge and outcome.body and outcome.body.get("id"):
        svc.tables.purge_later(DroppedTable.from_op(outcome.body))
    return Response(status_code=204)


@iceberg_errors
async def rename_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    body = await json_body(request)
    source_ns, source_name = identifier(body.get("source"))
    target_ns, target_name = identifier(body.get("destination"))
    await allow(request, "table", catalog, source_ns, source_name, "rename")
    await allow(request, "create_table", catalog, target_ns)
    svc = services(request)
    return render(svc, await blocking(svc.mutations.rename_table, catalog, body, (source_ns, source_name),
                                      (target_ns, target_name), caller_of(request)))


@iceberg_errors
async def commit_transaction(request: Request) -> Response:
    catalog = await catalog_of(request)
    body = await json_body(request)
    for namespace, name, _ in parse_table_changes(body):
        await allow(request, "table", catalog, namespace, name, "modify")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.commit_transaction, catalog, body, caller_of(request)))


@iceberg_errors
async def report_metrics(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    body = await json_body(request)
    svc = services(request)
    entry = await blocking(svc.tables.entry, catalog, namespace, name)
    await allow(request, "table", catalog, namespace, name, "read")
    event = {"kind": "metrics_report", "table_uuid": entry.id, "catalog": catalog.name,
             "namespace": list(namespace), "table": name, "report": body, "source": client_source(request),
             "received_at_ms": int(time.time() * 1000)}
    day = time.strftime("%Y-%m-%d", time.gmtime())
    await blocking(svc.storage.put, f"_catalog/events/{day}/metrics/{uuid.uuid4().hex}.json", orjson.dumps(event))
    return Response(status_code=204)


@iceberg_errors
async def load_credentials(request: Request) -> Response:
    """Vended credentials for one table (and the refresh endpoint of long jobs): 501 if this storage cannot vend."""
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    svc = services(request)
    await allow(request, "table", catalog, namespace, name, "read")
    loaded = await blocking(svc.tables.load, catalog, namespace, name)

    def vend() -> TableAccess:
        return svc.access.vended(loaded.metadata.location, caller_access(request, catalog, namespace, name),
                                 principal_of(request).name, table_route(request, catalog, namespace, name))

    return JsonResponse({"storage-credentials": (await blocking(vend)).credentials})


@iceberg_errors
async def sign_request(request: Request) -> Response:
    """S3 remote signing for one table: reads with SELECT, writes with MODIFY, only inside the table's prefix."""
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    body = await json_body(request)
    svc = services(request)
    await allow(request, "table", catalog, namespace, name, "read")
    loaded = await blocking(svc.tables.load, catalog, namespace, name)

    def sign() -> dict[str, Any]:
        write = caller_access(request, catalog, namespace, name) is Access.READ_WRITE
        return svc.access.sign(loaded.metadata.location, body, write)

    # Iceberg Java caches a signature only when told it is private; each request is signed afresh.
    return JsonResponse(await blocking(sign), headers={"Cache-Control": "no-cache"})


PREFIX = "/v1/{prefix}"
NS = PREFIX + "/namespaces/{namespace}"
TABLE = NS + "/tables/{table}"

routes = [
    Route("/v1/config", get_config, methods=["GET"]),
    Route("/v1/oauth/tokens", issue_token, methods=["POST"]),
    Route(PREFIX + "/namespaces", list_namespaces, methods=["GET"]),
    Route(PREFIX + "/namespaces", create_namespace, methods=["POST"]),
    # HEAD routes come first: Starlette answers HEAD on every GET route.
    Route(NS, namespace_exists, methods=["HEAD"]),
    Route(NS, load_namespace, methods=["GET"]),
    Route(NS, drop_namespace, methods=["DELETE"]),
    Route(NS + "/properties", update_namespace_properties, methods=["POST"]),
    Route(NS + "/tables", list_tables, methods=["GET"]),
    Route(NS + "/tables", create_table, methods=["POST"]),
    Route(NS + "/register", register_table, methods=["POST"]),
    Route(TABLE, table_exists, methods=["HEAD"]),
    Route(TABLE, load_table, methods=["GET"]),
    Route(TABLE, update_table, methods=["POST"]),
    Route(TABLE, drop_table, methods=["DELETE"]),
    Route(TABLE + "/metrics", report_metrics, methods=["POST"]),
    Route(TABLE + "/credentials", load_credentials, methods=["GET"]),
    Route(TABLE + "/sign", sign_request, methods=["POST"]),
    Route(PREFIX + "/tables/rename", rename_table, methods=["POST"]),
    Route(PREFIX + "/transactions/commit", commit_transaction, methods=["POST"]),
]
