"""``POST .../tables/{table}/metrics``: an engine's scan or commit report, kept for lineage (:mod:`arco.iceberg.metrics`
bounds, validates and compacts it)."""

from __future__ import annotations

import time
import uuid

import orjson
from starlette.requests import Request
from starlette.responses import Response

from arco.api.requests import blocking, client_source, inline_or_blocking, principal_of, read_json
from arco.catalog.errors import CatalogError
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.iceberg import errors, metrics
from arco.iceberg.http import allow, catalog_of, iceberg_errors, services, table_path
from arco.metrics import METRICS_REPORTS_DROPPED


@iceberg_errors
async def report_metrics(request: Request) -> Response:
    svc = services(request)
    if svc.metrics_limiter.take(principal_of(request).name) > 0:
        METRICS_REPORTS_DROPPED.labels("rate").inc()  # beyond the rate: dropped, not refused (arco.iceberg.metrics)
        return Response(status_code=204)
    body = await read_json(request, metrics.MAX_REPORT_BYTES)
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    try:
        entry = await blocking(svc.tables.entry, catalog, namespace, name)
    except CatalogError as exc:
        missing = errors.from_catalog_error(exc)
        if not isinstance(missing, errors.NoSuchTable):
            raise missing from None
        await allow(request, "table", catalog, namespace, name, "read")  # 403 where a 404 would tell a name
        await _for_a_table_to_come(request, catalog, namespace, body, missing)
        return Response(status_code=204)
    await allow(request, "table", catalog, namespace, name, "read")
    report = metrics.compact(metrics.validate(body))
    event = {"kind": "metrics_report", "table_uuid": entry.id, "catalog": catalog.name,
             "namespace": list(namespace), "table": name, "report": report, "source": client_source(request),
             "received_at_ms": int(time.time() * 1000)}
    day = time.strftime("%Y-%m-%d", time.gmtime())
    await blocking(svc.storage.put, f"_catalog/events/{day}/metrics/{uuid.uuid4().hex}.json", orjson.dumps(event))
    return Response(status_code=204)


async def _for_a_table_to_come(request: Request, catalog: CatalogEntry, namespace: NamespacePath, body: object,
                               missing: errors.NoSuchTable) -> None:
    """A report for a table that does not exist: Java engines send a CTAS's or RTAS's commit report from inside
    its staged create, before the commit that creates the table. From a caller who may create tables in the
    namespace it is answered 204 and dropped (counted): it names no table to keep it for, and what lineage takes
    from a commit report (the application id) is in the snapshot's summary too. Anyone else gets the 404."""
    await inline_or_blocking(services(request).namespaces.exists, catalog, namespace)  # else 404 for it
    try:
        await allow(request, "create_table", catalog, namespace)
    except errors.Forbidden:
        raise missing from None
    metrics.validate(body)
    METRICS_REPORTS_DROPPED.labels("no_table").inc()
