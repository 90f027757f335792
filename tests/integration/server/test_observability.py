"""Observability of a real ``arco serve``: ``/metrics`` after Iceberg and Unity Catalog calls and a forced 409,
who may scrape it, the access log's one line per request with the request id the response carried, and request
ids that are echoed when sane and replaced when hostile."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from support.arco_server import ARCO_TOKEN, ONE_COLUMN_SCHEMA, RunningServer, arco_server, iceberg_client, run_cli
from support.net import wait_for_http

pytestmark = pytest.mark.timeout(180)

TABLE_ROUTE = "/iceberg/v1/{prefix}/namespaces/{namespace}/tables/{table}"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir: Path = tmp_path_factory.mktemp("observed")
    with arco_server(workdir / "wh", workdir, admin_token=ARCO_TOKEN, extra_args=("--access-log",)) as s:
        s.warehouse_dir = workdir / "wh"  # type: ignore[attr-defined]
        yield s


def scrape(server: RunningServer, token: str | None = ARCO_TOKEN) -> Samples:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{server.base_url}/metrics", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (0 when there are none)."""
    wanted = set(labels.items())
    return sum(v for (n, lab), v in samples.items() if n == name and wanted <= lab)


def commit(client: httpx.Client, table: str, body: dict) -> httpx.Response:
    return client.post(f"/namespaces/obs_ns/tables/{table}", json=body)


