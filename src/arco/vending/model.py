"""What vending hands out, and how it says no."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Access(Enum):
    READ = "read"
    READ_WRITE = "read-write"


@dataclass(frozen=True)
class VendedCredential:
    """A short-lived storage credential covering exactly one location prefix.

    ``config`` uses Iceberg FileIO property names, ready for a ``storage-credentials`` entry or a table's
    ``config``; ``unity_credentials`` is the cloud-specific part of Unity Catalog's ``TemporaryCredentials``.
    Both hold secrets, so neither is in the repr.
    """

    prefix: str
    config: dict[str, str] = field(repr=False)
    expires_at_ms: int
    unity_credentials: dict[str, dict[str, str]] = field(repr=False, default_factory=dict)

    def iceberg(self) -> dict[str, Any]:
        """One entry of Iceberg REST's ``storage-credentials`` list."""
        return {"prefix": self.prefix, "config": dict(self.config)}

    def unity(self) -> dict[str, Any]:
        """Unity Catalog's ``TemporaryCredentials``: one cloud's credential, ``expiration_time`` (ms) and ``url``."""
        return {**{k: dict(v) for k, v in self.unity_credentials.items()},
                "expiration_time": self.expires_at_ms, "url": self.prefix}

    def sharing(self) -> dict[str, Any]:
        """Delta Sharing's ``credentials``: the same as :meth:`unity`, spelled in camel case, with ``location``."""
        clouds = {_camel(k): {_camel(n): v for n, v in fields.items()} for k, fields in self.unity_credentials.items()}
        return {**clouds, "expirationTime": self.expires_at_ms, "location": self.prefix}


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


class VendingError(Exception):
    """Vending could not produce a credential."""


class VendingUnavailable(VendingError):
    """Vending is not configured for this storage; the message names the setting that is missing."""


class VendingFailed(VendingError):
    """The cloud's token service refused or could not be reached; the message carries its answer."""
