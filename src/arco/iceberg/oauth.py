"""``POST /iceberg/v1/oauth/tokens``: OAuth2 client credentials for service principals (Spark's and PyIceberg's
``credential=<client id>:<secret>``), answered with a short-lived bearer token. Public: the caller has no token yet.
"""

from __future__ import annotations

import base64
from urllib.parse import parse_qs

import orjson
from starlette.requests import Request
from starlette.responses import Response

from arco.api.requests import blocking
from arco.auth.identity import OAUTH_TOKEN_LIFETIME_S, exchange_client_credentials

TOKEN_PATH = "/iceberg/v1/oauth/tokens"


def _oauth_error(status: int, error: str, description: str) -> Response:
    return Response(orjson.dumps({"error": error, "error_description": description}), status_code=status,
                    media_type="application/json", headers={"Cache-Control": "no-store"})


async def issue_token(request: Request) -> Response:
    raw = await request.body()
    if len(raw) > 64 * 1024:
        return _oauth_error(400, "invalid_request", "the request body is too large")
    form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
    client_id, client_secret = form.get("client_id"), form.get("client_secret")
    authorization = request.headers.get("authorization", "")
    if authorization.lower().startswith("basic "):
        try:
            client_id, _, client_secret = base64.b64decode(authorization[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return _oauth_error(400, "invalid_request", "malformed Basic authorization header")
    if form.get("grant_type") != "client_credentials":
        return _oauth_error(400, "unsupported_grant_type", "only grant_type=client_credentials is supported")
    if not client_id or not client_secret:
        return _oauth_error(400, "invalid_request", "client_id and client_secret are required")
    issued = await blocking(exchange_client_credentials, request.app.state.iceberg.store,
                            request.app.state.services.authenticator.oauth_keys, client_id, client_secret)
    if issued is None:
        return _oauth_error(401, "invalid_client", "unknown client id or wrong secret")
    body = {"access_token": issued, "token_type": "bearer", "expires_in": OAUTH_TOKEN_LIFETIME_S,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
    return Response(orjson.dumps(body), media_type="application/json", headers={"Cache-Control": "no-store"})
