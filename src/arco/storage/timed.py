"""A backend wrapper that times every storage call into :mod:`arco.metrics`, by operation and outcome.

:func:`arco.storage.factory.open_storage` wraps every backend it opens, so the server, the CLI and the pipeline
all measure the same way; only a server exposes the numbers (``/metrics``). It is also where an inline attempt
(:mod:`arco.inline`) learns that it would wait for storage. Anything that is not a storage call
(a backend's own attributes) is passed through to the wrapped backend.
"""

from __future__ import annotations

import time
from typing import Any

from arco.inline import refuse_to_wait
from arco.metrics import STORAGE_SECONDS
from arco.optimistic import refuse_unconfirmed_write
from arco.storage.base import (
    DeleteResult,
    DoesNotExist,
    ListPage,
    MatchesVersion,
    NotFound,
    ObjectData,
    ObjectMeta,
    Precondition,
    StorageBackend,
    WriteResult,
)

_PUT_OPERATION = {type(None): "put", DoesNotExist: "put_if_absent", MatchesVersion: "put_if_match"}


class TimedBackend(StorageBackend):
    def __init__(self, inner: StorageBackend) -> None:
        self.inner = inner
        self.url = inner.url
        self.capabilities = inner.capabilities
        # One bound child per (operation, outcome), made once: labels() costs a lock and a dict lookup per call.
        self._timers: dict[tuple[str, str], Any] = {}

    def _observe(self, operation: str, outcome: str, started: float) -> None:
        timer = self._timers.get((operation, outcome))
        if timer is None:
            timer = self._timers[(operation, outcome)] = STORAGE_SECONDS.labels(operation, outcome)
        timer.observe(time.perf_counter() - started)

    def _may_read(self) -> None:
        # Inside an inline attempt (arco.inline) a read goes ahead only where it costs less than a thread hand-over.
        if not self.capabilities.cheap_reads:
            refuse_to_wait()

    def get(self, key: str) -> ObjectData:
        self._may_read()
        started = time.perf_counter()
        outcome = "error"
        try:
            found = self.inner.get(key)
            outcome = "ok"
            return found
        except NotFound:
            outcome = "not_found"
            raise
        finally:
            self._observe("get", outcome, started)

    def get_if_changed(self, key: str, version: str) -> ObjectData | None:
        self._may_read()
        started = time.perf_counter()
        outcome = "error"
        try:
            found = self.inner.get_if_changed(key, version)
            outcome = "ok" if found is not None else "not_modified"
            return found
        except NotFound:
            outcome = "not_found"
            raise
        finally:
            self._observe("get", outcome, started)

    def head(self, key: str) -> ObjectMeta | None:
        self._may_read()
        started = time.perf_counter()
        outcome = "error"
        try:
            found = self.inner.head(key)
            outcome = "ok" if found is not None else "not_found"
            return found
        finally:
            self._observe("head", outcome, started)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        refuse_to_wait()  # never inline: a durable write waits for the disk or the network
        refuse_unconfirmed_write()  # never on grants that were not checked (arco.optimistic)
        started = time.perf_counter()
        outcome = "error"
        try:
            result = self.inner.put(key, data, precondition)
            outcome = "ok" if result.ok else "precondition_failed"
            return result
        finally:
            self._observe(_PUT_OPERATION.get(type(precondition), "put"), outcome, started)

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        refuse_to_wait()
        refuse_unconfirmed_write()
        started = time.perf_counter()
        outcome = "error"
        try:
            result = self.inner.delete(key, precondition)
            outcome = "ok" if result.ok else "precondition_failed"
            return result
        finally:
            self._observe("delete" if precondition is None else "delete_if_match", outcome, started)

    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        self._may_read()
        started = time.perf_counter()
        outcome = "error"
        try:
            page = self.inner.list_page(prefix, page_size, page_token)
            outcome = "ok"
            return page
        finally:
            self._observe("list", outcome, started)

    def location_of(self, key: str) -> str:
        return self.inner.location_of(key)

    def presign_get(self, url: str, expires_s: int) -> str | None:
        # StorageBackend's default declines; the wrapped backend may know how (S3, Azure, GCS).
        return self.inner.presign_get(url, expires_s)

    def fileio_properties(self) -> dict[str, str]:
        return self.inner.fileio_properties()

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this wrapper does not have: a backend's own (a bucket name, a root path).
        if name == "inner":  # not set yet (a copy being built): no recursion into __getattr__
            raise AttributeError(name)
        return getattr(self.inner, name)


def timed(storage: StorageBackend) -> StorageBackend:
    """``storage`` with its calls timed (once: a timed backend is returned as it is)."""
    return storage if isinstance(storage, TimedBackend) else TimedBackend(storage)
