"""An Arco server inside the pipeline's driver, so Spark's Iceberg procedures commit through Arco itself.

It listens on 127.0.0.1 only and admits one principal, the pipeline, by a token made for this run; its commits
are recorded with the pipeline's run and task (the ``X-Arco-Pipeline-Task`` header, trusted from that principal
alone).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import uvicorn

from arco.api.app import asgi_app
from arco.auth.principals import PIPELINE
from arco.settings import ServerSettings
from arco.storage.base import StorageBackend


@dataclass(frozen=True)
class EmbeddedServer:
    iceberg_uri: str
    token: str


@contextmanager
def embedded_server(storage: StorageBackend) -> Iterator[EmbeddedServer]:
    token = secrets.token_urlsafe(32)
    settings = ServerSettings(warehouse=storage.url, host="127.0.0.1", port=0)
    config = uvicorn.Config(asgi_app(settings, storage, {token: PIPELINE}), host="127.0.0.1", port=0,
                            log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="arco-embedded-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the pipeline's embedded Arco server did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    uri = f"http://127.0.0.1:{port}/iceberg"
    httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).raise_for_status()
    try:
        yield EmbeddedServer(uri, token)
    finally:
        server.should_exit = True
        thread.join(10)
