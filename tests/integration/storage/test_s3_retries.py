"""Which S3 calls are retried after a failure, against an HTTP server on loopback that fails on purpose.

An emulator cannot be told to answer 503 or to drop a connection at a chosen request; this small server can. It
answers each request from a script (status, or "drop" to close the connection without answering) and records
what it received, so a test sees how many times a call was really sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from arco.storage.base import (
    DoesNotExist,
    MatchesVersion,
    StorageNotReached,
    StorageUnavailable,
    WriteNotApplied,
    Written,
)
from arco.storage.connections import NotConnected, TimedOut, TransportError
from arco.storage.object_calls import Reply, send_with_retries
from arco.storage.s3 import S3Backend
from support.loopback_http import QuietHandler, serving
from support.net import free_port

SLOW_DOWN = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"


@dataclass
class Script:
    answers: list[int | str]  # consumed in order; once empty, every request gets 200
    received: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def failing_s3() -> Iterator[tuple[Script, dict[str, str]]]:
    script = Script([])

    class Handler(QuietHandler):
        def answer(self) -> None:
            self.read_body()
            script.received.append((self.command, self.path, dict(self.headers.items())))
            answer = script.answers.pop(0) if script.answers else 200
            if answer == "drop":
                self.close_connection = True
                self.connection.close()
                return
            body = SLOW_DOWN if answer != 200 else (b"stored" if self.command == "GET" else b"")
            self.send_response(int(answer))
            self.send_header("ETag", '"e1"')
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(Handler) as port:
        yield script, {"s3.endpoint": f"http://127.0.0.1:{port}", "s3.access-key-id": "k",
                       "s3.secret-access-key": "s", "s3.region": "us-east-1"}


def test_a_read_is_retried_after_a_throttling_answer(failing_s3: tuple[Script, dict[str, str]]) -> None:
    script, options = failing_s3
    script.answers = [503]
    found = S3Backend("bucket", "w", options).get("a/b.json")
    assert found.data == b"stored" and found.version == '"e1"'
    assert [(method, path) for method, path, _ in script.received] == [("GET", "/bucket/w/a/b.json")] * 2


def test_a_read_gives_up_after_three_attempts(failing_s3: tuple[Script, dict[str, str]]) -> None:
    script, options = failing_s3
    script.answers = [503, 503, 503, 503]
    with pytest.raises(StorageUnavailable, match="SlowDown"):
        S3Backend("bucket", "w", options).get("a.json")
    assert len(script.received) == 3


@pytest.mark.parametrize("precondition", [DoesNotExist(), MatchesVersion('"e0"')])
def test_a_conditional_write_is_sent_once(failing_s3: tuple[Script, dict[str, str]], precondition: object) -> None:
    script, options = failing_s3
    script.answers = [503]
    with pytest.raises(StorageUnavailable):
        S3Backend("bucket", "w", options).put("p.json", b"{}", precondition)  # type: ignore[arg-type]
    assert len(script.received) == 1
    sent = {k.lower(): v for k, v in script.received[0][2].items()}
    assert ("if-none-match" in sent) if isinstance(precondition, DoesNotExist) else sent["if-match"] == '"e0"'


def test_a_conditional_write_whose_connection_dropped_is_unknown_not_retried(
        failing_s3: tuple[Script, dict[str, str]]) -> None:
    script, options = failing_s3
    script.answers = ["drop"]
    with pytest.raises(StorageUnavailable, match="may or may not have happened"):
        S3Backend("bucket", "w", options).put("p.json", b"{}", DoesNotExist())
    assert len(script.received) == 1


@pytest.mark.parametrize(("answer", "refused"), [(403, True), (400, True), (503, False), (500, False), ("drop", False)])
def test_only_a_write_refused_in_its_answer_is_known_not_to_have_happened(
        failing_s3: tuple[Script, dict[str, str]], answer: int | str, refused: bool) -> None:
    """A 4xx is the store turning the request down (credentials, policy): it changed nothing, and a commit may say
    so at once. After a 5xx or no answer the write may have happened, or may still happen."""
    script, options = failing_s3
    script.answers = [answer]
    with pytest.raises(StorageUnavailable) as failed:
        S3Backend("bucket", "w", options).put("p.json", b"{}", MatchesVersion('"e0"'))
    assert isinstance(failed.value, WriteNotApplied) == refused


def test_an_unconditional_write_is_retried(failing_s3: tuple[Script, dict[str, str]]) -> None:
    script, options = failing_s3
    script.answers = ["drop", 500]
    assert S3Backend("bucket", "w", options).put("p.json", b"{}") == Written('"e1"')
    assert len(script.received) == 3


def test_a_conditional_delete_is_sent_once(failing_s3: tuple[Script, dict[str, str]]) -> None:
    script, options = failing_s3
    script.answers = [503]
    with pytest.raises(StorageUnavailable):
        S3Backend("bucket", "w", options).delete("p.json", MatchesVersion('"e1"'))
    assert [method for method, _, _ in script.received] == ["DELETE"]


def test_a_write_to_a_store_that_cannot_be_reached_was_not_sent() -> None:
    """Nothing listens: the call never left, so the write certainly did not happen (commits answer 503, not
    CommitStateUnknown, for it)."""
    options = {"s3.endpoint": f"http://127.0.0.1:{free_port()}", "s3.access-key-id": "k",
               "s3.secret-access-key": "s", "s3.region": "us-east-1"}
    with pytest.raises(StorageNotReached, match="not sent"):
        S3Backend("bucket", "w", options).put("p.json", b"{}", MatchesVersion('"e0"'))
    with pytest.raises(StorageNotReached):
        S3Backend("bucket", "w", options).put("p.json", b"{}")  # retried, and never sent either


def test_a_retried_write_that_may_have_been_sent_once_is_not_called_unsent(
        failing_s3: tuple[Script, dict[str, str]]) -> None:
    """The first attempt's connection dropped after the request went out; were the later ones refused a
    connection, the write's outcome would still be unknown."""
    script, options = failing_s3
    script.answers = ["drop", "drop", "drop"]
    with pytest.raises(StorageUnavailable, match="may or may not have happened") as unknown:
        S3Backend("bucket", "w", options).put("p.json", b"{}")
    assert not isinstance(unknown.value, StorageNotReached)


def failing_in_turn(*errors: TransportError) -> Callable[[], Reply]:
    """A ``send_once`` whose attempts fail with ``errors``, one each, in order."""
    attempts = iter(errors)

    def send_once() -> Reply:
        raise next(attempts)
    return send_once


def test_retries_report_not_sent_only_when_no_attempt_was() -> None:
    sent_once = failing_in_turn(NotConnected("refused"), TransportError("reset"), NotConnected("refused"))
    with pytest.raises(TransportError) as failed:
        send_with_retries(sent_once, "PUT 'k'", 3)
    assert not isinstance(failed.value, NotConnected)
    with pytest.raises(NotConnected):
        send_with_retries(failing_in_turn(NotConnected("refused"), NotConnected("refused")), "PUT 'k'", 2)


def test_a_call_that_got_no_answer_in_time_is_not_sent_again() -> None:
    """A hung store would hold a second attempt as long as the first: the request is answered (503) after one."""
    calls = []

    def hung_once() -> Reply:
        calls.append(1)
        if len(calls) == 1:
            raise TimedOut("timed out: no answer within 30 s")
        raise AssertionError("sent again")

    with pytest.raises(TransportError, match="timed out") as failed:
        send_with_retries(hung_once, "GET 'k'", 3)
    assert len(calls) == 1 and not isinstance(failed.value, NotConnected)
