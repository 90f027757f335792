"""Unity Catalog's metastore routes: metastores, workspace assignments, and the workspace settings clients read
from them (thin: :class:`arco.unity.metastores.MetastoreService` decides)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import blocking
from arco.api.responses import JsonResponse
from arco.unity.handlers import body_of, flag, me, unity_errors
from arco.unity.metastores import MetastoreService


def metastores(request: Request) -> MetastoreService:
    return request.app.state.metastores


@unity_errors
async def metastore_summary(request: Request) -> Response:
    return JsonResponse(await blocking(metastores(request).summary, me(request)))


@unity_errors
async def list_metastores(request: Request) -> Response:
    if request.method == "POST":
        body = await body_of(request)
        return JsonResponse(await blocking(metastores(request).create, body, me(request)))
    return JsonResponse(await blocking(metastores(request).list, me(request)))


@unity_errors
async def one_metastore(request: Request) -> Response:
    metastore_id = request.path_params["id"]
    if request.method == "DELETE":
        await blocking(metastores(request).delete, metastore_id, flag(request, "force"), me(request))
        return JsonResponse({})
    if request.method == "PATCH":
        body = await body_of(request)
        return JsonResponse(await blocking(metastores(request).update, metastore_id, body, me(request)))
    return JsonResponse(await blocking(metastores(request).get, metastore_id, me(request)))


@unity_errors
async def workspace_assignment(request: Request) -> Response:
    body: dict[str, Any] = dict(request.query_params)  # DELETE: the SDK sends metastore_id in the query
    if request.method != "DELETE" or request.headers.get("content-length", "0") != "0":
        body.update(await body_of(request))  # the spec's DELETE carries a MetastoreAssignment body
    return JsonResponse(await blocking(metastores(request).assign, request.path_params["workspace_id"], body,
                                       me(request), method=request.method))


@unity_errors
async def current_assignment(request: Request) -> Response:
    return JsonResponse(await blocking(metastores(request).current_assignment, me(request)))


@unity_errors
async def default_namespace_setting(request: Request) -> Response:
    """The workspace setting DuckDB's unity_catalog extension reads first: the workspace's default catalog."""
    assignment = await blocking(metastores(request).current_assignment, me(request))
    return JsonResponse({"namespace": {"value": assignment["default_catalog_name"]}, "setting_name": "default",
                         "etag": "arco"})


routes = [
    Route("/metastore_summary", metastore_summary, methods=["GET"]),
    Route("/metastores", list_metastores, methods=["GET", "POST"]),
    Route("/metastores/{id}", one_metastore, methods=["GET", "PATCH", "DELETE"]),
    Route("/workspaces/{workspace_id}/metastore", workspace_assignment, methods=["PUT", "PATCH", "DELETE"]),
    Route("/current-metastore-assignment", current_assignment, methods=["GET"]),
]
