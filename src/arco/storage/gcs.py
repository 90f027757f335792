"""Google Cloud Storage: conditional writes with ``ifGenerationMatch`` (0 means "does not exist").

The version is the object's generation, which changes on every write (unlike an S3 ETag). The client library's
retry of conditional writes is turned off (``retry=None``): a retried conditional upload whose first attempt
succeeded would report a precondition failure for our own write.
"""

from __future__ import annotations

import os
from datetime import timedelta
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
from arco.storage.prefixed import PrefixedKeys


def _client(options: dict[str, str]) -> gcs.Client:
    endpoint = options.get("gcs.service.host") or os.environ.get("STORAGE_EMULATOR_HOST")
    project = options.get("gcs.project-id") or os.environ.get("GOOGLE_CLOUD_PROJECT")
    anonymous = options.get("gcs.no-auth", "false").lower() == "true"
    kwargs: dict[str, Any] = {"project": project or "arco"}
    if anonymous:
        kwargs["credentials"] = AnonymousCredentials()
    if endpoint:
        kwargs["client_options"] = {"api_endpoint": endpoint}
    return gcs.Client(**kwargs)


class GcsBackend(PrefixedKeys, StorageBackend):
    capabilities = Capabilities(conditional_put=True, conditional_delete=True)

    def __init__(self, bucket: str, prefix: str, options: dict[str, str] | None = None) -> None:
        if not bucket:
            raise StorageError("a GCS warehouse URL needs a bucket: gs://bucket/prefix")
        self.prefix = prefix.strip("/")
        self.url = f"gs://{bucket}/{self.prefix}" if self.prefix else f"gs://{bucket}"
        self._client = _client(options or {})
        self._bucket = self._client.bucket(bucket)

    def get(self, key: str) -> ObjectData:
        blob = self._bucket.blob(self._key(key))
        try:
            data = blob.download_as_bytes(raw_download=True)
        except gexc.NotFound:
            raise NotFound(key) from None
        except gexc.GoogleAPIError as exc:
            raise StorageUnavailable(f"GCS GET {key!r} failed: {exc}") from exc
        return ObjectData(data=data, version=str(blob.generation))

    def head(self, key: str) -> ObjectMeta | None:
        try:
            blob = self._bucket.get_blob(self._key(key))
        except gexc.GoogleAPIError as exc:
            raise StorageUnavailable(f"GCS HEAD {key!r} failed: {exc}") from exc
        if blob is None:
            return None
        return ObjectMeta(key=key, size=int(blob.size or 0), version=str(blob.generation),
                          modified_at=blob.updated.timestamp() if blob.updated else 0.0)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        blob = self._bucket.blob(self._key(key))
        kwargs: dict[str, Any] = {}
        if isinstance(precondition, DoesNotExist):
            kwargs = {"if_generation_match": 0, "retry": None}
        elif isinstance(precondition, MatchesVersion):
            if not precondition.version.isdigit():
                return PreconditionFailed()
            kwargs = {"if_generation_match": int(precondition.version), "retry": None}
        try:
            blob.upload_from_string(bytes(data), content_type="application/octet-stream", **kwargs)
        except (gexc.PreconditionFailed, gexc.Conflict):
            return PreconditionFailed()
        except gexc.NotFound:
            if precondition is not None:
                return PreconditionFailed()
            raise StorageUnavailable(f"GCS PUT {key!r} failed: bucket not found") from None
        except gexc.GoogleAPIError as exc:
            raise StorageUnavailable(f"GCS PUT {key!r} failed (the write may or may not have happened): {exc}") from exc
        return Written(version=str(blob.generation))

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        blob = self._bucket.blob(self._key(key))
        kwargs: dict[str, Any] = {}
        if precondition is not None:
            if not precondition.version.isdigit():
                return PreconditionFailed()
            kwargs = {"if_generation_match": int(precondition.version), "retry": None}
        try:
            blob.delete(**kwargs)
        except gexc.NotFound:
            return PreconditionFailed() if precondition is not None else Deleted()
        except (gexc.PreconditionFailed, gexc.Conflict):
            return PreconditionFailed()
        except gexc.GoogleAPIError as exc:
            raise StorageUnavailable(f"GCS DELETE {key!r} failed: {exc}") from exc
        return Deleted()

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
