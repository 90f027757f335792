"""Page tokens for list endpoints of every API: opaque to clients, the last returned sort key inside.

Unity Catalog's reference server hands out the last name returned as its token, and its clients' tests (and
scripts written against it) send such names; an API that takes them too says how a name becomes a sort key
(``plain``), and a token is told from a name by its mark."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import TypeVar

from arco.catalog.errors import InvalidRequestError

T = TypeVar("T")
MAX_PAGE_SIZE = 1000


MARK = "~"  # not in base64url's alphabet, nor in a Unity Catalog name


def page(items: Sequence[T], sort_key: Callable[[T], str], token: str | None, size: int | None,
         plain: Callable[[str], str] | None = None) -> tuple[list[T], str | None]:
    """Items after the token's key, at most ``size`` of them; ``items`` must be sorted by ``sort_key``. ``plain``:
    a token this server did not issue is the last item's name, and this makes it a sort key (else it is a 400)."""
    after = _decode(token, plain) if token else None
    start = 0
    if after is not None:
        start = next((i for i, item in enumerate(items) if sort_key(item) > after), len(items))
    if size is None:
        return list(items[start:]), None
    chunk = list(items[start:start + size])
    more = start + size < len(items)
    return chunk, (_encode(sort_key(chunk[-1])) if more and chunk else None)


def names_hold(name: str, needle: str | None) -> bool:
    """Whether ``name`` holds ``needle``, ignoring case (no needle: every name does): a list's name search."""
    return not needle or needle.casefold() in name.casefold()


def _encode(key: str) -> str:
    return MARK + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _decode(token: str, plain: Callable[[str], str] | None) -> str:
    if not token.startswith(MARK):
        if plain is None:
            raise InvalidRequestError("the page token is not a token this server issued")
        return plain(token)
    body = token[len(MARK):]
    try:  # validated: a token with characters outside base64url (or none at all) is not one of ours
        key = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        key = ""
    if not key or _encode(key) != token:
        raise InvalidRequestError("the page token is not a token this server issued")
    return key
