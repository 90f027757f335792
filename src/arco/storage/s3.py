"""S3 and S3-compatible storage: conditional writes with ``If-None-Match: *`` and ``If-Match: <etag>``.

The single-object calls (get, head, put, delete, the commit path's every call) go through
:mod:`arco.storage.s3_wire`: signed with SigV4, sent over kept-alive connections, without boto3's request
pipeline, which cost a third of each write on a loopback store (the modules say what was measured).
So do pre-signed GETs. Listing uses the boto3 client. Both take credentials, region and endpoint from one boto3
session, so they reach the same bucket as the same principal. S3 is one of the few stores with conditional PUT *and*
conditional DELETE. The version is the ETag, which is the MD5 of the content: see :mod:`arco.storage.base` for what
that means for callers.

Retries: a conditional write is sent once, because a transport retry of one that landed would fail its own
precondition and turn our success into a ``PreconditionFailed``; a failure in transit is reported as
:class:`StorageUnavailable` whose outcome is unknown, which callers treat like a crash.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from arco.storage.base import (
    Capabilities,
    Deleted,
    DeleteResult,
    DoesNotExist,
    ListPage,
    MatchesVersion,
    ObjectMeta,
    Precondition,
    PreconditionFailed,
    StorageBackend,
    StorageError,
    StorageUnavailable,
    WriteResult,
    Written,
)
from arco.storage.http_objects import HttpObjectReads
from arco.storage.prefixed import PrefixedKeys
from arco.storage.s3_options import client_config, endpoint_of
from arco.storage.s3_options import path_style as _path_style
from arco.storage.s3_options import region as _region
from arco.storage.s3_wire import S3Wire

PRECONDITION_CODES = {"PreconditionFailed", "ConditionalRequestConflict", "412"}


def _session(options: dict[str, str]) -> Any:
    """One boto3 session: credentials from the options, or the default chain (environment, profile, role)."""
    return boto3.session.Session(
        aws_access_key_id=options.get("s3.access-key-id"),
        aws_secret_access_key=options.get("s3.secret-access-key"),
        aws_session_token=options.get("s3.session-token"),
    )


def _client(options: dict[str, str], retries: int, signature_version: str | None = None,
            session: Any = None) -> Any:
    config = Config(
        region_name=_region(options),
        retries={"total_max_attempts": retries, "mode": "standard"},
        max_pool_connections=32,
        tcp_keepalive=True,
        s3={"addressing_style": "path" if _path_style(options) else "auto"},
        connect_timeout=5,
        read_timeout=30,
        signature_version=signature_version,
    )
    return (session or _session(options)).client("s3", endpoint_url=endpoint_of(options), config=config)


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _epoch(value: datetime | None) -> float:
    return value.timestamp() if value else 0.0


class S3Backend(HttpObjectReads, PrefixedKeys, StorageBackend):
    store_name = "S3"
    capabilities = Capabilities(conditional_put=True, conditional_delete=True)

    def __init__(self, bucket: str, prefix: str, options: dict[str, str] | None = None) -> None:
        if not bucket:
            raise StorageError("an S3 warehouse URL needs a bucket: s3://bucket/prefix")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.url = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        options = options or {}
        session = _session(options)
        self._client = _client(options, retries=3, session=session)
        self._wire = S3Wire(endpoint_url=self._client.meta.endpoint_url, bucket=bucket,
                            region=self._client.meta.region_name, path_style=_path_style(options),
                            credentials=session.get_credentials())
        self._session, self._options = session, options

    def fileio_properties(self) -> dict[str, str]:
        properties = client_config(self._options)
        credentials = self._session.get_credentials()
        if credentials is not None:  # the default chain's, now (a role's session may be renewed later)
            frozen = credentials.get_frozen_credentials()
            properties.update({"s3.access-key-id": frozen.access_key, "s3.secret-access-key": frozen.secret_key})
            if frozen.token:
                properties["s3.session-token"] = frozen.token
        return properties

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        headers: dict[str, str] = {}
        if isinstance(precondition, DoesNotExist):
            headers["If-None-Match"] = "*"
        elif isinstance(precondition, MatchesVersion):
            headers["If-Match"] = precondition.version
        reply = self._send("PUT", key, headers=headers, body=bytes(data), retry=precondition is None)
        if reply.status == 200:
            return Written(version=reply.etag)
        if reply.status in (409, 412) or reply.error_code in PRECONDITION_CODES:
            return PreconditionFailed()
        if isinstance(precondition, MatchesVersion) and reply.status == 404:
            return PreconditionFailed()
        raise self._unavailable("PUT", key, reply)

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        headers = {"If-Match": precondition.version} if precondition is not None else {}
        reply = self._send("DELETE", key, headers=headers, retry=precondition is None)
        if reply.status in (200, 204):
            return Deleted()
        if precondition is None and reply.status == 404:
            return Deleted()
        if precondition is not None and (reply.status in (404, 409, 412) or reply.error_code in PRECONDITION_CODES):
            return PreconditionFailed()
        raise self._unavailable("DELETE", key, reply)

    def close(self) -> None:
        self._wire.close()

    def presign_get(self, url: str, expires_s: int) -> str | None:
        """A SigV4 query-signed GET of one object, with the credentials this backend uses (any bucket they read);
        None without credentials."""
        if not url.startswith("s3://"):
            return None
        bucket, _, key = url[len("s3://"):].partition("/")
        if not bucket or not key:
            return None
        return self._wire.presigned_get(bucket, key, expires_s)

    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        full_prefix = self._full_prefix(prefix)
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        args: dict[str, Any] = {"Bucket": self.bucket, "Prefix": full_prefix, "MaxKeys": min(page_size, 1000)}
        if page_token:
            args["StartAfter"] = f"{self.prefix}/{page_token}" if self.prefix else page_token
        try:
            response = self._client.list_objects_v2(**args)
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable(f"S3 LIST {prefix!r} failed: {exc}") from exc
        objects = [
            ObjectMeta(key=self._relative(o["Key"]), size=int(o["Size"]), version=o["ETag"],
                       modified_at=_epoch(o.get("LastModified")))
            for o in response.get("Contents", [])
        ]
        more = bool(response.get("IsTruncated")) and bool(objects)
        return ListPage(objects=objects, next_token=objects[-1].key if more else None)


def create_bucket(bucket: str, options: dict[str, str]) -> None:
    """Create a bucket (tests and first-time setup); an existing bucket of ours is fine."""
    client = _client(options, retries=3)
    try:
        client.create_bucket(Bucket=bucket)
    except ClientError as exc:
        if _code(exc) not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
            raise StorageError(f"cannot create bucket {bucket}: {exc}") from exc
