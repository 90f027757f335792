"""Google Cloud Storage's single-object calls (download, metadata, multipart upload, delete) through its JSON API,
sent straight over kept-alive connections (:mod:`arco.storage.connections`) with the credentials' bearer token.

Why not the client library (``google-cloud-storage``) for these: its request path (``requests``, the library's
blob objects, retries and response handling) costs about 0.6-1 ms of CPU a call on this project's 2-core reference
machine (fake-gcs-server on loopback), and a keyed commit makes about seven calls under one interpreter lock.
These calls need a path, a query, a token, a status and a generation. The credentials are google-auth's (the
library's own: application default credentials or anonymous access), refreshed by google-auth when they expire;
listing, signed URLs and bucket creation still go through the library (:mod:`arco.storage.gcs`).

Uploads are ``uploadType=multipart`` (the object's metadata and its bytes in one request): the form both GCS and
its emulator honour ``ifGenerationMatch`` on. Retries: as :mod:`arco.storage.object_calls` says (reads and
unconditional writes only).
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from arco.storage.connections import ConnectionPool
from arco.storage.object_calls import Reply, send_with_retries

_CONTENT_TYPE = "application/octet-stream"


class GcsWire:
    """Requests for the objects of one bucket at ``endpoint`` (``https://storage.googleapis.com``, or an emulator's
    URL), authorised by google-auth ``credentials``; thread-safe."""

    def __init__(self, endpoint: str, bucket: str, credentials: Any, *, ca_file: str | None = None,
                 max_connections: int = 32, connect_timeout_s: float = 5, read_timeout_s: float = 30,
                 attempts: int = 3) -> None:
        parts = urlsplit(endpoint)
        base = parts.path.rstrip("/")
        bucket_part = quote(bucket, safe="")
        self._objects = f"{base}/storage/v1/b/{bucket_part}/o"
        self._downloads = f"{base}/download/storage/v1/b/{bucket_part}/o"
        self._uploads = f"{base}/upload/storage/v1/b/{bucket_part}/o"
        self._credentials = credentials
        self._refresh_lock = threading.Lock()
        self._attempts = attempts
        self._pool = ConnectionPool(parts.scheme, parts.hostname or "", parts.port, max_idle=max_connections,
                                    connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s,
                                    ca_file=ca_file)

    def download(self, name: str, if_generation_not_match: str | None = None) -> Reply:
        query = {"alt": "media"}
        if if_generation_not_match is not None:
            query["ifGenerationNotMatch"] = if_generation_not_match
        return self._send("GET", f"{self._downloads}/{quote(name, safe='')}", query)

    def metadata(self, name: str) -> Reply:
        return self._send("GET", f"{self._objects}/{quote(name, safe='')}", {})

    def upload(self, name: str, data: bytes, if_generation_match: int | None) -> Reply:
        query = {"uploadType": "multipart"}
        if if_generation_match is not None:
            query["ifGenerationMatch"] = str(if_generation_match)
        boundary = f"arco-{uuid.uuid4().hex}"
        part = json.dumps({"name": name, "contentType": _CONTENT_TYPE})
        head = (f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{part}\r\n"
                f"--{boundary}\r\nContent-Type: {_CONTENT_TYPE}\r\n\r\n")
        body = head.encode() + data + f"\r\n--{boundary}--\r\n".encode()
        return self._send("POST", self._uploads, query, {"Content-Type": f"multipart/related; boundary={boundary}"},
                          body, retry=if_generation_match is None)

    def delete(self, name: str, if_generation_match: int | None) -> Reply:
        query = {"ifGenerationMatch": str(if_generation_match)} if if_generation_match is not None else {}
        return self._send("DELETE", f"{self._objects}/{quote(name, safe='')}", query,
                          retry=if_generation_match is None)

    def authorization(self) -> dict[str, str]:
        """The headers google-auth adds (``Authorization: Bearer ...``; none for anonymous access), after a refresh
        if the token expired: one thread refreshes, the others wait for its token."""
        headers: dict[str, str] = {}
        if self._credentials is None:
            return headers
        if not self._credentials.valid:
            with self._refresh_lock:
                if not self._credentials.valid:
                    from google.auth.transport.requests import Request

                    self._credentials.refresh(Request())
        self._credentials.apply(headers)
        return headers

    def _send(self, method: str, path: str, query: dict[str, str], headers: dict[str, str] | None = None,
              body: bytes | None = None, retry: bool = True) -> Reply:
        target = f"{path}?{urlencode(query)}" if query else path

        def once() -> Reply:
            sent = {**(headers or {}), **self.authorization()}
            return Reply.of(self._pool.request(method, target, sent, body if method == "POST" else None))

        return send_with_retries(once, f"{method} {path.rsplit('/', 1)[-1]!r}", self._attempts if retry else 1)

    def close(self) -> None:
        self._pool.close()
