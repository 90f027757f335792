"""Iceberg REST routes, mounted at ``/iceberg``. Thin: parse the request, call a service, shape the answer."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import blocking, inline_or_blocking, principal_of
from arco.api.responses import JsonResponse
from arco.catalog.errors import CatalogNotFound
from arco.catalog.model import CatalogEntry, name_key, path_key
from arco.catalog.names import check_name, check_namespace
from arco.iceberg import errors
from arco.iceberg.access import TableAccess, delegation_modes
from arco.iceberg.config import catalog_config
from arco.iceberg.function_routes import function_routes
from arco.iceberg.http import (
    IcebergServices,
    allow,
    caller_of,
    catalog_of,
    decode_namespace,
    existing_namespace,
    existing_table_path,
    iceberg_errors,
    identifier,
    identifier_page,
    json_body,
    keep_encoded_slashes,
    lookup_catalog,
    render,
    services,
    table_path,
)
from arco.iceberg.metrics_route import report_metrics
from arco.iceberg.oauth import issue_token
from arco.iceberg.paging import parse_page_size
from arco.iceberg.plan_routes import plan_routes
from arco.iceberg.purge import DroppedTable, purge_later
from arco.iceberg.responses import LoadResult, metadata_json, table_etag
from arco.iceberg.staged_create import make_local_metadata_folder
from arco.iceberg.storage_routes import granted_access, load_credentials, owner_access, sign_request, with_access
from arco.iceberg.table_requirements import requirement_objects
from arco.iceberg.tables import LocatedTable
from arco.iceberg.transactions import parse_table_changes
from arco.iceberg.view_routes import view_routes

__all__ = ["IcebergServices", "keep_encoded_slashes", "routes"]


# -- config ----------------------------------------------------------------------------------------------------


@iceberg_errors
async def get_config(request: Request) -> Response:
    svc = services(request)
    warehouse = request.query_params.get("warehouse") or "main"

    def lookup() -> CatalogEntry:
        return lookup_catalog(svc.store, principal_of(request), warehouse)

    try:
        catalog = await inline_or_blocking(lookup)
    except CatalogNotFound:
        raise errors.NoSuchWarehouse(
            f"Catalog {warehouse!r} does not exist; set warehouse to an existing catalog name (a new warehouse has "
            "'main'), or create one with `arco catalog create`"
        ) from None
    await allow(request, "catalog", catalog)
    return JsonResponse(catalog_config(svc.settings, catalog.name))


# -- namespaces ------------------------------------------------------------------------------------------------


@iceberg_errors
async def list_namespaces(request: Request) -> Response:
    catalog = await catalog_of(request)
    parent_raw = request.query_params.get("parent") or ""
    parent = existing_namespace(parent_raw) if parent_raw else ()
    size = parse_page_size(request.query_params.get("pageSize"))
    token = request.query_params.get("pageToken") or None
    items, next_token = await inline_or_blocking(services(request).namespaces.list, catalog, parent, token, size)
    if not principal_of(request).is_account_admin:
        items = await inline_or_blocking(services(request).guard.visible_namespaces, principal_of(request), catalog,
                                         items)
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
    path = existing_namespace(request.path_params["namespace"])
    result = await inline_or_blocking(services(request).namespaces.load, catalog, path)
    await allow(request, "namespace", catalog, path, "see")
    return JsonResponse(result)


@iceberg_errors
async def namespace_exists(request: Request) -> Response:
    catalog = await catalog_of(request)
    path = existing_namespace(request.path_params["namespace"])
    await inline_or_blocking(services(request).namespaces.exists, catalog, path)
    await allow(request, "namespace", catalog, path, "see")
    return Response(status_code=204)


@iceberg_errors
async def drop_namespace(request: Request) -> Response:
    catalog = await catalog_of(request)
    path = existing_namespace(request.path_params["namespace"])
    await allow(request, "namespace", catalog, path, "drop")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.drop_namespace, catalog, path, caller_of(request)))


@iceberg_errors
async def update_namespace_properties(request: Request) -> Response:
    catalog = await catalog_of(request)
    path = existing_namespace(request.path_params["namespace"])
    body = await json_body(request)
    await allow(request, "namespace", catalog, path, "update")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.update_namespace_properties, catalog, path, body,
                                      caller_of(request)))


# -- tables ----------------------------------------------------------------------------------------------------


@iceberg_errors
async def list_tables(request: Request) -> Response:
    return await identifier_page(request, services(request).tables.list)


@iceberg_errors
async def create_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace = decode_namespace(request.path_params["namespace"])
    body = await json_body(request)
    await allow(request, "create_table", catalog, namespace)
    name = check_name("table", body.get("name"))
    access = owner_access(request, catalog, namespace, name)
    tables = services(request).tables
    if not isinstance(body.get("stage-create"), bool | None):  # not 1 or "yes": the spec's boolean
        raise errors.BadRequest("'stage-create' must be a boolean")
    if body.get("stage-create"):
        def stage() -> dict[str, Any]:
            tables.entry_absent(catalog, namespace, name)
            metadata, _ = tables.build_create_metadata(catalog, namespace, body, str(uuid.uuid4()),
                                                       principal_of(request))
            granted = access(metadata.location)  # a CTAS writes data files before the table exists
            make_local_metadata_folder(metadata.location, metadata.properties)
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
    namespace, name = existing_table_path(request)
    snapshots = request.query_params.get("snapshots") or "all"
    if snapshots not in ("all", "refs"):
        raise errors.BadRequest(f"snapshots must be 'all' or 'refs', got {snapshots!r}")
    modes = delegation_modes(request.headers.get("x-iceberg-access-delegation"))
    svc = services(request)
    principal = principal_of(request)

    def load() -> tuple[LocatedTable, LoadResult, TableAccess]:
        # On the event loop when nothing needs to wait (a read window holds, or a local disk answers), else one
        # trip to the thread pool for the whole lookup (each trip costs about as much as the rest of a warm load).
        # A table this server knows has its pointer read at once, beside the catalog check the lookups below
        # make, so the load waits for one storage round trip; the check decides (tables.locate).
        ahead = svc.tables.pointer_ahead(request.path_params["prefix"], namespace, name, principal)
        catalog = lookup_catalog(svc.store, principal, request.path_params["prefix"])
        if not principal.is_account_admin:
            svc.guard.catalog(principal, catalog)
            svc.guard.table(principal, catalog, namespace, name, "read")
        files = svc.tables.files
        located = svc.tables.locate_for_load(
            catalog, namespace, name, ahead,
            lambda location: svc.load_results.holds(location, snapshots) or files.written_bytes(location) is not None)
        result = svc.load_results.get(located.metadata_location, snapshots, files.read_bytes, files.read)
        granted = TableAccess()
        if modes:
            granted = granted_access(request, catalog, namespace, name, result.table_location, modes)
        return located, result, granted

    located, result, granted = await inline_or_blocking(load)
    etag = table_etag(located.metadata_location, snapshots, granted.etag_part())
    if etag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers={"ETag": etag})
    body = result.body
    if granted.config or granted.credentials:
        body = with_access(body, granted)
    return Response(body, media_type="application/json", headers={"ETag": etag})


@iceberg_errors
async def table_exists(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = existing_table_path(request)
    await allow(request, "table", catalog, namespace, name, "read")  # first: a 404 would tell a name exists
    await inline_or_blocking(services(request).tables.entry, catalog, namespace, name)
    return Response(status_code=204)


def _identifier_key(namespace: tuple[str, ...], name: str) -> tuple[tuple[str, ...], str]:
    return path_key(namespace), name_key(name)


@iceberg_errors
async def update_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    body = await json_body(request)
    if body.get("identifier") is not None and _identifier_key(*identifier(body["identifier"])) != _identifier_key(
            namespace, name):  # names are matched ignoring case everywhere, here too
        raise errors.BadRequest("the identifier in the body does not match the table in the path")
    creates = any(r.get("type") == "assert-create" for r in requirement_objects(body.get("requirements")))
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
        purge_later(svc.tables, DroppedTable.from_op(outcome.body))
    return Response(status_code=204)


@iceberg_errors
async def unregister_table(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = existing_table_path(request)
    await allow(request, "table", catalog, namespace, name, "drop")
    svc = services(request)
    return render(svc, await blocking(svc.mutations.unregister_table, catalog, namespace, name, caller_of(request)))


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
    Route(TABLE + "/unregister", unregister_table, methods=["POST"]),
    Route(TABLE + "/credentials", load_credentials, methods=["GET"]),
    Route(TABLE + "/sign", sign_request, methods=["POST"]),
    Route(PREFIX + "/tables/rename", rename_table, methods=["POST"]),
    Route(PREFIX + "/transactions/commit", commit_transaction, methods=["POST"]),
    *view_routes,
    *function_routes,
    *plan_routes,
]
