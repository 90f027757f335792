"""An Arco server inside the pipeline's driver, so Spark's Iceberg procedures commit through Arco itself.

It listens on 127.0.0.1 only and admits one principal, the pipeline, by a token made for this run; its commits
are recorded with the pipeline's run and task (the ``X-Arco-Pipeline-Task`` header, trusted from that principal
alone).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from arco.api.embedded import in_process_server
from arco.auth.principals import PIPELINE
from arco.storage.base import StorageBackend


@dataclass(frozen=True)
class EmbeddedServer:
    iceberg_uri: str
    token: str


@contextmanager
def embedded_server(storage: StorageBackend) -> Iterator[EmbeddedServer]:
    token = secrets.token_urlsafe(32)
    with in_process_server(storage, {token: PIPELINE}, "arco-embedded-server") as base:
        yield EmbeddedServer(f"{base}/iceberg", token)
