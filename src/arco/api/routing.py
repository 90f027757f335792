"""A router that finds a request's route without trying every route of a long list in turn.

Starlette's :class:`~starlette.routing.Router` matches a request against its routes one after the other, a
regular expression each; behind a mount of 80 Unity Catalog routes, or 35 Iceberg ones with ``loadTable`` in the
middle, that was about a tenth of a warm ``loadTable``'s time on the server. A path template's number of segments
is fixed (a ``{param}`` never spans a ``/``), so a request can only match the routes with its own number:
:class:`SegmentIndexedRouter` keeps one Starlette router per segment count, each over those routes in their
original order, and hands the request to the one for its path. Answers are exactly those of one router over all
the routes (first match wins, 405 for a path known under another method, 404, slash redirects), since every route
that could match, fully or partially, is in the router asked, in the same order. One answer differs, for the
better: a 405's ``Allow`` lists the methods of every route on the path (Starlette's names only the first route's,
and the Iceberg and Unity Catalog routes are one route per method).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette._utils import get_route_path
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send


def _segments(path: str) -> int:
    return path.rstrip("/").count("/")


def _fixed_segments(route: BaseRoute) -> int | None:
    """The number of segments every path this route matches has, or None (a mount, a ``{param:path}``)."""
    if isinstance(route, Route) and ":path}" not in route.path:
        return _segments(route.path)
    return None


class SegmentIndexedRouter:
    """An ASGI app answering as ``Router(routes)`` does; see the module docstring."""

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self.routes = list(routes)  # as a Router's: reverse lookups (url_path_for) walk them
        self._every = Router(routes=self.routes)
        counts = {_fixed_segments(route) for route in self.routes} - {None}
        self._by_count = {
            count: Router(routes=[r for r in self.routes if _fixed_segments(r) in (count, None)]) for count in counts}
        self._unfixed = Router(routes=[r for r in self.routes if _fixed_segments(r) is None])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._every(scope, receive, send)
            return
        router = self._by_count.get(_segments(get_route_path(scope)), self._unfixed)
        try:
            await router(scope, receive, send)
        except HTTPException as exc:
            if exc.status_code != 405:
                raise
            raise HTTPException(405, headers={"Allow": allowed_methods(router.routes, scope)}) from None


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> str:
    """The ``Allow`` header for ``scope``'s path: the methods of every route whose path matches it."""
    methods: set[str] = set()
    for route in routes:
        if isinstance(route, Route) and route.methods and route.matches(scope)[0] is not Match.NONE:
            methods |= route.methods
    return ", ".join(sorted(methods))
