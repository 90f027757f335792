"""Google Cloud Storage: conditional writes with ``ifGenerationMatch`` (0 means "does not exist").

The single-object calls (get, head, put, delete: the commit path's every call) go through
:mod:`arco.storage.gcs_wire`, without the client library's request path (the module says what it cost); listing,
signed URLs and bucket creation use the library, with the same credentials. The version is the object's
generation, which changes on every write (unlike an S3 ETag). Conditional writes are sent once: a retried
conditional upload whose first attempt succeeded would report a precondition failure for our own write.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from typing import Any

from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage as gcs

from arco.storage.base import (
    Capabilities,
    Deleted,
    DeleteResult,
    DoesNotExist,
    ListPage,
    MatchesVersion,
    NotFound,
    ObjectData,
    ObjectMeta,
    Precondition,
    PreconditionFailed,
    StorageBackend,
    StorageError,
    StorageUnavailable,
    WriteResult,
    Written,
)
from arco.storage.connections import requests_ca_bundle
from arco.storage.gcs_wire import GcsWire
from arco.storage.object_calls import Reply, sent, unavailable
from arco.storage.prefixed import PrefixedKeys


def _anonymous(options: dict[str, str]) -> bool:
    return options.get("gcs.no-auth", "false").lower() == "true"


def _client(options: dict[str, str]) -> gcs.Client:
    endpoint = options.get("gcs.service.host") or os.environ.get("STORAGE_EMULATOR_HOST")
    project = options.get("gcs.project-id") or os.environ.get("GOOGLE_CLOUD_PROJECT")
    anonymous = _anonymous(options)
    kwargs: dict[str, Any] = {"project": project or "arco"}
    if anonymous:
        kwargs["credentials"] = AnonymousCredentials()
    if endpoint:
        kwargs["client_options"] = {"api_endpoint": endpoint}
    return gcs.Client(**kwargs)


def _credentials_of(client: gcs.Client) -> Any:
    """The credentials the library resolved (explicit, application default, or anonymous for an emulator: its
    rules), which google-cloud-core keeps on the client without a public accessor."""
    return client._credentials


class GcsBackend(PrefixedKeys, StorageBackend):
    capabilities = Capabilities(conditional_put=True, conditional_delete=True)

    def __init__(self, bucket: str, prefix: str, options: dict[str, str] | None = None) -> None:
        if not bucket:
            raise StorageError("a GCS warehouse URL needs a bucket: gs://bucket/prefix")
        self.prefix = prefix.strip("/")
        self.url = f"gs://{bucket}/{self.prefix}" if self.prefix else f"gs://{bucket}"
        self._client = _client(options or {})
        self._options = options or {}
        self._bucket = self._client.bucket(bucket)
        self._wire = GcsWire(self._client.api_endpoint, bucket, _credentials_of(self._client),
                             ca_file=requests_ca_bundle())

    def fileio_properties(self) -> dict[str, str]:
        # Arco's Arrow FileIO: PyIceberg's cannot read or write anonymously (without a token it looks for the
        # machine's Google credentials, and on a store without auth retried for 15 minutes); with credentials it is
        # PyIceberg's, which finds them where this module's client does (the application default credentials).
        properties = {"py-io-impl": "arco.storage.arrow_fileio.ArrowFileIO",
                      "gcs.project-id": self._client.project or ""}
        endpoint = self._options.get("gcs.service.host") or os.environ.get("STORAGE_EMULATOR_HOST")
        if endpoint:
            properties["gcs.service.host"] = endpoint
        if _anonymous(self._options):
            properties["gcs.no-auth"] = "true"  # the option's own name (arco.storage.arrow_fileio reads it)
        return properties

    def _unavailable(self, what: str, key: str, reply: Reply) -> StorageUnavailable:
        return unavailable("GCS", what, key, reply)

    def _call(self, what: str, key: str, call: Any, *args: Any) -> Reply:
        return sent("GCS", what, key, lambda: call(self._key(key), *args))

    def _object(self, key: str, reply: Reply) -> ObjectData:
        if reply.status == 404:
            raise NotFound(key)
        if reply.status != 200:
            raise self._unavailable("GET", key, reply)
        generation = reply.headers.get("x-goog-generation")
        if generation is None:  # not every server says it with the bytes: ask for the metadata
            generation = self._metadata(key)["generation"]
        return ObjectData(data=reply.data, version=str(generation))

    def _metadata(self, key: str) -> dict[str, Any]:
        reply = self._call("HEAD", key, self._wire.metadata)
        if reply.status == 404:
            raise NotFound(key)
        if reply.status != 200:
            raise self._unavailable("HEAD", key, reply)
        return dict(json.loads(reply.data))

    def get(self, key: str) -> ObjectData:
        return self._object(key, self._call("GET", key, self._wire.download))

    def get_if_changed(self, key: str, version: str) -> ObjectData | None:
        """A download with ``ifGenerationNotMatch``: answered 304 without the bytes when the object is unchanged
        (a server that ignores the condition sends them, and the generation tells)."""
        if not version.isdigit():
            return self.get(key)
        reply = self._call("GET", key, self._wire.download, version)
        if reply.status == 304:
            return None
        found = self._object(key, reply)
        return None if found.version == version else found

    def head(self, key: str) -> ObjectMeta | None:
        try:
            found = self._metadata(key)
        except NotFound:
            return None
        updated = found.get("updated")
        return ObjectMeta(key=key, size=int(found.get("size") or 0), version=str(found["generation"]),
                          modified_at=datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp()
                          if updated else 0.0)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        match: int | None = None
        if isinstance(precondition, DoesNotExist):
            match = 0
        elif isinstance(precondition, MatchesVersion):
            if not precondition.version.isdigit():
                return PreconditionFailed()
            match = int(precondition.version)
        reply = self._call("PUT", key, self._wire.upload, bytes(data), match)
        if reply.status == 200:
            return Written(version=str(json.loads(reply.data)["generation"]))
        if precondition is not None and reply.status in (404, 409, 412):
            return PreconditionFailed()
        raise self._unavailable("PUT", key, reply)

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        match: int | None = None
        if precondition is not None:
            if not precondition.version.isdigit():
                return PreconditionFailed()
            match = int(precondition.version)
        reply = self._call("DELETE", key, self._wire.delete, match)
        if reply.status in (200, 204):
            return Deleted()
        if reply.status == 404:
            return PreconditionFailed() if precondition is not None else Deleted()
        if precondition is not None and reply.status in (409, 412):
            return PreconditionFailed()
        raise self._unavailable("DELETE", key, reply)

    def close(self) -> None:
        self._wire.close()

    def presign_get(self, url: str, expires_s: int) -> str | None:
        """A V4 signed GET URL for one object of this warehouse; None when the credentials cannot sign (ADC
        without a private key, an emulator without auth): the file is then served through Arco."""
        root = self.url.rstrip("/") + "/"
        if not url.startswith(root):
            return None
        try:
            return self._bucket.blob(self._key(url[len(root):])).generate_signed_url(
                version="v4", expiration=timedelta(seconds=expires_s), method="GET")
        except (AttributeError, TypeError, ValueError, gexc.GoogleAPIError):
            return None

    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        full_prefix = self._full_prefix(prefix)
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        kwargs: dict[str, Any] = {"prefix": full_prefix, "max_results": page_size}
        if page_token:
            kwargs["start_offset"] = (f"{self.prefix}/{page_token}" if self.prefix else page_token) + "\x00"
        try:
            blobs = list(self._bucket.list_blobs(**kwargs))
        except gexc.GoogleAPIError as exc:
            raise StorageUnavailable(f"GCS LIST {prefix!r} failed: {exc}") from exc
        objects = [ObjectMeta(key=self._relative(b.name), size=int(b.size or 0), version=str(b.generation),
                              modified_at=b.updated.timestamp() if b.updated else 0.0) for b in blobs]
        return ListPage(objects=objects, next_token=objects[-1].key if len(objects) == page_size else None)


def create_bucket(bucket: str, options: dict[str, str]) -> None:
    try:
        _client(options).create_bucket(bucket)
    except gexc.Conflict:
        pass
