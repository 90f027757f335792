"""Delta Sharing's paged, refreshable and asynchronous queries on the wire (``maxFiles`` / ``pageToken``,
``includeRefreshToken`` / ``refreshToken``, ``asyncquery`` and Get Query Info), as Delta Sharing's Spark client
uses them: the Python client has none of them, so plain HTTP drives them here, against two servers of one
warehouse. Writers append between the requests of one query: its pages still come from one version."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from deltalake import write_deltalake
from pyiceberg.catalog.rest import RestCatalog

from arco.sharing import async_queries
from support.arco_server import ARCO_TOKEN, RunningServer, arco_server
from support.sharing import ROWS, activate, delta_table, ds, ndjson, share_with, uc

pytestmark = pytest.mark.timeout(600)
ORDERS = "/shares/paged/schemas/lake/tables/orders"
EVENTS = "/shares/paged/schemas/lake/tables/events"
ASYNC = {"delta-sharing-capabilities": "asyncquery=true"}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sharing-paging") / "warehouse"


@pytest.fixture(scope="module")
def server(warehouse: Path) -> Iterator[RunningServer]:
    # The shortest URL lifetime: URLs then change every 6 s, so comparisons across requests must not depend on them.
    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN,
                     extra_args=("--sharing-url-lifetime", "60")) as s:
        yield s


@pytest.fixture(scope="module")
def provider(server: RunningServer, warehouse: Path) -> dict[str, Any]:
    """A Delta table of six files and an Iceberg table of three, shared with history to two recipients."""
    assert uc(server, "POST", "/schemas", json={"name": "lake", "catalog_name": "main"}).status_code == 200
    location = delta_table(server, "lake", "orders")  # two versions, three files (partitioned by region)
    for i in range(3):
        write_deltalake(location, ROWS.slice(i, 1), mode="append")
    catalog = RestCatalog("arco", uri=server.iceberg_uri, warehouse="main", token=ARCO_TOKEN)
    iceberg = catalog.create_table("lake.events", schema=ROWS.schema)
    for i in range(3):
        iceberg.append(ROWS.slice(i, 1))
    _, profile = activate(share_with(server, "paged", "reader", ["main.lake.orders", "main.lake.events"]),
                          warehouse.parent)
    made = uc(server, "POST", "/recipients", json={"name": "other", "authentication_type": "TOKEN"})
    assert made.status_code == 200, made.text
    assert uc(server, "PATCH", "/shares/paged/permissions",
              json={"changes": [{"principal": "other", "add": ["SELECT"]}]}).status_code == 200
    _, other = activate(made.json(), warehouse.parent)
    return {"location": location, "iceberg": iceberg, "profile": profile, "other": other}


def query(server: RunningServer, profile: dict[str, Any], table: str, body: dict[str, Any],
          headers: dict[str, str] | None = None) -> httpx.Response:
    return ds(server, profile, "POST", f"{table}/query", json=body, headers=headers or {})


def pages(server: RunningServer, profile: dict[str, Any], path: str, body: dict[str, Any],
          method: str = "POST") -> list[httpx.Response]:
    """Every page of a query from the one ``body`` asks for, following nextPageToken (in the body of a POST, the
    query string of a GET)."""
    answers = []
    while True:
        sent = {"json": body} if method == "POST" else {"params": body}
        answer = ds(server, profile, method, path, **sent)
        assert answer.status_code == 200, answer.text
        answers.append(answer)
        token = ndjson(answer)[-1]["endStreamAction"].get("nextPageToken")
        if not token:
            return answers
        body = {**body, "pageToken": token}


def file_ids(lines: list[dict[str, Any]]) -> list[str]:
    return [next(iter(line.values()))["id"] for line in lines if {"file", "add", "remove", "cdf"} & set(line)]


def body_lines(answer: httpx.Response) -> list[dict[str, Any]]:
    """The lines after the head, without the EndStreamAction."""
    return [line for line in ndjson(answer)[2:] if "endStreamAction" not in line]


def unsigned(line: dict[str, Any]) -> dict[str, Any]:
    """A line without its file URL and the URL's expiry: those move with the clock (a minute at a time)."""
    return {kind: {k: v for k, v in body.items() if k not in ("url", "expirationTimestamp")}
            if isinstance(body, dict) else body for kind, body in line.items()}


