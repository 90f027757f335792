"""Page tokens for list endpoints of every API: opaque to clients, the last returned sort key inside."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import TypeVar

from arco.catalog.errors import InvalidRequestError

T = TypeVar("T")
MAX_PAGE_SIZE = 1000


def page(items: Sequence[T], sort_key: Callable[[T], str], token: str | None,
         size: int | None) -> tuple[list[T], str | None]:
    """Items after the token's key, at most ``size`` of them; ``items`` must be sorted by ``sort_key``."""
    after = _decode(token) if token else None
    start = 0
    if after is not None:
        start = next((i for i, item in enumerate(items) if sort_key(item) > after), len(items))
    if size is None:
        return list(items[start:]), None
    chunk = list(items[start:start + size])
    more = start + size < len(items)
    return chunk, (_encode(sort_key(chunk[-1])) if more and chunk else None)


def _encode(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _decode(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequestError("the page token is not a token this server issued") from None
