"""What the Unity Catalog handlers share: the error mapping, the body and the caller, and the shapes every
securable's create / get / update / delete handlers take (each a thin call of a service method)."""

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
from arco.unity.errors import UnityError, from_catalog_error, invalid
from arco.unity.named import KINDS_BY_TYPE, NamedSecurables
from arco.unity.service import UnityService

Handler = Callable[[Request], Awaitable[Response]]


def unity_errors(handler: Handler) -> Handler:
    @wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except CatalogError as exc:
            raise from_catalog_error(exc) from None
        except BodyError as exc:
            raise UnityError(exc.status, "REQUEST_LIMIT_EXCEEDED" if exc.status == 413 else
                             "INVALID_PARAMETER_VALUE", exc.message) from None

    return wrapped


def service(request: Request) -> UnityService:
    return request.app.state.unity


async def body_of(request: Request) -> dict[str, Any]:
    # A repeated member name has two readings (parsers keep the last): refused, as Iceberg's mutations refuse it.
    body = await read_json(request, request.app.state.services.settings.max_body_bytes, unique_keys=True)
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON object")
    return body


def listed(key: str, items: list[dict[str, Any]], next_token: str | None) -> Response:
    body: dict[str, Any] = {key: items}
    if next_token:
        body["next_page_token"] = next_token
    return JsonResponse(body)


def flag(request: Request, name: str) -> bool:
    """A boolean query parameter, absent meaning false; anything but true or false is a 400 (a mistyped
    ``force=yes`` would otherwise be a silent false)."""
    raw = request.query_params.get(name, "")
    if raw.lower() not in ("", "true", "false"):
        raise invalid(f"{name} must be true or false, got {raw!r}")
    return raw.lower() == "true"


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


def cached(request: Request, attribute: str, make: Callable[[UnityService], Any]) -> Any:
    """A service made from the Unity service on first use and kept on the application's state."""
    found = getattr(request.app.state, attribute, None)
    if found is None:
        found = make(service(request))
        setattr(request.app.state, attribute, found)
    return found


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
