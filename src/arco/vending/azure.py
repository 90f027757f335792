"""Azure Blob / ADLS Gen2: service SAS tokens signed with the storage account key.

Scope (``vending_azure_sas_scope``):

- ``directory`` (the default): a directory SAS (``sr=d``, ``sdd`` = the prefix's depth) on the table's prefix.
  Azure enforces it only on accounts with a hierarchical namespace (ADLS Gen2, the ``abfss://`` kind).
- ``container``: a container SAS (``sr=c``). It covers the whole container, not just the table: use it only where
  a container holds one table's worth of trust (or on flat-namespace accounts and Azurite, which have no
  narrower SAS that covers a prefix: a blob SAS names one blob, and Azurite 3.37 accepts only ``sr=c``/``sr=b``
  and answers a directory SAS with 403).

A location at the container root gets a container SAS either way: the container is then exactly its scope.

No container SAS is signed for the container that holds the warehouse: it would read and write Arco's own files
(``_catalog``: the catalog, every grant, the keys that sign tokens), which no grant on a table gives, so anyone
vended one could act as anyone. Tables vended that way live in containers of their own (an external location on
another container: UC tables and volumes). ``container-unsafe`` signs one anyway, for a single-user development
setup or an emulator (Azurite has no narrower SAS), and the server says so when it starts.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from azure.storage.blob import generate_blob_sas, generate_container_sas

from arco.settings import VENDING_AZURE_SAS_SCOPES, ServerSettings
from arco.storage.azure import endpoint_properties
from arco.storage.urls import set_home_azure_account
from arco.vending.locations import StorageLocation, parse_location
from arco.vending.model import Access, VendedCredential, VendingUnavailable

SAS_SCOPES = VENDING_AZURE_SAS_SCOPES
KEY_HINT = ("credential vending for Azure signs SAS tokens with the storage account key: set adls.connection-string "
            "(with AccountKey) or adls.account-name and adls.account-key (--storage-option)")


def sas_permissions(access: Access) -> str:
    """read+list, or also add, create, write and delete (the SAS canonical order)."""
    return "rl" if access is Access.READ else "racwdl"


@dataclass(frozen=True)
class SasScope:
    resource: str           # "d" (directory) or "c" (container)
    container: str
    directory: str          # "a/b" for "d", "" for "c"
    depth: int              # sdd: how many path segments the directory has


def sas_scope(location: StorageLocation, scope: str) -> SasScope:
    if scope not in SAS_SCOPES:
        raise ValueError(f"vending_azure_sas_scope must be one of {SAS_SCOPES}, not {scope!r}")
    directory = location.key_prefix.rstrip("/")
    if scope != "directory" or not directory:
        return SasScope("c", location.bucket, "", 0)
    return SasScope("d", location.bucket, directory, directory.count("/") + 1)


def sas_hosts(account: str, location: StorageLocation) -> list[str]:
    """The hosts clients key SAS tokens by (``adls.sas-token.<host>``): the location's own, then dfs and blob."""
    hosts = [location.account_host] if location.account_host else []
    hosts += [f"{account}.dfs.core.windows.net", f"{account}.blob.core.windows.net"]
    return list(dict.fromkeys(hosts))


def _connection_parts(options: dict[str, str]) -> dict[str, str]:
    raw = options.get("adls.connection-string") or os.environ.get("AZURE_STORAGE_CONNECTION_STRING") or ""
    return {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in raw.split(";")) if k.strip()}


