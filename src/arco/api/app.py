"""The ASGI application: every surface on one port, behind one authentication layer.

Starlette on uvicorn (uvloop + httptools): small, composable, and among the fastest Python stacks; handlers stay
thin and call services, which hold no per-process state that matters for correctness (all of it is in storage),
so any number of worker processes and servers can serve one warehouse.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arco.api.after_answer import WritesAfterAnswer
from arco.api.auth import BearerAuthMiddleware
from arco.api.errors import NO_SUCH_ENDPOINT, ApiError, error_body, surface_of
from arco.api.faults import ContainErrors
from arco.api.heap import freeze_startup_heap
from arco.api.observability import METRICS_PATH, NoteRoute, RequestObserver, configure_logging, metrics_endpoint
from arco.api.optimistic import OptimisticCommits
from arco.api.responses import JsonResponse
from arco.api.routing import SegmentIndexedRouter
from arco.auth.authenticator import Authenticator
from arco.auth.bootstrap import read_stored_admin_hash
from arco.auth.principals import Principal
from arco.auth.tokens import hash_token
from arco.catalog.bootstrap import initialise_warehouse
from arco.catalog.store import CatalogStore
from arco.events import after_answer
from arco.iceberg import routes as iceberg_routes
from arco.iceberg.pointer import read_window
from arco.iceberg.routes import IcebergServices
from arco.settings import ServerSettings
from arco.sharing import routes as sharing_routes
from arco.sharing.file_server import PREFIX as FILES_PREFIX
from arco.sharing.file_server import SignedFiles
from arco.sharing.service import SharingServer
from arco.storage.base import StorageBackend
from arco.storage.factory import open_storage
from arco.ui import routes as ui_routes
from arco.unity import handlers as unity_handlers
from arco.unity import metastore_routes, tokens_api
from arco.unity import routes as unity_routes
from arco.unity.metastores import MetastoreService
from arco.unity.named import NamedSecurables
from arco.unity.permissions import PermissionsService
from arco.unity.service import UnityService
from arco.unity.sharing import SharingService

log = logging.getLogger("arco.api")
ADMIN_TOKEN_ENV = "ARCO_ADMIN_TOKEN"


@dataclass
class Services:
    """What handlers reach through ``request.app.state.services``."""

    settings: ServerSettings
    storage: StorageBackend
    authenticator: Authenticator


class FreshnessScope:
    """One catalog freshness check per request (:meth:`CatalogStore.fresh_as_of`), from the request's arrival;
    reads (GET, HEAD) may be answered from a check up to ``window_s`` older (``--read-freshness-ms``)."""

    def __init__(self, app: ASGIApp, window_s: float = 0.0) -> None:
        self.app = app
        self.window_s = window_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        window = self.window_s if scope.get("method") in ("GET", "HEAD") else 0.0
        with CatalogStore.fresh_as_of(window_s=window), read_window(window):
            await self.app(scope, receive, send)


async def health(request: Request) -> JsonResponse:
    return JsonResponse({"status": "ok"})


async def databricks_config(request: Request) -> JsonResponse:
    """The host metadata the Databricks SDK asks for as it starts (it warns without it): nothing to add to what
    the client was configured with (Arco's tokens are its own; there is no OIDC endpoint or cloud to discover)."""
    return JsonResponse({})


def _error_response(request: Request, status: int, error_type: str, message: str,
                    headers: dict[str, str] | None = None) -> Response:
    body = error_body(surface_of(request.url.path), status, error_type, message)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return _error_response(request, exc.status, exc.error_type, exc.message, exc.headers)


_HTTP_ERROR_TYPES = {404: NO_SUCH_ENDPOINT, 405: "MethodNotAllowedException"}


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    error_type = _HTTP_ERROR_TYPES.get(exc.status_code, "BadRequestException")
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return _error_response(request, exc.status_code, error_type, message, dict(exc.headers or {}))


def create_app(settings: ServerSettings, storage: StorageBackend | None = None,
               extra_principals: dict[str, Principal] | None = None) -> Starlette:
    """The application; ``extra_principals`` (token -> principal) admits in-process callers such as the pipeline."""
    storage = storage or open_storage(settings.warehouse, settings.storage_options)
    store = CatalogStore(storage, max_loaded_tables=settings.catalog_cache_tables)
    env_token = os.environ.get(ADMIN_TOKEN_ENV)
    authenticator = Authenticator(
        storage,
        env_token_hashes=frozenset({hash_token(env_token)} if env_token else set()),
        stored_hash=read_stored_admin_hash(storage),
        extra={hash_token(token): who for token, who in (extra_principals or {}).items()},
        store=store,
    )
    unity_router = SegmentIndexedRouter(unity_routes.routes)
    app = Starlette(
        routes=[  # the busiest first: routes are matched in order
            Mount("/iceberg", app=SegmentIndexedRouter(iceberg_routes.routes)),
            Mount("/delta-sharing", app=SegmentIndexedRouter(sharing_routes.routes)),
            Mount("/api/2.0/unity-catalog", app=unity_router),
            Mount("/api/2.1/unity-catalog", app=unity_router),
            Route("/api/2.0/settings/types/default_namespace_ws/names/default",
                  metastore_routes.default_namespace_setting, methods=["GET"]),
            Route("/api/2.0/preview/scim/v2/Me", unity_routes.scim_me, methods=["GET"]),
            Route("/api/2.0/token/create", unity_handlers.posted(tokens_api.create), methods=["POST"]),
            Route("/api/2.0/token/list", unity_handlers.caller_only(tokens_api.list_mine), methods=["GET"]),
            Route("/api/2.0/token/delete", unity_handlers.posted(tokens_api.delete), methods=["POST"]),
            # The web UI at / (arco.ui): pages behind a session cookie, its JSON API under /ui/api.
            *ui_routes.routes,
            Route(METRICS_PATH, metrics_endpoint(store, settings.metrics_public), methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/healthz", health, methods=["GET"]),
            Route("/.well-known/databricks-config", databricks_config, methods=["GET"]),
        ],
        # ContainErrors, outermost inside the request observer, answers what no handler did (storage faults 503,
        # bugs 500) without the connection drop a Starlette handler for Exception would cause (arco.api.faults).
        # Optimistic commits only where the catalog check is a round trip (object storage): on a local disk it is
        # a read of a few tens of microseconds, which a stale view's second run would cost far more than it saves.
        middleware=[Middleware(FreshnessScope, window_s=settings.read_freshness_ms / 1000),
                    Middleware(ContainErrors), Middleware(NoteRoute),
                    *([] if storage.capabilities.cheap_reads else [Middleware(OptimisticCommits)]),
                    Middleware(BearerAuthMiddleware, authenticator=authenticator,
                               public_paths=frozenset({METRICS_PATH}) if settings.metrics_public else frozenset())],
        exception_handlers={ApiError: _api_error, HTTPException: _http_error},
    )
    initialise_warehouse(storage, admin_token=False, store=store)  # serve made the admin token, if it had to
    app.state.services = Services(settings=settings, storage=storage, authenticator=authenticator)
    app.state.iceberg = IcebergServices.build(settings, store, storage)
    app.state.metastores = MetastoreService(store, storage.url)
    app.state.unity = UnityService(store, app.state.iceberg.tables)
    app.state.permissions = PermissionsService(store)
    app.state.named = NamedSecurables(store)
    app.state.sharing = SharingService(store, app.state.named, settings.public_url(),
                                       settings.recipient_token_lifetime_s)
    app.state.delta_sharing = SharingServer(settings, store, storage, app.state.iceberg.tables,
                                           app.state.iceberg.access.vendor)
    return app


def asgi_app(settings: ServerSettings, storage: StorageBackend | None = None,
             extra_principals: dict[str, Principal] | None = None) -> ASGIApp:
    """The application as served: :func:`create_app` behind the path normalisation the Iceberg routes need, behind
    the release of the writes queued for after each answer, and behind the request observer (request ids, latency
    metrics, access log), outermost so it sees every answer."""
    inner = create_app(settings, storage, extra_principals)
    app = _signed_files_first(iceberg_routes.keep_encoded_slashes(inner), inner.state.delta_sharing)
    return RequestObserver(WritesAfterAnswer(app), access_log_enabled=settings.access_log)


def _signed_files_first(app: ASGIApp, sharing: SharingServer) -> ASGIApp:
    """Delta Sharing's signed file URLs skip routing and the middleware: a recipient's client makes many small
    requests per file and the URL's signature is their whole credential (arco.sharing.file_server). At shutdown
    the tallies of file downloads not yet written are, and the writes queued after answers
    (:mod:`arco.events.after_answer`) are finished (uvicorn re-raises SIGTERM afterwards: no atexit)."""
    files = SignedFiles(sharing)

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(FILES_PREFIX):
            await files(scope, receive, send)
        elif scope["type"] == "lifespan":
            async def send_after_flush(message: Message) -> None:
                if message["type"] == "lifespan.shutdown.complete":
                    await anyio.to_thread.run_sync(sharing.downloads.flush)
                    await anyio.to_thread.run_sync(after_answer.drain, 30.0)
                await send(message)

            await app(scope, receive, send_after_flush)
        else:
            await app(scope, receive, send)

    return dispatch


def served_app(settings: ServerSettings, storage: StorageBackend | None = None) -> ASGIApp:
    """:func:`asgi_app` for a process that serves it, whose heap is then frozen (:mod:`arco.api.heap`)."""
    app = asgi_app(settings, storage)
    freeze_startup_heap()
    return app


def app_from_environment() -> ASGIApp:
    """The factory uvicorn's worker processes call: settings travel in the environment."""
    settings = ServerSettings.from_env()
    configure_logging(settings.access_log)  # each worker is a process of its own
    return served_app(settings)
