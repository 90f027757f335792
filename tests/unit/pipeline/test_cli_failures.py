"""A pipeline job that lost a race or its storage says so plainly (exit 1, what to do), never with a traceback."""

from __future__ import annotations

import click
import pytest

from arco.cli.pipeline import _said_plainly
from arco.pipeline.checkpoint import ConcurrentCompaction
from arco.storage.base import StorageNotReached


def _failing(exc: Exception):  # type: ignore[no-untyped-def]
    def job() -> None:
        raise exc
    return _said_plainly(job)


def test_a_lost_race_and_an_unreachable_store_are_click_errors_that_say_what_to_do() -> None:
    with pytest.raises(click.ClickException, match="run again to continue"):
        _failing(ConcurrentCompaction("another compaction committed while this one ran; run again to continue"))()
    with pytest.raises(click.ClickException, match="run it again once the storage answers") as raised:
        _failing(StorageNotReached("S3 GET '_catalog/pipeline/compact/state.json' failed (not sent)"))()
    assert "state.json" in raised.value.message and raised.value.exit_code == 1


def test_anything_else_is_not_hidden() -> None:
    with pytest.raises(ZeroDivisionError):
        _failing(ZeroDivisionError())()
