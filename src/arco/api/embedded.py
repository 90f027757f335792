"""An Arco server inside the calling process, on a free loopback port, for in-process clients (the pipeline's
Spark procedures, the quickstart's sample writes). It admits only the principals given, by tokens made for
this use, and stops when the block ends, once the writes it queued after its answers are made."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from arco.api.app import asgi_app
from arco.api.http_protocol import BoundedHeadProtocol
from arco.auth.principals import Principal
from arco.events import after_answer
from arco.settings import ServerSettings
from arco.storage.base import StorageBackend


class EmbeddedServerFailed(RuntimeError):
    """The in-process server did not start in time."""


@contextmanager
def in_process_server(storage: StorageBackend, principals: dict[str, Principal], name: str) -> Iterator[str]:
    """Serve ``storage`` on 127.0.0.1 for the bearer tokens in ``principals``; yields the base URL."""
    settings = ServerSettings(warehouse=storage.url, host="127.0.0.1", port=0)
    config = uvicorn.Config(asgi_app(settings, storage, principals), host="127.0.0.1", port=0,
                            log_level="warning", lifespan="off", http=BoundedHeadProtocol,
                            proxy_headers=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise EmbeddedServerFailed(f"the in-process Arco server ({name}) did not start")
        time.sleep(0.05)
    base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    httpx.get(f"{base}/health", timeout=10).raise_for_status()
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(10)
        after_answer.drain(30)  # what it answered is on storage when the block ends (receipts included)
