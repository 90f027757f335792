"""Request plumbing shared by every surface: bounded JSON bodies, the caller, and running blocking services."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from arco.auth.principals import PIPELINE, Principal
from arco.inline import WouldWait, run_inline

T = TypeVar("T")


BODY_IDLE_S = 30.0  # the longest a request body may pause between two of its parts


class BodyError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


async def read_json(request: Request, limit: int, *, required: bool = True, unique_keys: bool = False) -> Any:
    """The parsed body; raises :class:`BodyError` (400 malformed, 413 too large) without reading past ``limit``.

    ``unique_keys`` also refuses an object with a repeated member name, which JSON parsers silently resolve (the
    last one wins) but which has no canonical form (RFC 8785 requires I-JSON): requests hashed for an
    Idempotency-Key must not have two readings."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyError(413, f"request body of {declared} bytes exceeds the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(BODY_IDLE_S):
                chunk = await stream.__anext__()
        except StopAsyncIteration:
            break
        except TimeoutError:
            # A body that stops arriving (a stalled or hostile client) must not hold the request for ever.
            raise BodyError(408, f"no part of the request body arrived for {BODY_IDLE_S:g} s; send it whole") from None
        size += len(chunk)
        if size > limit:
            raise BodyError(413, f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        if required:
            raise BodyError(400, "a JSON request body is required")
        return None
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BodyError(400, f"malformed JSON body: {exc}") from None
    if unique_keys:
        json.loads(raw, object_pairs_hook=_refuse_duplicate_names)
    return parsed


def _refuse_duplicate_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise BodyError(400, f"the JSON body repeats the member name(s) {repeated}; it has no canonical form")
    return dict(pairs)


def principal_of(request: Request) -> Principal:
    return request.scope["arco.principal"]  # set by the authentication middleware


PIPELINE_TASK_HEADER = "x-arco-pipeline-task"


def client_source(request: Request) -> dict[str, Any]:
    """Seed section 8's UpdateSource for a REST caller; Arco's own pipeline names its run and task."""
    principal = principal_of(request)
    task = request.headers.get(PIPELINE_TASK_HEADER)
    if task and principal.name == PIPELINE.name and principal.kind == PIPELINE.kind:
        run_id, _, task_id = task.partition("/")
        return {"kind": "pipeline", "run_id": run_id, "task_id": task_id, "principal": principal.name,
                "client_info": request.headers.get("user-agent")}
    return {
        "kind": "iceberg_rest",
        "client_info": request.headers.get("user-agent"),
        "principal": principal_of(request).name,
    }


async def blocking(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run storage-bound service code off the event loop."""
    return await run_in_threadpool(fn, *args, **kwargs)


async def inline_or_blocking(fn: Callable[..., T], *args: Any) -> T:
    """Read-only service code: here on the event loop if it needs nothing that waits, else in a worker thread,
    from the start (:mod:`arco.inline`: ``fn`` must be safe to run twice up to its first wait)."""
    try:
        return run_inline(fn, *args)
    except WouldWait:
        return await run_in_threadpool(fn, *args)
