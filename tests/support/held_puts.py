"""Storage whose first put of a chosen key pattern waits until the test lets it through: a request held in flight."""

from __future__ import annotations

import fnmatch
import threading
from typing import Any

from arco.storage.base import StorageBackend


class HeldPuts:
    """Wraps a backend; the first put whose key matches ``pattern`` blocks (``reached`` set) until :meth:`release`."""

    def __init__(self, inner: StorageBackend, pattern: str) -> None:
        self.inner = inner
        self.pattern = pattern
        self.reached = threading.Event()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._held = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, key: str, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            hold = not self._held and fnmatch.fnmatchcase(key, self.pattern)
            self._held = self._held or hold
        if hold:
            self.reached.set()
            assert self._released.wait(30), "the held put was never released"
        return self.inner.put(key, *args, **kwargs)

    def release(self) -> None:
        self._released.set()
