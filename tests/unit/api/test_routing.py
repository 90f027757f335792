"""The segment-indexed router answers as Starlette's router over the same routes: the same endpoint, 404, 405, the
same slash redirects, over the real Iceberg, Unity Catalog and Delta Sharing route tables; and a 405's Allow lists
every method the path answers (Starlette's names only the first matching route's)."""

from __future__ import annotations

import asyncio
import re
from itertools import product

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Mount, Route

from arco.api.routing import SegmentIndexedRouter
from arco.iceberg import routes as iceberg_routes
from arco.sharing import routes as sharing_routes
from arco.unity import routes as unity_routes

METHODS = ("GET", "POST", "DELETE", "HEAD", "PATCH", "PUT", "OPTIONS")


def _echoing(routes: list[BaseRoute]) -> list[BaseRoute]:
    """The same templates and methods, each answering with its position and its path parameters."""
    echoed: list[BaseRoute] = []
    for index, route in enumerate(routes):
        assert isinstance(route, Route)

        async def endpoint(request: Request, index: int = index) -> PlainTextResponse:
            return PlainTextResponse(f"{index} {sorted(request.path_params.items())}")

        echoed.append(Route(route.path, endpoint, methods=sorted(route.methods or ())))
    return echoed


def _paths(routes: list[BaseRoute]) -> list[str]:
    """Paths each route matches, near misses (a segment more or fewer, a trailing slash, a literal changed),
    encoded slashes and odd segments."""
    paths: set[str] = set()
    for route in routes:
        assert isinstance(route, Route)
        for fill in ("v", "a%2Fb", ".."):
            path = re.sub(r"\{[^}]+\}", fill, route.path)
            paths |= {path, path + "/", path + "/extra", path.rsplit("/", 1)[0], path.replace("/v1/", "/v2/")}
    return sorted(paths | {"/", "", "/v1", "//", "/v1//namespaces"})


def _app(routes: list[BaseRoute], indexed: bool) -> Starlette:
    mount = Mount("/m", app=SegmentIndexedRouter(routes)) if indexed else Mount("/m", routes=routes)
    return Starlette(routes=[mount])


async def _answers(app: Starlette, requests: list[tuple[str, str]]) -> list[tuple[object, ...]]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        answers = []
        for method, path in requests:
            got = await client.request(method, f"/m{path}")
            answers.append((method, path, got.status_code, got.text, got.headers.get("allow"),
                            got.headers.get("location")))
        return answers


@pytest.mark.parametrize(("table", "one_route_per_method"), [
    (iceberg_routes.routes, True), (unity_routes.routes, True), (sharing_routes.routes, False)],
    ids=["iceberg", "unity", "sharing"])
def test_it_answers_as_starlettes_router_over_the_real_routes(table: list[BaseRoute],
                                                              one_route_per_method: bool) -> None:
    routes = _echoing(table)
    requests = [(method, path) for path, method in product(_paths(routes), METHODS)]
    expected = asyncio.run(_answers(_app(routes, indexed=False), requests))
    got = asyncio.run(_answers(_app(routes, indexed=True), requests))
    served: dict[str, set[str]] = {}  # path -> the methods Starlette's router answers 200 for
    for method, path, status, *_ in expected:
        if status == 200:
            served.setdefault(path, set()).add(method)
    allows = 0
    for mine, theirs in zip(got, expected, strict=True):
        assert mine[:4] == theirs[:4] and mine[5] == theirs[5]
        if mine[2] == 405:
            assert mine[4] == ", ".join(sorted(served[mine[1]])), mine
            allows += set(mine[4].split(", ")) != set(theirs[4].split(", "))  # Starlette's order is a set's
    statuses = {answer[2] for answer in expected}
    assert {200, 404, 405, 307} <= statuses  # every kind of answer was compared
    assert bool(allows) == one_route_per_method  # ... including paths where Starlette's Allow was short


def test_a_route_that_spans_segments_is_asked_for_every_path() -> None:
    async def endpoint(request: Request) -> PlainTextResponse:
        return PlainTextResponse(request.path_params["rest"])

    app = Starlette(routes=[Mount("/m", app=SegmentIndexedRouter([Route("/a/{x}", endpoint),
                                                                   Route("/files/{rest:path}", endpoint)]))])
    answers = asyncio.run(_answers(app, [("GET", "/files/one/two/three"), ("GET", "/files/one"),
                                         ("GET", "/nothing/here/at/all")]))
    assert [(status, text) for _, _, status, text, _, _ in answers][:2] == [(200, "one/two/three"), (200, "one")]
    assert answers[2][2] == 404
