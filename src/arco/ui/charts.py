"""Inline SVG charts computed on the server: rows, files and bytes per snapshot, and commits per day.

No charting library and no script: the page stays one response, readable without JavaScript, and nothing is
fetched from elsewhere. Each chart is a list of points already scaled to the SVG's view box.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

WIDTH, HEIGHT, PAD = 600, 120, 4
SERIES = (("total-records", "rows"), ("total-data-files", "data files"), ("total-files-size", "bytes"))


@dataclass(frozen=True)
class LineChart:
    title: str
    points: str  # the SVG polyline's points attribute
    latest: str  # the last value, formatted
    peak: str
    count: int


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str


@dataclass(frozen=True)
class BarChart:
    title: str
    bars: list[Bar]
    first: str
    last: str


def human(value: float, unit: str) -> str:
    if unit == "bytes":
        for suffix in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(value) < 1024 or suffix == "TiB":
                return f"{value:,.0f} {suffix}" if suffix == "B" else f"{value:,.1f} {suffix}"
            value /= 1024
    return f"{value:,.0f}"


def _number(summary: dict[str, Any], key: str) -> float | None:
    try:
        return float(summary[key]) if summary.get(key) is not None else None
    except (TypeError, ValueError):
        return None


def line_charts(snapshots: list[tuple[int, dict[str, Any]]]) -> list[LineChart]:
    """One chart per series over the snapshots in time order; ``snapshots``: (timestamp ms, summary)."""
    charts = []
    ordered = sorted(snapshots, key=lambda s: s[0])
    for key, unit in SERIES:
        values = [v for _, summary in ordered if (v := _number(summary, key)) is not None]
        if not values:
            continue
        peak = max(values) or 1.0
        step = (WIDTH - 2 * PAD) / max(len(values) - 1, 1)
        points = " ".join(f"{PAD + i * step:.1f},{HEIGHT - PAD - (v / peak) * (HEIGHT - 2 * PAD):.1f}"
                          for i, v in enumerate(values))
        charts.append(LineChart(unit, points, human(values[-1], unit), human(max(values), unit), len(values)))
    return charts


def activity_chart(timestamps_ms: list[int]) -> BarChart | None:
    """Commits per UTC day, one bar per day from the first to the last."""
    if not timestamps_ms:
        return None
    days = Counter(datetime.fromtimestamp(t / 1000, UTC).date() for t in timestamps_ms)
    first, last = min(days), max(days)
    span = (last - first).days + 1
    peak = max(days.values())
    width = (WIDTH - 2 * PAD) / span
    bars = []
    for offset in range(span):
        day = first.fromordinal(first.toordinal() + offset)
        n = days.get(day, 0)
        height = (n / peak) * (HEIGHT - 2 * PAD)
        bars.append(Bar(PAD + offset * width, HEIGHT - PAD - height, max(width - 1, 0.5), height,
                        f"{day.isoformat()}: {n} commit{'s' if n != 1 else ''}"))
    return BarChart("commits per day", bars, first.isoformat(), last.isoformat())
