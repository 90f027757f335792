"""OAuth2 client-credentials tokens are stateless: exchanging writes nothing, any server of the warehouse verifies
them, and they end by expiry, by revocation of their principal, or by rotation of the signing key."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from arco.auth import oauth_tokens
from arco.auth.oauth_tokens import Claims, SigningKeys
from arco.auth.sealed import b64
from arco.storage.local import LocalBackend
from support.arco_server import RunningServer, arco_server, run_cli

pytestmark = pytest.mark.timeout(180)
ADMIN = "oauth-admin-token"


def log_entries(warehouse: Path) -> int:
    return len(list((warehouse / "_catalog" / "core" / "log").iterdir()))


def exchange(server: RunningServer, client_id: str, secret: str) -> httpx.Response:
    return httpx.post(f"{server.iceberg_uri}/v1/oauth/tokens", timeout=10,
                      data={"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret})


def status_with(server: RunningServer, token: str) -> int:
    """The status of "who am I" (answered to every authenticated caller)."""
    return httpx.get(f"{server.base_url}/api/2.0/preview/scim/v2/Me", headers={"Authorization": f"Bearer {token}"},
                     timeout=10).status_code


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("oauth")
    warehouse = workdir / "wh"
    with arco_server(warehouse, workdir, admin_token=ADMIN) as a:
        out = run_cli(warehouse, "service-principal", "etl-bot")
        secret = next(line.split()[-1] for line in out.splitlines() if line.startswith("client secret"))
        with arco_server(warehouse, workdir, admin_token=ADMIN) as b:
            yield {"a": a, "b": b, "warehouse": warehouse, "secret": secret}


def test_exchanges_write_nothing_and_any_server_verifies_the_token(world: dict) -> None:
    before = log_entries(world["warehouse"])
    tokens = []
    for _ in range(100):
        response = exchange(world["a"], "etl-bot", world["secret"])
        assert response.status_code == 200
        body = response.json()
        assert body["token_type"] == "bearer" and 0 < body["expires_in"] <= 3600
        tokens.append(body["access_token"])
    assert log_entries(world["warehouse"]) == before, "an exchange appended to the Tier 1 log"
    assert status_with(world["b"], tokens[0]) == 200  # another server process of the same warehouse
    assert status_with(world["a"], tokens[-1]) == 200


def test_tampered_expired_and_foreign_tokens_are_refused(world: dict) -> None:
    token = exchange(world["a"], "etl-bot", world["secret"]).json()["access_token"]
    payload, signature = token[len(oauth_tokens.PREFIX):].split(".")
    claims = oauth_tokens.unverified_claims(token)
    assert claims is not None and claims.subject == "etl-bot"
    forged_payload = b64(orjson.dumps({"sub": "admin", "kid": claims.key_id, "iat": claims.issued_at_ms,
                                                     "exp": claims.expires_at_ms}))
    for bad in (f"{oauth_tokens.PREFIX}{forged_payload}.{signature}",
                f"{oauth_tokens.PREFIX}{payload}.{signature[:-2]}AA",
                token + "x"):
        assert status_with(world["b"], bad) == 401
    key = SigningKeys(LocalBackend(world["warehouse"])).key(claims.key_id)
    assert key is not None
    now = int(time.time() * 1000)
    valid = oauth_tokens.sign(Claims("etl-bot", claims.key_id, now - 1000, now + 60_000), key)
    assert status_with(world["a"], valid) == 200  # the same key, signing as the server does
    expired = oauth_tokens.sign(Claims("etl-bot", claims.key_id, now - 7_200_000, now - 1000), key)
    assert status_with(world["a"], expired) == 401
    other_key = oauth_tokens.sign(Claims("etl-bot", claims.key_id, now - 1000, now + 60_000), b"k" * 32)
    assert status_with(world["a"], other_key) == 401


def test_revoking_the_principal_ends_its_tokens_on_every_server(world: dict) -> None:
    old = exchange(world["a"], "etl-bot", world["secret"]).json()["access_token"]
    assert status_with(world["b"], old) == 200
    before = log_entries(world["warehouse"])
    run_cli(world["warehouse"], "oauth", "revoke", "etl-bot")
    assert log_entries(world["warehouse"]) == before + 1
    assert status_with(world["a"], old) == 401 and status_with(world["b"], old) == 401
    time.sleep(0.01)  # a token issued after the revocation is not covered by it
    fresh = exchange(world["b"], "etl-bot", world["secret"]).json()["access_token"]
    assert status_with(world["a"], fresh) == 200


def test_rotating_the_key_ends_every_earlier_token(world: dict) -> None:
    old = exchange(world["a"], "etl-bot", world["secret"]).json()["access_token"]
    run_cli(world["warehouse"], "oauth", "rotate-key")
    assert status_with(world["a"], old) == 401 and status_with(world["b"], old) == 401
    fresh = exchange(world["a"], "etl-bot", world["secret"]).json()["access_token"]
    assert oauth_tokens.unverified_claims(fresh).key_id != oauth_tokens.unverified_claims(old).key_id  # type: ignore[union-attr]
    assert status_with(world["b"], fresh) == 200


def test_personal_access_tokens_still_work(world: dict) -> None:
    token = run_cli(world["warehouse"], "token", "create", "etl-bot").splitlines()[0].strip()
    assert status_with(world["a"], token) == 200 and status_with(world["b"], token) == 200
    assert exchange(world["a"], "etl-bot", "wrong").status_code == 401
