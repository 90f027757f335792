"""Request work that needs nothing that waits runs on the event loop; the rest goes to a worker thread.

Handing work to a thread and back costs a request about 0.1 ms of latency on a small server, more than a warm
``loadTable``'s own work. So a handler may first *try* read-only work on the event loop (:func:`run_inline`,
through :func:`arco.api.requests.inline_or_blocking`). Inside that attempt, every place that would wait (a
storage call, a lock another thread may hold for long, another thread's freshness check, a cloud token service)
calls :func:`refuse_to_wait` first, which raises :class:`WouldWait`; the attempt is abandoned and the work is
run again from the start in a worker thread. So work tried this way must be safe to run twice up to its first
wait: lookups, and caches filled with what was read.

Storage reads are allowed inline where a read costs less than the hand-over (``Capabilities.cheap_reads``: a
local disk, memory); writes never are (:class:`arco.storage.timed.TimedBackend` decides, for every backend the
server opens).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_INLINE: ContextVar[bool] = ContextVar("arco_inline", default=False)


class WouldWait(BaseException):
    """Raised inside an inline attempt where the work would wait; the attempt is run again in a thread."""


def is_inline() -> bool:
    return _INLINE.get()


def refuse_to_wait() -> None:
    """Call before anything that may wait: inside an inline attempt, it ends the attempt."""
    if _INLINE.get():
        raise WouldWait


def run_inline(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` here and now, as an inline attempt: raises :class:`WouldWait` where it would wait."""
    token = _INLINE.set(True)
    try:
        return fn(*args)
    finally:
        _INLINE.reset(token)
