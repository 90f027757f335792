"""Azure Blob Storage: conditional writes with ``If-None-Match: *`` and ``If-Match: <etag>``.

The version is the blob's ETag, which changes on every write. Conditional requests are sent without the SDK's
automatic retries, for the same reason as on S3 (a retried successful write would fail its own precondition).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import AzureError, HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.storage.blob import BlobSasPermissions, BlobServiceClient, ContainerClient, generate_blob_sas

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


def _is_precondition(exc: HttpResponseError) -> bool:
    return exc.status_code in (409, 412)


class AzureBackend(PrefixedKeys, StorageBackend):
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
        self._conditional: ContainerClient = _service(options, retries=0).get_container_client(container)

    def get(self, key: str) -> ObjectData:
        try:
            downloader = self._container.get_blob_client(self._key(key)).download_blob()
            return ObjectData(data=downloader.readall(), version=_etag(downloader.properties.etag))
        except ResourceNotFoundError:
            raise NotFound(key) from None
        except AzureError as exc:
            raise StorageUnavailable(f"Azure GET {key!r} failed: {exc}") from exc

    def head(self, key: str) -> ObjectMeta | None:
        try:
            p = self._container.get_blob_client(self._key(key)).get_blob_properties()
        except ResourceNotFoundError:
            return None
        except AzureError as exc:
            raise StorageUnavailable(f"Azure HEAD {key!r} failed: {exc}") from exc
        return ObjectMeta(key=key, size=int(p.size), version=_etag(p.etag),
                          modified_at=p.last_modified.timestamp() if p.last_modified else 0.0)

    def put(self, key: str, data: bytes, precondition: Precondition = None) -> WriteResult:
        kwargs: dict[str, Any] = {"overwrite": True}
        container = self._container
        if isinstance(precondition, DoesNotExist):
            kwargs = {"overwrite": False}
            container = self._conditional
        elif isinstance(precondition, MatchesVersion):
            kwargs = {"overwrite": True, "etag": precondition.version, "match_condition": MatchConditions.IfNotModified}
            container = self._conditional
        try:
            result = container.get_blob_client(self._key(key)).upload_blob(bytes(data), **kwargs)
        except ResourceExistsError:
            return PreconditionFailed()
        except ResourceNotFoundError:
            if precondition is not None:
                return PreconditionFailed()
            raise StorageUnavailable(f"Azure PUT {key!r} failed: container not found") from None
        except HttpResponseError as exc:
            if precondition is not None and _is_precondition(exc):
                return PreconditionFailed()
            raise StorageUnavailable(f"Azure PUT {key!r} failed: {exc}") from exc
        except AzureError as exc:
            raise StorageUnavailable(
                f"Azure PUT {key!r} failed (the write may or may not have happened): {exc}") from exc
        return Written(version=_etag(result["etag"]))

    def delete(self, key: str, precondition: MatchesVersion | None = None) -> DeleteResult:
        kwargs: dict[str, Any] = {}
        container = self._container
        if precondition is not None:
            kwargs = {"etag": precondition.version, "match_condition": MatchConditions.IfNotModified}
            container = self._conditional
        try:
            container.get_blob_client(self._key(key)).delete_blob(**kwargs)
        except ResourceNotFoundError:
            return PreconditionFailed() if precondition is not None else Deleted()
        except HttpResponseError as exc:
            if precondition is not None and _is_precondition(exc):
                return PreconditionFailed()
            raise StorageUnavailable(f"Azure DELETE {key!r} failed: {exc}") from exc
        except AzureError as exc:
            raise StorageUnavailable(f"Azure DELETE {key!r} failed: {exc}") from exc
        return Deleted()

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
