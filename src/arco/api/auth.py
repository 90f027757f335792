"""Bearer-token authentication as plain ASGI middleware (no per-request task or body copy, unlike
Starlette's ``BaseHTTPMiddleware``). The authenticated principal is put in ``scope["arco.principal"]``."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from arco.api.errors import error_body, error_headers, surface_of
from arco.auth.authenticator import Authenticator

# Paths anyone may call: health checks, and the discovery document clients probe before they authenticate.
PUBLIC_PATHS = frozenset({"/health", "/healthz", "/.well-known/databricks-config", "/iceberg/v1/oauth/tokens"})
# Delta Sharing recipients download their credential with the activation link alone (it is the secret).
PUBLIC_PREFIXES = ("/api/2.1/unity-catalog/public/data_sharing_activation/",
                   "/api/2.0/unity-catalog/public/data_sharing_activation/")


class BearerAuthMiddleware:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS or scope["path"].startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        token = _bearer_token(scope)
        principal = self.authenticator.authenticate(token) if token else None
        if principal is None:
            reason = "a bearer token is required" if token is None else "the bearer token is not valid"
            await _unauthorized(scope, send, f"Not authorized: {reason}. Send 'Authorization: Bearer <token>'.")
            return
        scope["arco.principal"] = principal
        await self.app(scope, receive, send)


def _bearer_token(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
            return ""
    return None


async def _unauthorized(scope: Scope, send: Send, message: str) -> None:
    surface = surface_of(scope["path"])
    body = error_body(surface, 401, "NotAuthorizedException", message)
    headers = error_headers({"WWW-Authenticate": 'Bearer realm="arco"'})
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body if scope["method"] != "HEAD" else b""})
