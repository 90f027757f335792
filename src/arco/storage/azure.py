"""Azure Blob Storage: conditional writes with ``If-None-Match: *`` and ``If-Match: <etag>``.

The single-blob calls (get, head, put, delete: the commit path's every call) go through
:mod:`arco.storage.azure_wire`, without the SDK's request pipeline (the module says what it cost); listing, SAS
generation and container creation use the SDK, which also resolves the warehouse's endpoint and credential for
both. The version is the blob's ETag, which changes on every write. Conditional requests are sent once, for the
same reason as on S3 (a retried successful write would fail its own precondition).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from azure.core.exceptions import AzureError, ResourceExistsError
from azure.storage.blob import BlobSasPermissions, BlobServiceClient, ContainerClient, generate_blob_sas

from arco.storage.azure_wire import AzureWire, SharedKey
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
from arco.storage.connections import requests_ca_bundle
from arco.storage.http_objects import HttpObjectReads
from arco.storage.object_calls import Reply
from arco.storage.prefixed import PrefixedKeys
from arco.storage.urls import set_home_azure_account


def _service(options: dict[str, str], retries: int = 3) -> BlobServiceClient:
    connection_string = options.get("adls.connection-string") or os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if connection_string:
        return BlobServiceClient.from_connection_string(connection_string, retry_total=retries)
    account = options.get("adls.account-name") or os.environ.get("AZURE_STORAGE_ACCOUNT")
    key = options.get("adls.account-key") or os.environ.get("AZURE_STORAGE_KEY")
    if not account:
        raise StorageError("Azure storage needs adls.connection-string, or adls.account-name with a key")
    endpoint = options.get("adls.endpoint") or f"https://{account}.blob.core.windows.net"
    credential: Any = {"account_name": account, "account_key": key} if key else None
    return BlobServiceClient(endpoint, credential=credential, retry_total=retries)


def _etag(value: object) -> str:
    """ETags in one spelling (quoted): the SDK returns them quoted from some calls and bare from listings."""
    text = str(value)
    return text if text.startswith('"') else f'"{text}"'


def _wire(container: ContainerClient) -> AzureWire:
    """The wire client for the container the SDK's client resolved: its URL (a SAS as its query, if that is the
    credential) and, with an account key, Shared Key signing."""
    credential = getattr(container, "credential", None)
    account, key = getattr(credential, "account_name", None), getattr(credential, "account_key", None)
    return AzureWire(container.url, SharedKey(account, key) if account and key else None,
                     ca_file=requests_ca_bundle())


def endpoint_properties(blob_endpoint: str) -> dict[str, str]:
    """Where PyIceberg's Arrow FileIO finds the blob and dfs services of an emulator or a sovereign cloud (it
    assumes Azure's public hosts otherwise)."""
    endpoint = urlsplit(blob_endpoint)
    return {f"adls.{service}-storage-{part}": value for service in ("blob", "dfs")
            for part, value in (("authority", endpoint.netloc), ("scheme", endpoint.scheme))}


