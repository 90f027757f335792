"""Inline SVG charts computed on the server: rows, files and bytes per snapshot, and commits per day.

No charting library and no script: the page stays one response, readable without JavaScript, and nothing is
fetched from elsewhere. Each chart is a list of points already scaled to the SVG's view box.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

WIDTH, HEIGHT, PAD = 600, 120, 4
ACTIVITY_DAYS = 365  # the commits-per-day chart covers at most this many days, up to today
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
    counted: int = 0  # commits in the bars
    earlier: int = 0  # commits before the chart's first day (older than ACTIVITY_DAYS)
    out_of_range: int = 0  # timestamps in the future or before the table was created: not plotted


def human(value: float, unit: str) -> str:
    if unit == "bytes":
        for suffix in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(value) < 1024 or suffix == "TiB":
                return f"{value:,.0f} {suffix}" if suffix == "B" else f"{value:,.1f} {suffix}"
            value /= 1024
    return f"{value:,.0f}" if abs(value) < 1e15 else f"{value:.3g}"


def number(summary: dict[str, Any], key: str) -> float | None:
    """A summary's count as a number: a writer may put anything there, and only a finite count of zero or more
    can be plotted (NaN or infinity would make the SVG's points invalid, a negative one fall below the axis)."""
    try:
        value = float(summary[key]) if summary.get(key) is not None else None
    except (TypeError, ValueError, OverflowError):
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def line_charts(summaries: list[dict[str, Any]]) -> list[LineChart]:
    """One chart per series over snapshot summaries given oldest first (a branch's ancestry)."""
    charts = []
    for key, unit in SERIES:
        values = [v for summary in summaries if (v := number(summary, key)) is not None]
        if not values:
            continue
        peak = max(values) or 1.0
        if len(values) == 1:
            values_drawn = [values[0], values[0]]  # one snapshot: a level line, where one point draws nothing
        else:
            values_drawn = values
        step = (WIDTH - 2 * PAD) / (len(values_drawn) - 1)
        points = " ".join(f"{PAD + i * step:.1f},{HEIGHT - PAD - (v / peak) * (HEIGHT - 2 * PAD):.1f}"
                          for i, v in enumerate(values_drawn))
        charts.append(LineChart(unit, points, human(values[-1], unit), human(max(values), unit), len(values)))
    return charts


def _day(ms: int) -> date | None:
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).date()
    except (OverflowError, OSError, ValueError):  # outside the years a date can hold
        return None


def activity_chart(timestamps_ms: list[int], now_ms: int, created_ms: int = 0,
                   days: int = ACTIVITY_DAYS) -> BarChart | None:
    """Commits per UTC day, one bar per day from the first commit in the last ``days`` days up to today.

    The timestamps are the writers' (a snapshot's ``timestamp-ms`` becomes its version's): one in the future or
    before the table was created is left out, so no writer can stretch the chart (it has at most ``days`` bars)."""
    today = _day(now_ms)
    if today is None:
        return None
    created = _day(created_ms) if created_ms > 0 else None
    start = today - timedelta(days=days - 1)
    counted: Counter[date] = Counter()
    earlier = out_of_range = 0
    for t in timestamps_ms:
        day = _day(t)
        if day is None or day > today or (created is not None and day < created):
            out_of_range += 1
        elif day < start:
            earlier += 1
        else:
            counted[day] += 1
    if not counted:
        return None if not earlier and not out_of_range else \
            BarChart("commits per day", [], start.isoformat(), today.isoformat(), 0, earlier, out_of_range)
    first = min(counted)
    span = (today - first).days + 1
    peak = max(counted.values())
    width = (WIDTH - 2 * PAD) / span
    bars = []
    for offset in range(span):
        day = first + timedelta(days=offset)
        n = counted.get(day, 0)
        height = (n / peak) * (HEIGHT - 2 * PAD)
        bars.append(Bar(PAD + offset * width, HEIGHT - PAD - height, max(width - 1, 0.5), height,
                        f"{day.isoformat()}: {n} commit{'s' if n != 1 else ''}"))
    return BarChart("commits per day", bars, first.isoformat(), today.isoformat(), sum(counted.values()), earlier,
                    out_of_range)
