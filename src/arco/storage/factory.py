"""Open a storage backend from a warehouse URL.

| URL | backend |
| --- | --- |
| a path, or ``file:///path`` | :class:`~arco.storage.local.LocalBackend` |
| ``memory://name`` | :class:`~arco.storage.memory.MemoryBackend` (one per name and process) |
| ``s3://bucket/prefix`` (also ``s3a://``) | :class:`~arco.storage.s3.S3Backend` |
| ``gs://bucket/prefix`` | :class:`~arco.storage.gcs.GcsBackend` |
| ``az://container/prefix``, ``abfss://container@account.dfs.core.windows.net/p`` | :class:`.azure.AzureBackend` |

Options (endpoint, credentials) use Iceberg's FileIO property names (``s3.endpoint``, ``gcs.service.host``,
``adls.connection-string``, ...). They can be given as a dict, as the URL's query string
(``s3://bucket/wh?s3.endpoint=http://127.0.0.1:8333``), or left to each SDK's own environment variables.
"""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from arco.storage.base import StorageBackend, StorageError

_memory_backends: dict[str, StorageBackend] = {}
_memory_lock = threading.Lock()


def split_warehouse_url(url: str) -> tuple[str, dict[str, str]]:
    """Separate the query-string options from a warehouse URL."""
    if "://" not in url or "?" not in url:
        return url, {}
    base, _, query = url.partition("?")
    return base, dict(parse_qsl(query, keep_blank_values=True))


def open_storage(url: str | Path, options: dict[str, str] | None = None) -> StorageBackend:
    """Open the backend that ``url`` names (see the module docstring for the forms it takes), its calls timed
    into the storage latency metric (:mod:`arco.storage.timed`)."""
    from arco.storage.timed import timed

    return timed(_open_backend(url, options))


def local_directory(url: str | Path) -> Path | None:
    """The directory a local warehouse (a path or a ``file:`` URL) names; None for any other store."""
    base, _ = split_warehouse_url(str(url))
    if "://" not in base:
        return Path(base).expanduser()
    parts = urlsplit(base)
    return Path(unquote(parts.path)) if parts.scheme.lower() == "file" else None


def _open_backend(url: str | Path, options: dict[str, str] | None = None) -> StorageBackend:
    base, query_options = split_warehouse_url(str(url))
    opts = {**query_options, **(options or {})}
    if (directory := local_directory(url)) is not None:
        from arco.storage.local import LocalBackend

        return LocalBackend(directory)
    parts = urlsplit(base)
    scheme = parts.scheme.lower()
    prefix = unquote(parts.path).strip("/")
    if scheme == "memory":
        from arco.storage.memory import MemoryBackend

        name = parts.netloc + parts.path
        with _memory_lock:
            return _memory_backends.setdefault(name, MemoryBackend(name))
    if scheme in ("s3", "s3a"):
        from arco.storage.s3 import S3Backend

        return S3Backend(parts.netloc, prefix, opts)
    if scheme == "gs":
        from arco.storage.gcs import GcsBackend

        return GcsBackend(parts.netloc, prefix, opts)
    if scheme in ("az", "abfs", "abfss", "wasb", "wasbs"):
        from arco.storage.azure import AzureBackend

        container, _, account_host = parts.netloc.partition("@")
        if account_host and "adls.account-name" not in opts:
            opts["adls.account-name"] = account_host.split(".")[0]
        return AzureBackend(container, prefix, opts, authority=f"{scheme}://{parts.netloc}")
    raise StorageError(
        f"unsupported warehouse URL {str(url)!r}: use a directory path, file://, s3://, gs://, az:// or abfss://"
    )