def append_to_both(provider: dict[str, Any]) -> None:
    write_deltalake(provider["location"], ROWS.slice(3, 1), mode="append")
    provider["iceberg"].append(ROWS.slice(3, 1))


@pytest.mark.parametrize("table", [ORDERS, EVENTS])
def test_a_paged_snapshot_comes_from_one_version_while_the_table_grows(server: RunningServer,
                                                                      provider: dict[str, Any], table: str) -> None:
    profile = provider["profile"]
    whole = query(server, profile, table, {})
    first = query(server, profile, table, {"maxFiles": 2})
    assert first.status_code == 200, first.text
    assert len(body_lines(first)) == 2 and ndjson(first)[-1]["endStreamAction"]["nextPageToken"]
    append_to_both(provider)  # a new version lands between the first page and the rest
    token = ndjson(first)[-1]["endStreamAction"]["nextPageToken"]
    rest = pages(server, profile, f"{table}/query", {"maxFiles": 2, "pageToken": token})
    answers = [first, *rest]
    assert len(answers) >= 2
    for page in answers:
        assert page.headers["Delta-Table-Version"] == whole.headers["Delta-Table-Version"]
        assert ndjson(page)[:2] == ndjson(whole)[:2]  # each page repeats the head, unchanged
        assert len(body_lines(page)) <= 2
    paged_ids = [i for page in answers for i in file_ids(body_lines(page))]
    assert paged_ids == file_ids(ndjson(whole)[2:])  # every file of that version once, in order
    now = query(server, profile, table, {})
    assert int(now.headers["Delta-Table-Version"]) > int(whole.headers["Delta-Table-Version"])


def test_the_change_feed_and_a_streaming_query_page_over_a_fixed_range(server: RunningServer,
                                                                      provider: dict[str, Any]) -> None:
    profile = provider["profile"]
    for path, body, method in ((f"{ORDERS}/changes", {"startingVersion": "1"}, "GET"),
                               (f"{ORDERS}/query", {"startingVersion": 1}, "POST")):
        whole = ds(server, profile, method, path, **({"params": body} if method == "GET" else {"json": body}))
        assert whole.status_code == 200, whole.text
        first = ds(server, profile, method, path,
                   **({"params": {**body, "maxFiles": "1"}} if method == "GET" else {"json": {**body, "maxFiles": 1}}))
        append_to_both(provider)
        token = ndjson(first)[-1]["endStreamAction"]["nextPageToken"]
        paged = {**body, "maxFiles": "2" if method == "GET" else 2, "pageToken": token}
        rest = pages(server, profile, path, paged, method)
        lines = [unsigned(line) for page in (first, *rest) for line in body_lines(page)]
        assert lines == [unsigned(line) for line in ndjson(whole)[2:]]  # the range the first page saw, no more
        assert all(ndjson(page)[:2] == ndjson(whole)[:2] for page in (first, *rest))


def test_page_tokens_open_their_own_query_only(server: RunningServer, provider: dict[str, Any]) -> None:
    profile = provider["profile"]
    first = query(server, profile, ORDERS, {"maxFiles": 1, "predicateHints": ["region = 'eu'"]})
    token = ndjson(first)[-1]["endStreamAction"]["nextPageToken"]
    payload, _, mac = token.partition(".")
    refusals = [
        query(server, profile, ORDERS, {"maxFiles": 1, "pageToken": token}),  # other parameters
        query(server, profile, EVENTS, {"maxFiles": 1, "predicateHints": ["region = 'eu'"], "pageToken": token}),
        query(server, provider["other"], ORDERS, {"maxFiles": 1, "predicateHints": ["region = 'eu'"],
                                                  "pageToken": token}),  # another recipient
        query(server, profile, ORDERS, {"maxFiles": 1, "predicateHints": ["region = 'eu'"],
                                        "pageToken": f"{payload}x.{mac}"}),  # tampered
        query(server, profile, ORDERS, {"maxFiles": 0}),
        query(server, profile, ORDERS, {"maxFiles": "two"}),
        ds(server, profile, "GET", f"{ORDERS}/changes", params={"startingVersion": "1", "maxFiles": "-1"}),
        ds(server, profile, "GET", f"{ORDERS}/changes", params={"startingVersion": "1", "pageToken": token}),
    ]
    for refused in refusals:
        assert refused.status_code == 400, refused.text
        assert refused.json()["errorCode"] == "INVALID_PARAMETER_VALUE"
    ok = query(server, profile, ORDERS, {"maxFiles": 1, "predicateHints": ["region = 'eu'"], "pageToken": token})
    assert ok.status_code == 200, ok.text