class AzureMinter:
    def __init__(self, settings: ServerSettings, storage_options: dict[str, str],
                 clock: Callable[[], float] = time.time) -> None:
        parts = _connection_parts(storage_options)
        self._clock = clock
        self._account = (parts.get("AccountName") or storage_options.get("adls.account-name")
                         or os.environ.get("AZURE_STORAGE_ACCOUNT") or "")
        self._key = (parts.get("AccountKey") or storage_options.get("adls.account-key")
                     or os.environ.get("AZURE_STORAGE_KEY"))
        self._endpoint = parts.get("BlobEndpoint") or storage_options.get("adls.endpoint") or ""
        if self._account:
            set_home_azure_account(self._account)  # the account az:// locations name (arco.storage.urls)
        self._scope = settings.vending_azure_sas_scope
        self._lifetime_s = settings.vending_lifetime_s
        warehouse = parse_location(settings.warehouse) if "://" in settings.warehouse else None
        self._warehouse = warehouse if warehouse is not None and warehouse.cloud == "azure" else None

    def resolve_role(self, role_arn: str | None) -> str | None:
        return None  # IAM roles are an AWS notion; the account key / source credentials decide here

    def _client_config(self) -> dict[str, str]:
        config = {"adls.account-name": self._account}
        if self._endpoint:  # an emulator or sovereign cloud
            config.update(endpoint_properties(self._endpoint))
        return config

    def _missing(self, location: StorageLocation) -> str | None:
        """Why no SAS can be signed for ``location`` (None: the account key for its account is here, and its
        SAS would not reach the warehouse's own files)."""
        if not self._account or not self._key:
            return KEY_HINT
        wanted = self._account_of(location)
        if wanted != self._account:
            return f"no account key for storage account {wanted!r} (the server has {self._account!r})"
        if (self._scope != "container-unsafe" and sas_scope(location, self._scope).resource == "c"
                and self._holds_warehouse(location)):
            return (f"a container SAS for {location.bucket} would reach this warehouse's own files, which no grant "
                    "gives: keep tables to be vended in another container (an external location there), or use "
                    "--vending-azure-sas-scope directory on an ADLS Gen2 account (container-unsafe signs one anyway, "
                    "for a single-user setup or an emulator)")
        return None

    def _holds_warehouse(self, location: StorageLocation) -> bool:
        warehouse = self._warehouse
        return warehouse is not None and warehouse.bucket == location.bucket and \
            self._account_of(warehouse) == self._account_of(location)

    def _account_of(self, location: StorageLocation) -> str:
        """The storage account a location names (``abfss://c@account.dfs...``), else this server's."""
        return location.account_host.split(".")[0] or self._account

    def configured(self, location: StorageLocation, role_arn: str | None) -> bool:
        return self._missing(location) is None

    def mint(self, location: StorageLocation, access: Access, principal: str, role_arn: str | None) -> VendedCredential:
        missing = self._missing(location)
        if missing is not None:
            raise VendingUnavailable(missing)
        scope = sas_scope(location, self._scope)
        # Whole seconds: that is all a SAS's `se` carries, and the advertised expiry must not outlive it.
        expiry = dt.datetime.fromtimestamp(int(self._clock()) + self._lifetime_s, dt.UTC)
        protocol = "https" if self._endpoint.startswith("https:") or not self._endpoint else None
        if scope.resource == "c":
            token = generate_container_sas(self._account, scope.container, account_key=self._key,
                                           permission=sas_permissions(access), expiry=expiry, protocol=protocol)
        else:
            token = generate_blob_sas(self._account, scope.container, scope.directory, account_key=self._key,
                                      permission=sas_permissions(access), expiry=expiry, protocol=protocol,
                                      is_directory=True, sdd=scope.depth)
        expires_at_ms = int(expiry.timestamp()) * 1000
        config = self._client_config()
        # PyIceberg's Arrow FileIO reads only `adls.sas-token` and appends it to the account URL as it is,
        # so it needs the leading "?"; Iceberg Java and adlfs strip one if present.
        config["adls.sas-token"] = f"?{token}"
        for host in sas_hosts(self._account, location):
            config[f"adls.sas-token.{host}"] = token
            config[f"adls.sas-token-expires-at-ms.{host}"] = str(expires_at_ms)
        return VendedCredential(location.url, config, expires_at_ms,
                                {"azure_user_delegation_sas": {"sas_token": token}})
