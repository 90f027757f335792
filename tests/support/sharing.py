"""Setting up Delta Sharing as a provider does (through the Unity Catalog API) and calling the protocol as a
recipient does, against a running ``arco serve``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
from deltalake import write_deltalake

from support.arco_server import ARCO_TOKEN, RunningServer

ROWS = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "region": pa.array(["eu", "eu", "us", "us"]),
                 "amount": pa.array([1.5, 2.5, 3.5, 4.5])})


def uc(server: RunningServer, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, f"{server.base_url}/api/2.1/unity-catalog{path}",
                         headers={"Authorization": f"Bearer {ARCO_TOKEN}"}, timeout=30, **kwargs)


def delta_table(server: RunningServer, schema: str, name: str, *, cdf: bool = True) -> str:
    """A managed Delta table of ``main.<schema>``, written by deltalake at the location UC staged for it."""
    staging = uc(server, "POST", "/staging-tables", json={"name": name, "catalog_name": "main",
                                                          "schema_name": schema}).json()
    location = staging["staging_location"]
    config = {"delta.enableChangeDataFeed": "true"} if cdf else None
    write_deltalake(location, ROWS.slice(0, 2), partition_by=["region"], configuration=config)
    write_deltalake(location, ROWS.slice(2, 2), mode="append")
    made = uc(server, "POST", "/tables", json={
        "name": name, "catalog_name": "main", "schema_name": schema, "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": location, "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "type_json": "{}"},
            {"name": "region", "type_name": "STRING", "type_text": "string", "position": 1, "type_json": "{}"},
            {"name": "amount", "type_name": "DOUBLE", "type_text": "double", "position": 2, "type_json": "{}"}]})
    assert made.status_code == 200, made.text
    return location


def share_with(server: RunningServer, share: str, recipient: str, tables: list[str], *, history: bool = True,
               **recipient_fields: Any) -> dict[str, Any]:
    assert uc(server, "POST", "/shares", json={"name": share}).status_code == 200
    status = {"history_data_sharing_status": "ENABLED"} if history else {}
    updates = [{"action": "ADD", "data_object": {"name": t, "data_object_type": "TABLE", **status}} for t in tables]
    added = uc(server, "PATCH", f"/shares/{share}", json={"updates": updates})
    assert added.status_code == 200, added.text
    made = uc(server, "POST", "/recipients", json={"name": recipient, "authentication_type": "TOKEN",
                                                   **recipient_fields})
    assert made.status_code == 200, made.text
    granted = uc(server, "PATCH", f"/shares/{share}/permissions",
                 json={"changes": [{"principal": recipient, "add": ["SELECT"]}]})
    assert granted.status_code == 200, granted.text
    return made.json()


def activate(recipient: dict[str, Any], folder: Path) -> tuple[str, dict[str, Any]]:
    """Follow the activation link (no token) and save the profile file, as a recipient does."""
    profile = httpx.get(recipient["tokens"][-1]["activation_url"], timeout=30).json()
    path = folder / f"{recipient['name']}.share"
    path.write_text(json.dumps(profile))
    return str(path), profile


def ds(server: RunningServer, profile: dict[str, Any], method: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {profile['bearerToken']}", **kwargs.pop("headers", {})}
    return httpx.request(method, f"{server.base_url}/delta-sharing{path}", headers=headers, timeout=60, **kwargs)


def ndjson(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.text.splitlines() if line.strip()]
