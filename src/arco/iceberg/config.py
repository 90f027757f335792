"""What ``GET /v1/config`` tells clients: defaults, overrides and the authoritative list of endpoints."""

from __future__ import annotations

from typing import Any

from arco.settings import ServerSettings

ENDPOINTS: tuple[str, ...] = ("GET /v1/config",)


def iso8601_duration(seconds: int) -> str:
    return f"PT{seconds}S"


def catalog_config(settings: ServerSettings, warehouse: str | None) -> dict[str, Any]:
    return {
        "defaults": {},
        "overrides": {},
        "endpoints": list(ENDPOINTS),
        "idempotency-key-lifetime": iso8601_duration(settings.idempotency_key_lifetime_s),
    }
