"""Server settings: one frozen object, built by the CLI and handed to every worker process."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

SETTINGS_ENV = "ARCO_SERVER_SETTINGS"
DEFAULT_WAREHOUSE = "warehouse"  # relative to the working directory, like a project-local database file


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

    def __post_init__(self) -> None:
        if self.idempotency_in_progress_timeout_s > self.idempotency_key_lifetime_s:
            raise ValueError(
                "the idempotency in-progress timeout must not exceed the idempotency key lifetime "
                f"({self.idempotency_in_progress_timeout_s}s > {self.idempotency_key_lifetime_s}s)"
            )

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
