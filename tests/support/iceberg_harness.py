"""An in-process Iceberg catalog on a local warehouse behind the fault-injecting storage wrapper."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from arco.catalog.catalogs import ensure_default_catalog
from arco.catalog.model import CatalogEntry
from arco.catalog.store import CatalogStore
from arco.iceberg.idempotency import IdempotencyMarkers
from arco.iceberg.mutations import Mutations
from arco.iceberg.namespaces import NamespaceService
from arco.iceberg.tables import TableService
from arco.storage.faults import FaultyBackend
from arco.storage.local import LocalBackend

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": False, "type": "long"},
    {"id": 2, "name": "s", "required": False, "type": "string"},
]}
SOURCE = {"kind": "test"}


@dataclass
class Harness:
    storage: FaultyBackend
    store: CatalogStore
    namespaces: NamespaceService
    tables: TableService
    catalog: CatalogEntry

    def create_table(self, name: str, namespace: tuple[str, ...] = ("db",)) -> str:
        _, metadata = self.tables.create(self.catalog, namespace, {"name": name, "schema": SCHEMA}, "admin", SOURCE)
        return str(metadata.table_uuid)

    def mutations(self, in_progress_timeout_s: float = 60.0) -> Mutations:
        """The keyed mutation layer over this harness, as a server with this in-progress timeout runs it."""
        return Mutations(self.store, self.namespaces, self.tables,
                         IdempotencyMarkers(self.storage, in_progress_timeout_s))

    def reopen(self) -> "Harness":
        """A fresh process's view of the same warehouse (no caches), with no faults."""
        return make_harness(self.storage.inner)


def make_harness(inner: LocalBackend) -> Harness:
    storage = FaultyBackend(inner)
    store = CatalogStore(storage)
    ensure_default_catalog(store, owner="admin")
    with store.read() as state:
        catalog = state.catalog("main")
    return Harness(storage, store, NamespaceService(store), TableService(store, storage), catalog)


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    h = make_harness(LocalBackend(tmp_path / "warehouse"))
    h.namespaces.create(h.catalog, ["db"], {}, "admin")
    return h
