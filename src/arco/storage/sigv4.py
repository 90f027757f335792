"""AWS Signature Version 4 for S3's single-object calls (:mod:`arco.storage.s3_wire`): headers, and pre-signed
GET URLs (a Delta Sharing answer carries one per file); and the arithmetic of the signatures the remote-signing
endpoint returns (:func:`authorization`, :func:`canonical_query`; :mod:`arco.vending.signing`), where a client
asks once for every S3 request it makes.

Why not botocore's signer (``S3SigV4Auth``), which these calls used before: it builds an ``AWSRequest``, parses
the URL three times and derives the signing key anew for every request, 45-55 us of CPU a call on this project's
2-core reference machine, where this takes 5 us; a keyed commit on an object store makes about seven such calls
under one interpreter lock. boto3's ``generate_presigned_url`` takes about 140 us a URL, and a shared table's
query signs one for each of its files. The algorithm is the one botocore implements for S3 (the path as sent, not
normalised; the payload's SHA-256 always signed; every header the caller sets signed, with ``host``,
``x-amz-date``, ``x-amz-content-sha256`` and the session token), and the unit tests check that both produce the
same headers, byte for byte, for the same request and instant (tests/unit/storage/test_sigv4.py, and
tests/unit/vending/test_signing.py for remote signing: 7 us a request there, against botocore's 45). Credentials
still come from botocore's provider chain (refreshed by it); only the arithmetic is here.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import time
from typing import Any
from urllib.parse import quote

# Headers botocore leaves unsigned (hop-by-hop ones, and those a proxy may rewrite).
UNSIGNED_HEADERS = frozenset({"connection", "expect", "keep-alive", "proxy-authenticate", "proxy-authorization",
                              "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id"})
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_ALGORITHM = "AWS4-HMAC-SHA256"


def _query_encoded(text: str) -> str:
    return quote(text, safe="-_.~")


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()


def timestamp(now: float | None = None) -> str:
    """SigV4's ``X-Amz-Date`` for ``now`` (default: the clock)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))


@functools.lru_cache(maxsize=64)
def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    # Derived once a day per secret, region and service: four HMACs a request saved.
    return _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), day), region), service), "aws4_request")


def canonical_query(query: str) -> str:
    """A URL's query as SigV4 signs it for S3, as botocore does: its ``&``-separated pairs, as sent (not decoded
    or re-encoded), sorted by name, then value."""
    if not query:
        return ""
    pairs = sorted(pair.partition("=")[::2] for pair in query.split("&"))
    return "&".join(f"{name}={value}" for name, value in pairs)


def authorization(access_key: str, secret: str, region: str, service: str, stamp: str, method: str, path: str,
                  query: str, canonical_headers: dict[str, str], payload: str) -> str:
    """The ``Authorization`` header of a request: ``path`` exactly as sent, ``query`` canonical
    (:func:`canonical_query`), ``canonical_headers`` every signed header by lower-case name with its canonical
    value (values trimmed, inner runs of white space folded, several values joined with ``,``)."""
    signed_names = ";".join(sorted(canonical_headers))
    signature = _signature(secret, stamp, region, service,
                           _canonical_request(method, path, query, canonical_headers, payload))
    return (f"{_ALGORITHM} Credential={access_key}/{_scope(stamp[:8], region, service)}, "
            f"SignedHeaders={signed_names}, Signature={signature}")


def header_value(value: str) -> str:
    """A header value as SigV4 signs it: trimmed, inner runs of white space folded to one space."""
    return " ".join(value.split())


def _scope(day: str, region: str, service: str) -> str:
    return f"{day}/{region}/{service}/aws4_request"


def _canonical_request(method: str, path: str, query: str, canonical_headers: dict[str, str], payload: str) -> str:
    names = sorted(canonical_headers)
    return "\n".join((method.upper(), path, query, "".join(f"{n}:{canonical_headers[n]}\n" for n in names),
                      ";".join(names), payload))


def _signature(secret: str, stamp: str, region: str, service: str, canonical_request: str) -> str:
    digest = hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()
    to_sign = f"{_ALGORITHM}\n{stamp}\n{_scope(stamp[:8], region, service)}\n{digest}"
    key = _signing_key(secret, stamp[:8], region, service)
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


class SigV4Signer:
    """Signs requests to one service in one region with a botocore credentials object (``get_frozen_credentials``);
    thread-safe."""

    def __init__(self, credentials: Any, region: str, service: str = "s3") -> None:
        self._credentials = credentials
        self._region, self._service = region, service

    def headers(self, method: str, path: str, host: str, headers: dict[str, str], body: bytes,
                now: float | None = None) -> dict[str, str]:
        """``headers`` with the signature's added: ``path`` exactly as it is sent (percent-encoded, no query),
        ``host`` the Host header's value, ``now`` the signing instant (default: the clock)."""
        frozen = self._credentials.get_frozen_credentials()
        stamp = timestamp(now)
        payload = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256
        signed_headers = {**headers, "X-Amz-Date": stamp, "X-Amz-Content-SHA256": payload}
        if frozen.token:
            signed_headers["X-Amz-Security-Token"] = frozen.token
        canonical: dict[str, str] = {"host": host}
        for name, value in signed_headers.items():
            lower = name.lower()
            if lower not in UNSIGNED_HEADERS:
                canonical[lower] = header_value(value)
        signed_headers["Authorization"] = authorization(frozen.access_key, frozen.secret_key, self._region,
                                                        self._service, stamp, method, path, "", canonical, payload)
        return signed_headers

    def presigned_query(self, path: str, host: str, expires_s: int, now: float | None = None) -> str:
        """The query string that lets anyone GET ``path`` (as sent) on ``host`` for ``expires_s`` seconds from
        ``now``: only the Host header signed, the payload unsigned (S3's query-string authentication)."""
        frozen = self._credentials.get_frozen_credentials()
        stamp = timestamp(now)
        scope = _scope(stamp[:8], self._region, self._service)
        params = [("X-Amz-Algorithm", _ALGORITHM), ("X-Amz-Credential", f"{frozen.access_key}/{scope}"),
                  ("X-Amz-Date", stamp), ("X-Amz-Expires", str(expires_s)), ("X-Amz-SignedHeaders", "host")]
        if frozen.token is not None:
            params.append(("X-Amz-Security-Token", frozen.token))
        query = "&".join(f"{_query_encoded(name)}={_query_encoded(value)}" for name, value in params)
        request = _canonical_request("GET", path, canonical_query(query), {"host": host}, "UNSIGNED-PAYLOAD")
        return f"{query}&X-Amz-Signature={_signature(frozen.secret_key, stamp, self._region, self._service, request)}"
