"""Hostile input on every route of every API, as a fuzzer would send it: every path the application serves, with
each method it takes, gets hostile path segments, query strings, bodies, content types and tokens. Whatever the
route, the answer is the API's own error (or a success), never a server error other than 501/502/503, never a
dropped connection, and the server logs no traceback.

The requests are drawn from a fixed seed, so a failure names a request that fails again."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import pytest

from arco.api.app import create_app
from arco.settings import ServerSettings
from support.arco_server import ARCO_TOKEN, RunningServer

pytestmark = pytest.mark.timeout(300)

REQUESTS_PER_METHOD = 12
SEGMENTS = ["..", ".", "%2F", "a%2Fb", "%00", "a%00b", "%0A", "x" * 5000, "ü" * 300, "%FF", "%C0%AF", "%2E%2E",
            "..%2F..%2Fetc", "a%1Fb", "-1", "0", "99999999999999999999", "null", "%20", "a%252Fb", "'", '"', "{}",
            "\\", "*", "main", "db", "t", "main.db.t", "main.db"]
QUERIES = ["", "?pageToken=%%%", "?pageToken=x", "?pageSize=-1", "?pageSize=abc", "?max_results=-5",
           "?max_results=x", "?page_token=zzz", "?warehouse=..", "?parent=%00", "?catalog_name=..&schema_name=x",
           "?purgeRequested=maybe", "?snapshots=bogus", "?full_name=..", "?operation=WRITE", "?startingVersion=-1"]
BODIES: list[bytes | None] = [
    None, b"", b"{", b"[]", b"null", b"1", b'"s"', b'{"a":', b"\xff\xfe", b"{}", b"[" * 5000 + b"]" * 5000,
    b'{"name": 1}', b'{"name": null}', b'{"name": ".."}', b'{"name": "a/b"}', b'{"name": ["x"]}',
    b'{"namespace": "x"}', b'{"namespace": [""]}', b'{"namespace": [1]}', b'{"updates": {}}',
    b'{"requirements": null, "updates": [{"action": "nope"}]}', b'{"updates": [1]}',
    b'{"identifier": {"namespace": ["db"], "name": 5}}', b'{"schema": {}}',
    b'{"name": "t2", "schema": {"type": "struct", "fields": [{"id": "x"}]}}', b'{"changes": [{"principal": 5}]}',
    b'{"max_results": -1}', b'{"name": "' + b"x" * 70_000 + b'"}', b'{"table-changes": [{}]}',
    b'{"table-changes": 3}', b'{"source": {}, "destination": {}}', b'{"predicateHints": 5, "limitHint": "a"}',
    b'{"comment": {"a": 1}}', b'{"properties": [1]}', b'{"storage_root": "file:///etc"}',
    b'{"storage_location": "../../x"}', b'{"location": "file:///tmp"}',
    b'{"metadata-location": "/etc/passwd", "name": "r"}',
    # URLs the URL parser itself refuses (an unbalanced bracket in the host), wherever a route takes one.
    b'{"name": "u", "location": "s3://[b/x", "storage_root": "s3://[b/x", "storage_location": "gs://b]/x", '
    b'"url": "file://[x/y", "metadata-location": "s3://[b/m.json", "uri": "http://[::1/b/k", "method": "GET", '
    b'"region": "us-east-1", "headers": {}}',
]
AUTHORIZATIONS = [f"Bearer {ARCO_TOKEN}"] * 6 + [None, "Bearer bad", "Bearer " + "x" * 9000, "Bearer",
                                                 "Basic Zm9vOmJhcg=="]
CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded"]


def served_routes(tmp_path: Path) -> list[tuple[str, list[str], list[str]]]:
    """(path template, methods, path parameters) of every route the application serves."""
    found: list[tuple[str, list[str], list[str]]] = []

    def walk(routes: list, mount: str = "") -> None:  # type: ignore[type-arg]
        for route in routes:
            inner = getattr(route, "routes", None)
            if inner is not None:
                walk(inner, mount + route.path.rstrip("/"))
            elif getattr(route, "methods", None):
                found.append((mount + route.path, sorted(set(route.methods) - {"HEAD"}),
                              list(getattr(route, "param_convertors", {}))))

    walk(create_app(ServerSettings(warehouse=str(tmp_path / "routes"))).routes)
    return found


def is_page(path: str) -> bool:
    """The UI's pages answer in HTML (a sign-in page for a bad token), not in an API's JSON."""
    return not path.startswith(("/iceberg/", "/api/", "/delta-sharing/"))


def test_hostile_requests_on_every_route(client: httpx.Client, server: RunningServer, tmp_path: Path) -> None:
    rng = random.Random(20261126)
    routes = served_routes(tmp_path)
    assert len(routes) > 150  # the sweep covers the whole application, not a corner of it
    failures: list[str] = []
    sent = 0
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        for template, methods, params in routes:
            for method in methods:
                for _ in range(REQUESTS_PER_METHOD):
                    path = template
                    for param in params:
                        segment = rng.choice(SEGMENTS)
                        path = path.replace("{" + param + "}", segment).replace("{" + param + ":path}", segment)
                    url = path + rng.choice(QUERIES)
                    body = rng.choice(BODIES) if method in ("POST", "PUT", "PATCH", "DELETE") else None
                    headers = {"content-type": rng.choice(CONTENT_TYPES)}
                    authorization = rng.choice(AUTHORIZATIONS)
                    if authorization is not None:
                        headers["authorization"] = authorization
                    sent += 1
                    try:
                        response = http.request(method, url, content=body, headers=headers)
                    except httpx.TransportError as exc:
                        failures.append(f"{method} {url[:150]}: no answer ({exc!r})")
                        continue
                    status, kind = response.status_code, response.headers.get("content-type", "")
                    if status >= 500 and status not in (501, 502, 503):
                        failures.append(f"{method} {url[:150]}: {status} {response.text[:200]}")
                    elif status >= 400 and "json" not in kind and not is_page(path):
                        failures.append(f"{method} {url[:150]}: {status} answered as {kind!r}")
    assert sent > 1000
    assert not failures, f"{len(failures)} of {sent} requests:\n" + "\n".join(failures[:30])
    assert "Traceback" not in server.log()
