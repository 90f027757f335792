"""What the vendor does before any cloud is called: local locations, missing settings, bad locations."""

from __future__ import annotations

import orjson
import pytest

from arco.settings import ServerSettings
from arco.vending import Access, CredentialVendor, InvalidLocation, VendedCredential, VendingUnavailable


@pytest.mark.parametrize("location", ["/data/wh/main/db/t", "file:///data/wh/t", "file:/data/wh/t", "memory://wh/t"])
def test_local_locations_need_no_credential(location: str) -> None:
    assert CredentialVendor(ServerSettings(), {}).vend(location, Access.READ_WRITE, "alice") is None


def test_s3_without_a_role_names_the_setting() -> None:
    vendor = CredentialVendor(ServerSettings(), {"s3.endpoint": "http://127.0.0.1:1"})
    with pytest.raises(VendingUnavailable) as caught:
        vendor.vend("s3://bucket/wh/t", Access.READ, "alice")
    assert "--vending-s3-role-arn" in str(caught.value) and "ARCO_VENDING_S3_ROLE_ARN" in str(caught.value)


def test_unsafe_location_is_refused_before_any_call() -> None:
    vendor = CredentialVendor(ServerSettings(vending_s3_role_arn="arn:aws:iam::1:role/r"), {})
    with pytest.raises(InvalidLocation):
        vendor.vend("s3://bucket/wh/*", Access.READ, "alice")


def test_unity_shape() -> None:
    credential = VendedCredential("s3://b/t/", {"s3.access-key-id": "AK"}, 123,
                                  {"aws_temp_credentials": {"access_key_id": "AK", "secret_access_key": "S",
                                                            "session_token": "T"}})
    assert credential.unity() == {"aws_temp_credentials": {"access_key_id": "AK", "secret_access_key": "S",
                                                           "session_token": "T"},
                                  "expiration_time": 123, "url": "s3://b/t/"}
    assert "AK" not in repr(credential) and "session_token" not in repr(credential)


def test_settings_cross_processes_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ServerSettings(vending_s3_role_arn="arn:aws:iam::1:role/r", vending_sts_endpoint="http://sts",
                              vending_lifetime_s=900, vending_azure_sas_scope="container",
                              vending_gcs_credentials_file="/k.json")
    monkeypatch.setenv("ARCO_SERVER_SETTINGS", settings.to_env())
    assert ServerSettings.from_env() == settings
    assert orjson.loads(ServerSettings().to_env())["vending_lifetime_s"] == 3600


@pytest.mark.parametrize("fields", [
    {"vending_lifetime_s": 899}, {"vending_lifetime_s": 43201}, {"vending_azure_sas_scope": "account"},
])
def test_settings_refuse_values_the_clouds_refuse(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ServerSettings(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("settings", "options", "location", "role", "offered"), [
    (ServerSettings(), {}, "/data/wh/main/db/t", None, False),  # a local directory has nothing to vend
    (ServerSettings(), {}, "s3://bucket/wh/t", None, False),  # no role to assume
    (ServerSettings(), {}, "s3://bucket/wh/t", "arn:aws:iam::1:role/external", True),  # the location's own role
    (ServerSettings(vending_s3_role_arn="arn:aws:iam::1:role/r"), {}, "s3://bucket/wh/t", None, True),
    (ServerSettings(vending_s3_role_arn="arn:aws:iam::1:role/r"), {}, "s3://bucket/wh/*", None, False),  # unsafe
    (ServerSettings(), {}, "abfss://c@acct.dfs.core.windows.net/wh/t", None, False),  # no account key
    (ServerSettings(), {"adls.account-name": "acct", "adls.account-key": "a2V5"},
     "abfss://c@acct.dfs.core.windows.net/wh/t", None, True),
    (ServerSettings(), {"adls.account-name": "acct", "adls.account-key": "a2V5"},
     "abfss://c@other.dfs.core.windows.net/wh/t", None, False),  # another account's key is not here
    (ServerSettings(), {"gcs.no-auth": "true"}, "gs://bucket/wh/t", None, False),  # anonymous: nothing to downscope
    (ServerSettings(vending_gcs_credentials_file="/k.json"), {"gcs.no-auth": "true"}, "gs://bucket/wh/t", None, True),
])
def test_offers_says_whether_vend_would_mint_without_calling_a_token_service(
        settings: ServerSettings, options: dict[str, str], location: str, role: str | None, offered: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert CredentialVendor(settings, options).offers(location, role) is offered
