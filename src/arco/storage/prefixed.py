"""Keys under a prefix inside a bucket or container, shared by the object-store backends."""

from __future__ import annotations

from arco.storage.keys import check_key, check_prefix


class PrefixedKeys:
    """Maps the backend's relative keys to full object names under ``self.prefix`` and back."""

    prefix: str

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _full_prefix(self, prefix: str) -> str:
        check_prefix(prefix)
        return f"{self.prefix}/{prefix}" if self.prefix else prefix

    def _relative(self, full_key: str) -> str:
        return full_key[len(self.prefix) + 1:] if self.prefix else full_key
