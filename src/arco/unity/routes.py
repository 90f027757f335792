"""Unity Catalog routes, mounted at ``/api/2.0/unity-catalog`` and ``/api/2.1/unity-catalog`` (thin)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import BodyError, blocking, inline_or_blocking, principal_of, read_json
from arco.api.responses import JsonResponse
from arco.auth.principals import Principal
from arco.catalog.errors import CatalogError
from arco.unity import credentials, objects, whoami
from arco.unity.effective import EffectivePermissions
from arco.unity.errors import UnityError, from_catalog_error, invalid
from arco.unity.functions import FunctionService
from arco.unity.lineage import table_lineage as lineage_of
from arco.unity.metastores import MetastoreService
from arco.unity.models import ModelService
from arco.unity.named import KINDS_BY_TYPE, NamedSecurables
from arco.unity.service import UnityService
from arco.unity.sharing import SharingService
from arco.unity.volumes import VolumeService

Handler = Callable[[Request], Awaitable[Response]]


def unity_errors(handler: Handler) -> Handler:
    @wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except CatalogError as exc:
            raise from_catalog_error(exc) from None
        except BodyError as exc:
            raise UnityError(exc.status, "INVALID_PARAMETER_VALUE" if exc.status == 400 else
                             "REQUEST_LIMIT_EXCEEDED", exc.message) from None

    return wrapped


def service(request: Request) -> UnityService:
    return request.app.state.unity


async def body_of(request: Request) -> dict[str, Any]:
    body = await read_json(request, request.app.state.services.settings.max_body_bytes)
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON object")
    return body


def listed(key: str, items: list[dict[str, Any]], next_token: str | None) -> Response:
    body: dict[str, Any] = {key: items}
    if next_token:
        body["next_page_token"] = next_token
    return JsonResponse(body)


def flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() == "true"


def me(request: Request) -> Principal:
    return principal_of(request)


# -- the shapes every securable's CRUD handlers share -----------------------------------------------------------


def creator(method: str) -> Handler:
    @unity_errors
    async def create(request: Request) -> Response:
        body = await body_of(request)
        return JsonResponse(await blocking(getattr(service(request), method), body, me(request)))

    return create


def getter(method: str, param: str) -> Handler:
    @unity_errors
    async def get(request: Request) -> Response:
        return JsonResponse(await inline_or_blocking(getattr(service(request), method), request.path_params[param],
                                                     me(request)))

    return get


def updater(method: str, param: str) -> Handler:
    @unity_errors
    async def update(request: Request) -> Response:
        body = await body_of(request)
        return JsonResponse(await blocking(getattr(service(request), method), request.path_params[param], body,
                                           me(request)))

    return update


def deleter(method: str, param: str, *, takes_force: bool) -> Handler:
    @unity_errors
    async def delete(request: Request) -> Response:
        args = (flag(request, "force"),) if takes_force else ()
        await blocking(getattr(service(request), method), request.path_params[param], *args, me(request))
        return JsonResponse({})

    return delete


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
                                       request.query_params.get("principal") or None, me(request)))


@unity_errors
async def update_permissions(request: Request) -> Response:
    p = request.path_params
    body = await body_of(request)
    result = await blocking(request.app.state.permissions.update, p["securable_type"], p["full_name"], body,
                            me(request), replace=request.method == "PUT")
    return JsonResponse(result)


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


def posted(fn: Callable[..., Any]) -> Handler:
    """A handler for a POST whose JSON body and caller go to ``fn(store, body, caller)``."""

    @unity_errors
    async def handler(request: Request) -> Response:
        body = await body_of(request)
        return JsonResponse(await blocking(fn, request.app.state.iceberg.store, body, me(request)))

    return handler


def vending(fn: Callable[..., Any]) -> Handler:
    """A handler for a POST whose JSON body and caller go to ``fn(store, vendor, body, caller)``."""

    @unity_errors
    async def handler(request: Request) -> Response:
        body = await body_of(request)
        iceberg = request.app.state.iceberg
        return JsonResponse(await blocking(fn, iceberg.store, iceberg.access.vendor, body, me(request)))

    return handler


def caller_only(fn: Callable[..., Any]) -> Handler:
    @unity_errors
    async def handler(request: Request) -> Response:
        return JsonResponse(await blocking(fn, request.app.state.iceberg.store, me(request)))

    return handler


@unity_errors
async def scim_me(request: Request) -> Response:
    """SCIM ``Me``; the ``X-Databricks-Org-Id`` header is how the Databricks SDK learns its workspace id."""
    caller = me(request)
    body = await blocking(whoami.scim_me, request.app.state.iceberg.store, caller)
    return JsonResponse(body, headers={"X-Databricks-Org-Id": str(caller.workspace_id)})


def named_routes(kind_name: str, path: str, list_key: str, create_handler: Handler | None = None) -> list[Route]:
    """CRUD routes for a named metastore-level securable (:mod:`arco.unity.named`)."""
    kind = KINDS_BY_TYPE[kind_name]

    def named(request: Request) -> NamedSecurables:
        return request.app.state.named

    @unity_errors
    async def create(request: Request) -> Response:
        body = await body_of(request)
        return JsonResponse(await blocking(named(request).create, kind, body, me(request)))

    @unity_errors
    async def list_all(request: Request) -> Response:
        q = request.query_params
        items, token = await blocking(named(request).list, kind, q.get("max_results"), q.get("page_token") or None,
                                      me(request))
        return listed(list_key, items, token)

    @unity_errors
    async def get(request: Request) -> Response:
        return JsonResponse(await blocking(named(request).get, kind, request.path_params["name"], me(request)))

    @unity_errors
    async def update(request: Request) -> Response:
        body = await body_of(request)
        return JsonResponse(await blocking(named(request).update, kind, request.path_params["name"], body,
                                           me(request)))

    @unity_errors
    async def delete(request: Request) -> Response:
        await blocking(named(request).delete, kind, request.path_params["name"], flag(request, "force"), me(request))
        return JsonResponse({})

    return [Route(path, create_handler or create, methods=["POST"]), Route(path, list_all, methods=["GET"]),
            Route(path + "/{name}", get, methods=["GET"]), Route(path + "/{name}", update, methods=["PATCH"]),
            Route(path + "/{name}", delete, methods=["DELETE"])]


def sharing(request: Request) -> SharingService:
    return request.app.state.sharing


@unity_errors
async def create_recipient(request: Request) -> Response:
    body = await body_of(request)
    return JsonResponse(await blocking(sharing(request).create_recipient, body, me(request)))


@unity_errors
async def share_permissions(request: Request) -> Response:
    name = request.path_params["name"]
    if request.method == "GET":
        return JsonResponse(await blocking(sharing(request).share_permissions, name, me(request)))
    body = await body_of(request)
    return JsonResponse(await blocking(sharing(request).update_share_permissions, name, body, me(request)))


@unity_errors
async def recipient_share_permissions(request: Request) -> Response:
    return JsonResponse(await blocking(sharing(request).recipient_share_permissions, request.path_params["name"],
                                       me(request)))


@unity_errors
async def rotate_recipient_token(request: Request) -> Response:
    body = await body_of(request)
    return JsonResponse(await blocking(sharing(request).rotate_token, request.path_params["name"], body,
                                       me(request)))


@unity_errors
async def provider_shares(request: Request) -> Response:
    return JsonResponse(await blocking(sharing(request).provider_shares, request.path_params["name"], me(request)))


@unity_errors
async def activate_recipient(request: Request) -> Response:
    """Public: the recipient has no token yet; the activation id in the path is the secret."""
    return JsonResponse(await blocking(sharing(request).activate, request.path_params["activation"]))


@unity_errors
async def list_files(request: Request) -> Response:
    q = request.query_params
    return JsonResponse(await blocking(request.app.state.named.list_files, q.get("url"), q.get("max_results"),
                                       me(request)))


@unity_errors
async def default_namespace_setting(request: Request) -> Response:
    """The workspace setting DuckDB's unity_catalog extension reads first: the workspace's default catalog."""
    assignment = await blocking(metastores(request).current_assignment, me(request))
    return JsonResponse({"namespace": {"value": assignment["default_catalog_name"]}, "setting_name": "default",
                         "etag": "arco"})


# -- volumes, functions, registered models, effective permissions, table existence -----------------------------


def _cached(request: Request, attribute: str, make: Callable[[UnityService], Any]) -> Any:
    found = getattr(request.app.state, attribute, None)
    if found is None:
        found = make(service(request))
        setattr(request.app.state, attribute, found)
    return found


def volumes(request: Request) -> VolumeService:
    return _cached(request, "uc_volumes", lambda unity: VolumeService(unity.store, unity.tables))


def functions(request: Request) -> FunctionService:
    return _cached(request, "uc_functions", lambda unity: FunctionService(unity.store))


def models(request: Request) -> ModelService:
    return _cached(request, "uc_models", lambda unity: ModelService(unity.store, unity.tables))


def effective(request: Request) -> EffectivePermissions:
    return _cached(request, "uc_effective", lambda unity: EffectivePermissions(unity.store))


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
async def table_exists(request: Request) -> Response:
    return JsonResponse(await blocking(objects.table_exists, service(request).store, request.path_params["full_name"],
                                       me(request)))


@unity_errors
async def table_lineage(request: Request) -> Response:
    q = request.query_params
    return JsonResponse(await blocking(lineage_of, service(request), request.app.state.services.storage,
                                       request.path_params["full_name"], q.get("direction"), q.get("depth"),
                                       me(request)))


routes = [
    Route("/lineage/tables/{full_name}", table_lineage, methods=["GET"]),
    Route("/effective-permissions/{securable_type}/{full_name}", effective_permissions, methods=["GET"]),
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
    Route("/metastore_summary", metastore_summary, methods=["GET"]),
    Route("/metastores", list_metastores, methods=["GET", "POST"]),
    Route("/metastores/{id}", one_metastore, methods=["GET", "PATCH", "DELETE"]),
    Route("/workspaces/{workspace_id}/metastore", workspace_assignment, methods=["PUT", "PATCH", "DELETE"]),
    Route("/current-metastore-assignment", current_assignment, methods=["GET"]),
    Route("/permissions/{securable_type}/{full_name}", get_permissions, methods=["GET"]),
    Route("/temporary-table-credentials", vending(credentials.table_credentials), methods=["POST"]),
    Route("/temporary-path-credentials", vending(credentials.path_credentials), methods=["POST"]),
    Route("/userinfo/me", caller_only(whoami.my_info), methods=["GET"]),
    Route("/userinfo/mygroups", caller_only(whoami.my_groups), methods=["GET"]),
    *named_routes("storage_credential", "/storage-credentials", "storage_credentials"),
    *named_routes("storage_credential", "/credentials", "credentials"),  # the OSS 2.1 name of the same objects
    *named_routes("external_location", "/external-locations", "external_locations"),
    Route("/files", list_files, methods=["GET"]),
    *named_routes("share", "/shares", "shares"),
    Route("/shares/{name}/permissions", share_permissions, methods=["GET", "PATCH"]),
    *named_routes("recipient", "/recipients", "recipients", create_handler=create_recipient),
    Route("/recipients/{name}/share-permissions", recipient_share_permissions, methods=["GET"]),
    Route("/recipients/{name}/rotate-token", rotate_recipient_token, methods=["POST"]),
    *named_routes("provider", "/providers", "providers"),
    Route("/providers/{name}/shares", provider_shares, methods=["GET"]),
    Route("/public/data_sharing_activation/{activation}", activate_recipient, methods=["GET"]),
    Route("/permissions/{securable_type}/{full_name}", update_permissions, methods=["PATCH", "PUT"]),
]
