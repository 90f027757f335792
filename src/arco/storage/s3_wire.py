"""S3's single-object calls (GET, HEAD, PUT, DELETE) sent straight over kept-alive connections
(:mod:`arco.storage.connections`), signed with SigV4 (:mod:`arco.storage.sigv4`), and pre-signed GET URLs.

Why not boto3 for these: a commit's critical path is sequential conditional writes, and boto3's request
pipeline (parameter validation, event hooks, response parsing, checksum handlers) costs about 1.5 ms of CPU per
call on this project's 2-core reference machine, which on a loopback object store was a third of each write
(``bench/load_path.py``: a keyed commit on SeaweedFS took 1.62x four raw puts). These calls need none of it: a
path, a few headers, a status and an ETag. Credentials stay with botocore (the session's provider chain: keys,
environment, profiles, instance roles, with refresh), and so do the endpoint (the client's resolved
``endpoint_url`` and region) and the CA bundle. Listing, which parses XML, still goes through the boto3 client
(:mod:`arco.storage.s3`); pre-signed GETs are made here too. The calls were sent through urllib3, then
``http.client``, and signed by botocore's ``S3SigV4Auth``, until each proved to cost more than the calls need
(the modules say how much).

Retries: as :mod:`arco.storage.object_calls` says (reads and unconditional writes only).
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import quote, urlsplit

from botocore.httpsession import get_cert_path

from arco.storage.connections import ConnectionPool, host_header
from arco.storage.object_calls import Reply, send_with_retries
from arco.storage.sigv4 import SigV4Signer

_DNS_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def _quoted(full_key: str) -> str:
    """A key as it goes into the URL: percent-encoded once, its slashes kept."""
    return quote(full_key, safe="/~")


def bucket_base_url(endpoint_url: str, bucket: str, path_style: bool) -> str:
    """Where the bucket's objects live: ``{endpoint}/{bucket}/`` (path style) or ``{scheme}://{bucket}.{host}/``
    (virtual-hosted, boto3's choice for DNS-compatible names, and for https only without dots)."""
    parts = urlsplit(endpoint_url)
    base_path = parts.path.rstrip("/")
    virtual = not path_style and _DNS_BUCKET.match(bucket) is not None and ("." not in bucket or parts.scheme == "http")
    if virtual:
        return f"{parts.scheme}://{bucket}.{parts.netloc}{base_path}/"
    return f"{parts.scheme}://{parts.netloc}{base_path}/{quote(bucket, safe='')}/"


class S3Wire:
    """Signed single-object requests to one bucket; thread-safe (one connection pool shared by all threads)."""

    def __init__(self, *, endpoint_url: str, bucket: str, region: str, path_style: bool, credentials: Any,
                 max_connections: int = 32, connect_timeout_s: float = 5, read_timeout_s: float = 30,
                 attempts: int = 3) -> None:
        self._endpoint_url, self._path_style = endpoint_url, path_style
        self._base = bucket_base_url(endpoint_url, bucket, path_style)
        base = urlsplit(self._base)
        self._base_path = base.path
        # botocore credentials (refreshable or not), or None for anonymous access
        self._signer = SigV4Signer(credentials, region) if credentials is not None else None
        self._attempts = attempts
        verify = os.environ.get("AWS_CA_BUNDLE") or get_cert_path(True)
        self._pool = ConnectionPool(base.scheme, base.hostname or "", base.port, max_idle=max_connections,
                                    connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s,
                                    ca_file=verify if isinstance(verify, str) else None)

    def url_of(self, full_key: str) -> str:
        return self._base + _quoted(full_key)

    def send(self, method: str, full_key: str, *, headers: dict[str, str] | None = None, body: bytes = b"",
             retry: bool = True) -> Reply:
        """One request, retried on transport errors and 5xx/429 answers when ``retry`` (see the module docstring).

        Raises :class:`TransportError` when no answer came (after the retries, if any)."""
        return send_with_retries(lambda: self._send_once(method, full_key, headers or {}, body),
                                 f"{method} {full_key!r}", self._attempts if retry else 1)

    def _send_once(self, method: str, full_key: str, headers: dict[str, str], body: bytes) -> Reply:
        path = self._base_path + _quoted(full_key)
        signed = self.signed_headers(method, path, headers, body)
        # A PUT always carries a body (Content-Length: 0 for an empty object); the other calls never do.
        return Reply.of(self._pool.request(method, path, signed, body if method == "PUT" else None))

    def signed_headers(self, method: str, path: str, headers: dict[str, str], body: bytes,
                       now: float | None = None) -> dict[str, str]:
        """The headers a request to ``path`` (as sent) goes out with: signed, unless access is anonymous."""
        if self._signer is None:
            return headers
        return self._signer.headers(method, path, self._pool.host_header, headers, body, now)

    def presigned_get(self, bucket: str, full_key: str, expires_s: int, now: float | None = None) -> str | None:
        """A URL that lets anyone GET ``full_key`` of ``bucket`` (any bucket these credentials read, at this
        endpoint) for ``expires_s`` seconds; None where access is anonymous (nothing to sign with)."""
        if self._signer is None:
            return None
        base = urlsplit(bucket_base_url(self._endpoint_url, bucket, self._path_style))
        path = base.path + _quoted(full_key)
        query = self._signer.presigned_query(path, host_header(base.scheme, base.hostname or "", base.port),
                                             expires_s, now)
        return f"{base.scheme}://{base.netloc}{path}?{query}"

    def close(self) -> None:
        self._pool.close()
