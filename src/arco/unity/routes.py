"""Unity Catalog routes, mounted at ``/api/2.0/unity-catalog`` and ``/api/2.1/unity-catalog`` (thin); the metastore
and the sharing routes are in :mod:`arco.unity.metastore_routes` and :mod:`arco.unity.sharing_routes`, the shapes
they share in :mod:`arco.unity.handlers`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import blocking, inline_or_blocking, read_json
from arco.api.responses import JsonResponse
from arco.unity import credentials, metastore_routes, objects, sharing_routes, whoami
from arco.unity.delta_coordinator import DeltaCommitCoordinator
from arco.unity.effective import EffectivePermissions
from arco.unity.errors import invalid
from arco.unity.functions import FunctionService
from arco.unity.handlers import (
    body_of,
    cached,
    caller_only,
    creator,
    deleter,
    flag,
    getter,
    listed,
    me,
    named_routes,
    service,
    unity_errors,
    updater,
    vending,
)
from arco.unity.models import ModelService
from arco.unity.permissions import spelling_for
from arco.unity.volumes import VolumeService


@unity_errors
async def list_catalogs(request: Request) -> Response:
    q = request.query_params
    items, token = await inline_or_blocking(service(request).list_catalogs, q.get("max_results"),
                                            q.get("page_token") or None, me(request))
    return listed("catalogs", items, token)


@unity_errors
async def list_schemas(request: Request) -> Response:
    q = request.query_params
    items, token = await inline_or_blocking(service(request).list_schemas, q.get("catalog_name"),
                                            q.get("max_results"), q.get("page_token") or None, me(request))
    return listed("schemas", items, token)


@unity_errors
async def list_tables(request: Request) -> Response:
    q = request.query_params
    items, token = await inline_or_blocking(service(request).list_tables, q.get("catalog_name"),
                                            q.get("schema_name"), q.get("max_results"), q.get("page_token") or None,
                                            me(request), flag(request, "omit_columns"))
    return listed("tables", items, token)


@unity_errors
async def table_summaries(request: Request) -> Response:
    args: dict[str, Any] = dict(request.query_params)
    if request.method == "POST":
        args.update(await body_of(request))
    items, token = await blocking(service(request).table_summaries, args.get("catalog_name"),
                                  args.get("schema_name_pattern"), args.get("table_name_pattern"),
                                  args.get("max_results"), args.get("page_token") or None, me(request))
    return listed("tables", items, token)


@unity_errors
async def get_permissions(request: Request) -> Response:
    p = request.path_params
    return JsonResponse(await blocking(request.app.state.permissions.get, p["securable_type"], p["full_name"],
                                       request.query_params.get("principal") or None, me(request),
                                       spelling_for(request.url.path, request.headers.get("user-agent"))))


@unity_errors
async def update_permissions(request: Request) -> Response:
    p = request.path_params
    body = await body_of(request)
    result = await blocking(request.app.state.permissions.update, p["securable_type"], p["full_name"], body,
                            me(request), replace=request.method == "PUT",
                            spelling=spelling_for(request.url.path, request.headers.get("user-agent")))
    return JsonResponse(result)


@unity_errors
async def scim_me(request: Request) -> Response:
    """SCIM ``Me``; the ``X-Databricks-Org-Id`` header is how the Databricks SDK learns its workspace id."""
    caller = me(request)
    body = await blocking(whoami.scim_me, request.app.state.iceberg.store, caller)
    return JsonResponse(body, headers={"X-Databricks-Org-Id": str(caller.workspace_id)})


@unity_errors
async def list_files(request: Request) -> Response:
    q = request.query_params
    return JsonResponse(await blocking(request.app.state.named.list_files, q.get("url"), q.get("max_results"),
                                       me(request)))


# -- volumes, functions, registered models, effective permissions, table existence -----------------------------


def volumes(request: Request) -> VolumeService:
    return cached(request, "uc_volumes", lambda unity: VolumeService(unity.store, unity.tables))


def functions(request: Request) -> FunctionService:
    return cached(request, "uc_functions", lambda unity: FunctionService(unity.store))


def models(request: Request) -> ModelService:
    return cached(request, "uc_models", lambda unity: ModelService(unity.store, unity.tables))


def effective(request: Request) -> EffectivePermissions:
    return cached(request, "uc_effective", lambda unity: EffectivePermissions(unity.store))


def object_routes(path: str, list_key: str, get_service: Callable[[Request], Any], *, methods: tuple[str, ...],
                  takes_force: bool = False) -> list[Route]:
    """create (POST path), list (GET path?catalog_name&schema_name), and get / update / delete by full name."""

    @unity_errors
    async def create(request: Request) -> Response:
        body = await body_of(request)
        return JsonResponse(await blocking(get_service(request).create, body, me(request)))

    @unity_errors
    async def list_all(request: Request) -> Response:
        q = request.query_params
        items, token = await blocking(get_service(request).list, q.get("catalog_name"), q.get("schema_name"),
                                      q.get("max_results"), q.get("page_token") or None, me(request))
        return listed(list_key, items, token)

    @unity_errors
    async def one(request: Request) -> Response:
        name, svc = request.path_params["full_name"], get_service(request)
        if request.method == "PATCH":
            body = await body_of(request)
            return JsonResponse(await blocking(svc.update, name, body, me(request)))
        if request.method == "DELETE":
            args = (flag(request, "force"),) if takes_force else ()
            await blocking(svc.delete, name, *args, me(request))
            return JsonResponse({})
        return JsonResponse(await blocking(svc.get, name, me(request)))

    return [Route(path, create, methods=["POST"]), Route(path, list_all, methods=["GET"]),
            Route(path + "/{full_name}", one, methods=list(methods))]


@unity_errors
async def create_model_version(request: Request) -> Response:
    body = await body_of(request)
    return JsonResponse(await blocking(models(request).create_version, body, me(request)))


@unity_errors
async def list_model_versions(request: Request) -> Response:
    q = request.query_params
    items, token = await blocking(models(request).list_versions, request.path_params["full_name"],
                                  q.get("max_results"), q.get("page_token") or None, me(request))
    return listed("model_versions", items, token)


@unity_errors
async def model_version(request: Request) -> Response:
    name, version, svc = request.path_params["full_name"], request.path_params["version"], models(request)
    if request.method == "PATCH":
        body = await body_of(request)
        return JsonResponse(await blocking(svc.update_version, name, version, body, me(request)))
    if request.method == "DELETE":
        await blocking(svc.delete_version, name, version, me(request))
        return JsonResponse({})
    return JsonResponse(await blocking(svc.get_version, name, version, me(request)))


@unity_errors
async def finalize_model_version(request: Request) -> Response:
    body = await body_of(request)
    p = request.path_params
    return JsonResponse(await blocking(models(request).finalize_version, p["full_name"], p["version"], body,
                                       me(request)))


@unity_errors
async def effective_permissions(request: Request) -> Response:
    p, q = request.path_params, request.query_params
    return JsonResponse(await blocking(effective(request).get, p["securable_type"], p["full_name"],
                                       q.get("principal") or None, q.get("max_results"), q.get("page_token") or None,
                                       me(request)))


@unity_errors
async def privilege_assignments(request: Request) -> Response:
    """Databricks' paginated getPermissions (the SDK's ``grants.list``)."""
    p, q = request.path_params, request.query_params
    return JsonResponse(await blocking(request.app.state.permissions.get_page, p["securable_type"], p["full_name"],
                                       q.get("principal") or None, q.get("page_size"), q.get("page_token") or None,
                                       me(request), spelling_for(request.url.path, request.headers.get("user-agent"))))


@unity_errors
async def effective_privilege_assignments(request: Request) -> Response:
    """Databricks' paginated getEffectivePermissions (the SDK's ``grants.list_effective``): the same rows under
    their own key."""
    p, q = request.path_params, request.query_params
    body = await blocking(effective(request).get, p["securable_type"], p["full_name"], q.get("principal") or None,
                          q.get("page_size"), q.get("page_token") or None, me(request), "page_size")
    return JsonResponse({"effective_privilege_assignments": body.pop("privilege_assignments"), **body})


@unity_errors
async def table_exists(request: Request) -> Response:
    return JsonResponse(await blocking(objects.table_exists, service(request).store, request.path_params["full_name"],
                                       me(request)))


@unity_errors
async def table_lineage(request: Request) -> Response:
    # Imported on the first call: lineage reads the compacted history through pyarrow, whose import every server
    # would otherwise pay at start (a tenth of it).
    from arco.unity.lineage import table_lineage as lineage_of  # noqa: PLC0415

    q = request.query_params
    return JsonResponse(await blocking(lineage_of, service(request), request.app.state.services.storage,
                                       request.path_params["full_name"], q.get("direction"), q.get("depth"),
                                       me(request)))


def delta_coordinator(request: Request) -> DeltaCommitCoordinator:
    return cached(request, "uc_delta_commits", lambda unity: DeltaCommitCoordinator(unity.store, unity.tables))


@unity_errors
async def delta_commits(request: Request) -> Response:
    """POST commits (or reports a backfill); GET lists the commits not yet backfilled, its request in a JSON body
    as the UC clients send it (or, for curl, in the query string)."""
    if request.method == "POST":
        body = await body_of(request)
        return JsonResponse(await blocking(delta_coordinator(request).commit, body, me(request)))
    body = await read_json(request, request.app.state.services.settings.max_body_bytes, required=False)
    if body is None:
        body = {k: int(v) if k.endswith("_version") and v.isdigit() else v for k, v in request.query_params.items()}
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON object")
    return JsonResponse(await blocking(delta_coordinator(request).commits, body, me(request)))


routes = [
    Route("/delta/preview/commits", delta_commits, methods=["GET", "POST"]),
    Route("/lineage/tables/{full_name}", table_lineage, methods=["GET"]),
    Route("/effective-permissions/{securable_type}/{full_name}", effective_permissions, methods=["GET"]),
    Route("/privilege-assignments/{securable_type}/{full_name}", privilege_assignments, methods=["GET"]),
    Route("/effective-privilege-assignments/{securable_type}/{full_name}", effective_privilege_assignments,
          methods=["GET"]),
    Route("/tables/{full_name}/exists", table_exists, methods=["GET"]),
    *object_routes("/volumes", "volumes", volumes, methods=("GET", "PATCH", "DELETE")),
    *object_routes("/functions", "functions", functions, methods=("GET", "PATCH", "DELETE")),
    Route("/models/versions", create_model_version, methods=["POST"]),
    *object_routes("/models", "registered_models", models, methods=("GET", "PATCH", "DELETE"), takes_force=True),
    Route("/models/{full_name}/versions", list_model_versions, methods=["GET"]),
    Route("/models/{full_name}/versions/{version}", model_version, methods=["GET", "PATCH", "DELETE"]),
    Route("/models/{full_name}/versions/{version}/finalize", finalize_model_version, methods=["PATCH"]),
    Route("/catalogs", creator("create_catalog"), methods=["POST"]),
    Route("/catalogs", list_catalogs, methods=["GET"]),
    Route("/catalogs/{name}", getter("get_catalog", "name"), methods=["GET"]),
    Route("/catalogs/{name}", updater("update_catalog", "name"), methods=["PATCH"]),
    Route("/catalogs/{name}", deleter("delete_catalog", "name", takes_force=True), methods=["DELETE"]),
    Route("/schemas", creator("create_schema"), methods=["POST"]),
    Route("/schemas", list_schemas, methods=["GET"]),
    Route("/schemas/{full_name}", getter("get_schema", "full_name"), methods=["GET"]),
    Route("/schemas/{full_name}", updater("update_schema", "full_name"), methods=["PATCH"]),
    Route("/schemas/{full_name}", deleter("delete_schema", "full_name", takes_force=True), methods=["DELETE"]),
    Route("/tables", creator("create_table"), methods=["POST"]),
    Route("/tables", list_tables, methods=["GET"]),
    Route("/tables/{full_name}", getter("get_table", "full_name"), methods=["GET"]),
    Route("/tables/{full_name}", updater("update_table", "full_name"), methods=["PATCH"]),
    Route("/tables/{full_name}", deleter("delete_table", "full_name", takes_force=False), methods=["DELETE"]),
    Route("/table-summaries", table_summaries, methods=["GET", "POST"]),
    Route("/staging-tables", creator("create_staging_table"), methods=["POST"]),
    *metastore_routes.routes,
    Route("/permissions/{securable_type}/{full_name}", get_permissions, methods=["GET"]),
    Route("/temporary-table-credentials", vending(credentials.table_credentials), methods=["POST"]),
    Route("/temporary-path-credentials", vending(credentials.path_credentials), methods=["POST"]),
    Route("/temporary-volume-credentials", vending(credentials.volume_credentials), methods=["POST"]),
    Route("/temporary-model-version-credentials", vending(credentials.model_version_credentials), methods=["POST"]),
    Route("/userinfo/me", caller_only(whoami.my_info), methods=["GET"]),
    Route("/userinfo/mygroups", caller_only(whoami.my_groups), methods=["GET"]),
    *named_routes("storage_credential", "/storage-credentials", "storage_credentials"),
    *named_routes("storage_credential", "/credentials", "credentials"),  # the OSS 2.1 name of the same objects
    *named_routes("external_location", "/external-locations", "external_locations"),
    Route("/files", list_files, methods=["GET"]),
    *sharing_routes.routes,
    Route("/permissions/{securable_type}/{full_name}", update_permissions, methods=["PATCH", "PUT"]),
]
