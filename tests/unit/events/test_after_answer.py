"""Writes queued for after an answer (:mod:`arco.events.after_answer`): when they start, on which thread, what a
failure does, and the bound on the queue."""

from __future__ import annotations

import threading
import time

import pytest

from arco.events import after_answer


def test_a_committed_receipt_is_written_at_once_outside_a_request() -> None:
    """Outside a request's block (a job, a test), a write asked for later is made at once, on the caller's
    thread; inside one it starts when the block ends, and a failure is logged, never raised."""
    done: list[str] = []
    after_answer.write_later(lambda: done.append(threading.current_thread().name))
    assert done == [threading.current_thread().name]
    done.clear()
    with after_answer.answer_first():
        after_answer.write_later(lambda: done.append(threading.current_thread().name))
        with after_answer.answer_first():  # nested: the outer block releases
            after_answer.write_later(lambda: 1 / 0)
        time.sleep(0.05)
        assert done == []
    assert after_answer.drain(10)
    assert done and done[0].startswith("arco-after-answer")


def test_past_the_backlog_a_commit_writes_its_receipt_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store slower than the commits does not fill memory: past the bound the caller writes, and waits."""
    monkeypatch.setattr(after_answer, "MAX_BACKLOG", 1)
    release = threading.Event()
    threads: list[str] = []
    with after_answer.answer_first():
        after_answer.write_later(lambda: release.wait(10))
    with after_answer.answer_first():
        after_answer.write_later(lambda: threads.append(threading.current_thread().name))
    assert threads == [threading.current_thread().name] and after_answer.queued() == 1
    release.set()
    assert after_answer.drain(10) and after_answer.queued() == 0
