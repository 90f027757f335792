"""Failures no handler answered: storage faults become 503 with ``Retry-After``, bugs a 500, both in the API's own
error shape, logged as one-line summaries, and never a dropped connection.

Why a plain ASGI middleware and not a Starlette handler for ``Exception``: Starlette runs that handler in its
``ServerErrorMiddleware``, which re-raises after responding, and uvicorn then logs a traceback and closes the
keep-alive connection, failing every other request the client had queued on it. Here the exception ends with the
response. Only an exception after the response has started is re-raised: a half-sent response can only be ended
by closing the connection.

Storage being unavailable (a read-only or full disk, a bucket refusing writes, the network) is expected
operational weather, not a bug: under load it would otherwise print a traceback per request. Each kind of fault is
logged once, then summarized (how many requests it answered) at most every
:data:`arco.fault_log.SUMMARY_INTERVAL_S`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arco.api.errors import error_body, error_headers, surface_of
from arco.fault_log import FaultLog
from arco.iceberg.metadata_files import MissingMetadataFile, UnreadableMetadataFile
from arco.storage.base import CommitPointUnanswered, InvalidKey, StorageError

log = logging.getLogger("arco.api")
STORAGE_RETRY_AFTER_S = 2


@dataclass(frozen=True)
class Answer:
    status: int
    error_type: str
    message: str
    headers: dict[str, str]
    storage_fault: bool
    traceback: bool = False  # a bug: the log shows where it happened


def answer_for(exc: BaseException) -> Answer:
    """How an unanswered exception is answered (pure)."""
    if isinstance(exc, InvalidKey):
        return Answer(400, "BadRequestException", f"invalid name: {exc}", {}, False)
    if isinstance(exc, MissingMetadataFile):  # storage answered: the file is gone, and no retry brings it back
        return Answer(404, exc.error_type, exc.message, {}, False)
    if isinstance(exc, UnreadableMetadataFile):  # a file written outside the catalog: said, not a bug of Arco's
        return Answer(500, "InternalServerError", exc.message, {}, False)
    if isinstance(exc, CommitPointUnanswered):  # its write may land yet: "may be retried" would not be true
        return Answer(503, "ServiceUnavailableException",
                      f"storage is unavailable ({type(exc).__name__}); whether the request took effect is unknown: "
                      "look before retrying it",
                      {"Retry-After": str(STORAGE_RETRY_AFTER_S)}, True)
    if isinstance(exc, (StorageError, OSError)):
        # A raw OSError can only come from storage or the local file system underneath it.
        return Answer(503, "ServiceUnavailableException",
                      f"storage is unavailable ({type(exc).__name__}); the request may be retried",
                      {"Retry-After": str(STORAGE_RETRY_AFTER_S)}, True)
    return Answer(500, "InternalServerError", f"internal error: {type(exc).__name__}", {}, False, traceback=True)


FAULTS = FaultLog(log)


def report_storage_fault(where: str, exc: BaseException, kind: str = "storage unavailable") -> None:
    """A storage fault a handler answered itself (with 503), counted in the same summaries (those of ``kind``)."""
    FAULTS.report(kind, where, exc)


class ContainErrors:
    """The outermost application middleware: see the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except ClientDisconnect:
            # The client left before its request's body had arrived (or sent one the HTTP parser refused): no one
            # is there to answer, and nothing went wrong here.
            log.info("the client went away during %s %s", scope.get("method"), scope.get("path"))
        except Exception as exc:
            if started:
                raise
            answer = answer_for(exc)
            where = f"{scope.get('method')} {scope.get('path')}"
            if answer.storage_fault:
                report_storage_fault(where, exc)
            else:
                # A bug: its traceback is what a person needs, once per kind and interval.
                FAULTS.report(f"unexpected {type(exc).__name__}", where, exc, traceback=answer.traceback)
            body = error_body(surface_of(scope["path"]), answer.status, answer.error_type, answer.message)
            headers = error_headers(answer.headers)
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": answer.status, "headers": headers})
            await send({"type": "http.response.body", "body": body if scope.get("method") != "HEAD" else b""})
