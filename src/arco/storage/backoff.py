"""Backing off after a lost conditional write, so that writers racing for one object spread out.

Full-jitter exponential backoff: after the ``attempt``-th lost race, sleep ``uniform(0, min(cap, base * 2**attempt))``.
Without it, N writers that all lost to the same winner try again at once and N-1 of them lose again, each having
paid a full write; with it, the expected number of writers trying at the same moment falls quickly.
"""

from __future__ import annotations

import random

BACKOFF_BASE_S = 0.004
BACKOFF_CAP_S = 0.25


def backoff_delay(attempt: int, rng: random.Random | None = None, *, base_s: float = BACKOFF_BASE_S,
                  cap_s: float = BACKOFF_CAP_S) -> float:
    """How long to wait after the ``attempt``-th lost race (0-based)."""
    ceiling = min(cap_s, base_s * (2 ** min(attempt, 16)))
    return (rng or random).uniform(0, ceiling)