def test_a_refresh_token_gives_fresh_urls_for_the_same_files(server: RunningServer,
                                                              provider: dict[str, Any]) -> None:
    profile = provider["profile"]
    for table in (ORDERS, EVENTS):
        first = query(server, profile, table, {"includeRefreshToken": True})
        end = ndjson(first)[-1]["endStreamAction"]
        assert end["refreshToken"] and "nextPageToken" not in end
        append_to_both(provider)
        refreshed = query(server, profile, table, {"includeRefreshToken": True, "refreshToken": end["refreshToken"]})
        assert refreshed.status_code == 200, refreshed.text
        assert refreshed.headers["Delta-Table-Version"] == first.headers["Delta-Table-Version"]
        assert file_ids(body_lines(refreshed)) == file_ids(body_lines(first))
        assert ndjson(refreshed)[-1]["endStreamAction"]["refreshToken"]
        latest = query(server, profile, table, {})
        assert int(latest.headers["Delta-Table-Version"]) > int(first.headers["Delta-Table-Version"])
    token = ndjson(query(server, profile, ORDERS, {"includeRefreshToken": True}))[-1]["endStreamAction"]["refreshToken"]
    refusals = [query(server, profile, EVENTS, {"refreshToken": token}),  # another table's
                query(server, provider["other"], ORDERS, {"refreshToken": token}),  # another recipient's
                query(server, profile, ORDERS, {"refreshToken": token, "version": 1}),
                query(server, profile, ORDERS, {"includeRefreshToken": True, "startingVersion": 1}),
                query(server, profile, ORDERS, {"refreshToken": token, "pageToken": "x"})]
    for refused in refusals:
        assert refused.status_code == 400, refused.text


def test_an_asynchronous_query_is_answered_by_any_server_at_the_version_it_was_submitted(
        server: RunningServer, provider: dict[str, Any], warehouse: Path) -> None:
    profile = provider["profile"]
    key = str(uuid.uuid4())
    submitted = query(server, profile, ORDERS, {"idempotencyKey": key}, ASYNC)
    assert submitted.status_code == 200, submitted.text
    [status] = ndjson(submitted)
    assert status["queryStatus"]["status"] == "pending"
    query_id = status["queryStatus"]["queryId"]
    assert "asyncquery=true" in submitted.headers["delta-sharing-capabilities"]
    assert "responseformat=parquet" in submitted.headers["delta-sharing-capabilities"]
    version = submitted.headers["Delta-Table-Version"]
    expected = query(server, profile, ORDERS, {"version": int(version)})
    retried = query(server, profile, ORDERS, {"idempotencyKey": key}, ASYNC)  # a retry: the same query
    assert ndjson(retried)[0]["queryStatus"]["queryId"] == query_id
    other = query(server, profile, ORDERS, {"idempotencyKey": key, "predicateHints": ["region = 'eu'"]}, ASYNC)
    assert other.status_code == 400 and "another query" in other.json()["message"]
    append_to_both(provider)

    with arco_server(warehouse, warehouse.parent, admin_token=ARCO_TOKEN) as second:
        poll = ds(second, profile, "POST", f"{ORDERS}/queries/{query_id}", json={"queryId": query_id})
        assert poll.status_code == 200, poll.text
        assert poll.headers["Delta-Table-Version"] == version
        assert "queryStatus" not in poll.text
        assert file_ids(ndjson(poll)[2:]) == file_ids(ndjson(expected)[2:])
        paged, token = [], None
        while True:
            page = ds(second, profile, "POST", f"{ORDERS}/queries/{query_id}",
                      json={"maxFiles": 2, **({"pageToken": token} if token else {})})
            assert page.status_code == 200, page.text
            paged += file_ids(body_lines(page))
            token = ndjson(page)[-1]["endStreamAction"].get("nextPageToken")
            if not token:
                break
        assert paged == file_ids(ndjson(expected)[2:])
        unknown = [ds(second, profile, "POST", f"{ORDERS}/queries/{'0' * 32}", json={}),
                   ds(second, profile, "POST", f"{EVENTS}/queries/{query_id}", json={}),  # another table's path
                   ds(second, provider["other"], "POST", f"{ORDERS}/queries/{query_id}", json={}),
                   ds(second, profile, "POST", f"{ORDERS}/queries/..%2F..%2Fsharing%2Furl-signing-key", json={}),
                   ds(second, profile, "POST", f"{ORDERS}/queries/{'A' * 5000}", json={})]
        for answer in unknown:
            assert answer.status_code == 404, answer.text
            assert answer.json()["errorCode"] == "RESOURCE_DOES_NOT_EXIST"
        bad = ds(second, profile, "POST", f"{ORDERS}/queries/{query_id}", json={"maxFiles": -3})
        assert bad.status_code == 400


