"""GCS: OAuth2 access tokens downscoped with a Credential Access Boundary to one bucket prefix.

The server's source credentials (``vending_gcs_credentials_file``, a service-account JSON key, else Application
Default Credentials) are exchanged at Google's STS (``sts.googleapis.com``) for a token that can reach only
objects under the prefix. That token's lifetime is the source token's (Google sets it, up to an hour), not
``vending_lifetime_s``.

Not exercised against a server here: fake-gcs-server does not enforce boundaries and Google's STS is not
reachable from the tests, so the boundary's rules are tested as data, and minting is Google's own
``google.auth.downscoped`` code, not a stand-in.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from arco.settings import ServerSettings
from arco.vending.locations import StorageLocation
from arco.vending.model import Access, VendedCredential, VendingFailed, VendingUnavailable

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
ROLES = {Access.READ: "roles/storage.objectViewer", Access.READ_WRITE: "roles/storage.objectAdmin"}
CREDENTIALS_HINT = ("set --vending-gcs-credentials-file (or ARCO_VENDING_GCS_CREDENTIALS_FILE) to a service-account "
                    "key, or give the server Application Default Credentials")


def boundary_rules(location: StorageLocation, access: Access) -> list[dict[str, Any]]:
    """The Credential Access Boundary rules, in the JSON shape Google's STS takes (``accessBoundaryRules``)."""
    rule: dict[str, Any] = {
        "availableResource": f"//storage.googleapis.com/projects/_/buckets/{location.bucket}",
        "availablePermissions": [f"inRole:{ROLES[access]}"],
    }
    if location.key_prefix:
        # Objects must sit under the prefix; listing is checked on the bucket, so the list call's own prefix
        # parameter has to start with it too (Google's documented pattern for prefix-scoped listing).
        objects = f"projects/_/buckets/{location.bucket}/objects/{location.key_prefix}"
        rule["availabilityCondition"] = {
            "title": "table prefix",
            "expression": (f"resource.name.startsWith('{objects}') || "
                           f"api.getAttribute('storage.googleapis.com/objectListPrefix', '')"
                           f".startsWith('{location.key_prefix}')"),
        }
    return [rule]


def access_boundary(location: StorageLocation, access: Access) -> Any:
    """The rules as a google-auth ``CredentialAccessBoundary``."""
    from google.auth import downscoped

    rules = []
    for raw in boundary_rules(location, access):
        condition = raw.get("availabilityCondition")
        rules.append(downscoped.AccessBoundaryRule(  # type: ignore[no-untyped-call]
            available_resource=raw["availableResource"], available_permissions=raw["availablePermissions"],
            availability_condition=downscoped.AvailabilityCondition(  # type: ignore[no-untyped-call]
                condition["expression"], condition["title"]) if condition else None))
    return downscoped.CredentialAccessBoundary(rules=rules)  # type: ignore[no-untyped-call]


class GcsMinter:
    def __init__(self, settings: ServerSettings, storage_options: dict[str, str]) -> None:
        self._credentials_file = settings.vending_gcs_credentials_file
        self._options = storage_options
        self._source: Any = None

    def resolve_role(self, role_arn: str | None) -> str | None:
        return None  # IAM roles are an AWS notion; the account key / source credentials decide here

    def _anonymous(self) -> bool:
        return self._options.get("gcs.no-auth", "false").lower() == "true" and not self._credentials_file

    def configured(self, location: StorageLocation, role_arn: str | None) -> bool:
        # Application Default Credentials are looked for only when minting (the lookup may ask a metadata server).
        return not self._anonymous()

    def _source_credentials(self) -> Any:
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError
        from google.oauth2 import service_account

        if self._source is not None:
            return self._source
        if self._anonymous():
            raise VendingUnavailable(f"the warehouse reads GCS anonymously (gcs.no-auth), so there is nothing to "
                                     f"downscope: {CREDENTIALS_HINT}")
        try:
            if self._credentials_file:
                self._source = service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
                    self._credentials_file, scopes=[CLOUD_PLATFORM_SCOPE])
            else:
                self._source, _ = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
        except (DefaultCredentialsError, OSError, ValueError) as exc:
            raise VendingUnavailable(f"no Google source credentials to downscope ({exc}): {CREDENTIALS_HINT}") from exc
        return self._source

    def _client_config(self) -> dict[str, str]:
        config = {}
        if project := self._options.get("gcs.project-id"):
            config["gcs.project-id"] = project
        if host := self._options.get("gcs.service.host") or os.environ.get("STORAGE_EMULATOR_HOST"):
            config["gcs.service.host"] = host
        return config

    def mint(self, location: StorageLocation, access: Access, principal: str, role_arn: str | None) -> VendedCredential:
        from google.auth import downscoped
        from google.auth.exceptions import GoogleAuthError
        from google.auth.transport.requests import Request

        boundary = access_boundary(location, access)
        credentials = downscoped.Credentials(self._source_credentials(), boundary)  # type: ignore[no-untyped-call]
        try:
            credentials.refresh(Request())
        except (GoogleAuthError, OSError) as exc:
            raise VendingFailed(f"downscoping the server's Google credentials failed: {exc}") from exc
        token, expiry = credentials.token, credentials.expiry
        if not isinstance(token, str) or expiry is None:
            raise VendingFailed("Google STS answered without a token or an expiry")
        # google-auth keeps `expiry` as a naive UTC datetime.
        expires_at_ms = int(expiry.replace(tzinfo=dt.UTC).timestamp() * 1000)
        config = {**self._client_config(), "gcs.oauth2.token": token, "gcs.oauth2.token-expires-at": str(expires_at_ms)}
        return VendedCredential(location.url, config, expires_at_ms, {"gcp_oauth_token": {"oauth_token": token}})
