"""The signed-in session: the token a person pasted, kept in a browser-session cookie.

Why a cookie and not ``sessionStorage``: the pages are rendered on the server, so the browser must send the token
with every page request, which only a cookie does without JavaScript. The cookie is

* ``HttpOnly``: no script on the page can read the token, so an injected script could not steal it;
* ``SameSite=Strict``: the browser never sends it on a request another site starts, which rules out cross-site
  request forgery (the pages only read; the two form posts, sign-in and sign-out, also refuse cross-site origins);
* a session cookie (no ``Expires``/``Max-Age``): the browser drops it when its session ends, nothing persists;
* ``Secure`` when the request came over HTTPS.

The token travels in a form body on sign-in, never in a URL, and is never logged. Every page request checks it
again with the server's authenticator, so a revoked token signs the person out on their next click.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from arco.auth.authenticator import Authenticator
from arco.auth.principals import Principal

COOKIE = "arco_ui_session"


def signed_in(request: Request) -> Principal | None:
    """The principal of the session's token, or None (no cookie, or a token that no longer authenticates)."""
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    authenticator: Authenticator = request.app.state.services.authenticator
    return authenticator.authenticate(token)


def authenticate(request: Request, token: str) -> Principal | None:
    return request.app.state.services.authenticator.authenticate(token) if token else None


def remember(response: Response, request: Request, token: str) -> None:
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https",
                        path="/")


def forget(response: Response, request: Request) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")


def same_origin(request: Request) -> bool:
    """False for a form post another site started (a login-CSRF attempt). Browsers say where a request came from in
    ``Sec-Fetch-Site``, else in ``Origin``; a client that sends neither is not a browser another site can drive."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin != "null" and urlsplit(origin).netloc == request.headers.get("host", "")


def safe_next(raw: str | None) -> str:
    """Where to go after signing in: a path on this server only (never ``//other.host`` or a full URL)."""
    if not raw or not raw.startswith("/") or raw.startswith("//") or "\\" in raw:
        return "/"
    return raw