def test_asynchronous_queries_are_checked_when_submitted(server: RunningServer, provider: dict[str, Any]) -> None:
    profile = provider["profile"]
    streaming = query(server, profile, EVENTS, {"startingVersion": 1, "idempotencyKey": "s"}, ASYNC)
    assert streaming.status_code == 200, streaming.text
    assert streaming.headers["Delta-Table-Version"] == "1"
    query_id = ndjson(streaming)[0]["queryStatus"]["queryId"]
    polled = ds(server, profile, "POST", f"{EVENTS}/queries/{query_id}", json={})
    assert polled.status_code == 200 and polled.headers["Delta-Table-Version"] == "1"
    assert ndjson(polled)[1]["metaData"]["version"] == 1
    unkeyed = [query(server, profile, ORDERS, {}, ASYNC) for _ in range(2)]  # no key: two queries
    ids = {ndjson(a)[0]["queryStatus"]["queryId"] for a in unkeyed}
    assert len(ids) == 2
    refusals = [query(server, profile, ORDERS, {"version": 10**6, "idempotencyKey": "v"}, ASYNC),
                query(server, profile, ORDERS, {"pageToken": "x", "idempotencyKey": "p"}, ASYNC),
                query(server, profile, ORDERS, {"idempotencyKey": ["x"]}, ASYNC)]
    for refused in refusals:
        assert refused.status_code == 400, refused.text
    # Without the capability the query is answered at once, as before.
    sync = query(server, profile, ORDERS, {"idempotencyKey": "ignored"})
    assert sync.status_code == 200 and "queryStatus" not in sync.text
    assert "asyncquery" not in sync.headers["delta-sharing-capabilities"]


def test_a_recipient_flooding_asynchronous_queries_is_told_to_wait(server: RunningServer,
                                                                    provider: dict[str, Any]) -> None:
    """Each asynchronous query is a record the warehouse keeps for a day: a recipient gets a burst of them, then
    429 with Retry-After (which Delta Sharing's clients wait out), and synchronous queries still."""
    other = provider["other"]
    accepted = 0
    while (refused := query(server, other, ORDERS, {}, ASYNC)).status_code == 200:
        accepted += 1
        assert accepted < 4 * async_queries.SUBMISSION_BURST, "never told to wait"
    # The burst, and what the bucket refilled meanwhile (2 a second).
    assert accepted >= async_queries.SUBMISSION_BURST and refused.status_code == 429, refused.text
    assert refused.json()["errorCode"] == "RESOURCE_EXHAUSTED" and int(refused.headers["Retry-After"]) >= 1
    assert query(server, other, ORDERS, {}).status_code == 200
    assert query(server, provider["profile"], ORDERS, {}, ASYNC).status_code == 200  # another recipient's bucket
