"""Metrics reports over HTTP: validated (400), bounded (413), stored compactly, rate-limited per principal (beyond
the rate: answered, dropped and counted)."""

from __future__ import annotations

import time

import httpx
import orjson
import pytest

from arco.iceberg import metrics
from support.arco_server import ARCO_TOKEN, RunningServer, run_cli

pytestmark = pytest.mark.timeout(120)

REPORT = {"report-type": "scan-report", "table-name": "main.db.t", "snapshot-id": -1, "filter": True, "schema-id": 0,
          "projected-field-ids": [1], "projected-field-names": ["x"],
          "metrics": {"result-data-files": {"unit": "count", "value": 0}},
          "metadata": {"engine-name": "test-engine", "app-id": "app-1"}}


def stored_reports(server: RunningServer) -> list[dict]:
    events = server.warehouse_dir / "_catalog" / "events"  # type: ignore[attr-defined]
    return [orjson.loads(p.read_bytes()) for p in sorted(events.rglob("metrics/*.json"))]


def test_a_valid_report_is_stored_compactly(client: httpx.Client, server: RunningServer) -> None:
    before = len(stored_reports(server))
    padded = {**REPORT, "unknown": "x" * 30_000}
    assert client.post("/namespaces/db/tables/t/metrics", json=padded).status_code == 204
    stored = stored_reports(server)
    assert len(stored) == before + 1
    event = next(e for e in stored if e["report"].get("metadata", {}).get("app-id") == "app-1")
    assert event["table"] == "t" and event["report"]["report-type"] == "scan-report"
    assert "unknown" not in event["report"] and len(orjson.dumps(event)) < 2048


@pytest.mark.parametrize("body", [{"report-type": "scan-report"}, {**REPORT, "snapshot-id": "1"}, [1, 2],
                                  {**REPORT, "report-type": "mystery"}])
def test_an_invalid_report_is_400_in_the_iceberg_shape(client: httpx.Client, server: RunningServer,
                                                       body: object) -> None:
    before = len(stored_reports(server))
    response = client.post("/namespaces/db/tables/t/metrics", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "BadRequestException"
    assert len(stored_reports(server)) == before


def test_a_report_over_64_kb_is_refused_unread(client: httpx.Client, server: RunningServer) -> None:
    big = {**REPORT, "metadata": {"blob": "x" * (70 * 1024)}}
    response = client.post("/namespaces/db/tables/t/metrics", json=big)
    assert response.status_code == 413 and response.json()["error"]["code"] == 413
    before = len(stored_reports(server))

    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(100):
            yield b" " * 1024

    streamed = client.post("/namespaces/db/tables/t/metrics", content=chunks(),
                           headers={"Content-Type": "application/json"})
    assert streamed.status_code == 413
    assert len(stored_reports(server)) == before


def dropped_so_far(server: RunningServer, reason: str = "rate") -> float:
    exposition = httpx.get(f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {ARCO_TOKEN}"}).text
    return next((float(line.split()[-1]) for line in exposition.splitlines()
                 if line.startswith(f'arco_metrics_reports_dropped_total{{reason="{reason}"}} ')), 0.0)


COMMIT_REPORT = {"report-type": "commit-report", "table-name": "main.db.made_by_ctas", "snapshot-id": 7,
                 "sequence-number": 1, "operation": "append",
                 "metrics": {"added-data-files": {"unit": "count", "value": 1}}, "metadata": {"engine-name": "spark"}}


def test_a_report_for_a_table_still_being_created_is_answered_and_dropped(client: httpx.Client,
                                                                         server: RunningServer) -> None:
    """Spark's CTAS and RTAS report their commit from inside the staged create, before the table exists: the
    table's creator gets 204 (a 404 makes Java log a warning with a stack trace for every CTAS)."""
    stored_before, dropped_before = len(stored_reports(server)), dropped_so_far(server, "no_table")
    assert client.post("/namespaces/db/tables/made_by_ctas/metrics", json=COMMIT_REPORT).status_code == 204
    assert len(stored_reports(server)) == stored_before
    assert dropped_so_far(server, "no_table") == dropped_before + 1
    invalid = client.post("/namespaces/db/tables/made_by_ctas/metrics", json={"report-type": "commit-report"})
    assert invalid.status_code == 400  # validated all the same
    missing_namespace = client.post("/namespaces/nowhere/tables/t/metrics", json=COMMIT_REPORT)
    assert (missing_namespace.status_code, missing_namespace.json()["error"]["type"]) == (
        404, "NoSuchNamespaceException")


def test_a_report_for_a_missing_table_from_a_caller_who_may_not_create_there_is_404(server: RunningServer) -> None:
    email = "reader-of-reports@x.com"
    run_cli(server.warehouse_dir, "user", "create", email)  # type: ignore[attr-defined]
    token = run_cli(server.warehouse_dir, "token", "create", email).strip()  # type: ignore[attr-defined]
    admin = {"Authorization": f"Bearer {ARCO_TOKEN}"}
    for kind, securable, privilege in (("catalog", "main", "USE_CATALOG"), ("schema", "main.db", "USE_SCHEMA")):
        granted = httpx.patch(f"{server.base_url}/api/2.1/unity-catalog/permissions/{kind}/{securable}", headers=admin,
                              json={"changes": [{"principal": email, "add": [privilege]}]})
        assert granted.status_code == 200, granted.text
    url = f"{server.iceberg_uri}/v1/main/namespaces/db/tables/made_by_ctas/metrics"
    response = httpx.post(url, json=COMMIT_REPORT, headers={"Authorization": f"Bearer {token}"})
    assert (response.status_code, response.json()["error"]["type"]) == (404, "NoSuchTableException")


def test_a_flood_from_one_principal_is_answered_but_only_the_rate_is_stored(client: httpx.Client,
                                                                             server: RunningServer) -> None:
    """Beyond the rate a report is dropped, not refused: the spec has no 429 here, and Java's client waits out a
    429's Retry-After inside the scan or commit that reported."""
    stored_before, dropped_before = len(stored_reports(server)), dropped_so_far(server)
    started = time.monotonic()
    statuses = [client.post("/namespaces/db/tables/t/metrics", json=REPORT).status_code for _ in range(400)]
    elapsed = time.monotonic() - started
    assert set(statuses) == {204}
    stored = len(stored_reports(server)) - stored_before
    dropped = dropped_so_far(server) - dropped_before
    assert stored + dropped == 400
    # (earlier tests of this module spent some of the burst)
    assert metrics.BURST // 2 <= stored <= metrics.BURST + metrics.RATE_PER_S * elapsed + 1
