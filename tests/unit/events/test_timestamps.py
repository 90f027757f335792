"""Writer-chosen timestamps become dates without failing, whatever long they are."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from arco.events.receipts import day_of, iceberg_receipt_key
from arco.events.timestamps import utc_datetime

LONG_MAX = 2**63 - 1


@pytest.mark.parametrize(("ms", "day"), [
    (0, "1970-01-01"), (-5, "1969-12-31"), (1_764_201_600_000, "2025-11-27"),
    (253_402_300_800_000, "9999-12-31"),  # year 10000
    (LONG_MAX, "9999-12-31"), (-LONG_MAX, "0001-01-01"),
])
def test_a_day_is_given_for_any_long(ms: int, day: str) -> None:
    assert day_of(ms) == day
    assert f"/{day}/iceberg/pending/" in iceberg_receipt_key("pending", "file:///t/m.json", ms)


def test_a_representable_timestamp_is_kept_to_the_millisecond() -> None:
    assert utc_datetime(1_764_201_600_123) == datetime(2025, 11, 27, 0, 0, 0, 123000, tzinfo=UTC)
    assert utc_datetime(LONG_MAX) == datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
