"""Metrics reports: the spec's ReportMetricsRequest as a decision table, what lineage keeps, the token bucket."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from arco.api.rate_limit import RateLimiter
from arco.iceberg import metrics
from arco.iceberg.errors import BadRequest

SCAN = {"report-type": "scan-report", "table-name": "main.db.t", "snapshot-id": 7, "filter": True, "schema-id": 0,
        "projected-field-ids": [1, 2], "projected-field-names": ["id", "s"],
        "metrics": {"result-data-files": {"unit": "count", "value": 1},
                    "total-planning-duration": {"time-unit": "nanoseconds", "count": 1, "total-duration": 2644}},
        "metadata": {"engine-name": "spark", "engine-version": "3.5.3", "app-id": "local-1"}}
COMMIT = {"report-type": "commit-report", "table-name": "main.db.t", "snapshot-id": 8, "sequence-number": 2,
          "operation": "append", "metrics": {"added-records": {"unit": "count", "value": 10}}}


def nested_not(depth: int) -> Any:
    expression: Any = True
    for _ in range(depth):
        expression = {"type": "not", "child": expression}
    return expression


def without(base: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in base.items() if k != field}


@pytest.mark.parametrize("report", [SCAN, COMMIT, without(SCAN, "metadata"), {**SCAN, "metrics": {}},
                                    {**SCAN, "filter": {"type": "eq", "term": "id", "value": 1}},
                                    {**SCAN, "filter": {  # as Java engines send it: sanitized, with transforms
                                        "type": "and", "left": {"type": "gt", "term": "id", "value": "(2-digit-int)"},
                                        "right": {"type": "in", "term": {"type": "transform", "transform": "day",
                                                                         "term": "ts"}, "values": ["(date)"]}}},
                                    {**SCAN, "filter": {"type": "not", "child": {"type": "is-null", "term": "x"}}},
                                    {**SCAN, "filter": {"type": "in", "child": {"type": "reference", "name": "id"},
                                                        "values": {"type": "literals", "values": [1, 2]}}},
                                    {**COMMIT, "unknown-field": "kept out of storage, not refused"}])
def test_valid_reports_pass(report: dict[str, Any]) -> None:
    assert metrics.validate(report) is report


@pytest.mark.parametrize(("report", "why"), [
    ([], "JSON object"),
    ({"report-type": "other"}, "report-type"),
    ({**SCAN, "report-type": None}, "report-type"),
    (without(SCAN, "schema-id"), "requires"),
    (without(COMMIT, "operation"), "requires"),
    ({**SCAN, "snapshot-id": "7"}, "snapshot-id"),
    ({**SCAN, "snapshot-id": True}, "snapshot-id"),
    ({**SCAN, "snapshot-id": 2**63}, "snapshot-id"),
    ({**SCAN, "filter": "id = 1"}, "filter"),
    ({**SCAN, "filter": {"type": 5}}, "filter"),
    ({**SCAN, "filter": {"type": "and", "left": {"oops": 1}, "right": True}}, "filter"),
    ({**SCAN, "filter": {"type": "in", "term": "id", "values": "1,2"}}, "filter"),
    ({**SCAN, "filter": {"type": "in", "term": "", "values": {"data-type": "", "type": None, "values": []}}},
     "filter"),
    ({**SCAN, "filter": nested_not(metrics.MAX_FILTER_DEPTH + 2)}, "filter"),
    ({**SCAN, "projected-field-ids": [1, "2"]}, "projected-field-ids"),
    ({**SCAN, "projected-field-names": "id"}, "projected-field-names"),
    ({**SCAN, "metrics": {"m": {"unit": "count"}}}, "metrics"),
    ({**SCAN, "metrics": {"m": {"time-unit": "ns", "count": 1}}}, "metrics"),
    ({**SCAN, "metrics": []}, "metrics"),
    ({**SCAN, "metadata": {"engine-name": 3}}, "metadata"),
    ({**COMMIT, "sequence-number": 1.5}, "sequence-number"),
    ({**COMMIT, "table-name": ["t"]}, "table-name"),
])
def test_invalid_reports_are_refused_with_the_reason(report: Any, why: str) -> None:
    with pytest.raises(BadRequest, match=why):
        metrics.validate(report)


def test_compact_keeps_what_lineage_needs_and_nothing_unbounded() -> None:
    kept = metrics.compact(metrics.validate({**SCAN, "extra": "x" * 10_000}))
    assert kept == {"report-type": "scan-report", "table-name": "main.db.t", "snapshot-id": 7, "schema-id": 0,
                    "projected-field-names": ["id", "s"], "filter": True,
                    "metrics": {"result-data-files": 1,
                                "total-planning-duration": {"count": 1, "total-duration": 2644,
                                                            "time-unit": "nanoseconds"}},
                    "metadata": {"engine-name": "spark", "engine-version": "3.5.3", "app-id": "local-1"}}
    assert metrics.compact(COMMIT)["operation"] == "append" and metrics.compact(COMMIT)["sequence-number"] == 2
    huge = {**SCAN, "filter": {"type": "in", "term": "id", "values": list(range(5000))},
            "metrics": {f"m{i}": {"unit": "count", "value": i} for i in range(1000)},
            "metadata": {f"k{i}": "v" * 5000 for i in range(100)}}
    stored = metrics.compact(metrics.validate(huge))
    assert "filter" not in stored and stored["filter-omitted-bytes"] > metrics.MAX_FILTER_BYTES
    assert len(stored["metrics"]) == metrics.MAX_METRICS and len(stored["metadata"]) == metrics.MAX_METADATA_ENTRIES
    assert len(orjson.dumps(stored)) < 32 * 1024


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bucket_allows_a_burst_then_the_rate_per_principal() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3, clock=clock)
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = limiter.take("a")
    assert wait == pytest.approx(0.5)
    assert limiter.take("b") == 0.0  # another principal has its own bucket
    clock.now += 0.5
    assert limiter.take("a") == 0.0
    assert limiter.take("a") > 0
    clock.now += 100
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]  # refilled to the burst, not beyond
    assert limiter.take("a") > 0
