"""Iceberg REST view routes (listViews, createView, loadView, replaceView, dropView, viewExists, renameView,
registerView). Thin, as the table routes are: parse, authorize (as for tables), call :mod:`arco.iceberg.views`."""

from __future__ import annotations

import threading
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import blocking, inline_or_blocking
from arco.api.responses import JsonResponse
from arco.catalog.errors import InvalidRequestError, shown
from arco.catalog.names import check_name
from arco.iceberg import errors
from arco.iceberg.http import (
    IcebergServices,
    allow,
    caller_of,
    catalog_of,
    decode_namespace,
    iceberg_errors,
    identifier,
    identifier_page,
    json_body,
    services,
    table_path,
)
from arco.iceberg.idempotency import Outcome
from arco.iceberg.views import ViewMutations, ViewService, view_metadata_json

_build_lock = threading.Lock()


class ViewServices:
    def __init__(self, svc: IcebergServices) -> None:
        self.views = ViewService(svc.store, svc.storage, svc.tables)
        self.mutations = ViewMutations(svc.mutations, self.views)


def view_services(request: Request) -> ViewServices:
    """Built once per application, beside the Iceberg services (:class:`arco.iceberg.http.IcebergServices`)."""
    state = request.app.state
    found = getattr(state, "iceberg_views", None)
    if found is None:
        with _build_lock:
            found = getattr(state, "iceberg_views", None)
            if found is None:
                found = ViewServices(services(request))
                state.iceberg_views = found
    return found


def view_path(request: Request) -> tuple[tuple[str, ...], str]:
    request.path_params.setdefault("table", request.path_params.get("view", ""))
    return table_path(request)


def existing_view_path(request: Request) -> tuple[tuple[str, ...], str]:
    """:func:`view_path` for a lookup: a name Arco would never store is a view that does not exist (404)."""
    try:
        return view_path(request)
    except InvalidRequestError:
        raise errors.NoSuchView(f"View does not exist: {shown(request.path_params.get('view', ''))}") from None


def render_view(vs: ViewServices, outcome: Outcome) -> Response:
    if outcome.status == 204 or outcome.metadata_location is None:
        return Response(status_code=204)
    metadata = vs.views.files.read(outcome.metadata_location)
    return JsonResponse({"metadata-location": outcome.metadata_location, "metadata": view_metadata_json(metadata),
                         "config": {}}, status_code=outcome.status)


@iceberg_errors
async def list_views(request: Request) -> Response:
    return await identifier_page(request, view_services(request).views.list)


async def _new_view(request: Request, how: Callable[..., Outcome]) -> Response:
    """createView and registerView: both need CREATE_TABLE on the schema and a storable name."""
    catalog = await catalog_of(request)
    namespace = decode_namespace(request.path_params["namespace"])
    body = await json_body(request)
    await allow(request, "create_table", catalog, namespace)
    check_name("view", body.get("name"))
    vs = view_services(request)
    outcome = await blocking(how, vs.mutations, catalog, namespace, body, caller_of(request))
    return await blocking(render_view, vs, outcome)


@iceberg_errors
async def create_view(request: Request) -> Response:
    return await _new_view(request, ViewMutations.create)


@iceberg_errors
async def register_view(request: Request) -> Response:
    return await _new_view(request, ViewMutations.register)


@iceberg_errors
async def load_view(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = existing_view_path(request)
    await allow(request, "table", catalog, namespace, name, "read")
    vs = view_services(request)
    loaded = await inline_or_blocking(vs.views.load, catalog, namespace, name)
    return JsonResponse({"metadata-location": loaded.location, "metadata": view_metadata_json(loaded.metadata),
                         "config": {}})


@iceberg_errors
async def view_exists(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = existing_view_path(request)
    await inline_or_blocking(view_services(request).views.entry, catalog, namespace, name)
    await allow(request, "table", catalog, namespace, name, "read")
    return Response(status_code=204)


@iceberg_errors
async def replace_view(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = view_path(request)
    body = await json_body(request)
    if body.get("identifier") is not None and identifier(body["identifier"], "view") != (namespace, name):
        raise errors.BadRequest("the identifier in the body does not match the view in the path")
    await allow(request, "table", catalog, namespace, name, "modify")
    vs = view_services(request)
    outcome = await blocking(vs.mutations.replace, catalog, namespace, name, body, caller_of(request))
    return await blocking(render_view, vs, outcome)


@iceberg_errors
async def drop_view(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = view_path(request)
    await allow(request, "table", catalog, namespace, name, "drop")
    vs = view_services(request)
    await blocking(vs.mutations.drop, catalog, namespace, name, caller_of(request))
    return Response(status_code=204)


@iceberg_errors
async def rename_view(request: Request) -> Response:
    catalog = await catalog_of(request)
    body = await json_body(request)
    source_ns, source_name = identifier(body.get("source"), "view")
    target_ns, target_name = identifier(body.get("destination"), "view")
    await allow(request, "table", catalog, source_ns, source_name, "rename")
    await allow(request, "create_table", catalog, target_ns)
    vs = view_services(request)
    await blocking(vs.mutations.rename, catalog, body, (source_ns, source_name), (target_ns, target_name),
                   caller_of(request))
    return Response(status_code=204)


PREFIX = "/v1/{prefix}"
NS = PREFIX + "/namespaces/{namespace}"
VIEW = NS + "/views/{view}"

view_routes = [
    Route(NS + "/views", list_views, methods=["GET"]),
    Route(NS + "/views", create_view, methods=["POST"]),
    Route(NS + "/register-view", register_view, methods=["POST"]),
    # HEAD comes first: Starlette answers HEAD on every GET route.
    Route(VIEW, view_exists, methods=["HEAD"]),
    Route(VIEW, load_view, methods=["GET"]),
    Route(VIEW, replace_view, methods=["POST"]),
    Route(VIEW, drop_view, methods=["DELETE"]),
    Route(PREFIX + "/views/rename", rename_view, methods=["POST"]),
]
