"""The latency figures the benches print: the median and the 99th percentile (nearest rank) of a run's samples.

The benches import it as a sibling module (a script's own folder is first on ``sys.path``)."""

from __future__ import annotations

import statistics


def p50_p99(samples: list[float]) -> tuple[float, float]:
    """The median and the 99th percentile of ``samples`` (the largest sample when there are fewer than 100)."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
