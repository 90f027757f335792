"""Every recipient read becomes an audit receipt, which the compactor turns into a row of the audit history.

``_catalog/events/{day}/sharing/committed/{event id}.json`` holds a ``DeltaSharingRead`` event naming the
recipient (the history's ``principal``), the share, the shared table and what was asked. Like every receipt it
is written create-only and best effort: a storage hiccup never fails the recipient's read.
"""

from __future__ import annotations

import time
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
