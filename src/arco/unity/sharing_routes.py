"""Unity Catalog's Delta Sharing routes: shares, recipients, providers and the public activation link (thin:
:class:`arco.unity.sharing.SharingService` decides)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import blocking
from arco.api.responses import JsonResponse
from arco.unity.handlers import body_of, me, named_routes, unity_errors
from arco.unity.sharing import SharingService


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


routes = [
    *named_routes("share", "/shares", "shares"),
    Route("/shares/{name}/permissions", share_permissions, methods=["GET", "PATCH"]),
    *named_routes("recipient", "/recipients", "recipients", create_handler=create_recipient),
    Route("/recipients/{name}/share-permissions", recipient_share_permissions, methods=["GET"]),
    Route("/recipients/{name}/rotate-token", rotate_recipient_token, methods=["POST"]),
    *named_routes("provider", "/providers", "providers"),
    Route("/providers/{name}/shares", provider_shares, methods=["GET"]),
    Route("/public/data_sharing_activation/{activation}", activate_recipient, methods=["GET"]),
]
