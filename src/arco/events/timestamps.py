"""Timestamps that writers choose (a snapshot's ``timestamp-ms``, so a table's ``last-updated-ms``) as dates.

Iceberg takes any long there, as Java's TableMetadata does; Python's datetime holds years 1 to 9999 only. Every
place that turns such a number into a date goes through :func:`utc_datetime`, so a commit stamped in year 10000
(or at ``Long.MAX_VALUE``) is stored, receipted and compacted like any other, under the last representable date,
instead of failing with a server error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST_MS = (datetime(1, 1, 1, tzinfo=UTC) - EPOCH) // timedelta(milliseconds=1)
LAST_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - EPOCH) // timedelta(milliseconds=1)


def clamped_ms(timestamp_ms: float) -> int:
    """``timestamp_ms`` within the range a datetime can hold."""
    return int(min(max(timestamp_ms, FIRST_MS), LAST_MS))


def utc_datetime(timestamp_ms: float) -> datetime:
    """The UTC datetime of a timestamp in milliseconds, clamped to years 1 to 9999 (in integers: a float's
    seconds lose the milliseconds of far dates)."""
    return EPOCH + timedelta(milliseconds=clamped_ms(timestamp_ms))
