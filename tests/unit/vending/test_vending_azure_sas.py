"""Azure SAS permissions and scope, and the token a minter signs (signing is local: no server involved)."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest

from arco.settings import ServerSettings
from arco.vending import Access, VendingUnavailable, parse_location
from arco.vending.azure import AzureMinter, SasScope, sas_hosts, sas_permissions, sas_scope

KEY = "a2V5LWZvci11bml0LXRlc3RzLW9ubHktMzItYnl0ZXMh"  # base64 of a made-up key


@pytest.mark.parametrize(("access", "permissions"), [(Access.READ, "rl"), (Access.READ_WRITE, "racwdl")])
def test_permissions(access: Access, permissions: str) -> None:
    assert sas_permissions(access) == permissions


@pytest.mark.parametrize(("location", "scope", "expected"), [
    ("az://c/wh/main/db/t", "directory", SasScope("d", "c", "wh/main/db/t", 4)),
    ("abfss://c@acct.dfs.core.windows.net/t/", "directory", SasScope("d", "c", "t", 1)),
    ("az://c/wh/main/db/t", "container", SasScope("c", "c", "", 0)),
    ("az://c", "directory", SasScope("c", "c", "", 0)),  # the container is exactly the location
    ("az://c/", "container", SasScope("c", "c", "", 0)),
])
def test_scope(location: str, scope: str, expected: SasScope) -> None:
    assert sas_scope(parse_location(location), scope) == expected


def test_unknown_scope_is_refused() -> None:
    with pytest.raises(ValueError):
        sas_scope(parse_location("az://c/t"), "account")


@pytest.mark.parametrize(("location", "hosts"), [
    ("az://c/t", ["acct.dfs.core.windows.net", "acct.blob.core.windows.net"]),
    ("abfss://c@acct.dfs.core.windows.net/t", ["acct.dfs.core.windows.net", "acct.blob.core.windows.net"]),
    ("wasbs://c@acct.blob.core.chinacloudapi.cn/t",
     ["acct.blob.core.chinacloudapi.cn", "acct.dfs.core.windows.net", "acct.blob.core.windows.net"]),
])
def test_hosts(location: str, hosts: list[str]) -> None:
    assert sas_hosts("acct", parse_location(location)) == hosts


def _minter(scope: str = "directory", **options: str) -> AzureMinter:
    settings = ServerSettings(vending_azure_sas_scope=scope, vending_lifetime_s=1800)
    return AzureMinter(settings, options or {"adls.account-name": "acct", "adls.account-key": KEY},
                       clock=lambda: 1_700_000_000.5)


@pytest.mark.parametrize(("access", "scope", "query"), [
    (Access.READ, "directory", {"sr": ["d"], "sdd": ["3"], "sp": ["rl"], "spr": ["https"]}),
    (Access.READ_WRITE, "directory", {"sr": ["d"], "sdd": ["3"], "sp": ["racwdl"], "spr": ["https"]}),
    (Access.READ, "container", {"sr": ["c"], "sp": ["rl"], "spr": ["https"]}),
])
def test_minted_token(access: Access, scope: str, query: dict[str, list[str]]) -> None:
    location = parse_location("abfss://c@acct.dfs.core.windows.net/wh/db/t")
    credential = _minter(scope).mint(location, access, "alice", None)
    token = parse_qs(credential.unity()["azure_user_delegation_sas"]["sas_token"])
    assert {k: token.get(k) for k in query} == query
    assert "sdd" in token or scope == "container"
    assert token["se"] == ["2023-11-14T22:43:20Z"]  # 1_700_000_000 + 1800 s, whole seconds
    assert credential.expires_at_ms == 1_700_001_800_000
    assert credential.prefix == "abfss://c@acct.dfs.core.windows.net/wh/db/t/"
    assert "adls.blob-storage-authority" not in credential.config  # the public cloud needs no endpoint
    assert KEY not in "".join(credential.config.values())


def test_custom_endpoint_is_passed_on_and_http_allowed() -> None:
    connection = (f"DefaultEndpointsProtocol=http;AccountName=acct;AccountKey={KEY};"
                  "BlobEndpoint=http://127.0.0.1:1/acct;")
    credential = _minter("container", **{"adls.connection-string": connection}).mint(
        parse_location("az://c/t"), Access.READ, "alice", None)
    assert credential.config["adls.blob-storage-authority"] == "127.0.0.1:1"
    assert credential.config["adls.blob-storage-scheme"] == "http"
    assert "spr" not in parse_qs(credential.config["adls.sas-token"].lstrip("?"))


@pytest.mark.parametrize("options", [{}, {"adls.account-name": "acct"}, {"adls.connection-string": "AccountName=acct"}])
def test_without_an_account_key_vending_is_unavailable(options: dict[str, str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY"):
        monkeypatch.delenv(name, raising=False)
    minter = AzureMinter(ServerSettings(), options)
    with pytest.raises(VendingUnavailable, match="adls.connection-string"):
        minter.mint(parse_location("az://c/t"), Access.READ, "alice", None)


def test_another_accounts_location_is_unavailable() -> None:
    with pytest.raises(VendingUnavailable, match="'other'"):
        _minter().mint(parse_location("abfss://c@other.dfs.core.windows.net/t"), Access.READ, "alice", None)
