"""Parse a table location into the parts a credential is scoped by, refusing anything that could widen it.

A credential's scope is written into an S3 policy ``Resource`` (where ``*``, ``?`` and ``${...}`` are patterns),
a GCS CEL expression (a quoted string literal) and an Azure SAS path. A location that carries any of those
characters, or ``.``/``..`` segments that clients resolve differently, is refused rather than escaped: no
location Arco allocates contains them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

Cloud = Literal["s3", "gcs", "azure", "local"]

_CLOUDS: dict[str, Cloud] = {
    "s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs",
    "az": "azure", "abfs": "azure", "abfss": "azure", "wasb": "azure", "wasbs": "azure",
    # Nothing outside the server can use these: there is no credential to hand out.
    "file": "local", "memory": "local",
}
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ACCOUNT_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]+)?")
_UNSAFE = re.compile(r"[*?$'\"\\\x00-\x1f\x7f]")


class InvalidLocation(ValueError):
    """A location that cannot be scoped safely."""


@dataclass(frozen=True)
class StorageLocation:
    cloud: Cloud
    scheme: str          # as the location spells it, lower-cased: s3a stays s3a so clients' prefix matching works
    bucket: str          # S3/GCS bucket or Azure container; "" for local
    key_prefix: str      # "" (the whole bucket) or "a/b/" with exactly one trailing slash
    account_host: str = ""  # the host of abfss://container@host/..., else ""

    @property
    def url(self) -> str:
        """The normalised prefix URL, always ending in ``/``."""
        if self.cloud == "local":
            return f"{self.scheme}://{self.key_prefix}"
        authority = f"{self.bucket}@{self.account_host}" if self.account_host else self.bucket
        return f"{self.scheme}://{authority}/{self.key_prefix}"


def normalise_key_prefix(path: str) -> str:
    """``/a//b/`` -> ``a/b/``; ``""`` stays ``""``. Raises :class:`InvalidLocation` for ``.``/``..`` or patterns."""
    if _UNSAFE.search(path):
        raise InvalidLocation(f"location path {path!r} contains a character that cannot be scoped safely")
    segments = [s for s in path.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise InvalidLocation(f"location path {path!r} contains a '.' or '..' segment")
    return "".join(f"{s}/" for s in segments)


def is_local(location: str) -> bool:
    """Whether a location is a local directory (nothing to vend), from its scheme alone: what
    :func:`parse_location` would call ``local``, without splitting the URL (every loadTable asks)."""
    if "://" not in location:
        return True
    return _CLOUDS.get(location.partition("://")[0].lower()) == "local"


def parse_location(location: str) -> StorageLocation:
    """Split a table location (URL or local path) into cloud, bucket and normalised key prefix."""
    if "://" not in location:
        if location.startswith("file:"):  # file:/path, the short form
            return StorageLocation("local", "file", "", location[len("file:"):])
        return StorageLocation("local", "file", "", location)
    scheme = location.partition("://")[0].lower()
    cloud = _CLOUDS.get(scheme)
    if cloud is None:
        raise InvalidLocation(f"unsupported storage scheme {scheme!r} in {location!r}")
    try:
        parts = urlsplit(location)
    except ValueError as exc:  # an unbalanced '[' or ']' in the host
        raise InvalidLocation(f"{location!r} is not a valid storage URL: {exc}") from None
    if cloud == "local":
        return StorageLocation("local", scheme, "", parts.netloc + parts.path)
    # Checked on the raw string: urlsplit would take "?" and "#" as delimiters and silently drop tabs and newlines.
    if _UNSAFE.search(location) or "#" in location:
        raise InvalidLocation(f"location {location!r} contains a character that cannot be scoped safely")
    bucket, account_host = parts.netloc, ""
    if cloud == "azure" and "@" in bucket:
        bucket, _, account_host = bucket.partition("@")
        if not _ACCOUNT_HOST.fullmatch(account_host):
            raise InvalidLocation(f"invalid storage account host {account_host!r} in {location!r}")
        account_host = account_host.lower()
    if not _BUCKET.fullmatch(bucket):
        raise InvalidLocation(f"invalid bucket or container name {bucket!r} in {location!r}")
    return StorageLocation(cloud, scheme, bucket, normalise_key_prefix(parts.path), account_host)
