"""Vended credentials: short-lived storage credentials scoped to one table's location prefix.

Engines never get the server's own storage keys. For a table they may read (SELECT) or write (MODIFY), the
server mints a credential that reaches only ``<table location>/`` and expires on its own::

    from arco.vending import Access, CredentialVendor, VendingUnavailable

    vendor = CredentialVendor(settings, settings.storage_options)   # one per process; it caches
    credential = vendor.vend("s3://bucket/wh/main/db/t-0123/", Access.READ, principal="alice")
    credential.prefix          # "s3://bucket/wh/main/db/t-0123/" (normalised, trailing slash)
    credential.config          # Iceberg FileIO properties: {"s3.access-key-id": ..., "s3.session-token": ...}
    credential.iceberg()       # {"prefix": ..., "config": ...}: one entry of loadTable's `storage-credentials`
    credential.unity()         # Unity Catalog TemporaryCredentials: aws_temp_credentials / azure_user_delegation_sas
                               # / gcp_oauth_token, expiration_time (epoch ms), url
    credential.expires_at_ms

``vend(location, access, principal, role_arn=None)`` returns ``None`` for a local directory (nothing to vend),
raises ``InvalidLocation`` for a location that cannot be scoped safely (``..``, ``*``, ``?``, ``$``, quotes),
``VendingUnavailable`` when the storage is object storage but vending is not configured (the message names the
setting), and ``VendingFailed`` when the cloud's token service refuses or is unreachable. Credentials are cached
per (principal, normalised prefix, access, role) and minted anew once less than a quarter of their life is left.

Per cloud (``arco serve`` options, each also an environment variable):

- **S3** (``s3://``, ``s3a://``): STS ``AssumeRole`` of ``--vending-s3-role-arn`` (``ARCO_VENDING_S3_ROLE_ARN``;
  a UC storage credential's ``aws_iam_role.role_arn`` is passed as ``role_arn`` and wins), called with the
  server's own keys at ``--vending-sts-endpoint`` (default: the ``s3.endpoint`` storage option, else AWS STS),
  ``DurationSeconds`` = ``--vending-lifetime`` (default 3600; 900-43200, STS's own bounds), and an inline session
  policy: ``s3:GetObject(Version)`` on ``bucket/prefix*``, ``s3:ListBucket`` only with ``s3:prefix`` =
  ``prefix`` or ``prefix*``, ``s3:GetBucketLocation``; read-write adds Put/Delete and the multipart actions.
  Config: ``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token``,
  ``s3.session-token-expires-at-ms``, ``s3.region``/``client.region``, and ``s3.endpoint`` and
  ``s3.path-style-access`` when the server uses them. SeaweedFS enforces all of it (tests/integration/vending).
- **Azure** (``az://``, ``abfss://``, ...): a service SAS signed with the account key from the warehouse's
  ``adls.connection-string`` / ``adls.account-key``: ``rl`` to read, ``racwdl`` to write, lifetime
  ``--vending-lifetime``. ``--vending-azure-sas-scope directory`` (default) signs a directory SAS (``sr=d``) on
  the prefix, which needs an ADLS Gen2 (hierarchical namespace) account; ``container`` signs a container SAS,
  which reaches the whole container (flat-namespace accounts and Azurite have nothing narrower), never for the
  warehouse's own container (``container-unsafe`` does, for a single-user setup or an emulator). Config:
  ``adls.sas-token`` (with a leading ``?``: PyIceberg's Arrow FileIO appends it to the URL as is),
  ``adls.sas-token.<host>`` and ``adls.sas-token-expires-at-ms.<host>`` for the location's host and the account's
  dfs and blob hosts (Iceberg Java, PyIceberg's fsspec FileIO), ``adls.account-name``, and for a custom endpoint
  ``adls.blob-storage-authority``/``-scheme`` (and dfs). Azurite enforces permissions, container and expiry.
- **GCS** (``gs://``): the server's Google credentials (``--vending-gcs-credentials-file``, else Application
  Default Credentials) downscoped at Google STS with a Credential Access Boundary: the bucket, role
  ``storage.objectViewer`` (read) or ``storage.objectAdmin`` (read-write), and the condition that object names,
  or a listing's prefix, start with the table's prefix. Config: ``gcs.oauth2.token``,
  ``gcs.oauth2.token-expires-at`` (ms), and ``gcs.service.host``/``gcs.project-id`` when set. Only the boundary
  is tested: no emulator enforces boundaries and Google STS is unreachable from the tests.
"""

from arco.vending.locations import InvalidLocation, StorageLocation, parse_location
from arco.vending.model import Access, VendedCredential, VendingError, VendingFailed, VendingUnavailable
from arco.vending.vendor import CredentialVendor

__all__ = [
    "Access",
    "CredentialVendor",
    "InvalidLocation",
    "StorageLocation",
    "VendedCredential",
    "VendingError",
    "VendingFailed",
    "VendingUnavailable",
    "parse_location",
]
