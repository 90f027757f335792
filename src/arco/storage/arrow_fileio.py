"""PyIceberg's Arrow FileIO, reading ``az://`` locations too: Arco's own Iceberg reads and writes on an Azure
warehouse (:meth:`arco.storage.azure.AzureBackend.fileio_properties`).

``az://container/key`` is what ``abfs://container/key`` is (the account's container, in fsspec's spelling, which an
``az://`` warehouse gives its tables); PyIceberg's Arrow FileIO knows only the latter, and its fsspec FileIO needs
adlfs, which Arco does not install. Both parse to the same container and path, so the Azure file system serves
both."""

from __future__ import annotations

from pyarrow.fs import FileSystem
from pyiceberg.io.pyarrow import PyArrowFileIO


class ArrowFileIO(PyArrowFileIO):
    def _initialize_fs(self, scheme: str, netloc: str | None = None) -> FileSystem:
        return super()._initialize_fs("abfs" if scheme == "az" else scheme, netloc)
