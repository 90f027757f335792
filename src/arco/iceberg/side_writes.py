"""Storage calls made beside a request's critical path: a pending receipt beside the metadata file's write, a
catalog check beside the first write, two independent files at once.

The receipt is the record of an attempt, best effort (the compactor ignores it): the next sequential write does not
wait for it, which would cost the request the tail of a second write and a thread's wake-up (0.3-0.4 ms on
SeaweedFS, by a timeline of the storage calls). :func:`settle` waits for it before the step that must follow it
(the CAS of a commit, the Tier 1 append of a create), or once the attempt has failed, so none outlives its request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from arco.events.receipts import iceberg_receipt, write_receipt
from arco.storage.base import StorageBackend

log = logging.getLogger(__name__)

# One slot per table committing at once (a server has one leader per hot table); threads start on demand.
SIDE = ThreadPoolExecutor(max_workers=32, thread_name_prefix="arco-commit-side")


def start_pending_receipt(storage: StorageBackend, **fields: Any) -> Future[object]:
    """Start writing an attempt's pending receipt beside the caller. The event is built here, so the side thread
    only writes: building it there would hold the interpreter while the caller serializes the metadata, delaying
    both writes."""
    key, event = iceberg_receipt("pending", **fields)
    return SIDE.submit(write_receipt, storage, key, event)


def settle(receipt: Future[object] | None) -> None:
    """Wait for a best-effort side write: a pending receipt, or the clean-up of a lost try. It never fails the
    request (:func:`arco.events.receipts.write_receipt` and the clean-up report storage errors themselves; anything
    else is logged here); only the death of the process passes (the fault tests' crash)."""
    if receipt is None:
        return
    try:
        receipt.result()
    except Exception:  # noqa: BLE001 - best effort, and the request's outcome does not depend on it
        log.exception("a best-effort side write failed (the request goes on)")


def at_once(first: Callable[[], object], second: Callable[[], object]) -> None:
    """Run two independent writes concurrently; return once both are done (also when the first fails), raising the
    first failure."""
    future = SIDE.submit(second)
    try:
        first()
    except BaseException:
        wait([future])
        raise
    future.result()
