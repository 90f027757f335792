"""What the object stores' wire clients (:mod:`arco.storage.s3_wire`, :mod:`arco.storage.azure_wire`,
:mod:`arco.storage.gcs_wire`) and their backends share: an answer read for its ETag and error, the retry rule, and
how a call without an answer, or with an unexpected one, becomes :class:`StorageUnavailable`.

Retries: a call that failed in transit or got a 5xx/throttling answer is retried (with jittered backoff) only
when repeating it cannot change its outcome: reads, and writes without a precondition. A conditional write is
sent once: its first attempt may have landed, and a retry would then fail its own precondition. A call that got
no answer within the read timeout is not retried either: a hung store would hold it as long again, and the
request waiting on it is better answered 503 after one timeout than after three.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from arco.storage.backoff import backoff_delay
from arco.storage.base import StorageNotReached, StorageUnavailable, WriteNotApplied
from arco.storage.connections import Headers, NotConnected, Response, TimedOut, TransportError

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_ERROR_CODE = re.compile(rb"<Code>([^<]*)</Code>")
_ERROR_MESSAGE = re.compile(rb"<Message>([^<]*)</Message>")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Headers  # a case-insensitive ``get``
    data: bytes

    @classmethod
    def of(cls, response: Response) -> Reply:
        return cls(status=response.status, headers=response.headers, data=response.data)

    @property
    def etag(self) -> str:
        return str(self.headers.get("ETag", ""))

    @property
    def error_code(self) -> str:
        """The store's error code: Azure's ``x-ms-error-code`` header (answers to HEAD have no body), else the
        ``<Code>`` of an XML error body (S3, Azure), else the status."""
        header = self.headers.get("x-ms-error-code")
        if header:
            return header
        found = _ERROR_CODE.search(self.data)
        return found.group(1).decode("utf-8", "replace") if found else str(self.status)

    def describe(self) -> str:
        message = _ERROR_MESSAGE.search(self.data)
        text = message.group(1).decode("utf-8", "replace") if message else ""
        return f"HTTP {self.status} {self.error_code}{': ' + text if text else ''}"


def send_with_retries(send_once: Callable[[], Reply], what: str, attempts: int) -> Reply:
    """``send_once()``, tried up to ``attempts`` times while it fails in transit or is answered 5xx/429 (pass 1 for
    a call that must not be repeated). Raises :class:`TransportError` (naming ``what``) when no answer came."""
    maybe_sent = False  # whether any attempt may have reached the server
    for attempt in range(attempts):
        last = attempt == attempts - 1
        try:
            reply = send_once()
        except TransportError as exc:
            maybe_sent = maybe_sent or not isinstance(exc, NotConnected)
            if last or isinstance(exc, TimedOut):
                raise (TransportError if maybe_sent else NotConnected)(f"{what}: {exc}") from exc
        else:
            maybe_sent = True
            if reply.status not in RETRYABLE_STATUS or last:
                return reply
        time.sleep(backoff_delay(attempt, base_s=0.05, cap_s=1.0))
    raise AssertionError("unreachable: the last attempt returns or raises")


def sent(store: str, method: str, key: str, send: Callable[[], Reply]) -> Reply:
    """``send()``'s answer; a call that got none is :class:`StorageUnavailable`, and a write's outcome unknown."""
    try:
        return send()
    except NotConnected as exc:
        raise StorageNotReached(f"{store} {method} {key!r} failed (not sent): {exc}") from exc
    except TransportError as exc:
        unknown = " (the write may or may not have happened)" if method in ("PUT", "DELETE") else ""
        raise StorageUnavailable(f"{store} {method} {key!r} failed{unknown}: {exc}") from exc


def unavailable(store: str, method: str, key: str, reply: Reply) -> StorageUnavailable:
    """An answer that is neither the call's success nor one of its expected refusals. A 4xx is the store refusing
    the request (credentials, policy, throttling): it changed nothing; after a 5xx a write's outcome is unknown."""
    kind = WriteNotApplied if 400 <= reply.status < 500 else StorageUnavailable
    return kind(f"{store} {method} {key!r} failed: {reply.describe()}")
