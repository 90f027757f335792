"""Writes a request queued for after its answer (:mod:`arco.events.after_answer`) start once the answer is sent.

Outermost but for the request observer: the answer's last byte is handed to the connection first, so a commit's
best-effort receipt does not compete with sending it (nor, on a shared machine, with the client reading it)."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from arco.events.after_answer import answer_first


class WritesAfterAnswer:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with answer_first():
            await self.app(scope, receive, send)
