"""Decisions a change must still pass on the catalog state it lands on, not only on the state it was asked on.

A request's grant checks read the catalog when the request arrives; its change is appended to the log later (after
its metadata file and pointer, say), built against the state at the append. Another server may append a revoke in
between: checked only on arrival, the change would land after the revoke, and the log would show a principal
doing what it no longer had the grant for. So each check a request passed is noted here as a *condition*, a pure
function of a state that raises where the decision would now be a refusal, and every change the request appends
re-runs its conditions against the state it is built on (:class:`arco.catalog.batching.Pending`): an append that
loses its position to another server's rebuilds, and re-checks, on the state that includes it.

The conditions live in a context variable: a request's own (each request runs in a context of its own), copied
into the worker thread that makes its change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from arco.catalog.state import CatalogState

Condition = Callable[[CatalogState], None]

_CONDITIONS: ContextVar[tuple[Condition, ...]] = ContextVar("arco_landing_conditions", default=())


def require_on_landing(condition: Condition) -> None:
    """Note that every change the current request makes must pass ``condition`` on the state it lands on."""
    _CONDITIONS.set((*_CONDITIONS.get(), condition))


def landing_conditions() -> tuple[Condition, ...]:
    """The conditions the current request's changes must pass."""
    return _CONDITIONS.get()


@contextmanager
def on_landing(condition: Condition) -> Iterator[None]:
    """``condition`` for the changes made inside the block only (a service that checks and changes in one call)."""
    token = _CONDITIONS.set((*_CONDITIONS.get(), condition))
    try:
        yield
    finally:
        _CONDITIONS.reset(token)
