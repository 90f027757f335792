"""The web UI's routes (thin): pages rendered with Jinja2 (autoescaped), and the same data as JSON under /ui/api.

Pages authenticate the session cookie (:mod:`arco.ui.session`) themselves and answer the sign-in page without a
valid one, so nothing is rendered for a signed-out browser. The JSON API is behind the bearer-token middleware
like every other API (401 without a token). Both call :mod:`arco.ui.pages` and :mod:`arco.ui.table_page` as the
signed-in principal.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from arco.api.requests import BodyError, blocking, principal_of
from arco.auth.principals import Principal
from arco.catalog.names import MAX_NAME_LENGTH
from arco.ui import pages, session
from arco.ui.paths import API_PREFIX

if TYPE_CHECKING:
    from jinja2 import Environment

# No inline script or style, nothing from elsewhere: an injected tag could not run even if escaping failed.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
MAX_FORM_BYTES = 16 * 1024
MAX_QUERY_CHARS = MAX_NAME_LENGTH  # a list's name search: a longer one matches nothing


def _table_url(full_name: str) -> str:
    return "/tables/" + ".".join(quote(part, safe="") for part in full_name.split("."))


async def read_body(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyError(413, "the form is too large")
        chunks.append(chunk)
    return b"".join(chunks)


@functools.cache
def _environment() -> Environment:
    """The templates, made on the first page asked for: Jinja, and the table page's modules (pyarrow, for the
    history and lineage it reads), are a tenth of a server's start time, which every API server would pay."""
    from jinja2 import Environment, PackageLoader, select_autoescape  # noqa: PLC0415

    from arco.ui.table_page import when  # noqa: PLC0415

    env = Environment(loader=PackageLoader("arco.ui", "templates"), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["q"] = lambda value: quote(str(value), safe="")
    env.filters["table_url"] = _table_url
    env.filters["when"] = when
    env.filters["clip"] = clip
    env.filters["fit"] = fit
    return env


def fit(value: object, chars: int) -> str:
    """A label cut to ``chars`` characters (a box in a drawing), its end marked; the whole name goes in a title."""
    text = str(value)
    return text if len(text) <= chars else text[:chars - 1] + "…"


SHOWN_TEXT_CHARS = 2_000


def clip(value: object, limit: int = SHOWN_TEXT_CHARS) -> str:
    """A value a writer chose (a property, a comment) cut to what a page can lay out: a megabyte of unbroken text
    took a browser half a minute to lay out, for every reader of the table."""
    text = str(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters; the API gives all of it)"



def render(template: str, http_status: int = 200, **context: Any) -> HTMLResponse:
    html = _environment().get_template(template).render(**context)
    return HTMLResponse(html, status_code=http_status, headers=SECURITY_HEADERS)


def _here(request: Request) -> str:
    """The path asked for with its query (a table's version page, a list's page token), to come back to it."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def signin_page(request: Request, status: int = 200, message: str | None = None,
                next_path: str | None = None) -> HTMLResponse:
    return render("signin.html", status, caller=None, message=message,
                  next_path=session.safe_next(next_path or _here(request)))


Build = Callable[[Request, Principal], tuple[str, dict[str, Any]]]


def page(build: Build) -> Callable[[Request], Awaitable[Response]]:
    """A page handler: no valid session, the sign-in page (nothing else); a service refusal, an error page."""

    async def handler(request: Request) -> Response:
        caller = await blocking(session.signed_in, request)
        if caller is None:
            signed_out = request.cookies.get(session.COOKIE) is not None
            response = signin_page(request, 401 if request.url.path != "/" else 200,
                                   "Your session's token is no longer valid: sign in again." if signed_out else None)
            if signed_out:
                session.forget(response, request)
            return response
        request.scope["arco.principal"] = caller  # for the access log, as the bearer-token middleware does for APIs
        try:
            template, context = await blocking(build, request, caller)
        except pages.PageError as exc:
            return render("error.html", exc.status, caller=caller, status=exc.status, message=exc.message)
        return render(template, caller=caller, **context)

    return handler


def _version_page(request: Request) -> int:
    raw = request.query_params.get("versions", "1")
    # isdecimal, not isdigit: "²" is a digit int() refuses. Nine digits are more pages than any table has.
    return int(raw) if raw.isdecimal() and len(raw) <= 9 else 1


def _paging(request: Request) -> pages.Paging:
    """A list's page, as the UC APIs page it: ``page_token`` (from the previous page's next link) and
    ``max_results`` (at most the services' own limit, which they enforce); ``q``, the list's name search."""
    raw = request.query_params.get("max_results") or None
    if raw is not None and not (raw.isdecimal() and len(raw) <= 9):
        raise pages.PageError(400, f"max_results must be a non-negative integer, got {raw!r}")
    query = request.query_params.get("q", "").strip() or None
    if query is not None and len(query) > MAX_QUERY_CHARS:
        raise pages.PageError(400, f"a search is at most {MAX_QUERY_CHARS} characters (no name is longer)")
    return pages.Paging(request.query_params.get("page_token") or None, None, int(raw) if raw else None, query)


# -- pages ---------------------------------------------------------------------------------------------------------

def _overview(request: Request, caller: Principal) -> tuple[str, dict[str, Any]]:
    return "overview.html", {"view": pages.overview(request.app.state, caller, _paging(request))}


def _catalog(request: Request, caller: Principal) -> tuple[str, dict[str, Any]]:
    view = pages.catalog_page(request.app.state, caller, request.path_params["catalog"], _paging(request))
    return "catalog.html", {"view": view}


def _schema(request: Request, caller: Principal) -> tuple[str, dict[str, Any]]:
    view = pages.schema_page(request.app.state, caller, request.path_params["catalog"], request.path_params["schema"],
                             _paging(request))
    return "schema.html", {"view": view}


def _table_view(request: Request, caller: Principal) -> Any:
    from arco.ui.table_page import table_page  # noqa: PLC0415 - see _environment

    return table_page(request.app.state, caller, request.path_params["full_name"], _version_page(request))


def _table(request: Request, caller: Principal) -> tuple[str, dict[str, Any]]:
    return "table.html", {"view": _table_view(request, caller)}


def _runs(request: Request, caller: Principal) -> tuple[str, dict[str, Any]]:
    return "runs.html", {"view": pages.runs_page(request.app.state, caller)}


def _shares(request: Request, caller: Principal) -> tuple[str, dict[str, Any]]:
    return "shares.html", {"view": pages.shares_page(request.app.state, caller), "page_size": pages.PAGE_SIZE}


def _no_page(request: Request, caller: Principal) -> tuple[str, dict[str, Any]]:
    raise pages.PageError(404, f"There is no page at {request.url.path}.")


_no_page_answer = page(_no_page)


async def stray(request: Request) -> Response:
    """A path under the pages' prefixes that no page has: with a trailing slash, the page without it (a typed or
    pasted URL often ends so); else the 404 page."""
    path = request.url.path
    if path.endswith("/") and path.rstrip("/") not in ("", "/catalogs", "/tables"):
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(path.rstrip("/") + query, status_code=308)
    return await _no_page_answer(request)


async def favicon(request: Request) -> Response:
    """Browsers ask every server for /favicon.ico: answered without a token, and with nothing (the pages name
    their icon themselves), so no page has a failed request in its console."""
    return Response(status_code=204, headers={"Cache-Control": "public, max-age=86400"})


MAX_FORM_FIELDS = 8


class FormRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def _form(request: Request) -> dict[str, str]:
    """The sign-in form's fields (URL-encoded, as browsers post it; parsed here rather than with another package).
    Raises :class:`FormRefused` for a form larger, or with more fields, than a sign-in has room for."""
    try:
        raw = await read_body(request, MAX_FORM_BYTES)
    except BodyError as exc:
        if exc.status == 413:
            raise FormRefused(413, f"The sign-in form is larger than {MAX_FORM_BYTES // 1024} KB: paste the token "
                                   "alone (a token is a few dozen characters).") from None
        raise FormRefused(exc.status, "The sign-in form did not arrive whole: try again.") from None
    try:
        fields = parse_qs(raw.decode("utf-8", "replace"), max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # more than MAX_FORM_FIELDS fields
        raise FormRefused(400, f"The sign-in form has at most {MAX_FORM_FIELDS} fields.") from None
    return {k: v[0] for k, v in fields.items()}


async def sign_in(request: Request) -> Response:
    if not session.same_origin(request):
        return render("error.html", 403, caller=None, status=403, message="Sign in from this server's own page.")
    try:
        form = await _form(request)
    except FormRefused as refused:
        return signin_page(request, refused.status, refused.message, "/")
    token = form.get("token", "").strip()
    next_path = session.safe_next(form.get("next"))
    principal = await blocking(session.authenticate, request, token) if token else None
    if principal is None:
        message = "Paste a token to sign in." if not token else \
            "That token was not accepted: it is unknown, revoked or expired."
        return signin_page(request, 401, message, next_path)
    response = RedirectResponse(next_path, status_code=303, headers={"Cache-Control": "no-store"})
    session.remember(response, request, token)
    return response


async def sign_out(request: Request) -> Response:
    if not session.same_origin(request):
        return render("error.html", 403, caller=None, status=403, message="Sign out from this server's own page.")
    response = RedirectResponse("/", status_code=303)
    session.forget(response, request)
    return response


# -- the JSON API (bearer token, like every API) ---------------------------------------------------------------

def _json(body: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS), status_code=status,
                    media_type="application/json", headers={"Cache-Control": "no-store"})


ERROR_CODES = {403: "PERMISSION_DENIED", 404: "NOT_FOUND", pages.UNREADABLE_METADATA: "METADATA_UNREADABLE"}


def api(build: Callable[[Request, Principal], Any]) -> Callable[[Request], Awaitable[Response]]:
    async def handler(request: Request) -> Response:
        try:
            return _json(await blocking(build, request, principal_of(request)))
        except pages.PageError as exc:
            return _json({"error_code": ERROR_CODES.get(exc.status, "INVALID"), "message": exc.message}, exc.status)

    return handler


def _api_table(request: Request, caller: Principal) -> Any:
    view = _table_view(request, caller)
    body = orjson.loads(orjson.dumps(view, option=orjson.OPT_NON_STR_KEYS))
    # The words the page shows, for scripts too.
    for shown, version in zip(body["versions"], view.versions, strict=True):
        shown["source"]["label"] = version.source.label
    return body


routes = [
    Route("/", page(_overview), methods=["GET"]),
    Route("/catalogs/{catalog}", page(_catalog), methods=["GET"]),
    Route("/catalogs/{catalog}/{schema}", page(_schema), methods=["GET"]),
    Route("/tables/{full_name}", page(_table), methods=["GET"]),
    Route("/runs", page(_runs), methods=["GET"]),
    Route("/shares", page(_shares), methods=["GET"]),
    Route("/favicon.ico", favicon, methods=["GET"]),
    Route("/ui/signin", sign_in, methods=["POST"]),
    Route("/ui/signout", sign_out, methods=["POST"]),
    Mount("/ui/static", app=StaticFiles(packages=[("arco.ui", "static")]), name="ui-static"),
    Route(f"{API_PREFIX}/catalogs", api(lambda r, c: pages.overview(r.app.state, c, _paging(r))), methods=["GET"]),
    Route(f"{API_PREFIX}/catalogs/{{catalog}}",
          api(lambda r, c: pages.catalog_page(r.app.state, c, r.path_params["catalog"], _paging(r))), methods=["GET"]),
    Route(f"{API_PREFIX}/catalogs/{{catalog}}/{{schema}}",
          api(lambda r, c: pages.schema_page(r.app.state, c, r.path_params["catalog"], r.path_params["schema"],
                                             _paging(r))),
          methods=["GET"]),
    Route(f"{API_PREFIX}/tables/{{full_name}}", api(_api_table), methods=["GET"]),
    # Anything else under the pages' prefixes: the HTML 404 page (or the sign-in page), not the APIs' JSON.
    Route("/catalogs/{rest:path}", stray, methods=["GET"]),
    Route("/tables/{rest:path}", stray, methods=["GET"]),
]
