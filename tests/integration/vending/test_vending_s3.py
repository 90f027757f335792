"""S3 vending against SeaweedFS's own STS: every claim is checked by using only the vended credential.

SeaweedFS evaluates a session as its role's policies intersected with the inline session policy, so what a
credential may reach is decided by the server under test, not by this code.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from vend_support import TABLE_A, TABLE_AB, s3_client, vended_s3

from arco.settings import ServerSettings
from arco.vending import Access, CredentialVendor, VendedCredential, VendingFailed
from support import emulators

pytestmark = [pytest.mark.emulator, pytest.mark.timeout(180)]


def vendor_for(server: emulators.StsS3Server, bucket: str, clock: Callable[[], float] = time.time) -> CredentialVendor:
    settings = ServerSettings(warehouse=f"s3://{bucket}/wh", storage_options=server.options(),
                              vending_s3_role_arn=server.role_arn, vending_lifetime_s=900)
    return CredentialVendor(settings, settings.storage_options, clock=clock)


def assert_denied(call: Callable[[], Any]) -> None:
    with pytest.raises(ClientError) as caught:
        call()
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert caught.value.response["Error"]["Code"] == "AccessDenied"


@pytest.fixture
def vendor(seaweedfs_sts_server: emulators.StsS3Server, sts_bucket: str) -> CredentialVendor:
    return vendor_for(seaweedfs_sts_server, sts_bucket)


def test_read_write_credential_works_inside_its_table(vendor: CredentialVendor, sts_bucket: str) -> None:
    credential = vendor.vend(f"s3://{sts_bucket}/{TABLE_A}", Access.READ_WRITE, "alice")
    client: Any = vended_s3(credential)
    key = f"{TABLE_A}data/rw-{time.time_ns()}.parquet"
    client.put_object(Bucket=sts_bucket, Key=key, Body=b"row")
    assert client.get_object(Bucket=sts_bucket, Key=key)["Body"].read() == b"row"
    listed = client.list_objects_v2(Bucket=sts_bucket, Prefix=TABLE_A)
    assert key in {o["Key"] for o in listed["Contents"]}
    # Large data files go up in parts.
    upload = client.create_multipart_upload(Bucket=sts_bucket, Key=key + ".mp")
    part = client.upload_part(Bucket=sts_bucket, Key=key + ".mp", UploadId=upload["UploadId"], PartNumber=1,
                              Body=b"part")
    client.complete_multipart_upload(Bucket=sts_bucket, Key=key + ".mp", UploadId=upload["UploadId"],
                                     MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]})
    assert client.get_object(Bucket=sts_bucket, Key=key + ".mp")["Body"].read() == b"part"
    client.delete_object(Bucket=sts_bucket, Key=key)
    remaining = client.list_objects_v2(Bucket=sts_bucket, Prefix=TABLE_A)["Contents"]
    assert key not in {o["Key"] for o in remaining} and key + ".mp" in {o["Key"] for o in remaining}


def test_read_credential_reads_but_cannot_put_or_delete(vendor: CredentialVendor, sts_bucket: str,
                                                        seaweedfs_sts_server: emulators.StsS3Server) -> None:
    client: Any = vended_s3(vendor.vend(f"s3://{sts_bucket}/{TABLE_A}", Access.READ, "alice"))
    seed = f"{TABLE_A}data/seed.parquet"
    assert client.get_object(Bucket=sts_bucket, Key=seed)["Body"].read() == b"seed"
    assert client.list_objects_v2(Bucket=sts_bucket, Prefix=TABLE_A)["KeyCount"] >= 1
    assert_denied(lambda: client.put_object(Bucket=sts_bucket, Key=f"{TABLE_A}data/new.parquet", Body=b"x"))
    assert_denied(lambda: client.delete_object(Bucket=sts_bucket, Key=seed))
    assert_denied(lambda: client.create_multipart_upload(Bucket=sts_bucket, Key=f"{TABLE_A}data/mp.parquet"))
    admin: Any = s3_client(seaweedfs_sts_server.options())
    assert admin.get_object(Bucket=sts_bucket, Key=seed)["Body"].read() == b"seed"


def test_credential_for_one_table_cannot_reach_another(vendor: CredentialVendor, sts_bucket: str) -> None:
    client: Any = vended_s3(vendor.vend(f"s3://{sts_bucket}/{TABLE_A}", Access.READ_WRITE, "alice"))
    other = f"{TABLE_AB}data/seed.parquet"  # t-ab starts with t-a: only the trailing slash keeps it out
    assert_denied(lambda: client.get_object(Bucket=sts_bucket, Key=other))
    assert_denied(lambda: client.put_object(Bucket=sts_bucket, Key=f"{TABLE_AB}data/x.parquet", Body=b"x"))
    assert_denied(lambda: client.delete_object(Bucket=sts_bucket, Key=other))
    assert_denied(lambda: client.list_objects_v2(Bucket=sts_bucket, Prefix=TABLE_AB))
    assert_denied(lambda: client.list_objects_v2(Bucket=sts_bucket, Prefix=TABLE_A.rstrip("/")))
    assert_denied(lambda: client.list_objects_v2(Bucket=sts_bucket, Prefix="wh/"))
    assert_denied(lambda: client.list_objects_v2(Bucket=sts_bucket))
    assert_denied(lambda: client.put_object(Bucket=sts_bucket, Key="wh/_catalog/x", Body=b"x"))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _resign(token: str, key: bytes, change: Callable[[dict[str, Any]], None]) -> str:
    """Re-sign SeaweedFS's HS256 session token after ``change`` edits its claims (the test knows the key)."""
    header, payload, _ = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    change(claims)
    body = f"{header}.{_b64url(json.dumps(claims).encode())}"
    return f"{body}.{_b64url(hmac.new(key, body.encode(), hashlib.sha256).digest())}"