class AzureBackend(HttpObjectReads, PrefixedKeys, StorageBackend):
    store_name = "Azure"
    capabilities = Capabilities(conditional_put=True, conditional_delete=True)

    def __init__(self, container: str, prefix: str, options: dict[str, str] | None = None,
                 authority: str | None = None) -> None:
        """``authority`` is the warehouse URL up to the path (``az://c``, ``abfs://c``,
        ``abfss://c@account.dfs.core.windows.net``): table locations are spelled as the operator spelled the
        warehouse, because engines read different spellings (PyIceberg's Arrow FileIO ``abfs://container/...``,
        Iceberg Java ``abfss://container@account...``)."""
        if not container:
            raise StorageError("an Azure warehouse URL needs a container: az://container/prefix")
        self.prefix = prefix.strip("/")
        root = (authority or f"az://{container}").rstrip("/")
        self.url = f"{root}/{self.prefix}" if self.prefix else root
        options = options or {}
        self._container: ContainerClient = _service(options).get_container_client(container)
        self._wire = _wire(self._container)
        set_home_azure_account(self._container.account_name)  # what az://container names (arco.storage.urls)

    def fileio_properties(self) -> dict[str, str]:
        # PyIceberg's Arrow FileIO (pyarrow's Azure file system), az:// included: its default for abfs:// is
        # fsspec's, which needs adlfs, not one of Arco's dependencies.
        properties = {"py-io-impl": "arco.storage.arrow_fileio.ArrowFileIO",
                      "adls.account-name": self._container.account_name or ""}
        credential = getattr(self._container, "credential", None)
        key = getattr(credential, "account_key", None)
        if key:
            properties["adls.account-key"] = key
        if not urlsplit(self._container.primary_endpoint).netloc.endswith(".core.windows.net"):
            properties.update(endpoint_properties(self._container.primary_endpoint))
        return properties

    def _version(self, reply: Reply) -> str:
        return _etag(reply.etag)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        headers = {"x-ms-blob-type": "BlockBlob", "Content-Type": "application/octet-stream"}
        if isinstance(precondition, DoesNotExist):
            headers["If-None-Match"] = "*"
        elif isinstance(precondition, MatchesVersion):
            headers["If-Match"] = precondition.version
        reply = self._send("PUT", key, headers=headers, body=bytes(data), retry=precondition is None)
        if reply.status == 201:
            return Written(version=_etag(reply.etag))
        if reply.status == 404 and reply.error_code == "ContainerNotFound":
            raise self._unavailable("PUT", key, reply)
        # 409 BlobAlreadyExists (If-None-Match: *), 412 ConditionNotMet; If-Match on a missing blob is a 404.
        if precondition is not None and reply.status in (404, 409, 412):
            return PreconditionFailed()
        raise self._unavailable("PUT", key, reply)

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        headers = {"If-Match": precondition.version} if precondition is not None else {}
        reply = self._send("DELETE", key, headers=headers, retry=precondition is None)
        if reply.status in (200, 202):
            return Deleted()
        if reply.status == 404:
            return PreconditionFailed() if precondition is not None else Deleted()
        if precondition is not None and reply.status in (409, 412):
            return PreconditionFailed()
        raise self._unavailable("DELETE", key, reply)

    def close(self) -> None:
        self._wire.close()

    def presign_get(self, url: str, expires_s: int) -> str | None:
        """A read-only SAS for one blob of this warehouse, when the account key is at hand (else None)."""
        root = self.url.rstrip("/") + "/"
        credential = getattr(self._container, "credential", None)
        account_key = getattr(credential, "account_key", None)
        if not url.startswith(root) or not account_key:
            return None
        blob = self._container.get_blob_client(self._key(url[len(root):]))
        sas = generate_blob_sas(blob.account_name, blob.container_name, blob.blob_name, account_key=account_key,
                                permission=BlobSasPermissions(read=True),
                                expiry=datetime.now(UTC) + timedelta(seconds=expires_s))
        return f"{blob.url}?{sas}"

    def list_page(self, prefix: str = "", page_size: int = 1000, page_token: str | None = None) -> ListPage:
        full_prefix = self._full_prefix(prefix)
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        try:
            pages = self._container.list_blobs(name_starts_with=full_prefix or None,
                                               results_per_page=page_size).by_page(continuation_token=page_token)
            page = next(pages, None)
            blobs = list(page) if page is not None else []
            token = pages.continuation_token if page is not None else None
        except AzureError as exc:
            raise StorageUnavailable(f"Azure LIST {prefix!r} failed: {exc}") from exc
        objects = [ObjectMeta(key=self._relative(b.name), size=int(b.size), version=_etag(b.etag),
                              modified_at=b.last_modified.timestamp() if b.last_modified else 0.0) for b in blobs]
        return ListPage(objects=objects, next_token=token or None)


def create_container(container: str, options: dict[str, str]) -> None:
    try:
        _service(options).create_container(container)
    except ResourceExistsError:
        pass
