"""Storage URLs as clients send them, made canonical before any decision about them (pure, no I/O).

Every location a client names (a table's location, an external location's URL, a ``write.data.path``) goes
through :func:`normalize` once, so that two spellings of one place compare equal and no spelling reaches a
place its text does not seem to name. Canonical forms:

| given | canonical |
| --- | --- |
| ``/abs/path``, ``file:/abs/path``, ``file:///abs/path``, ``file://localhost/abs/path`` | ``file:///abs/path`` |
| ``s3a://B/k``, ``s3n://B/k``, ``S3://b/k/`` | ``s3://b/k`` |
| ``gs://b/k`` | ``gs://b/k`` |
| ``wasbs://c@a.blob.core.windows.net/k``, ``abfs://c@a.dfs...`` | ``abfss://c@a.dfs.core.windows.net/k`` |
| ``az://c/k``, ``abfs://c/k``, ``wasbs://c/k`` (the warehouse's own account) | ``az://c/k`` |
| ``abfss://c@home.dfs.core.windows.net/k`` and every other spelling naming the home account | ``az://c/k`` |
| ``memory://name/k`` (the in-memory backend of unit tests) | ``memory://name/k`` |

Percent-escapes are decoded once (``%2F`` is a slash, ``%2E%2E`` is ``..``); empty segments and ``.`` are
dropped and the trailing slash removed. A ``..`` segment, a backslash, a control character, a ``%`` left
after decoding, a query or a fragment is refused rather than interpreted: a location is a plain prefix, and a
spelling that only makes sense after resolution is either a mistake or an attack.

The home account is the Azure storage account this process's Azure credentials belong to (the warehouse's, or the
one credentials are vended for): a process learns it when it opens that storage (:func:`set_home_azure_account`).
Without it, ``az://c/k`` and ``abfss://c@home.dfs.core.windows.net/k`` would be two canonical forms of the same
blobs, and every rule that compares locations (an external location must not cover ``_catalog``) could be passed
by spelling the account out.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

MAX_URL_CHARS = 4096
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # one search in C: a test per character made normalize 3x slower
_AZURE_CONTAINER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{1,62}")
SCHEME_ALIASES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "az": "az", "abfs": "abfss", "abfss": "abfss",
                  "wasb": "abfss", "wasbs": "abfss", "file": "file", "memory": "memory"}


_home_azure_account: str | None = None


def set_home_azure_account(account: str | None) -> str | None:
    """Name the Azure storage account whose containers ``az://`` URLs (and ``abfs://c/k``) mean; the one before."""
    global _home_azure_account
    before, _home_azure_account = _home_azure_account, (account or "").lower() or None
    return before


class BadLocation(ValueError):
    """A storage URL that is malformed or hostile; the message says what to send instead."""


def normalize(raw: object) -> str:
    """The canonical form of a storage URL (see the module docstring), or :class:`BadLocation`."""
    return _normalized(raw, home_as_az=True)


def as_given(raw: object) -> str:
    """:func:`normalize`, except that a URL naming the home account by its host keeps it (``abfss://c@home.dfs...``
    stays so): the spelling a location is stored and answered in, as the client gave it, since the engines that
    read it back (Spark's ``abfss://``) have no ``az://``. Decisions compare :func:`normalize` of it."""
    return _normalized(raw, home_as_az=False)


def _normalized(raw: object, *, home_as_az: bool) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise BadLocation("a location must be a non-empty storage URL such as s3://bucket/path or file:///path")
    if len(raw) > MAX_URL_CHARS:
        raise BadLocation(f"a location may be at most {MAX_URL_CHARS} characters long")
    if _CONTROL.search(raw):
        raise BadLocation("a location must not contain control characters")
    if "\\" in raw:
        raise BadLocation("a location must not contain backslashes; use '/' between path segments")
    if raw.startswith("/"):
        raw = "file://" + raw
    if "://" not in raw and not raw.lower().startswith("file:"):
        raise BadLocation(f"{raw!r} is not an absolute storage URL: use s3://bucket/path, gs://bucket/path, "
                          "abfss://container@account.dfs.core.windows.net/path or file:///absolute/path")
    try:
        parts = urlsplit(raw)
    except ValueError as exc:  # an unbalanced '[' or ']' in the host
        raise BadLocation(f"{raw!r} is not a valid storage URL: {exc}") from None
    scheme = SCHEME_ALIASES.get(parts.scheme.lower())
    if scheme is None:
        raise BadLocation(f"unsupported storage scheme {parts.scheme!r}; supported: "
                          f"{', '.join(sorted(set(SCHEME_ALIASES)))}")
    if parts.query or parts.fragment or raw.endswith("?") or "#" in raw:
        raise BadLocation("a location must not have a query string or fragment")
    path = _canonical_path(parts.path)
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise BadLocation(f"file: locations must be local (file:///path), not on host {parts.netloc!r}")
        return "file://" + (path or "/")
    authority = _authority(scheme, parts.netloc, home_as_az)
    if scheme == "abfss" and "@" not in authority:
        scheme = "az"
    return f"{scheme}://{authority}{path}"


