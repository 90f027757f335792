"""A storage target: how to open one backend, in a form that child processes can receive (URL + options)."""

from __future__ import annotations

from dataclasses import dataclass, field

from arco.storage.base import StorageBackend
from arco.storage.factory import open_storage


@dataclass(frozen=True)
class StorageTarget:
    name: str  # "local", "s3-seaweedfs", ...
    url: str
    options: dict[str, str] = field(default_factory=dict)
    shared_across_processes: bool = True
    conditional_delete_enforced: bool = True  # False where the server is known to ignore it

    def open(self) -> StorageBackend:
        return open_storage(self.url, self.options)

    def cli_options(self) -> tuple[str, ...]:
        """The options as ``arco serve`` / ``arco reconcile`` flags."""
        return tuple(f"--storage-option={k}={v}" for k, v in self.options.items())
