"""Token buckets per caller, per server process: what bounds how much storage one caller's requests may fill
(metrics reports, asynchronous sharing queries). Per process is enough for that purpose: with N servers a caller
gets at most N times the rate. Everything but the clock is pure."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MAX_TRACKED = 10_000  # buckets kept before the full (idle) ones are forgotten


class RateLimiter:
    """A token bucket per caller: ``rate`` requests a second, bursts of ``burst``."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # caller -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, who: str) -> float:
        """0 if ``who`` may go ahead now (a token is spent), else the seconds until it may."""
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.get(who, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens >= 1:
                self._buckets[who] = (tokens - 1, now)
                self._forget_idle(now)
                return 0.0
            self._buckets[who] = (tokens, now)
            return (1 - tokens) / self.rate

    def _forget_idle(self, now: float) -> None:
        """Bound the memory: a bucket that has refilled completely says nothing and is dropped."""
        if len(self._buckets) <= MAX_TRACKED:
            return
        full_after = self.burst / self.rate
        self._buckets = {who: (tokens, at) for who, (tokens, at) in self._buckets.items() if now - at < full_after}