def _with_token(credential: VendedCredential | None, token: str) -> Any:
    assert credential is not None
    return s3_client({**credential.config, "s3.session-token": token})


def test_expired_session_token_is_refused(vendor: CredentialVendor, sts_bucket: str,
                                          seaweedfs_sts_server: emulators.StsS3Server) -> None:
    # STS's shortest session is 900 s, too long to wait out; the token is re-signed with its expiry moved to
    # the past instead. The control re-signs it unchanged, so the expiry is the only difference.
    credential = vendor.vend(f"s3://{sts_bucket}/{TABLE_A}", Access.READ, "alice")
    assert credential is not None
    token, key = credential.config["s3.session-token"], seaweedfs_sts_server.signing_key
    seed = f"{TABLE_A}data/seed.parquet"

    unchanged = _with_token(credential, _resign(token, key, lambda claims: None))
    assert unchanged.get_object(Bucket=sts_bucket, Key=seed)["Body"].read() == b"seed"

    def expire(claims: dict[str, Any]) -> None:
        claims["exp"] = int(time.time()) - 60

    expired = _with_token(credential, _resign(token, key, expire))
    with pytest.raises(ClientError) as caught:
        expired.get_object(Bucket=sts_bucket, Key=seed)
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_tampered_session_token_is_refused(vendor: CredentialVendor, sts_bucket: str) -> None:
    credential = vendor.vend(f"s3://{sts_bucket}/{TABLE_A}", Access.READ, "alice")
    assert credential is not None

    def widen(claims: dict[str, Any]) -> None:
        claims["exp"] = int(time.time()) + 86400

    forged = _with_token(credential, _resign(credential.config["s3.session-token"], b"not-the-key" * 3, widen))
    with pytest.raises(ClientError) as caught:
        forged.get_object(Bucket=sts_bucket, Key=f"{TABLE_A}data/seed.parquet")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_role_arn_argument_is_the_role_assumed(vendor: CredentialVendor, sts_bucket: str,
                                               seaweedfs_sts_server: emulators.StsS3Server) -> None:
    # The read-only role caps the session below what its READ_WRITE session policy asks for.
    location = f"s3://{sts_bucket}/{TABLE_A}"
    capped = vendor.vend(location, Access.READ_WRITE, "alice", role_arn=seaweedfs_sts_server.read_only_role_arn)
    client: Any = vended_s3(capped)
    assert client.get_object(Bucket=sts_bucket, Key=f"{TABLE_A}data/seed.parquet")["Body"].read() == b"seed"
    assert_denied(lambda: client.put_object(Bucket=sts_bucket, Key=f"{TABLE_A}data/y.parquet", Body=b"y"))
    assert vendor.vend(location, Access.READ_WRITE, "alice") is not capped


def test_sts_refusal_is_vending_failed(vendor: CredentialVendor, sts_bucket: str) -> None:
    with pytest.raises(VendingFailed, match="NoSuchRole|AccessDenied|not authorized|not found"):
        vendor.vend(f"s3://{sts_bucket}/{TABLE_A}", Access.READ, "alice",
                    role_arn="arn:aws:iam::000000000000:role/NoSuchRole")


