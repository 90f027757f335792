"""Storage whose first (or nth) put of a chosen key pattern is held in flight: it waits until the test lets it
through (:class:`HeldPuts`), or its caller gets no answer while it reaches the store later (:class:`LatePuts`)."""

from __future__ import annotations

import fnmatch
import threading
import time
from collections.abc import Callable
from typing import Any

from arco.storage.base import StorageBackend, StorageUnavailable


class _FirstMatchingPut:
    """Wraps a backend; the ``nth`` put whose key matches ``pattern`` is the one the subclass delays."""

    def __init__(self, inner: StorageBackend, pattern: str, nth: int = 1) -> None:
        self.inner = inner
        self.pattern = pattern
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._matched = 0
        self._nth = nth

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _is_the_one(self, key: str) -> bool:
        if not fnmatch.fnmatchcase(key, self.pattern):
            return False
        with self._lock:
            self._matched += 1
            return self._matched == self._nth


class HeldPuts(_FirstMatchingPut):
    """The chosen put (the first whose key matches ``pattern``, or the ``nth``) blocks (``reached`` set) until
    :meth:`release`."""

    def __init__(self, inner: StorageBackend, pattern: str, nth: int = 1) -> None:
        super().__init__(inner, pattern, nth)
        self.reached = threading.Event()

    def put(self, key: str, *args: Any, **kwargs: Any) -> Any:
        if self._is_the_one(key):
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


class LatePuts(_FirstMatchingPut):
    """The chosen put (the first whose key matches ``pattern``, or the ``nth``) is answered at once with
    :class:`StorageUnavailable`, as a request whose answer never came, yet reaches the store later: it is applied
    (with its precondition) once :meth:`release` is called."""

    def __init__(self, inner: StorageBackend, pattern: str, nth: int = 1) -> None:
        super().__init__(inner, pattern, nth)
        self._applied = threading.Event()
        self._outcome: Any = None
        self.on_unanswered: Callable[[], object] = lambda: None  # what else goes wrong just then (a test's fault)

    def put(self, key: str, *args: Any, **kwargs: Any) -> Any:
        if not self._is_the_one(key):
            return self.inner.put(key, *args, **kwargs)

        def arrive() -> None:
            assert self._released.wait(30), "the late put was never released"
            try:
                self._outcome = self.inner.put(key, *args, **kwargs)
            finally:
                self._applied.set()

        threading.Thread(target=arrive, daemon=True).start()
        self.on_unanswered()
        raise StorageUnavailable(f"PUT {key!r}: no answer (the request is still on its way)")

    def release(self) -> Any:
        """Let the late put reach the store; what the store did with it."""
        self._released.set()
        assert self._applied.wait(10), "the late put never reached the store"
        return self._outcome
