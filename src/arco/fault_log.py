"""Faults that come in storms, logged as summaries: the first of each kind at once, then one line per interval
saying how many followed.

Storage being unavailable (a read-only or full disk, a bucket refusing writes, the network) is expected operational
weather: under load, a line per failed request or write would bury the one line a person needs.
"""

from __future__ import annotations

import logging
import threading
import time

SUMMARY_INTERVAL_S = 10.0


class FaultLog:
    """Logs the first fault of each kind at once, then one summary line per interval with how many followed."""

    def __init__(self, logger: logging.Logger, interval_s: float = SUMMARY_INTERVAL_S) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def report(self, kind: str, where: str, exc: BaseException, *, traceback: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.interval_s:
                self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
                return
            self._last[kind] = now
            suppressed = self._suppressed.pop(kind, 0)
        more = f" ({suppressed} more since the last report)" if suppressed else ""
        summary = f"{kind} on {where}: {type(exc).__name__}: {exc}{more}"
        if traceback:
            self.logger.error(summary, exc_info=exc)
        else:
            self.logger.warning(summary)
