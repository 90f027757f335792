"""Azure Blob Storage's single-blob calls (GET, HEAD, PUT of a block blob, DELETE) sent straight over kept-alive
connections (:mod:`arco.storage.connections`), signed with the account's Shared Key or carrying a SAS.

Why not the SDK (``azure-storage-blob``) for these: its pipeline (policies, retries, response deserialisation)
costs about 1.1 ms of CPU a call on this project's 2-core reference machine (a 600-byte conditional upload to
Azurite: 1.13 ms of CPU, 2.7 ms p50), and a keyed commit makes about seven calls under one interpreter lock.
These calls need a path, a few headers, a status and an ETag. Where the warehouse is, and with which
credential, is still resolved by the SDK (connection strings, account keys, SAS tokens: the container client's
URL and credential policy), and listing, SAS generation and container creation still go through it
(:mod:`arco.storage.azure`). The Shared Key signature is the SDK's (``SharedKeyCredentialPolicy``): the unit
tests check that both sign the same request alike.

Retries: as :mod:`arco.storage.object_calls` says (reads and unconditional writes only).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from email.utils import formatdate
from urllib.parse import quote, urlsplit

from arco.storage.connections import ConnectionPool
from arco.storage.object_calls import Reply, send_with_retries

# A service version every Azure Blob endpoint (and Azurite) serves; these calls need nothing newer.
API_VERSION = "2024-11-04"
# The standard headers Shared Key signs, in order, before the x-ms- ones.
_SIGNED_STANDARD = ("content-encoding", "content-language", "content-length", "content-md5", "content-type", "date",
                    "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range")


class SharedKey:
    """Shared Key authorization for the Blob service (version 2009-09-19 and later)."""

    def __init__(self, account_name: str, account_key: str) -> None:
        self._account = account_name
        self._key = base64.b64decode(account_key)

    def authorization(self, method: str, path: str, headers: dict[str, str]) -> str:
        """The ``Authorization`` value for a request to ``path`` (as sent, percent-encoded; no query) with
        ``headers`` (every header sent, ``x-ms-date`` among them)."""
        lower = {name.lower(): value for name, value in headers.items() if value}
        if lower.get("content-length") == "0":
            del lower["content-length"]  # signed as empty (service version 2015-02-21 and later)
        standard = "\n".join(lower.get(name, "") for name in _SIGNED_STANDARD)
        ms_headers = "".join(f"{name}:{value}\n" for name, value in sorted(lower.items()) if name.startswith("x-ms-"))
        to_sign = f"{method}\n{standard}\n{ms_headers}/{self._account}{path}"
        signature = base64.b64encode(hmac.new(self._key, to_sign.encode("utf-8"), hashlib.sha256).digest())
        return f"SharedKey {self._account}:{signature.decode('ascii')}"


class AzureWire:
    """Requests for the blobs of one container (``container_url``, a SAS as its query if that is the credential);
    thread-safe."""

    def __init__(self, container_url: str, shared_key: SharedKey | None, *, ca_file: str | None = None,
                 max_connections: int = 32, connect_timeout_s: float = 5, read_timeout_s: float = 30,
                 attempts: int = 3) -> None:
        base, _, self._sas = container_url.partition("?")
        parts = urlsplit(base)
        self._path = parts.path.rstrip("/") + "/"
        self._shared_key = shared_key
        self._attempts = attempts
        self._pool = ConnectionPool(parts.scheme, parts.hostname or "", parts.port, max_idle=max_connections,
                                    connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s,
                                    ca_file=ca_file)

    def send(self, method: str, blob: str, *, headers: dict[str, str] | None = None, body: bytes = b"",
             retry: bool = True) -> Reply:
        """One request, retried on transport errors and 5xx/429 answers when ``retry``.

        Raises :class:`arco.storage.connections.TransportError` when no answer came (after the retries, if any)."""
        return send_with_retries(lambda: self._send_once(method, blob, headers or {}, body),
                                 f"{method} {blob!r}", self._attempts if retry else 1)

    def signed_headers(self, method: str, path: str, headers: dict[str, str], body: bytes | None,
                       date: str | None = None) -> dict[str, str]:
        """The headers a request to ``path`` (as sent) goes out with, its Content-Length aside (the connection adds
        it): dated, versioned, and signed when the credential is the account key."""
        sent = {**headers, "x-ms-date": date or formatdate(usegmt=True), "x-ms-version": API_VERSION}
        if self._shared_key is not None:
            length = {"Content-Length": str(len(body))} if body is not None else {}
            sent["Authorization"] = self._shared_key.authorization(method, path, {**sent, **length})
        return sent

    def _send_once(self, method: str, blob: str, headers: dict[str, str], body: bytes) -> Reply:
        path = self._path + quote(blob, safe="~/")
        payload = body if method == "PUT" else None  # a PUT always carries a body (Content-Length: 0 if empty)
        signed = self.signed_headers(method, path, headers, payload)
        target = f"{path}?{self._sas}" if self._sas else path
        return Reply.of(self._pool.request(method, target, signed, payload))

    def close(self) -> None:
        self._pool.close()
