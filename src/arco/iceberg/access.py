"""How an Iceberg client reaches a table's bytes (seed section 9.3): ``X-Iceberg-Access-Delegation``.

* ``vended-credentials``: a short-lived credential scoped to the table's prefix, read-only for SELECT and read-write
  for MODIFY (:mod:`arco.vending`), in ``storage-credentials`` and ``config`` with the refresh endpoint;
* ``remote-signing``: S3 requests signed by this server, one table's prefix and the caller's privilege at a time
  (:mod:`arco.vending.signing`), at the table-scoped ``.../tables/{table}/sign`` endpoint.

A local-directory warehouse needs neither: engines read the files directly. loadTable gives what it can ("the
server may choose to supply access via any or none of the requested mechanisms", and PyIceberg asks for
vended credentials on every call), while ``/credentials``, which exists only to vend, says 501 and names the
missing setting when it cannot.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from arco.iceberg.errors import BadRequest, Forbidden, IcebergError
from arco.inline import refuse_to_wait
from arco.settings import ServerSettings
from arco.storage.s3_options import client_config
from arco.vending import signing
from arco.vending.locations import InvalidLocation, is_local, parse_location
from arco.vending.model import Access, VendingFailed, VendingUnavailable
from arco.vending.vendor import CredentialVendor

VENDED, SIGNED = "vended-credentials", "remote-signing"
DELEGATION_MODES = (VENDED, SIGNED)


class NotConfigured(IcebergError):
    status, error_type = 501, "NotImplementedException"


class StorageUnreachable(IcebergError):
    status, error_type = 503, "ServiceUnavailableException"


def delegation_modes(header: str | None) -> frozenset[str]:
    """The mechanisms a client accepts (a comma-separated header); an unknown one is a 400 naming the known."""
    if not header:
        return frozenset()
    modes = frozenset(part.strip().lower() for part in header.split(",") if part.strip())
    unknown = sorted(modes - set(DELEGATION_MODES))
    if unknown:
        raise BadRequest(f"X-Iceberg-Access-Delegation: unsupported {', '.join(unknown)}; supported: "
                         f"{', '.join(DELEGATION_MODES)}")
    return modes


@dataclass(frozen=True)
class TableAccess:
    """What a LoadTableResult adds for storage access: ``config`` and ``storage-credentials``."""

    config: dict[str, str] = field(default_factory=dict)
    credentials: list[dict[str, Any]] = field(default_factory=list)
    expires_at_ms: int | None = None

    def etag_part(self) -> str:
        """A client revalidating with If-None-Match must get new credentials once these are replaced."""
        return f"-v{self.expires_at_ms}" if self.expires_at_ms else ("-s" if self.config else "")


@dataclass(frozen=True)
class TableRoute:
    """Where a table is served, for the endpoints clients are told to call back: ``v1/<prefix>/.../<table>``."""

    catalog_uri: str  # e.g. http://host:8181/iceberg
    table_path: str   # e.g. v1/main/namespaces/db/tables/t


class StorageAccess:
    def __init__(self, settings: ServerSettings, storage_options: dict[str, str]) -> None:
        self.options = storage_options
        self.vendor = CredentialVendor(settings, storage_options)
        self._signing_credentials: signing.S3Credentials | None = None

    # -- loadTable, createTable, registerTable --------------------------------------------------------------

    @staticmethod
    def has_access_to_give(location: str, modes: frozenset[str]) -> bool:
        """Whether :meth:`for_table` may give anything: never for a local directory, nor when nothing was asked."""
        return bool(modes) and not is_local(location)

    def for_table(self, location: str, access: Access, principal: str, modes: frozenset[str],
                  route: TableRoute, role: Callable[[], str | None]) -> TableAccess:
        """What the client asked for and this server can give (possibly nothing); ``role`` tells the role vended
        credentials are minted with (:mod:`arco.catalog.storage_roles`), asked only when they are."""
        if not self.has_access_to_give(location, modes):
            return TableAccess()
        if VENDED in modes:
            try:
                return self.vended(location, access, principal, route, role())
            except NotConfigured:
                if SIGNED not in modes:
                    return TableAccess()
        if SIGNED in modes and _cloud(location) == "s3" and self.signing_credentials() is not None \
                and role() is None:  # this server signs with its own keys only (see sign)
            return TableAccess(config=self.signing_config(route))
        return TableAccess()

    def vended(self, location: str, access: Access, principal: str, route: TableRoute,
               role: str | None) -> TableAccess:
        """Vended credentials for ``location``, minted with ``role`` (None: the server's); 501 naming the setting
        when vending is not configured."""
        try:
            credential = self.vendor.vend(location, access, principal, role_arn=role)
        except VendingUnavailable as exc:
            raise NotConfigured(f"credential vending is not configured for {location}: {exc}") from None
        except VendingFailed as exc:
            raise StorageUnreachable(f"the storage's token service refused or did not answer: {exc}",
                                     headers={"Retry-After": "5"}) from None
        except InvalidLocation as exc:
            raise BadRequest(f"cannot scope credentials to {location}: {exc}") from None
        if credential is None:
            return TableAccess()
        config = {**credential.config,
                  "client.refresh-credentials-endpoint": f"{route.table_path}/credentials"}
        return TableAccess(config=config, credentials=[credential.iceberg()], expires_at_ms=credential.expires_at_ms)

    # -- remote signing ----------------------------------------------------------------------------------------

    def signing_config(self, route: TableRoute) -> dict[str, str]:
        return {
            **client_config(self.options),
            "s3.remote-signing-enabled": "true",  # Iceberg Java
            "s3.signer": "S3V4RestSigner",  # PyIceberg, whose default PyArrowFileIO cannot sign: use fsspec's
            "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
            "s3.signer.uri": route.catalog_uri,
            "s3.signer.endpoint": f"{route.table_path}/sign",
        }

    def signing_credentials(self) -> signing.S3Credentials | None:
        """The server's own S3 keys (storage options, else the SDK's usual sources), which sign for clients."""
        if self._signing_credentials is None:
            refuse_to_wait()  # the SDK's sources may include a metadata service
            import boto3  # noqa: PLC0415 - only S3 warehouses sign: a local one's server starts without the SDK

            session = boto3.session.Session(aws_access_key_id=self.options.get("s3.access-key-id"),
                                            aws_secret_access_key=self.options.get("s3.secret-access-key"),
                                            aws_session_token=self.options.get("s3.session-token"))
            found = session.get_credentials()
            if found is None:
                return None
            frozen = found.get_frozen_credentials()
            self._signing_credentials = signing.S3Credentials(frozen.access_key, frozen.secret_key, frozen.token)
        return self._signing_credentials

    def sign(self, location: str, body: Any, write_allowed: bool, role: str | None = None) -> dict[str, Any]:
        """A RemoteSignResult for one S3 request inside ``location``; 400 malformed, 403 outside the grant. A
        table reached through an external location's own role (``role``, :mod:`arco.catalog.storage_roles`) is
        not signed for: this server signs with its own keys, which the role may not allow (a read-only role
        would be written through); its vended credentials are minted with the role."""
        if role is not None:
            raise Forbidden("this table lies in an external location reached through its storage credential's "
                            "own role, which remote signing (this server's keys) would bypass: ask for vended "
                            "credentials (X-Iceberg-Access-Delegation: vended-credentials)")
        try:
            request = signing.parse_sign_request(body)
        except signing.InvalidSignRequest as exc:
            raise BadRequest(f"invalid sign request: {exc}") from None
        try:
            target = parse_location(location)
        except InvalidLocation as exc:
            raise BadRequest(str(exc)) from None
        credentials = self.signing_credentials()
        if target.cloud != "s3":
            raise BadRequest("remote signing is for tables on S3; this table is not")
        if credentials is None:
            raise NotConfigured("remote signing needs this server's S3 credentials (s3.access-key-id and "
                                "s3.secret-access-key storage options, or the AWS SDK's environment)")
        endpoint = client_config(self.options).get("s3.endpoint")
        # AWS checks a signed payload hash against the body; some S3-compatible servers do not (see signing).
        reason = signing.may_sign(request, (target.bucket, target.key_prefix), write_allowed, endpoint,
                                  storage_checks_payload=endpoint is None)
        if reason is not None:
            raise Forbidden(f"will not sign this request: {reason}")
        region = self.options.get("s3.region") or os.environ.get("AWS_REGION") or request.region
        return signing.sign(request, credentials, region)


@functools.lru_cache(maxsize=4096)  # asked on every loadTable; parsing the URL was 3% of a cold load's work
def _cloud(location: str) -> str:
    try:
        return parse_location(location).cloud
    except InvalidLocation:
        return "invalid"
