"""How a Spark task finds the warehouse: the URL and options, opened again on each executor."""

from __future__ import annotations

from dataclasses import dataclass, field

from arco.storage.base import StorageBackend


@dataclass(frozen=True)
class StorageSpec:
    url: str
    options: dict[str, str] = field(default_factory=dict)

    def open(self) -> StorageBackend:
        from arco.storage.factory import open_storage

        return open_storage(self.url, self.options)
