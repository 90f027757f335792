"""Storage whose first put of a chosen key pattern waits until the test lets it through: a request held in flight."""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable
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


def race_a_retry(held: HeldPuts, first: Callable[[], object], retry: Callable[[], object],
                 first_in_flight: Callable[[], bool] = lambda: True) -> None:
    """Run ``first`` up to its held put (and until ``first_in_flight``), start ``retry`` beside it, then let the
    first go on; both have ended when this returns."""
    started = threading.Thread(target=first)
    started.start()
    assert held.reached.wait(10)
    deadline = time.monotonic() + 10
    while not first_in_flight():
        assert time.monotonic() < deadline, "the first request never got in flight"
        time.sleep(0.005)
    again = threading.Thread(target=retry)
    again.start()
    time.sleep(0.2)  # the retry finds the first request in flight
    held.release()
    started.join(10)
    again.join(10)
