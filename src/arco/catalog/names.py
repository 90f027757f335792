"""Which names a catalog, namespace (schema) or table may have, and how names become safe path segments.

The rules are Unity Catalog's, so one name works on every surface: 1 to 255 characters, none of them a period,
space, slash, backslash or control character (C0 and C1, such as U+009B, a terminal's escape), nor a character
that reorders or hides text (bidirectional embeddings, overrides and isolates, line and paragraph separators, the
byte order mark), which would let a name show as another; and a name is in Unicode NFC, so that ``café`` cannot
be two names (a composed ``é``, and ``e`` with a combining accent) that look alike in every listing. Names never
become storage paths as they are: locations use :func:`slug` plus an id, so a hostile name cannot reach outside
its directory.
"""

from __future__ import annotations

import re
import unicodedata

from arco.catalog.errors import InvalidRequestError

MAX_NAME_LENGTH = 255
MAX_NAMESPACE_DEPTH = 16
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f. /\\\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def check_name(kind: str, name: object) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidRequestError(f"{kind} name must be a non-empty string")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidRequestError(f"{kind} name is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}")
    bad = _FORBIDDEN.search(name)
    if bad:
        raise InvalidRequestError(
            f"{kind} name {name!r} contains {bad.group()!r}; names may not contain periods, spaces, slashes, "
            "backslashes, control characters or characters that reorder text"
        )
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in name):
        raise InvalidRequestError(f"{kind} name {name!r} is not valid Unicode")
    if not unicodedata.is_normalized("NFC", name):
        raise InvalidRequestError(f"{kind} name {name!r} is not in Unicode NFC (a letter and a combining mark "
                                  f"where one composed character exists): send {unicodedata.normalize('NFC', name)!r}")
    return name


def check_namespace(levels: object) -> tuple[str, ...]:
    if not isinstance(levels, (list, tuple)) or not levels:
        raise InvalidRequestError("namespace must be a non-empty list of names")
    if len(levels) > MAX_NAMESPACE_DEPTH:
        raise InvalidRequestError(f"namespace has {len(levels)} levels; the limit is {MAX_NAMESPACE_DEPTH}")
    return tuple(check_name("namespace", level) for level in levels)


def slug(name: str, limit: int = 40) -> str:
    """A lower-case ASCII form of a name for readable storage paths (never unique on its own)."""
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", name.lower()).strip("_")
    return cleaned[:limit] or "x"
