"""CredentialVendor: one object per server process that vends (and caches) credentials for any table location."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from arco.inline import refuse_to_wait
from arco.settings import ServerSettings
from arco.vending.cache import CredentialCache
from arco.vending.locations import Cloud, InvalidLocation, StorageLocation, parse_location
from arco.vending.model import Access, VendedCredential


class Minter(Protocol):
    def resolve_role(self, role_arn: str | None) -> str | None: ...

    def configured(self, location: StorageLocation, role_arn: str | None) -> bool:
        """Whether this server has what minting for ``location`` needs (a role, a key, source credentials), by
        its settings alone: no call to a token service."""
        ...

    def mint(self, location: StorageLocation, access: Access, principal: str,
             role_arn: str | None) -> VendedCredential: ...


class CredentialVendor:
    """Vends credentials scoped to one location prefix; see the package docstring for the rules."""

    def __init__(self, settings: ServerSettings, storage_options: dict[str, str],
                 clock: Callable[[], float] = time.time) -> None:
        self._settings = settings
        self._options = dict(storage_options)
        self._minters: dict[Cloud, Minter] = {}
        self._clock = clock
        self._cache = CredentialCache(clock)

    def _minter(self, cloud: Cloud) -> Minter:
        # Built on first use: a server on S3 never imports the Azure or Google SDKs.
        if cloud not in self._minters:
            refuse_to_wait()  # importing an SDK and building its client takes a while
            if cloud == "s3":
                from arco.vending.s3 import S3Minter

                self._minters[cloud] = S3Minter(self._settings, self._options)
            elif cloud == "azure":
                from arco.vending.azure import AzureMinter

                self._minters[cloud] = AzureMinter(self._settings, self._options, self._clock)
            else:
                from arco.vending.gcs import GcsMinter

                self._minters[cloud] = GcsMinter(self._settings, self._options)
        return self._minters[cloud]

    def vend(self, location: str, access: Access, principal: str,
             role_arn: str | None = None) -> VendedCredential | None:
        """A credential for ``location``'s prefix, or ``None`` for a local directory (nothing to vend).

        Raises :class:`~arco.vending.locations.InvalidLocation` for a location that cannot be scoped safely,
        :class:`~arco.vending.model.VendingUnavailable` when vending is not configured for that storage and
        :class:`~arco.vending.model.VendingFailed` when the cloud's token service refuses or cannot be reached.
        """
        parsed = parse_location(location)
        if parsed.cloud == "local":
            return None
        minter = self._minter(parsed.cloud)
        # The role is part of the key: an external location's role may allow less than the server's.
        role = minter.resolve_role(role_arn)
        key = (principal, parsed.url, access, role)
        return self._cache.get_or_mint(key, lambda: minter.mint(parsed, access, principal, role))

    def offers(self, location: str, role_arn: str | None = None) -> bool:
        """Whether :meth:`vend` would try to mint for ``location`` as this server is configured: a cloud location
        that can be scoped, and the settings that cloud's minting needs. Decided without a token service, so a
        listing may ask it for every entry; the token service may still refuse later."""
        try:
            parsed = parse_location(location)
        except InvalidLocation:
            return False
        return parsed.cloud != "local" and self._minter(parsed.cloud).configured(parsed, role_arn)