def _canonical_path(raw_path: str) -> str:
    decoded = unquote(raw_path, errors="strict")
    if "%" in decoded:
        raise BadLocation("a location must not be percent-encoded twice (a '%' remains after decoding)")
    if _CONTROL.search(decoded) or "\\" in decoded:
        raise BadLocation("a location must not contain control characters or backslashes, encoded or not")
    segments = [s for s in decoded.split("/") if s not in ("", ".")]
    if ".." in segments:
        raise BadLocation("a location must not contain '..' segments; name the directory itself")
    return "".join("/" + s for s in segments)


def _authority(scheme: str, netloc: str, home_as_az: bool = True) -> str:
    if not netloc or "%" in netloc or "/" in netloc:
        raise BadLocation(f"a {scheme}:// location needs a bucket or container name after '{scheme}://'")
    if scheme in ("s3", "gs", "az", "memory"):
        if "@" in netloc or ":" in netloc:
            raise BadLocation(f"a {scheme}:// location names a bucket, not a user or port: {netloc!r}")
        return netloc.lower()
    container, at, host = netloc.partition("@")
    if not at and _AZURE_CONTAINER.fullmatch(container):
        return container.lower()  # abfs://container/path: the warehouse's own account, as az://container/path
    if not at or not container or not host or "@" in host:  # two '@': parsers disagree on which names the host
        raise BadLocation("an abfss:// location has the form abfss://container@account.dfs.core.windows.net/path")
    account, dot, domain = host.lower().partition(".")
    if account == _home_azure_account and home_as_az:
        return container.lower()  # the home account spelled out: the same blobs as az://container (see above)
    if dot and domain.startswith("blob."):
        domain = "dfs." + domain[len("blob."):]  # one account, two endpoints: the same storage
    return f"{container.lower()}@{account}{dot}{domain}"


def split_root(url: str) -> tuple[str, str]:
    """``scheme://authority`` and the path after it, as written (``s3a://b/k/x`` gives ``s3a://b`` and ``/k/x``)."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority}", slash + path


def same_place(a: object, b: object) -> bool:
    """Whether two storage URLs name the same place once canonical (never, if either is not a valid location)."""
    try:
        return b is not None and normalize(a) == normalize(b)
    except BadLocation:
        return False


def within(child: str, parent: str) -> bool:
    """Whether canonical URL ``child`` is ``parent`` or lies under it (``.../t1`` does not lie under ``.../t``)."""
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def file_under(path: str, root: str) -> bool:
    """Whether the path of a file as a writer named it (a Delta log's, a manifest list's, not made canonical:
    ``#`` or ``%`` may be part of a file's name) lies under ``root``, spelled plainly: Hadoop's ``file:/x`` is
    taken as ``file:///x``, and a ``.`` or ``..`` segment is not under anything."""
    path, root = _hadoop_file_spelling(path), _hadoop_file_spelling(root).rstrip("/") + "/"
    return path.startswith(root) and all(segment not in (".", "..") for segment in path[len(root):].split("/"))


def _hadoop_file_spelling(url: str) -> str:
    return "file://" + url[len("file:"):] if url.startswith("file:/") and not url.startswith("file://") else url


def overlaps(a: str, b: str) -> bool:
    """Whether one canonical URL lies under the other (or they are the same place)."""
    return within(a, b) or within(b, a)


def local_path(url: str) -> Path:
    """``file:///p``, ``file://localhost/p`` and Hadoop's ``file:/p`` (Spark writes that spelling) name ``/p``."""
    rest = url[len("file:"):]
    if rest.startswith("//"):
        rest = rest[2:]
        rest = rest[len("localhost"):] if rest.startswith("localhost/") else rest
    return Path(rest)
