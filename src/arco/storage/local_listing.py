"""Listing a local warehouse's files in key order, page by page, in time linear in what is listed.

A directory is ordered among its siblings as its name followed by a slash, which every key inside it starts with,
so a walk depth-first, each directory's names sorted, yields keys in key order. A walk enters no directory wholly
before the page token or outside the prefix.

A listing's next page resumes the walk its previous page suspended (:class:`Cursors`), when the same process asks
for it within a short while: without that, each page read and sorted again every name of the directories on its
way, so listing one day's receipts of a busy warehouse (tens of thousands of files in one directory) cost a
thousand pages times the directory, and a garbage collection run took minutes. A resumed walk sees each directory
as it was when the walk entered it: a file made there since is not listed by that listing (no listing is a
snapshot: an object store's shows what is there when each page is asked for), and one deleted since is skipped.

A walk is its own listing's: its page token names it (:func:`page_token`), so two listings of one prefix that reach
the same key never resume each other's walk. One that did would miss the files written in its directories after
the other walk read them, which may be before this listing began. The token still starts with the last key listed,
so a process that does not hold the walk (another one, or this one after a while) lists on after that key.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# A listing is resumed only within this long after its previous page (a slow consumer starts a fresh walk).
CURSOR_TTL_S = 30.0
MAX_CURSORS = 16
# Between the last key of a page and the walk's name in a page token: a control character, which no key holds.
_WALK_MARK = "\x00"


def page_token(last_key: str, walk: str) -> str:
    """The token of the page after ``last_key`` in the listing whose walk is named ``walk``."""
    return f"{last_key}{_WALK_MARK}{walk}"


def after_key(token: str) -> str:
    """The key a page token lists after: the token itself if it names no walk (a key given as a start)."""
    return token.partition(_WALK_MARK)[0]


def new_walk_name() -> str:
    return secrets.token_hex(8)  # unguessable: a token from elsewhere never names a walk of this process


def _names(directory: str, rel: str, skip_prefix: str | None) -> list[str]:
    """The keys of ``directory``'s entries, a directory's with a trailing slash, sorted."""
    try:
        entries = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    named = []
    with entries:
        for entry in entries:
            if skip_prefix is not None and entry.name.startswith(skip_prefix):
                continue
            if entry.is_dir(follow_symlinks=False):
                named.append(f"{rel}{entry.name}/")
            elif entry.is_file(follow_symlinks=False):
                named.append(f"{rel}{entry.name}")
    named.sort()
    return named


def walk(root: str, rel: str, prefix: str, after: str | None, top_skip: str | None) -> Iterator[str]:
    """The keys of the files under ``root``/``rel`` (``rel`` empty or ending in a slash) in key order: those that
    start with ``prefix`` and come after ``after``. Entries of the top directory whose names start with
    ``top_skip`` (the warehouse's reserved directories) are not listed."""
    for key in _names(f"{root}/{rel}", rel, top_skip if not rel else None):
        if key.endswith("/"):
            if not (key.startswith(prefix) or prefix.startswith(key)):
                continue
            # Every key inside starts with ``key``: an ``after`` past ``key`` but not inside it is past them all.
            if after is not None and after >= key and not after.startswith(key):
                continue
            yield from walk(root, key, prefix, after, None)
        elif key.startswith(prefix) and (after is None or key > after):
            yield key


@dataclass
class Walk:
    """A listing's walk, suspended after a page: the keys still to come, and the name its page tokens carry."""

    keys: Iterator[str]
    name: str


class Cursors:
    """Suspended walks by (prefix, page token), the token naming the walk's listing; each is taken once."""

    def __init__(self, size: int = MAX_CURSORS, ttl_s: float = CURSOR_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._walks: OrderedDict[tuple[str, str], tuple[float, Walk]] = OrderedDict()  # oldest suspended first
        self._lock = threading.Lock()
        self._size, self._ttl_s, self._clock = size, ttl_s, clock

    def take(self, prefix: str, token: str) -> Walk | None:
        with self._lock:
            self._forget_expired()
            kept = self._walks.pop((prefix, token), None)
            return kept[1] if kept is not None else None

    def keep(self, prefix: str, token: str, suspended: Walk) -> None:
        with self._lock:
            self._forget_expired()
            self._walks.pop((prefix, token), None)  # kept again: it goes last, as the newest suspended
            self._walks[(prefix, token)] = (self._clock(), suspended)
            while len(self._walks) > self._size:
                self._walks.popitem(last=False)

    def _forget_expired(self) -> None:
        """Drop the walks suspended too long ago, oldest first: a listing its caller stopped reading (the first
        object under a prefix, say) holds the names of the directories on its way."""
        now = self._clock()
        while self._walks:
            suspended_at, _ = next(iter(self._walks.values()))
            if now - suspended_at <= self._ttl_s:
                return
            self._walks.popitem(last=False)
