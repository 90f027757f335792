"""Every recipient read becomes an audit receipt, which the compactor turns into a row of the audit history.

``_catalog/events/{day}/sharing/committed/{event id}.json`` holds a ``DeltaSharingRead`` event naming the
recipient (the history's ``principal``), the share, the shared table and what was asked. Like every receipt it
is written create-only and best effort: a storage hiccup never fails the recipient's read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uuid6 import uuid7

from arco.events.receipts import EVENTS, SCHEMA_VERSION, day_of, write_receipt
from arco.storage.base import StorageBackend

EVENT_TYPE = "DeltaSharingRead"


def read_event(recipient: str, action: str, *, share: str | None = None, schema: str | None = None,
               table: str | None = None, table_id: str | None = None, version: int | None = None,
               files: int | None = None, client_ip: str | None = None, user_agent: str | None = None,
               details: dict[str, Any] | None = None, at_ms: int | None = None) -> dict[str, Any]:
    return {
        "event_type": EVENT_TYPE, "schema_version": SCHEMA_VERSION, "event_id": str(uuid7()),
        "at_ms": at_ms if at_ms is not None else int(time.time() * 1000), "recipient": recipient, "action": action,
        "share": share, "schema": schema, "table": table, "table_id": table_id, "version": version,
        "files": files, "client_ip": client_ip, "client_info": user_agent, "details": details or {},
    }


def receipt_key(event: dict[str, Any]) -> str:
    return f"{EVENTS}/{day_of(event['at_ms'])}/sharing/committed/{event['event_id']}.json"


def record_read(storage: StorageBackend, event: dict[str, Any]) -> bool:
    return write_receipt(storage, receipt_key(event), event)


# -- file downloads ------------------------------------------------------------------------------------------------

DOWNLOAD_ACTION = "downloadFiles"
WINDOW_MS = 10_000  # a tally is written at most this long after its first download ...
WINDOW_FILES = 1_000  # ... or once it holds this many distinct files
LISTED_FILES = 1_000  # names kept in one event (the count is always exact)


@dataclass(frozen=True)
class Reader:
    """Who a signed file URL was made for, carried (signed) inside it: the recipient and the shared table."""

    recipient: str
    share: str
    schema: str
    table: str
    table_id: str


@dataclass
class _Tally:
    started_ms: int
    files: set[str] = field(default_factory=set)
    bytes: int = 0
    requests: int = 0
    client_ip: str | None = None
    user_agent: str | None = None


class DownloadTally:
    """File downloads as compact audit events: one ``downloadFiles`` event per recipient and table and window.

    A client reads one file with several requests (the Python client: HEAD, GET and ranged GETs of the footer
    and the row groups), and a table with thousands of files; an event per request would dwarf the data. So the
    server counts the distinct files (by name), bytes and requests a recipient read of a table, and writes them
    as one event when its window closes (WINDOW_MS after it opened: a timer writes it then, if no later download
    did), after WINDOW_FILES files, and at shutdown (the served app's lifespan, see arco.api.app). Like every
    receipt this is best effort: a crash loses at most one window of tallies (the query event, written before,
    counts what was granted).
    """

    def __init__(self, storage: StorageBackend,
                 schedule: Callable[[float, Callable[[], None]], None] | None = None) -> None:
        self.storage = storage
        self._lock = threading.Lock()
        self._tallies: dict[Reader, _Tally] = {}
        self._schedule = schedule or _daemon_timer

    def note(self, reader: Reader, name: str, sent: int, client_ip: str | None, user_agent: str | None,
             now_ms: int | None = None) -> list[dict[str, Any]]:
        """Counts one served request; gives the events now due (the caller writes them, off the event loop)."""
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        with self._lock:
            tally = self._tallies.get(reader)
            if tally is None:
                tally = self._tallies[reader] = _Tally(now_ms)
                self._schedule(WINDOW_MS / 1000, self.write_closed)
            tally.files.add(name)
            tally.bytes += sent
            tally.requests += 1
            tally.client_ip, tally.user_agent = client_ip, user_agent
            due = [r for r, t in self._tallies.items()
                   if now_ms - t.started_ms >= WINDOW_MS or len(t.files) >= WINDOW_FILES]
            return [_download_event(r, self._tallies.pop(r), now_ms) for r in due]

    def write(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            record_read(self.storage, event)

    def write_closed(self, now_ms: int | None = None) -> None:
        """Write the windows that have closed (the timer a window's first download set runs this)."""
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        with self._lock:
            due = [r for r, t in self._tallies.items() if now_ms - t.started_ms >= WINDOW_MS]
            events = [_download_event(r, self._tallies.pop(r), now_ms) for r in due]
        self.write(events)

    def flush(self) -> None:
        with self._lock:
            events = [_download_event(r, t, int(time.time() * 1000)) for r, t in self._tallies.items()]
            self._tallies.clear()
        self.write(events)


def _daemon_timer(delay_s: float, run: Callable[[], None]) -> None:
    timer = threading.Timer(delay_s + 0.05, run)  # just past the window's end
    timer.daemon = True
    timer.start()


def _download_event(reader: Reader, tally: _Tally, now_ms: int) -> dict[str, Any]:
    names = sorted(tally.files)
    details: dict[str, Any] = {"files": names[:LISTED_FILES], "bytes": tally.bytes, "requests": tally.requests,
                               "first_ms": tally.started_ms}
    if len(names) > LISTED_FILES:
        details["files_truncated"] = True
    return read_event(reader.recipient, DOWNLOAD_ACTION, share=reader.share, schema=reader.schema,
                      table=reader.table, table_id=reader.table_id, files=len(names), client_ip=tally.client_ip,
                      user_agent=tally.user_agent, details=details, at_ms=now_ms)
