"""PyIceberg's Arrow FileIO for Arco's own Iceberg reads and writes (server-side scan planning, the pipeline's
system tables and maintenance), where PyIceberg's falls short of a warehouse Arco serves:

* ``az://`` locations: ``az://container/key`` is what ``abfs://container/key`` is (the account's container, in
  fsspec's spelling, which an ``az://`` warehouse gives its tables); PyIceberg's Arrow FileIO knows only the latter,
  and its fsspec FileIO needs adlfs, which Arco does not install. Both parse to the same container and path, so the
  Azure file system serves both (:meth:`arco.storage.azure.AzureBackend.fileio_properties`).
* GCS without credentials (``gcs.no-auth``, an emulator's or a public bucket's): PyIceberg gives pyarrow no way to
  ask anonymously, so pyarrow looks for the machine's Google credentials and retries for a quarter of an hour
  (:meth:`arco.storage.gcs.GcsBackend.fileio_properties`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pyarrow.fs import FileSystem, GcsFileSystem
from pyiceberg.io.pyarrow import PyArrowFileIO

ANONYMOUS_PROPERTY = "gcs.no-auth"


class ArrowFileIO(PyArrowFileIO):
    def _initialize_fs(self, scheme: str, netloc: str | None = None) -> FileSystem:
        if scheme in ("gs", "gcs") and self.properties.get(ANONYMOUS_PROPERTY, "false").lower() == "true":
            endpoint = urlsplit(self.properties.get("gcs.service.host", ""))
            if endpoint.netloc:
                return GcsFileSystem(anonymous=True, endpoint_override=endpoint.netloc, scheme=endpoint.scheme)
            return GcsFileSystem(anonymous=True)
        return super()._initialize_fs("abfs" if scheme == "az" else scheme, netloc)
