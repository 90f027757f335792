"""Iceberg REST server-side scan planning: planTableScan, fetchPlanningResult, cancelPlanning, fetchScanTasks.

A scan whose snapshot has at most ``scan_planning_async_manifests`` manifests is planned while the request waits
(in a worker thread) and answered ``completed``; a bigger one is answered ``submitted`` with a plan id and planned
by this process's planning pool, its result written to storage (:mod:`arco.iceberg.plan_store`) as plan tasks of
``scan_planning_tasks_per_chunk`` file scan tasks each, so any server can answer the fetches. A synchronous
result larger than one chunk answers the first chunk inline and the rest as plan tasks.

``min-rows-requested`` is a hint this server does not use: every matching file is answered.

Authorization: SELECT on the table (as loadTable) for every call. A plan is bound to the table it was made for:
its id under another table's path, like an id that never existed or expired, is 404 NoSuchPlanIdException.
Anyone who may read the table may fetch its plans (the result is what they could plan themselves); storage
credentials in a result are vended to the caller who fetches, at the caller's privilege.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import blocking, principal_of
from arco.api.responses import JsonResponse
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.iceberg import errors
from arco.iceberg.access import VENDED, delegation_modes
from arco.iceberg.http import allow, catalog_of, existing_table_path, iceberg_errors, json_body, services
from arco.iceberg.plan_store import Heartbeat, PlanRecord, PlanStore, finish, now_ms, parse_plan_task
from arco.iceberg.planner import PreparedScan, file_io, manifests, plan, prepare, server_io_options
from arco.iceberg.planning import parse_scan_request
from arco.iceberg.scan_tasks import PlannedTask, TaskWriter
from arco.iceberg.storage_routes import granted_access

PLANNING_THREADS = 2


class NoSuchPlanId(errors.IcebergError):
    status, error_type = 404, "NoSuchPlanIdException"


class NoSuchPlanTask(errors.IcebergError):
    status, error_type = 404, "NoSuchPlanTaskException"


_pool: ThreadPoolExecutor | None = None


def planning_pool() -> ThreadPoolExecutor:
    """The threads asynchronous plans run on, one pool per server process, created on first use."""
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(PLANNING_THREADS, thread_name_prefix="scan-planning")
    return _pool


def chunks(tasks: list[PlannedTask], size: int) -> list[list[PlannedTask]]:
    return [tasks[i:i + size] for i in range(0, len(tasks), size)] or [[]]


def writer_for(scan: PreparedScan) -> TaskWriter:
    return TaskWriter(scan.schema, scan.metadata.specs(), scan.stats_ids)


def plan_now(store: PlanStore, table_uuid: str, principal: str, scan: PreparedScan, tasks: list[PlannedTask],
             chunk_size: int) -> dict[str, Any]:
    """A completed planTableScan result: the first chunk inline, any further chunks stored as plan tasks (the
    record is written after them, so it never names a task that is not there). The record is written for a plan
    of one chunk too: the answer names a plan id (the spec's completed result has one), and a client may fetch or
    cancel any plan id it was given."""
    parts = chunks(tasks, chunk_size)
    writer = writer_for(scan)
    record = store.new_record(table_uuid, principal, status="completed")
    body: dict[str, Any] = {"status": "completed", "plan-id": record.plan_id, **writer.chunk(parts[0])}
    for n in range(1, len(parts)):
        store.write_chunk(record.plan_id, n, orjson.dumps(writer.chunk(parts[n])))
    record = replace(record, first_chunk=1, chunk_count=len(parts))
    store.create(record)
    if len(parts) > 1:
        body["plan-tasks"] = record.plan_tasks
    return body


def plan_later(store: PlanStore, plan_id: str, scan: PreparedScan, io: Any, chunk_size: int) -> None:
    """An asynchronous plan, on the planning pool: plan, store the chunks, then mark the record completed (or
    failed, with the error a synchronous plan would have answered)."""
    try:
        with Heartbeat(store, plan_id) as beat:
            tasks = plan(scan, io, cancelled=beat.cancelled.is_set)
            parts = chunks(tasks, chunk_size) if tasks else []
            writer = writer_for(scan)
            for n, part in enumerate(parts):
                if beat.cancelled.is_set():
                    break
                store.write_chunk(plan_id, n, orjson.dumps(writer.chunk(part)))
        finish(store, plan_id, lambda r: replace(r, status="completed", first_chunk=0, chunk_count=len(parts),
                                                 heartbeat_at_ms=now_ms()))
    except Exception as exc:  # noqa: BLE001 - every failure is reported to the client through the record
        error = exc if isinstance(exc, errors.IcebergError) else errors.IcebergError(
            f"planning failed: {type(exc).__name__}: {exc}")
        payload = {"message": error.message, "type": error.error_type, "code": error.status}
        finish(store, plan_id, lambda r: replace(r, status="failed", error=payload))


def _reading(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, with a failure to read the table's manifests answered in the Iceberg error shape (500,
    naming the error) rather than as a bare server error."""
    try:
        return fn(*args)
    except errors.IcebergError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything PyIceberg or the FileIO raises while reading
        raise errors.IcebergError(f"planning failed reading the table's files: {type(exc).__name__}: {exc}") \
            from None


async def _table_uuid(request: Request) -> tuple[CatalogEntry, NamespacePath, str, str]:
    catalog = await catalog_of(request)
    namespace, name = existing_table_path(request)
    await allow(request, "table", catalog, namespace, name, "read")
    entry = await blocking(services(request).tables.entry, catalog, namespace, name)
    return catalog, namespace, name, entry.id


async def _with_credentials(request: Request, body: dict[str, Any], catalog: CatalogEntry,
                            namespace: NamespacePath, name: str) -> dict[str, Any]:
    """A completed result with vended storage credentials, when the caller asked for them and this storage
    can vend (as loadTable gives them)."""
    modes = delegation_modes(request.headers.get("x-iceberg-access-delegation"))
    if VENDED not in modes:
        return body
    loaded = await blocking(services(request).tables.load, catalog, namespace, name)
    granted = await blocking(granted_access, request, catalog, namespace, name, loaded.metadata.location,
                             frozenset({VENDED}))
    if granted.credentials:
        body["storage-credentials"] = granted.credentials
    return body


async def _live_plan(request: Request, table_uuid: str, plan_id: str) -> PlanRecord:
    found = await blocking(services(request).plans.load, plan_id)
    if found is None or found[0].table_uuid != table_uuid:
        raise NoSuchPlanId("The plan id does not exist (or expired)")
    return found[0]


@iceberg_errors
async def plan_table_scan(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace, name = existing_table_path(request)
    delegation_modes(request.headers.get("x-iceberg-access-delegation"))  # an unknown mode is a 400 up front
    scan_request = parse_scan_request(await json_body(request))
    await allow(request, "table", catalog, namespace, name, "read")
    svc = services(request)
    settings = svc.settings
    loaded = await blocking(svc.tables.load, catalog, namespace, name)
    scan = await blocking(prepare, loaded.metadata, scan_request)
    io = file_io(loaded.metadata.location, server_io_options(svc.storage, settings.storage_options))
    principal = principal_of(request).name
    if len(await blocking(_reading, manifests, scan, io)) > settings.scan_planning_async_manifests:
        record = svc.plans.new_record(loaded.entry.id, principal)
        await blocking(svc.plans.create, record)
        planning_pool().submit(plan_later, svc.plans, record.plan_id, scan, io,
                               settings.scan_planning_tasks_per_chunk)
        return JsonResponse({"status": "submitted", "plan-id": record.plan_id})
    tasks = await blocking(_reading, plan, scan, io)
    body = await blocking(plan_now, svc.plans, loaded.entry.id, principal, scan, tasks,
                          settings.scan_planning_tasks_per_chunk)
    return JsonResponse(await _with_credentials(request, body, catalog, namespace, name))


@iceberg_errors
async def fetch_planning_result(request: Request) -> Response:
    catalog, namespace, name, table_uuid = await _table_uuid(request)
    record = await _live_plan(request, table_uuid, request.path_params["plan_id"])
    if record.status == "completed":
        body: dict[str, Any] = {"status": "completed", "plan-tasks": record.plan_tasks}
        return JsonResponse(await _with_credentials(request, body, catalog, namespace, name))
    if record.status == "failed":
        return JsonResponse({"status": "failed", "error": record.error})
    return JsonResponse({"status": record.status})  # submitted, cancelled


@iceberg_errors
async def cancel_planning(request: Request) -> Response:
    _, _, _, table_uuid = await _table_uuid(request)
    record = await _live_plan(request, table_uuid, request.path_params["plan_id"])
    await blocking(services(request).plans.cancel, record.plan_id)
    return Response(status_code=204)


@iceberg_errors
async def fetch_scan_tasks(request: Request) -> Response:
    body = await json_body(request)
    if set(body) - {"plan-task"}:
        raise errors.BadRequest(f"unknown fields: {', '.join(sorted(set(body) - {'plan-task'}))}")
    token = body.get("plan-task")
    if not isinstance(token, str):
        raise errors.BadRequest("'plan-task' (a string) is required")
    _, _, _, table_uuid = await _table_uuid(request)
    missing = NoSuchPlanTask("The plan task does not exist (or its plan expired or was cancelled)")
    parsed = parse_plan_task(token)
    if parsed is None:
        raise missing
    plan_id, n = parsed
    found = await blocking(services(request).plans.load, plan_id)
    if found is None or found[0].table_uuid != table_uuid or found[0].status != "completed" \
            or not found[0].first_chunk <= n < found[0].chunk_count:
        raise missing
    data = await blocking(services(request).plans.read_chunk, plan_id, n)
    if data is None:
        raise missing
    return Response(data, media_type="application/json")


TABLE = "/v1/{prefix}/namespaces/{namespace}/tables/{table}"

plan_routes = [
    Route(TABLE + "/plan", plan_table_scan, methods=["POST"]),
    Route(TABLE + "/plan/{plan_id}", fetch_planning_result, methods=["GET"]),
    Route(TABLE + "/plan/{plan_id}", cancel_planning, methods=["DELETE"]),
    Route(TABLE + "/tasks", fetch_scan_tasks, methods=["POST"]),
]
