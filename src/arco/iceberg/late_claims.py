"""Checks that run again in the background until storage answers them, or until their deadline.

An Idempotency-Key claim whose put got no answer (a timeout, a dropped connection) may still be applied by the
store later: a paused store resumes and applies what it had queued. It leaves an ``IN_PROGRESS`` marker that no
running attempt owns, and every retry with that key, on any server, would wait out the in-progress timeout (ten
minutes by default). :class:`arco.iceberg.idempotency.IdempotencyMarkers` hands such a claim here, to be released
as soon as storage shows it (:meth:`LateChecks.add`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from arco.storage.base import StorageError

_log = logging.getLogger(__name__)
POLL_S = 2.0


class LateChecks:
    """A daemon thread running each check every ``poll_s`` until it returns True (done) or its deadline passes;
    a check that raises :class:`StorageError` is run again."""

    def __init__(self, poll_s: float = POLL_S) -> None:
        self.poll_s = poll_s
        self._checks: list[tuple[Callable[[], bool], float]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, check: Callable[[], bool], within_s: float) -> None:
        with self._lock:
            self._checks.append((check, time.monotonic() + within_s))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="arco-late-checks", daemon=True)
                self._thread.start()

    def pending(self) -> int:
        with self._lock:
            return len(self._checks)

    def run_once(self) -> None:
        """One round: each check still due is run; those done or past their deadline are dropped."""
        with self._lock:
            checks = list(self._checks)
        finished = set()
        for check, deadline in checks:
            try:
                done = check()
            except StorageError:
                done = False  # storage still unavailable: again next round
            except Exception:  # noqa: BLE001 - a check's own bug must not stop the others
                _log.exception("a background check failed; it is dropped")
                done = True
            if done or time.monotonic() > deadline:
                finished.add(id(check))
        with self._lock:
            self._checks = [(c, d) for c, d in self._checks if id(c) not in finished]

    def _run(self) -> None:
        while True:
            time.sleep(self.poll_s)
            self.run_once()