def test_cache_reuses_a_credential_until_near_expiry(seaweedfs_sts_server: emulators.StsS3Server,
                                                     sts_bucket: str) -> None:
    offset = [0.0]
    vendor = vendor_for(seaweedfs_sts_server, sts_bucket, clock=lambda: time.time() + offset[0])
    location = f"s3://{sts_bucket}/{TABLE_A}"
    first = vendor.vend(location, Access.READ, "alice")
    assert first is not None
    assert vendor.vend(location.rstrip("/") + "//", Access.READ, "alice") is first  # same normalised prefix
    assert vendor.vend(location, Access.READ_WRITE, "alice") is not first
    assert vendor.vend(location, Access.READ, "bob") is not first
    offset[0] = (first.expires_at_ms / 1000 - time.time()) - 120  # two minutes left of fifteen
    renewed = vendor.vend(location, Access.READ, "alice")
    assert renewed is not None and renewed is not first
    assert renewed.config["s3.access-key-id"] != first.config["s3.access-key-id"]
    assert vended_s3(renewed).get_object(  # type: ignore[attr-defined]
        Bucket=sts_bucket, Key=f"{TABLE_A}data/seed.parquet")["Body"].read() == b"seed"


def test_pyiceberg_fileio_works_with_only_the_vended_config(vendor: CredentialVendor, sts_bucket: str) -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO

    credential = vendor.vend(f"s3://{sts_bucket}/{TABLE_A}", Access.READ_WRITE, "alice")
    assert credential is not None
    io = PyArrowFileIO(dict(credential.config))
    path = f"{credential.prefix}metadata/v1-{time.time_ns()}.json"
    with io.new_output(path).create(overwrite=True) as out:
        out.write(b"{}")
    with io.new_input(path).open() as stream:
        assert stream.read() == b"{}"
    outside = io.new_output(f"s3://{sts_bucket}/{TABLE_AB}metadata/x.json")
    with pytest.raises(OSError), outside.create(overwrite=True) as out:
        out.write(b"{}")


def test_vended_config_and_unity_shape(vendor: CredentialVendor, sts_bucket: str,
                                       seaweedfs_sts_server: emulators.StsS3Server) -> None:
    credential = vendor.vend(f"s3a://{sts_bucket}//{TABLE_A.rstrip('/')}", Access.READ, "alice@example.com")
    assert credential is not None
    assert credential.prefix == f"s3a://{sts_bucket}/{TABLE_A}"
    assert credential.config["s3.endpoint"] == seaweedfs_sts_server.endpoint_url
    assert credential.config["s3.path-style-access"] == "true"
    assert credential.config["s3.access-key-id"] != seaweedfs_sts_server.access_key_id
    assert int(credential.config["s3.session-token-expires-at-ms"]) == credential.expires_at_ms
    assert 880_000 <= credential.expires_at_ms - time.time() * 1000 <= 905_000
    unity = credential.unity()
    assert unity["aws_temp_credentials"]["session_token"] == credential.config["s3.session-token"]
    assert unity["expiration_time"] == credential.expires_at_ms and unity["url"] == credential.prefix
    assert credential.iceberg() == {"prefix": credential.prefix, "config": credential.config}
    assert credential.config["s3.secret-access-key"] not in repr(credential)


def test_sts_refuses_sessions_shorter_than_the_settings_minimum(seaweedfs_sts_server: emulators.StsS3Server) -> None:
    # Why --vending-lifetime starts at 900: STS (AWS's and SeaweedFS's alike) refuses anything shorter.
    import boto3
    from botocore.config import Config

    from arco.settings import VENDING_MIN_LIFETIME_S

    sts = boto3.client("sts", endpoint_url=seaweedfs_sts_server.endpoint_url, region_name="us-east-1",
                       aws_access_key_id=seaweedfs_sts_server.access_key_id,
                       aws_secret_access_key=seaweedfs_sts_server.secret_access_key,
                       config=Config(parameter_validation=False))  # boto3 would refuse 899 itself
    with pytest.raises(ClientError, match="InvalidParameterValue"):
        sts.assume_role(RoleArn=seaweedfs_sts_server.role_arn, RoleSessionName="arco-short",
                        DurationSeconds=VENDING_MIN_LIFETIME_S - 1)
    answer = sts.assume_role(RoleArn=seaweedfs_sts_server.role_arn, RoleSessionName="arco-short",
                             DurationSeconds=VENDING_MIN_LIFETIME_S)
    assert answer["Credentials"]["AccessKeyId"]
