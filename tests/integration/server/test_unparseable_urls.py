"""Storage URLs that Python's URL parser cannot split (an unbalanced '[' or ']' in the host, as an IPv6 literal
half written) are bad input wherever a client supplies a location: a 400 in the API's own error shape, never a 500,
and nothing created."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, ONE_COLUMN_SCHEMA, RunningServer

pytestmark = pytest.mark.timeout(120)

UNPARSEABLE = ["s3://[bucket/path", "s3://bucket]/path", "gs://[::1/x", "file://[tmp/x", "abfss://c@[acct/x"]


@pytest.fixture(scope="module")
def uc(server: RunningServer, client: httpx.Client) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{server.base_url}/api/2.1/unity-catalog", timeout=30,
                      headers={"Authorization": f"Bearer {ARCO_TOKEN}"}) as c:
        yield c


def iceberg_error(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "BadRequestException"


def uc_error(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.json()["error_code"] == "INVALID_PARAMETER_VALUE"


@pytest.mark.parametrize("url", UNPARSEABLE)
def test_iceberg_locations(client: httpx.Client, url: str) -> None:
    before = client.get("/namespaces/db/tables").json()
    iceberg_error(client.post("/namespaces/db/tables", json={"name": "n", "schema": ONE_COLUMN_SCHEMA,
                                                                "location": url}))
    iceberg_error(client.post("/namespaces/db/register", json={"name": "n", "metadata-location": url}))
    iceberg_error(client.post("/namespaces/db/tables/t", json={"updates": [
        {"action": "set-location", "location": url}]}))
    assert client.get("/namespaces/db/tables").json() == before


@pytest.mark.parametrize("url", UNPARSEABLE)
def test_unity_locations(uc: httpx.Client, url: str) -> None:
    uc_error(uc.post("/external-locations", json={"name": "n", "url": url, "credential_name": "c"}))
    uc_error(uc.post("/catalogs", json={"name": "n", "storage_root": url}))
    uc_error(uc.post("/schemas", json={"catalog_name": "main", "name": "n", "storage_root": url}))
    uc_error(uc.post("/tables", json={"catalog_name": "main", "schema_name": "db", "name": "n",
                                      "table_type": "EXTERNAL", "data_source_format": "DELTA",
                                      "storage_location": url, "columns": []}))
    uc_error(uc.post("/volumes", json={"catalog_name": "main", "schema_name": "db", "name": "n",
                                       "volume_type": "EXTERNAL", "storage_location": url}))
    uc_error(uc.post("/temporary-path-credentials", json={"url": url, "operation": "PATH_READ"}))
    assert uc.get("/catalogs/n").status_code == 404
    assert uc.get("/tables/main.db.n").status_code == 404
