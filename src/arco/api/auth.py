"""Bearer-token authentication as plain ASGI middleware (no per-request task or body copy, unlike
Starlette's ``BaseHTTPMiddleware``). The authenticated principal is put in ``scope["arco.principal"]``.

It also says which workspace the request works in (and so which metastore, :mod:`arco.catalog.tenancy`): the
``X-Databricks-Workspace-Id`` header that the Databricks SDK sends when it is given a ``workspace_id`` (any
client can send it: PyIceberg's and Spark's ``header.*`` properties), else the workspace the token was made
for, else workspace 0. A workspace chooses a metastore, not privileges: grants decide what the caller may do
there. A token made for one workspace works in that one only.
"""

from __future__ import annotations

from dataclasses import replace

from starlette.types import ASGIApp, Receive, Scope, Send

from arco.api.errors import error_body, error_headers, surface_of
from arco.api.requests import inline_or_blocking
from arco.auth.authenticator import Authenticator
from arco.ui import paths as ui_paths

# Paths anyone may call: health checks, and the discovery document clients probe before they authenticate.
PUBLIC_PATHS = frozenset({"/health", "/healthz", "/.well-known/databricks-config", "/iceberg/v1/oauth/tokens",
                          "/delta-sharing"})
# The web UI's pages check the browser's session cookie themselves and show only the sign-in page without a valid
# one (arco.ui.routes); its JSON API (/ui/api) is not among them.
PUBLIC_PATHS |= ui_paths.PAGE_PATHS
# Delta Sharing recipients download their credential with the activation link alone (it is the secret).
# Delta Sharing recipients are not Arco principals: /delta-sharing authenticates their tokens itself
# (arco.sharing.routes), and its signed file URLs carry their own credential.
PUBLIC_PREFIXES = ("/api/2.1/unity-catalog/public/data_sharing_activation/",
                   "/api/2.0/unity-catalog/public/data_sharing_activation/", "/delta-sharing/",
                   *ui_paths.PAGE_PREFIXES)


class BearerAuthMiddleware:
    def __init__(self, app: ASGIApp, authenticator: Authenticator, public_paths: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.authenticator = authenticator
        self.public_paths = PUBLIC_PATHS | public_paths  # and what the server was told to open (--metrics-public)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths or scope["path"].startswith(PUBLIC_PREFIXES):
            await self.app(scope, receive, send)
            return
        token = _bearer_token(scope)
        # Most tokens are known without waiting; a check of the catalog that must ask storage goes to a thread.
        principal = await inline_or_blocking(self.authenticator.authenticate, token) if token else None
        if principal is None:
            reason = "a bearer token is required" if token is None else "the bearer token is not valid"
            await _unauthorized(scope, send, f"Not authorized: {reason}. Send 'Authorization: Bearer <token>'.")
            return
        asked = _header(scope, WORKSPACE_HEADER)
        if asked is not None:
            if not asked.strip().isdigit() or len(asked.strip()) > 18:
                await _refuse(scope, send, 400, "BadRequestException",
                              f"{WORKSPACE_HEADER} must be a workspace id (a non-negative integer), got {asked!r}")
                return
            workspace = int(asked)
            if principal.token_workspace is not None and workspace != principal.token_workspace:
                await _refuse(scope, send, 403, "ForbiddenException",
                              f"this token was made for workspace {principal.token_workspace}, not {workspace}")
                return
            principal = replace(principal, workspace_id=workspace)
        scope["arco.principal"] = principal
        await self.app(scope, receive, send)


WORKSPACE_HEADER = "x-databricks-workspace-id"


def _header(scope: Scope, wanted: str) -> str | None:
    key = wanted.encode("latin-1")
    for name, value in scope["headers"]:
        if name == key:
            return value.decode("latin-1")
    return None


def _bearer_token(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credentials.strip():
                return credentials.strip()
            return ""
    return None


async def _unauthorized(scope: Scope, send: Send, message: str) -> None:
    await _refuse(scope, send, 401, "NotAuthorizedException", message, {"WWW-Authenticate": 'Bearer realm="arco"'})


async def _refuse(scope: Scope, send: Send, status: int, error_type: str, message: str,
                  extra_headers: dict[str, str] | None = None) -> None:
    body = error_body(surface_of(scope["path"]), status, error_type, message)
    headers = error_headers(extra_headers)
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body if scope["method"] != "HEAD" else b""})
