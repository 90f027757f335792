"""Writes a request queued for after its answer (:mod:`arco.events.after_answer`) start once the answer is sent.

Outermost but for the request observer: the answer's last byte is handed to the connection first, so a commit's
best-effort receipt does not compete with sending it (nor, on a shared machine, with the client reading it). When
the queue is full, the request's task makes its writes itself on a worker thread before it ends, never on the
event loop; with every worker thread so busy, new requests wait for one."""

from __future__ import annotations

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from arco.events.after_answer import holding, release, run_now


class WritesAfterAnswer:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with holding() as writes:
            try:
                await self.app(scope, receive, send)
            finally:
                overflow = release(writes)
                if overflow:  # the queue is full: this request makes its own, on a worker thread, not the loop
                    await anyio.to_thread.run_sync(run_now, overflow)
