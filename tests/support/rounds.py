"""Storage as far away as a network, with each call's interval recorded: sequential round trips, counted."""

from __future__ import annotations

import threading
import time
from typing import Any

from arco.storage.base import StorageBackend

LATENCY_S = 0.03


class Slowed:
    """Every storage call takes ``LATENCY_S`` longer, and its interval is recorded: the longest chain of calls
    each starting after the previous one ended is the number of sequential round trips a client waits for."""

    def __init__(self, inner: StorageBackend) -> None:
        self.inner = inner
        self.intervals: list[tuple[float, float]] = []
        self.started: list[tuple[float, str, str]] = []  # (start, operation, key), in no particular order
        self._keys: list[str] = []  # beside intervals, in the same order
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if name not in ("get", "get_if_changed", "head", "put", "delete", "list_page"):
            return target

        def slowed(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                time.sleep(LATENCY_S)
                return target(*args, **kwargs)
            finally:
                with self._lock:
                    self.intervals.append((started, time.monotonic()))
                    self.started.append((started, name, str(args[0]) if args else ""))
                    self._keys.append(str(args[0]) if args else "")

        return slowed

    def rounds(self, started_before: float | None = None, leaving_out: str | None = None) -> int:
        """The sequential round trips among the calls that started before ``started_before`` (monotonic; all by
        default) and whose key does not contain ``leaving_out``: pass the time a call returned, or the part of a
        key its caller does not wait for, to count what the caller waited for."""
        depth: list[int] = []
        with self._lock:
            ordered = sorted(i for i, key in zip(self.intervals, self._keys, strict=True)
                             if (started_before is None or i[0] < started_before)
                             and (leaving_out is None or leaving_out not in key))
        for i, (start, _) in enumerate(ordered):
            depth.append(1 + max((depth[j] for j in range(i) if ordered[j][1] <= start), default=0))
        return max(depth, default=0)
