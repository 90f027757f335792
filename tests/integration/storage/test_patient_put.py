"""A conditional write answered before the store answers it, when its outcome is already known: a local directory
whose chosen put is held in flight stands for a store that makes a race's loser wait for its lock."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from arco.metrics import REGISTRY
from arco.storage.base import DoesNotExist, MatchesVersion, PreconditionFailed, StorageUnavailable, Written
from arco.storage.local import LocalBackend
from arco.storage.patient_put import LostWhileWaiting, put_with_patience
from support.held_puts import HeldPuts

PATIENCE_S = 0.02

def early_answers(outcome: str) -> float:
    return REGISTRY.get_sample_value("arco_storage_writes_answered_early_total", {"outcome": outcome}) or 0.0



class AnsweredLate:
    """The chosen put reaches the store at once; its answer waits for :meth:`release`."""

    def __init__(self, inner: LocalBackend, key: str) -> None:
        self.inner, self.key = inner, key
        self._released = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, key: str, *args: Any, **kwargs: Any) -> Any:
        answer = self.inner.put(key, *args, **kwargs)
        if key == self.key:
            assert self._released.wait(30)
        return answer

    def release(self) -> None:
        self._released.set()


class AppliedAnyway(HeldPuts):
    """A store that breaks the rule: the held put, once let go, overwrites whatever is there and answers success."""

    def put(self, key: str, data: bytes, precondition: Any = None) -> Any:
        if self._is_the_one(key):
            self.reached.set()
            assert self._released.wait(30)
            return self.inner.put(key, data)
        return self.inner.put(key, data, precondition)


@pytest.fixture
def store(tmp_path: Path) -> LocalBackend:
    return LocalBackend(tmp_path / "store")


def in_background(call: Any) -> tuple[threading.Thread, dict[str, Any]]:
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["result"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            answer["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


def wait_until(condition: Any) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        time.sleep(0.005)


def test_a_swap_that_lost_while_it_waited_is_answered_before_the_store_answers_it(store: LocalBackend) -> None:
    first = store.put("ptr", b"v0").version
    held = HeldPuts(store, "ptr")
    lost_before = early_answers("lost")
    thread, result = in_background(lambda: put_with_patience(held, "ptr", b"mine", MatchesVersion(first), PATIENCE_S))
    assert held.reached.wait(10)
    other = store.put("ptr", b"theirs", MatchesVersion(first))  # another server's swap wins meanwhile
    assert other.ok
    thread.join(10)
    assert not thread.is_alive(), "the loser waited for the store's answer"
    assert result["result"] == LostWhileWaiting(current_version=other.version)
    assert early_answers("lost") == lost_before + 1
    before = early_answers("landed_after_all")
    held.release()  # the store answers the write given up on: it cannot land
    assert held.answered.wait(10)
    time.sleep(0.05)  # its late answer is checked just after
    assert store.get("ptr").data == b"theirs"
    assert early_answers("landed_after_all") == before


def test_a_write_that_may_still_land_is_waited_for(store: LocalBackend) -> None:
    first = store.put("ptr", b"v0").version
    held = HeldPuts(store, "ptr")
    thread, result = in_background(lambda: put_with_patience(held, "ptr", b"mine", MatchesVersion(first), PATIENCE_S))
    assert held.reached.wait(10)
    time.sleep(10 * PATIENCE_S)  # several checks find the object as the write expects it
    assert thread.is_alive() and not result
    held.release()
    thread.join(10)
    assert isinstance(result["result"], Written) and store.get("ptr").data == b"mine"


def test_a_write_that_landed_is_answered_from_the_store_when_its_answer_is_late(store: LocalBackend) -> None:
    first = store.put("ptr", b"v0").version
    late = AnsweredLate(store, "ptr")
    thread, result = in_background(lambda: put_with_patience(late, "ptr", b"mine", MatchesVersion(first), PATIENCE_S))
    thread.join(10)
    assert not thread.is_alive()
    assert result["result"] == Written(version=store.head("ptr").version)
    late.release()


def test_a_create_only_write_loses_as_soon_as_another_made_the_object(store: LocalBackend) -> None:
    held = HeldPuts(store, "entry")
    thread, result = in_background(lambda: put_with_patience(held, "entry", b"mine", DoesNotExist(), PATIENCE_S))
    assert held.reached.wait(10)
    time.sleep(5 * PATIENCE_S)
    assert thread.is_alive()  # nobody made it yet: it may still land
    made = store.put("entry", b"theirs", DoesNotExist())
    thread.join(10)
    assert not thread.is_alive() and result["result"] == LostWhileWaiting(current_version=made.version)
    held.release()


def test_an_answer_that_comes_in_time_is_the_answer_and_so_is_its_error(store: LocalBackend) -> None:
    first = store.put("ptr", b"v0").version
    assert put_with_patience(store, "ptr", b"stale", MatchesVersion("no-such-version"), 5.0) == \
        PreconditionFailed(current_version=first)

    class Unanswered:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def put(self, *args: Any) -> Any:
            raise StorageUnavailable("no answer")

    with pytest.raises(StorageUnavailable):
        put_with_patience(Unanswered(), "ptr", b"mine", MatchesVersion(first), 5.0)  # type: ignore[arg-type]


def test_a_store_that_applies_a_write_given_up_on_is_reported(store: LocalBackend,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    first = store.put("ptr", b"v0").version
    broken = AppliedAnyway(store, "ptr")
    thread, result = in_background(lambda: put_with_patience(broken, "ptr", b"mine", MatchesVersion(first),
                                                             PATIENCE_S))
    assert broken.reached.wait(10)
    store.put("ptr", b"theirs")
    thread.join(10)
    assert isinstance(result["result"], LostWhileWaiting)
    before = early_answers("landed_after_all")
    broken.release()
    wait_until(lambda: early_answers("landed_after_all") == before + 1)
    assert "was applied by the store after all" in caplog.text
