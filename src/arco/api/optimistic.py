"""Table commits decided on this process's catalog state, checked beside their first write (:mod:`arco.optimistic`).

Which requests: ``POST /iceberg/v1/{prefix}/namespaces/{namespace}/tables/{table}``, whose mutation layer confirms
the view with the catalog check it makes beside its first write, the metadata file's (with or without an
``Idempotency-Key``, whose marker claim runs beside it too), and before the CAS; a file written under a view found
stale is deleted (a claimed marker released), and a staged create confirms before it writes.
Everything the request does runs under the view, authentication included. Its answer is held until the request
ends: sent if the view was confirmed, else dropped, and the request run again the ordinary way (its body
replayed), which is also what happens after :class:`arco.optimistic.StaleView`. So no answer (not even a 403 or a
404) is ever given from state that was not checked, and the common case saves the round trip the check would
cost in front of the commit's writes.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arco.catalog.store import CatalogStore
from arco.optimistic import StaleView, optimistic_view

_TABLE_COMMIT = re.compile(r"^/iceberg/v1/[^/]+/namespaces/[^/]+/tables/[^/]+$")


def is_table_commit(scope: Scope) -> bool:
    return scope.get("method") == "POST" and _TABLE_COMMIT.match(scope.get("path", "")) is not None


class OptimisticCommits:
    """Installed where the catalog check is a round trip (object storage); see the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_table_commit(scope):
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        held: list[Message] = []

        async def recording_receive() -> Message:
            message = await receive()
            received.append(message)
            return message

        async def holding_send(message: Message) -> None:
            held.append(message)

        # A copy: routing writes into the scope (root path, path parameters), and a second run needs it as it
        # arrived.
        first = dict(scope)
        with optimistic_view(CatalogStore.scope_start()) as view:
            try:
                await self.app(first, recording_receive, holding_send)
            except StaleView:
                pass
            except Exception:
                if view.confirmed:
                    raise
            finally:
                if view.confirmed:  # what routing and authentication noted (the route template, the principal)
                    scope.update(first)
        if view.confirmed:
            for message in held:
                await send(message)
            return
        replay = iter(received)

        async def replaying_receive() -> Message:
            message = next(replay, None)
            return message if message is not None else await receive()

        await self.app(scope, replaying_receive, send)