def test_metrics_move_with_iceberg_and_unity_calls_and_a_forced_conflict(server: RunningServer) -> None:
    before = scrape(server)
    with iceberg_client(server) as client:
        client.post("/namespaces", json={"namespace": ["obs_ns"]}).raise_for_status()
        created = client.post("/namespaces/obs_ns/tables", json={"name": "obs_t", "schema": ONE_COLUMN_SCHEMA})
        created.raise_for_status()
        uuid = created.json()["metadata"]["table-uuid"]
        for n in range(3):
            commit(client, "obs_t", {"requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                                     "updates": [{"action": "set-properties", "updates": {"n": str(n)}}]}
                   ).raise_for_status()
        refused = commit(client, "obs_t", {
            "requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
            "updates": [{"action": "set-properties", "updates": {"x": "y"}}]})
        assert refused.status_code == 409
        client.get("/namespaces/obs_ns/tables/obs_t").raise_for_status()
        client.get("/namespaces/obs_ns/tables/obs_t").raise_for_status()
    uc = httpx.get(f"{server.base_url}/api/2.1/unity-catalog/catalogs",
                   headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=10)
    assert uc.status_code == 200
    after = scrape(server)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    latency = "arco_http_request_duration_seconds_count"
    assert moved(latency, route=TABLE_ROUTE, method="POST", status="200") == 3
    assert moved(latency, route=TABLE_ROUTE, method="POST", status="409") == 1
    assert moved(latency, route=TABLE_ROUTE, method="GET", status="200") == 2
    assert moved(latency, route="/iceberg/v1/{prefix}/namespaces/{namespace}/tables", method="POST",
                 status="200") == 1
    assert moved(latency, route="/api/2.1/unity-catalog/catalogs", method="GET", status="200") == 1
    assert moved("arco_http_request_duration_seconds_sum", route=TABLE_ROUTE, method="POST", status="200") > 0
    # Names are data: no label carries a namespace's or table's name, only route templates.
    assert not [lab for (_, lab) in after if any("obs_" in v for _, v in lab)]

    assert moved("arco_iceberg_commits_total", outcome="committed") == 3
    assert moved("arco_iceberg_commits_total", outcome="refused") == 1
    assert moved("arco_cas_attempts_total", target="table_pointer", outcome="won") == 3
    assert moved("arco_cas_attempts_total", target="catalog_log", outcome="won") >= 2  # namespace, table
    for operation in ("get", "put_if_absent", "put_if_match"):
        assert moved("arco_storage_operation_duration_seconds_count", operation=operation) > 0, operation
    assert moved("arco_storage_operation_duration_seconds_count", operation="put_if_match",
                 outcome="ok") >= 3  # the pointer swaps
    assert moved("arco_cache_requests_total", cache="metadata_files", result="hit") >= 2
    assert moved("arco_cache_requests_total", cache="load_table_responses", result="hit") >= 1
    assert moved("arco_cache_requests_total", cache="catalog_state", result="hit") > 0


def test_concurrent_commits_that_lose_a_swap_are_counted_as_conflict_retried(server: RunningServer) -> None:
    with iceberg_client(server) as client:
        client.post("/namespaces", json={"namespace": ["obs_race"]})
        client.post("/namespaces/obs_race/tables", json={"name": "hot", "schema": ONE_COLUMN_SCHEMA})
    before = scrape(server)
    statuses: list[int] = []

    def writer(n: int) -> None:
        with iceberg_client(server) as c:
            for i in range(4):
                r = c.post("/namespaces/obs_race/tables/hot",
                           json={"requirements": [], "updates": [{"action": "set-properties",
                                                                  "updates": {f"w{n}": str(i)}}]})
                statuses.append(r.status_code)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = scrape(server)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    # Six writers on one table through one server: their commits meet in groups (arco.iceberg.group_commit), each
    # group one swap, so nothing is refused and there are at most as many swaps won as commits.
    assert statuses == [200] * 24
    committed, retried, refused = (moved("arco_iceberg_commits_total", outcome=o)
                                   for o in ("committed", "conflict_retried", "refused"))
    assert committed + retried == 24 and refused == 0
    lost = moved("arco_cas_attempts_total", target="table_pointer", outcome="lost")
    won = moved("arco_cas_attempts_total", target="table_pointer", outcome="won")
    assert 1 <= won <= 24
    assert retried <= lost  # a commit counted as retried lost a swap at least once
    with iceberg_client(server) as client:
        properties = client.get("/namespaces/obs_race/tables/hot").json()["metadata"]["properties"]
    assert all(properties.get(f"w{n}") == "3" for n in range(6))


def test_metrics_need_a_metastore_admin_token_unless_served_public(server: RunningServer, tmp_path: Path) -> None:
    assert httpx.get(f"{server.base_url}/metrics", timeout=10).status_code == 401
    run_cli(server.warehouse_dir, "user", "create", "viewer@x.com")  # type: ignore[attr-defined]
    token = run_cli(server.warehouse_dir, "token", "create", "viewer@x.com").strip()  # type: ignore[attr-defined]
    refused = httpx.get(f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert refused.status_code == 403 and "metastore admins" in refused.text

    with arco_server(tmp_path / "wh", tmp_path, extra_args=("--metrics-public",)) as public:
        assert "arco_http_request_duration_seconds" in httpx.get(f"{public.base_url}/metrics", timeout=10).text
        assert httpx.get(f"{public.iceberg_uri}/v1/config", timeout=10).status_code == 401  # only /metrics opens


def access_lines(server: RunningServer) -> list[dict]:
    lines = []
    for line in server.log().splitlines():
        if line.startswith("{") and '"arco.access"' in line:
            lines.append(orjson.loads(line))
    return lines


def test_the_access_log_has_one_line_per_request_with_the_id_the_response_carried(server: RunningServer) -> None:
    seen = len(access_lines(server))
    with iceberg_client(server) as client:
        answers = [client.get("/namespaces"), client.get("/namespaces/no_such_ns"),
                   client.get(f"{server.iceberg_uri}/v1/config",
                              headers={"X-Request-Id": "trace-4bf92f3577b34da6.a3ce929d0e0e4736:1"}),
                   client.get("/no/such/route")]
    unauthenticated = httpx.get(f"{server.base_url}/api/2.1/unity-catalog/catalogs", timeout=10)
    answers.append(unauthenticated)

    def logged() -> list[dict]:
        return access_lines(server)[seen:]

    wait_until_logged(logged, len(answers))
    lines = logged()
    assert len(lines) == len(answers)
    assert [line["request_id"] for line in lines] == [a.headers["x-request-id"] for a in answers]
    assert answers[2].headers["x-request-id"] == "trace-4bf92f3577b34da6.a3ce929d0e0e4736:1"  # a sane id is kept
    assert [(line["method"], line["route"], line["status"]) for line in lines] == [
        ("GET", "/iceberg/v1/{prefix}/namespaces", 200),
        ("GET", "/iceberg/v1/{prefix}/namespaces/{namespace}", 404),
        ("GET", "/iceberg/v1/config", 200),
        ("GET", "<unmatched>", 404),  # no route: one label for every unknown path
        ("GET", "<unmatched>", 401),  # refused before routing
    ]
    assert [line["principal"] for line in lines] == ["admin", "admin", "admin", "admin", None]
    assert all(isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0 for line in lines)


def test_hostile_request_ids_are_replaced_and_never_logged(server: RunningServer) -> None:
    hostile = ["x" * 10_000, 'a","status":200,"b":"', "id with spaces", "ünïcode-id"]
    for raw in hostile:
        answer = httpx.get(f"{server.base_url}/health", headers={"X-Request-Id": raw.encode("utf-8")}, timeout=10)
        assert answer.status_code == 200
        replacement = answer.headers["x-request-id"]
        assert replacement != raw and len(replacement) == 32 and replacement.isalnum()
    # Control characters do not get past the HTTP parser: the answer is a 400 that echoes nothing.
    with socket.create_connection(("127.0.0.1", int(server.base_url.rsplit(":", 1)[1])), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: evil\x1b[31m\x07\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400") and b"evil" not in reply
    wait_for_http(f"{server.base_url}/health", timeout=10)
    log = server.log()
    assert "x" * 200 not in log and '"b":"' not in log and "evil" not in log and "id with spaces" not in log


def wait_until_logged(logged, count: int) -> None:  # type: ignore[no-untyped-def]
    from support.arco_server import wait_until

    wait_until(lambda: len(logged()) >= count, timeout=10)


def test_several_workers_add_up_in_one_scrape_and_each_writes_the_access_log(tmp_path: Path) -> None:
    with arco_server(tmp_path / "wh", tmp_path, admin_token=ARCO_TOKEN,
                     extra_args=("--workers", "2", "--access-log")) as server:
        ids = set()
        for _ in range(20):
            # A fresh connection each time, so that both workers take some of the requests.
            answer = httpx.get(f"{server.iceberg_uri}/v1/config", headers={"Authorization": f"Bearer {ARCO_TOKEN}"},
                               timeout=10)
            answer.raise_for_status()
            ids.add(answer.headers["x-request-id"])
        for _ in range(3):  # whichever worker answers the scrape, it reports the whole server
            samples = scrape(server)
            assert value(samples, "arco_http_request_duration_seconds_count", route="/iceberg/v1/config",
                         status="200") == 20
        wait_until_logged(lambda: [line for line in access_lines(server) if line["request_id"] in ids], 20)
