"""``POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics``: engines' scan and commit reports, kept for
lineage (who read or wrote which snapshot of which table, with which engine, when).

A report is anyone's with SELECT on the table, so what it may cost is bounded here:

* size: at most :data:`MAX_REPORT_BYTES` (64 KB; a real report is a few KB), refused with 413 before the rest of
  the body is read;
* shape: it must be a ``ReportMetricsRequest`` of the REST spec (a ``ScanReport`` or a ``CommitReport`` with their
  required fields and types), else 400;
* rate: each principal has a token bucket per server process (:data:`RATE_PER_S` reports a second, bursts of
  :data:`BURST`); a report beyond it is dropped: answered 204 as any other, not stored, and counted
  (``arco_metrics_reports_dropped_total{reason="rate"}``). Not refused: the REST spec has no 429 for
  reportMetrics, and Java's client, which reports from inside the scan or commit it measures, waits out a 429's
  ``Retry-After`` up to five times, so a refusal would stall engines for the sake of their telemetry. Per process
  is enough for the limit's purpose, which is to bound the storage one caller can fill: with N servers a caller
  gets at most N times the rate;
* storage: only what lineage needs is kept (:func:`compact`): the report type, table, snapshot, the projection and
  filter of a scan (the filter only if small), the operation and sequence number of a commit, counter values and
  timer totals, and the engine's string metadata (engine name and version, application id), each bounded.

A report for a table that does not exist yet (a CTAS's, sent from inside its staged create) is answered 204 and
dropped for a caller who may create the table (:mod:`arco.iceberg.metrics_route`).

Everything here is pure; the bucket is :mod:`arco.api.rate_limit`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from arco.api.rate_limit import RateLimiter
from arco.iceberg.errors import BadRequest

MAX_REPORT_BYTES = 64 * 1024
RATE_PER_S = 10.0
BURST = 200  # a burst of scans and commits (a test suite, a dashboard refresh) is kept whole
MAX_FILTER_BYTES = 2048
MAX_METADATA_ENTRIES = 32
MAX_METADATA_VALUE = 512
MAX_METRICS = 64
MAX_PROJECTED = 256
MAX_FILTER_DEPTH = 100
# What a predicate's operand may be besides an expression: a term, or a literal (value) or literals (values).
_OPERAND_TYPES = frozenset({"reference", "transform", "apply", "literal", "literals"})
_INT64 = (-(2**63), 2**63 - 1)
REPORT_TYPES = ("scan-report", "commit-report")
_SCAN_REQUIRED = ("table-name", "snapshot-id", "filter", "schema-id", "projected-field-ids", "projected-field-names",
                  "metrics")
_COMMIT_REQUIRED = ("table-name", "snapshot-id", "sequence-number", "operation", "metrics")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]


def _require(report: dict[str, Any], name: str, ok: Callable[[Any], bool], what: str) -> None:
    if not ok(report.get(name)):
        raise BadRequest(f"Invalid metrics report: '{name}' must be {what}")


def expression_shaped(raw: Any, depth: int = 0) -> bool:
    """Whether ``raw`` has the shape of the spec's Expression: a boolean, or an object with a string ``type`` whose
    nested operands are expressions, terms or literals, and whose ``values`` are a list (or ``literals``). The
    shape only: a report names fields the server need not resolve, and its literals may be sanitized."""
    if isinstance(raw, bool):
        return True
    if depth > MAX_FILTER_DEPTH or not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return False
    for key in ("left", "right", "child", "term"):
        operand = raw.get(key)
        if isinstance(operand, dict) and operand.get("type") not in _OPERAND_TYPES and \
                not expression_shaped(operand, depth + 1):
            return False
    values = raw.get("values")
    if isinstance(values, dict):
        return values.get("type") == "literals" and isinstance(values.get("values"), list)
    return values is None or isinstance(values, list)


def _metrics(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    for result in value.values():
        if not isinstance(result, dict):
            return False
        counter = isinstance(result.get("unit"), str) and _is_int(result.get("value"))
        timer = (isinstance(result.get("time-unit"), str) and _is_int(result.get("count"))
                 and _is_int(result.get("total-duration")))
        if not (counter or timer):
            return False
    return True


def validate(body: Any) -> dict[str, Any]:
    """The report if it is a ``ReportMetricsRequest`` of the REST spec; else :class:`BadRequest` saying why."""
    if not isinstance(body, dict):
        raise BadRequest("Invalid metrics report: the body must be a JSON object")
    report_type = body.get("report-type")
    if report_type not in REPORT_TYPES:
        raise BadRequest(f"Invalid metrics report: 'report-type' must be one of {list(REPORT_TYPES)}")
    required = _SCAN_REQUIRED if report_type == "scan-report" else _COMMIT_REQUIRED
    missing = [name for name in required if name not in body]
    if missing:
        raise BadRequest(f"Invalid metrics report: a {report_type} requires {missing}")
    _require(body, "table-name", lambda v: isinstance(v, str), "a string")
    _require(body, "snapshot-id", _is_int, "a 64-bit integer")
    _require(body, "metrics", _metrics, "an object of counter ({unit, value}) or timer "
                                        "({time-unit, count, total-duration}) results")
    if report_type == "scan-report":
        _require(body, "filter", expression_shaped, "an expression (true, false, or an object with a 'type' whose "
                                                    "operands are expressions, terms or literals)")
        _require(body, "schema-id", _is_int, "an integer")
        _require(body, "projected-field-ids", lambda v: isinstance(v, list) and all(_is_int(i) for i in v),
                 "a list of integers")
        _require(body, "projected-field-names", lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
                 "a list of strings")
    else:
        _require(body, "sequence-number", _is_int, "a 64-bit integer")
        _require(body, "operation", lambda v: isinstance(v, str), "a string")
    if "metadata" in body:
        _require(body, "metadata", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                 "an object of strings")
    return body


def compact(report: dict[str, Any]) -> dict[str, Any]:
    """What lineage keeps of a validated report; bounded whatever the report's size."""
    kept: dict[str, Any] = {"report-type": report["report-type"], "table-name": report["table-name"][:1024],
                            "snapshot-id": report["snapshot-id"]}
    if report["report-type"] == "scan-report":
        kept["schema-id"] = report["schema-id"]
        kept["projected-field-names"] = [n[:256] for n in report["projected-field-names"][:MAX_PROJECTED]]
        encoded = orjson.dumps(report["filter"])
        if len(encoded) <= MAX_FILTER_BYTES:
            kept["filter"] = report["filter"]
        else:
            kept["filter-omitted-bytes"] = len(encoded)
    else:
        kept["sequence-number"] = report["sequence-number"]
        kept["operation"] = report["operation"][:64]
    metrics: dict[str, Any] = {}
    for name, result in list(report["metrics"].items())[:MAX_METRICS]:
        if "value" in result:
            metrics[name[:128]] = result["value"]
        else:
            metrics[name[:128]] = {"count": result["count"], "total-duration": result["total-duration"],
                                   "time-unit": result["time-unit"][:32]}
    kept["metrics"] = metrics
    metadata = report.get("metadata") or {}
    if metadata:
        kept["metadata"] = {k[:128]: v[:MAX_METADATA_VALUE]
                            for k, v in list(metadata.items())[:MAX_METADATA_ENTRIES]}
    return kept


def report_limiter() -> RateLimiter:
    """The bucket of one server process's metrics reports (the module docstring says why per process)."""
    return RateLimiter(RATE_PER_S, BURST)
