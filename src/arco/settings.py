"""Server settings: one frozen object, built by the CLI and handed to every worker process."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

SETTINGS_ENV = "ARCO_SERVER_SETTINGS"
DEFAULT_WAREHOUSE = "warehouse"  # relative to the working directory, like a project-local database file
# AWS STS AssumeRole accepts 900-43200 seconds, and SeaweedFS's STS enforces the same bounds.
VENDING_MIN_LIFETIME_S = 900
VENDING_MAX_LIFETIME_S = 43200
# "container-unsafe": a container SAS also for the warehouse's own container, which reaches the catalog itself
# (arco.vending.azure): for a single-user development setup or an emulator, never where grants matter.
VENDING_AZURE_SAS_SCOPES = ("directory", "container", "container-unsafe")


@dataclass(frozen=True)
class ServerSettings:
    warehouse: str = DEFAULT_WAREHOUSE
    storage_options: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8181
    workers: int = 1
    idempotency_key_lifetime_s: int = 3600
    idempotency_in_progress_timeout_s: int = 600
    max_body_bytes: int = 16 * 1024 * 1024
    access_log: bool = False
    metrics_public: bool = False  # GET /metrics without a token (scrapers on a private network); else admins only
    # Credential vending (arco.vending): short-lived storage credentials scoped to one table's prefix.
    vending_s3_role_arn: str | None = None        # the IAM role STS AssumeRole takes on for S3 tables
    vending_sts_endpoint: str | None = None       # default: the s3.endpoint storage option, else AWS STS
    vending_lifetime_s: int = 3600                # S3 sessions and Azure SAS tokens; AWS STS allows 900-43200
    vending_azure_sas_scope: str = "directory"    # "directory" (sr=d, needs ADLS Gen2) or "container" (sr=c)
    vending_gcs_credentials_file: str | None = None  # service-account key to downscope; default: ADC
    # Server-side scan planning (arco.iceberg.plan_routes): planned while the request waits up to this many
    # manifests, else submitted and fetched; results in plan tasks of this many file scan tasks; plans expire.
    scan_planning_async_manifests: int = 100
    scan_planning_tasks_per_chunk: int = 2000
    scan_plan_lifetime_s: int = 3600
    scan_plan_heartbeat_timeout_s: float = 60.0  # a submitted plan not heartbeating this long is failed
    # The URL recipients reach this server at (behind a proxy or a DNS name it differs from host:port): activation
    # links, profiles' endpoints and signed file URLs are built from it, never from a request's Host header.
    external_url: str | None = None
    sharing_url_lifetime_s: int = 3600  # how long a Delta Sharing file URL stays valid
    # Reads may answer from what this server checked at most this long before they arrived (a table's pointer, the
    # catalog log's end): another server's change shows within this window. 0: every read checks storage.
    read_freshness_ms: int = 0
    recipient_token_lifetime_s: int | None = None  # a new recipient token's lifetime; None: no expiry
    # Tables of the catalog kept in memory, namespace by namespace; the rest are read from storage when asked for.
    catalog_cache_tables: int = 200_000
    # Parsed table and view metadata files and the loadTable answers built from them, by their estimated size.
    metadata_cache_mb: int = 192

    def __post_init__(self) -> None:
        if not VENDING_MIN_LIFETIME_S <= self.vending_lifetime_s <= VENDING_MAX_LIFETIME_S:
            raise ValueError(f"the vending lifetime must be {VENDING_MIN_LIFETIME_S}-{VENDING_MAX_LIFETIME_S} "
                             f"seconds (STS AssumeRole's limits), not {self.vending_lifetime_s}")
        if self.vending_azure_sas_scope not in VENDING_AZURE_SAS_SCOPES:
            raise ValueError(f"the Azure SAS scope must be one of {VENDING_AZURE_SAS_SCOPES}, "
                             f"not {self.vending_azure_sas_scope!r}")
        if self.external_url is not None and not self.external_url.startswith(("http://", "https://")):
            raise ValueError(f"the external URL must start with http:// or https://, not {self.external_url!r}")
        if not 60 <= self.sharing_url_lifetime_s <= 7 * 24 * 3600:
            raise ValueError("the sharing URL lifetime must be 60 seconds to 7 days")
        if self.catalog_cache_tables < 1:
            raise ValueError("the catalog cache must hold at least one table")
        if self.metadata_cache_mb < 1:
            raise ValueError("the metadata cache must be at least 1 MB")
        if not 0 <= self.read_freshness_ms <= 60_000:
            raise ValueError("the read freshness window must be 0-60000 milliseconds")
        if self.recipient_token_lifetime_s is not None and self.recipient_token_lifetime_s < 60:
            raise ValueError("the recipient token lifetime must be at least 60 seconds")
        if self.idempotency_in_progress_timeout_s > self.idempotency_key_lifetime_s:
            raise ValueError(
                "the idempotency in-progress timeout must not exceed the idempotency key lifetime "
                f"({self.idempotency_in_progress_timeout_s}s > {self.idempotency_key_lifetime_s}s)"
            )

    def public_url(self) -> str:
        """The external URL without a trailing slash; by default this server's own address (local use)."""
        if self.external_url:
            return self.external_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def to_env(self) -> str:
        return orjson.dumps(asdict(self)).decode()

    @classmethod
    def from_env(cls) -> ServerSettings:
        raw = os.environ.get(SETTINGS_ENV)
        return cls(**orjson.loads(raw)) if raw else cls()

    def warehouse_display(self) -> str:
        if "://" in self.warehouse:
            return self.warehouse.partition("?")[0]
        return str(Path(self.warehouse).expanduser().resolve())
