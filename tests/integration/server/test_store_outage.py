"""A real object store goes away under ``arco serve`` and comes back: SeaweedFS killed (SIGKILL), then started again
on the same data and ports.

While it is down, every request that needs it (Iceberg, Unity Catalog, Delta Sharing) is answered 503 with
``Retry-After`` in its API's own error shape, on the same keep-alive connection, and the server's log holds one line
and no traceback. Once it is back, a commit retried with the Idempotency-Key of one answered 503 lands, once, and a
second retry gets the same answer; requests that never needed the store (health) are answered throughout.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from uuid6 import uuid7

from support.arco_server import ARCO_TOKEN
from support.keepalive import Connection
from support.net import wait_for_http
from support.sharing import activate, ds, share_with
from support.store_kill import servers_on_a_killable_store

pytestmark = pytest.mark.timeout(300)

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}
TABLE = "/iceberg/v1/main/namespaces/db/tables/t"
UC_TABLE = "/api/2.1/unity-catalog/tables/main.db.t"
SHARED_TABLE = "/shares/outage/schemas/db/tables/t/query"


def set_property(name: str) -> dict:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": {name: "1"}}]}


def test_a_store_outage_is_503_in_each_shape_and_a_keyed_retry_lands_once_after_it(tmp_path: Path) -> None:
    with servers_on_a_killable_store(tmp_path, servers=1) as killable:
        server = killable.servers[0]
        conn = Connection(server.base_url, ARCO_TOKEN)
        assert conn.request("POST", "/iceberg/v1/main/namespaces", {"namespace": ["db"]})[0] == 200
        assert conn.request("POST", "/iceberg/v1/main/namespaces/db/tables", {"name": "t", "schema": SCHEMA})[0] == 200
        assert conn.request("POST", TABLE, set_property("before"))[0] == 200
        _, profile = activate(share_with(server, "outage", "reader", ["main.db.t"]), tmp_path)
        assert ds(server, profile, "POST", SHARED_TABLE, json={}).status_code == 200

        killable.kill()
        key = str(uuid7())
        status, headers, body = conn.request("POST", TABLE, set_property("during"), {"Idempotency-Key": key})
        assert status == 503 and int(headers["retry-after"]) >= 1, body
        assert body["error"]["type"] == "ServiceUnavailableException" and body["error"]["code"] == 503
        status, headers, body = conn.request("POST", "/iceberg/v1/main/namespaces/db/tables",
                                             {"name": "u", "schema": SCHEMA})
        assert status == 503 and "retry-after" in headers and body["error"]["code"] == 503
        status, headers, body = conn.request("GET", TABLE)
        assert status == 503 and body["error"]["type"] == "ServiceUnavailableException"
        status, headers, body = conn.request("POST", "/api/2.1/unity-catalog/schemas",
                                             {"catalog_name": "main", "name": "during"})
        assert status == 503 and "retry-after" in headers and body["error_code"] == "TEMPORARILY_UNAVAILABLE"
        shared = ds(server, profile, "POST", SHARED_TABLE, json={})
        assert shared.status_code == 503 and "retry-after" in shared.headers, shared.text
        assert shared.json()["errorCode"] == "TEMPORARILY_UNAVAILABLE"
        assert conn.request("GET", "/health")[0] == 200
        assert conn.dropped == 0  # every answer came on the one keep-alive connection

        # The store comes back on the same data and endpoint; the client retries as Retry-After told it to.
        killable.restart()
        wait_for_http(f"{server.base_url}/health", 10)
        status, _, first = conn.request("POST", TABLE, set_property("during"), {"Idempotency-Key": key})
        assert status == 200, first
        status, _, again = conn.request("POST", TABLE, set_property("during"), {"Idempotency-Key": key})
        assert status == 200 and again["metadata-location"] == first["metadata-location"]
        status, _, loaded = conn.request("GET", TABLE)
        assert status == 200 and loaded["metadata-location"] == first["metadata-location"]
        assert {"before", "during"} <= set(loaded["metadata"]["properties"])
        # One version for the retried commit: the create, "before", "during", and nothing else.
        assert len(loaded["metadata"]["metadata-log"]) == 2
        assert conn.request("GET", UC_TABLE)[0] == 200
        assert ds(server, profile, "POST", SHARED_TABLE, json={}).status_code == 200
        assert conn.request("POST", "/api/2.1/unity-catalog/schemas", {"catalog_name": "main", "name": "after"})[0] \
            == 200
        assert conn.dropped == 0
        conn.close()
        log = server.log()
        assert "Traceback" not in log
        # One warning for the outage (later ones within a minute are counted into a summary), not one per request.
        assert log.count("storage unavailable on") == 1, log[-2000:]
