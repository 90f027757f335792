"""Request ids, per-request metrics, the access log, structured logs, and ``GET /metrics``.

:class:`RequestObserver` wraps the whole application (outside the routing, so that 401s, 404s and the 500s of
unexpected errors pass through it too). Per request it

* takes the client's ``X-Request-Id`` if it is a plausible id (1-128 of ``A-Z a-z 0-9 . _ : -``), else makes one,
  and returns it in the response's ``X-Request-Id`` header; a hostile id (control characters, 10 KB) is replaced
  and never logged;
* makes the id the current request's (:data:`request_id`), so every log line written while serving it, also from
  the thread pool that runs storage-bound work, carries it;
* observes the request's latency by route template, method and status, and with ``--access-log`` writes one
  JSON line: request id, method, route, status, duration, principal.

The route template and the principal are only known inside the routing: :class:`NoteRoute`, the application's
first middleware, writes them into the request's :class:`RequestRecord`, which travels in the ASGI scope.
"""

from __future__ import annotations

import logging
import random
import re
import sys
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arco.api.errors import ApiError
from arco.auth.subjects import subject_of
from arco.catalog.store import CatalogStore
from arco.metrics import REQUEST_SECONDS, exposition

REQUEST_ID_HEADER = b"x-request-id"
_SANE_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "<unmatched>"  # no route: one label for every unknown path, which would otherwise be unbounded

request_id: ContextVar[str | None] = ContextVar("arco_request_id", default=None)
access_log = logging.getLogger("arco.access")
log = logging.getLogger("arco.api")


class RequestRecord:
    """What the routing learns about a request, for the observer outside it."""

    __slots__ = ("principal", "request_id", "route")

    def __init__(self, rid: str) -> None:
        self.request_id = rid
        self.route: str | None = None
        self.principal: str | None = None


def incoming_request_id(scope: Scope) -> str | None:
    """The client's ``X-Request-Id`` if it is a plausible id; None for a missing or hostile one."""
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER:
            return value.decode("ascii") if _SANE_ID.fullmatch(value) else None
    return None


def new_request_id() -> str:
    """32 hex digits, uuid4().hex's shape. An id only needs to be unique, not unguessable: Python's generator (seeded
    from the system's at start, reseeded in each forked worker) makes it without a system call, where os.urandom
    cost a served request 10 us on a 2-core VM (a getrandom call per request, measured in process)."""
    return f"{random.getrandbits(128):032x}"


class RequestObserver:
    def __init__(self, app: ASGIApp, *, access_log_enabled: bool = False) -> None:
        self.app = app
        self.access_log_enabled = access_log_enabled
        # One bound histogram child per (route, method, status): labels() costs a lock and a lookup per call.
        self._timers: dict[tuple[str, str, int], Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rid = incoming_request_id(scope) or new_request_id()
        record = RequestRecord(rid)
        scope["arco.request"] = record
        rid_header = (REQUEST_ID_HEADER, rid.encode("ascii"))
        status = 500  # if the application fails before it answers, the server answers 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), rid_header]}
            await send(message)

        token = request_id.set(rid)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id.reset(token)
            self._finish(scope, record, status, time.perf_counter() - started)

    def _finish(self, scope: Scope, record: RequestRecord, status: int, seconds: float) -> None:
        method = scope["method"] if scope["method"] in _METHODS else "OTHER"
        route = record.route or UNMATCHED
        key = (route, method, status)
        timer = self._timers.get(key)
        if timer is None:
            timer = self._timers[key] = REQUEST_SECONDS.labels(route, method, str(status))
        timer.observe(seconds)
        if self.access_log_enabled:
            access_log.info("request", extra={"fields": {
                "request_id": record.request_id, "method": method, "route": route, "status": status,
                "duration_ms": round(seconds * 1000, 3), "principal": record.principal}})


def route_template(scope: Scope) -> str:
    """The matched route's template, mounts included (``/iceberg`` + ``/v1/{prefix}/namespaces``)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path is None or isinstance(route, Mount):  # nothing matched, or a mount matched and nothing inside it
        return UNMATCHED
    # A mount's path has no parameters here, so the part of root_path it matched is its template.
    mounted = scope.get("root_path", "")[len(scope.get("app_root_path", "")):]
    return mounted + path


class NoteRoute:
    """The application's first middleware: notes the route template and the principal for :class:`RequestObserver`
    once the request is answered (the router and the authentication write them into this same scope)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        finally:
            record = scope.get("arco.request")
            if record is not None:
                record.route = route_template(scope)
                principal = scope.get("arco.principal")
                record.principal = principal.name if principal is not None else None


# -- GET /metrics ----------------------------------------------------------------------------------------------

METRICS_PATH = "/metrics"


def metrics_endpoint(store: CatalogStore, public: bool) -> Callable[[Request], Awaitable[Response]]:
    """The ``/metrics`` handler: for metastore admins (and account admins), or anyone with ``public``."""

    async def metrics(request: Request) -> Response:
        if not public:
            principal = request.scope.get("arco.principal")
            with store.read() as state:
                allowed = principal is not None and subject_of(state, principal).metastore_admin
            if not allowed:
                raise ApiError(403, "ForbiddenException",
                               "metrics are for metastore admins (or serve them with `arco serve --metrics-public`)")
        body, content_type = exposition()
        return Response(body, media_type=content_type)

    return metrics


# -- logs ------------------------------------------------------------------------------------------------------


class JsonLines(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the current request's id, and any ``fields``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
        }
        rid = request_id.get()
        if rid is not None:
            entry["request_id"] = rid
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure_logging(access_log_enabled: bool) -> None:
    """Arco's loggers write JSON lines to stderr: warnings and errors always, the access log when enabled.

    Called once per serving process (each worker of ``--workers N`` too); idempotent."""
    arco = logging.getLogger("arco")
    if not any(isinstance(h.formatter, JsonLines) for h in arco.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonLines())
        arco.addHandler(handler)
    arco.setLevel(logging.WARNING)
    arco.propagate = False  # the root logger's handlers (if any) would print each line a second time
    access_log.setLevel(logging.INFO if access_log_enabled else logging.WARNING)
