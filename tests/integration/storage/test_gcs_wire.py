"""The GCS wire client's credentials, against a loopback HTTP server that records what it was sent (the GCS
emulator accepts any token, or none, so the conformance suite cannot tell): each request carries the
credentials' bearer token, an expired token is refreshed once however many threads find it expired, and
anonymous access sends none."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from google.auth.credentials import AnonymousCredentials, Credentials

from arco.storage.gcs_wire import GcsWire
from support.loopback_http import QuietHandler, serving


class Refreshing(Credentials):
    """Credentials whose token lasts until told otherwise; each refresh mints the next one."""

    def __init__(self) -> None:
        super().__init__()
        self.refreshes = 0
        self._lock = threading.Lock()

    def refresh(self, request: Any) -> None:
        with self._lock:
            self.refreshes += 1
            self.token = f"token-{self.refreshes}"
        self.expiry = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + datetime.timedelta(hours=1)

    def expire(self) -> None:
        self.expiry = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(hours=1)


@pytest.fixture
def seen() -> Iterator[tuple[int, list[tuple[str, str, str | None]]]]:
    requests: list[tuple[str, str, str | None]] = []

    class Handler(QuietHandler):
        def answer(self) -> None:
            self.read_body()
            requests.append((self.command, self.path, self.headers.get("Authorization")))
            body = b'{"generation": "7", "size": "1"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("x-goog-generation", "7")
            self.end_headers()
            self.wfile.write(body)

        do_POST = QuietHandler.do_GET  # noqa: N815 - the name http.server dispatches to

    with serving(Handler) as port:
        yield port, requests


def test_requests_carry_the_token_and_an_expired_one_is_refreshed_once(
        seen: tuple[int, list[tuple[str, str, str | None]]]) -> None:
    port, requests = seen
    credentials = Refreshing()
    wire = GcsWire(f"http://127.0.0.1:{port}", "b", credentials)
    assert wire.upload("a/b c", b"x", 0).status == 200  # not valid yet: refreshed before the first request
    assert requests[-1][2] == "Bearer token-1"
    assert requests[-1][1] == "/upload/storage/v1/b/b/o?uploadType=multipart&ifGenerationMatch=0"
    credentials.expire()
    threads = [threading.Thread(target=wire.download, args=(f"k{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert credentials.refreshes == 2
    assert {auth for _, _, auth in requests[1:]} == {"Bearer token-2"}
    assert requests[1][1].startswith("/download/storage/v1/b/b/o/k") and requests[1][1].endswith("?alt=media")
    wire.close()


def test_anonymous_access_sends_no_token(seen: tuple[int, list[tuple[str, str, str | None]]]) -> None:
    port, requests = seen
    wire = GcsWire(f"http://127.0.0.1:{port}", "b", AnonymousCredentials())
    assert wire.metadata("dir/o%").status == 200
    assert requests == [("GET", "/storage/v1/b/b/o/dir%2Fo%25", None)]
    wire.close()
