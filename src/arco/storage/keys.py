"""Which object keys the storage layer accepts.

Keys come partly from users (table and namespace names end up in paths), so they are checked here once, the
same way for every backend: a key that one backend would store and another would refuse or reinterpret
(``..``, an empty segment, a control character) is refused everywhere.
"""

from __future__ import annotations

import re

from arco.storage.base import InvalidKey

MAX_KEY_BYTES = 1024  # S3's and GCS's limit; Azure allows more, the local backend less per segment
MAX_SEGMENT_BYTES = 255  # the usual file-name limit of local file systems
RESERVED_PREFIX = ".arco-"  # the local backend's own bookkeeping lives under these top-level names
# Control characters, DEL, lone surrogates (not valid Unicode) and the backslash (a separator on some systems).
_REFUSED_CHARACTER = re.compile("[\x00-\x1f\x7f\ud800-\udfff\\\\]")


def check_key(key: str) -> str:
    """Return ``key`` unchanged if every backend can store it faithfully, else raise :class:`InvalidKey`.

    Every storage call checks its key (several per request), so the common case is a few scans in C, and segment
    lengths are measured only when the whole key could hold a segment too long."""
    if not isinstance(key, str) or not key:
        raise InvalidKey("object key must be a non-empty string")
    size = len(key) if key.isascii() else len(key.encode("utf-8", errors="surrogatepass"))
    if size > MAX_KEY_BYTES:
        raise InvalidKey(f"object key is {size} bytes long; the limit is {MAX_KEY_BYTES}")
    refused = _REFUSED_CHARACTER.search(key)
    if refused is not None:
        ch = refused.group()
        if ch == "\\":
            raise InvalidKey(f"object key contains a backslash: {key!r}")
        if 0xD800 <= ord(ch) <= 0xDFFF:
            raise InvalidKey(f"object key is not valid Unicode: {key!r}")
        raise InvalidKey(f"object key contains a control character: {key!r}")
    bounded = f"/{key}/"  # every segment between two "/": three substring scans find an empty, "." or ".." one
    if "//" in bounded or "/./" in bounded or "/../" in bounded:
        raise InvalidKey(f"object key has an empty, '.' or '..' segment: {key!r}")
    if size > MAX_SEGMENT_BYTES:
        for segment in key.split("/"):
            if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
                raise InvalidKey(f"object key has a segment longer than {MAX_SEGMENT_BYTES} bytes: {key!r}")
    if key.startswith(RESERVED_PREFIX):  # the first segment's prefix: the reserved prefix holds no "/"
        raise InvalidKey(f"object keys starting with {RESERVED_PREFIX!r} are reserved: {key!r}")
    return key


def check_prefix(prefix: str) -> str:
    """A listing prefix is empty, a key, or a key cut after a ``/`` (``a/b/``) or inside a segment (``a/b/pa``)."""
    if prefix:
        check_key(prefix + "x" if prefix.endswith("/") else prefix)
    return prefix
