"""Arco's SigV4 signer against botocore's (``S3SigV4Auth``, which AWS maintains): the same request, signed at the
same instant with the same credentials, must go out with the same headers, byte for byte; and a pre-signed GET
must be the URL boto3's ``generate_presigned_url`` makes."""

from __future__ import annotations

import datetime

import boto3
import pytest
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from arco.storage.s3_wire import S3Wire
from arco.storage.sigv4 import SigV4Signer

INSTANT = datetime.datetime(2026, 11, 26, 23, 59, 58, tzinfo=datetime.timezone.utc)


def botocore_headers(monkeypatch: pytest.MonkeyPatch, credentials: Credentials, region: str, method: str,
                     url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: INSTANT.replace(tzinfo=None))
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    S3SigV4Auth(credentials, "s3", region).add_auth(request)
    return dict(request.headers.items())


@pytest.mark.parametrize(("method", "host", "path", "headers", "body"), [
    ("PUT", "127.0.0.1:8333", "/warehouse/arco/_catalog/markers/k", {"If-None-Match": "*"}, b"x" * 600),
    ("PUT", "127.0.0.1:8333", "/warehouse/arco/t/metadata/00001.json", {"If-Match": '"0cc175b9c0f1b6a8"'}, b"{}"),
    ("PUT", "s3.eu-west-1.amazonaws.com", "/b/empty", {}, b""),
    ("GET", "bucket.s3.amazonaws.com", "/w/a%20b/%C3%B8%2Bx%3D1%26y%3F.json", {}, b""),
    ("GET", "127.0.0.1:8333", "/b/pointer", {"If-None-Match": '"v7"'}, b""),
    ("HEAD", "[::1]:9000", "/b/~tilde/k", {}, b""),
    ("DELETE", "127.0.0.1:8333", "/b/k", {"If-Match": '"abc"'}, b""),
    # Header values are trimmed and inner runs of spaces folded; names signed lower-case; unsigned ones left out.
    ("PUT", "127.0.0.1:8333", "/b/k", {"Content-Type": "  application/json ;  charset=utf-8 ",
                                       "User-Agent": "arco", "X-Custom": "a\tb"}, b"\x00\xff" * 10),
])
@pytest.mark.parametrize("token", [None, "session//token+="])
def test_the_same_headers_as_botocore(monkeypatch: pytest.MonkeyPatch, method: str, host: str, path: str,
                                      headers: dict[str, str], body: bytes, token: str | None) -> None:
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    ours = SigV4Signer(credentials, "eu-west-1").headers(method, path, host, headers, body,
                                                          now=INSTANT.timestamp())
    theirs = botocore_headers(monkeypatch, credentials, "eu-west-1", method, f"http://{host}{path}", headers, body)
    assert ours == theirs
    assert ("X-Amz-Security-Token" in ours) == (token is not None)


def test_the_signing_key_follows_the_day_and_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """One signer signs for days and through a credential refresh (botocore's refreshable credentials change their
    secret in place): a key derived for another day or secret must not be reused."""

    class Rotating:
        def __init__(self) -> None:
            self.current = Credentials("AKID1", "first-secret")

        def get_frozen_credentials(self) -> object:
            return self.current.get_frozen_credentials()

    rotating = Rotating()
    signer = SigV4Signer(rotating, "us-east-1")
    for instant, credentials in [(INSTANT, rotating.current),
                                 (INSTANT + datetime.timedelta(seconds=3), rotating.current),  # the next day
                                 (INSTANT + datetime.timedelta(seconds=4), Credentials("AKID2", "second-secret"))]:
        rotating.current = credentials
        ours = signer.headers("GET", "/b/k", "127.0.0.1:8333", {}, b"", now=instant.timestamp())
        monkeypatch.setattr("botocore.auth.get_current_datetime", lambda i=instant: i.replace(tzinfo=None))
        request = AWSRequest(method="GET", url="http://127.0.0.1:8333/b/k", data=b"", headers={})
        S3SigV4Auth(credentials, "s3", "us-east-1").add_auth(request)
        assert ours["Authorization"] == request.headers["Authorization"]


@pytest.mark.parametrize(("endpoint", "bucket", "path_style", "key"), [
    ("http://127.0.0.1:8333", "warehouse", True, "arco/t/data/part-00000.parquet"),
    ("https://s3.eu-west-1.amazonaws.com", "warehouse", False, "w/a b/ø+x=1&y?.parquet"),  # virtual-hosted
    ("https://s3.eu-west-1.amazonaws.com", "my.bucket", False, "k/~tilde.parquet"),  # dotted: path style (https)
    ("https://s3.eu-west-1.amazonaws.com:443", "lake", True, "k/x.parquet"),
    ("http://minio.local:9000", "lake", True, "deep/er/key.json"),
])
@pytest.mark.parametrize("token", [None, "session//token+="])
def test_presigned_urls_are_botocores(monkeypatch: pytest.MonkeyPatch, endpoint: str, bucket: str,
                                      path_style: bool, key: str, token: str | None) -> None:
    """The query botocore's S3SigV4QueryAuth adds to the same object URL; and where an endpoint is configured (an
    S3-compatible store), the very URL boto3's ``generate_presigned_url`` makes. (Without one, boto3 names AWS's
    global host, ``bucket.s3.amazonaws.com``; Arco names the region's, which the object calls use too.)"""
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    wire = S3Wire(endpoint_url=endpoint, bucket="unused", region="eu-west-1", path_style=path_style,
                  credentials=credentials)
    ours = wire.presigned_get(bucket, key, 900, now=INSTANT.timestamp())
    assert ours is not None
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: INSTANT.replace(tzinfo=None))
    request = AWSRequest(method="GET", url=ours.split("?", 1)[0])
    S3SigV4QueryAuth(credentials, "s3", "eu-west-1", expires=900).add_auth(request)
    assert ours == request.url
    if path_style:
        client = boto3.session.Session(aws_access_key_id=credentials.access_key,
                                       aws_secret_access_key=credentials.secret_key,
                                       aws_session_token=token).client(
            "s3", endpoint_url=endpoint, region_name="eu-west-1",
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        assert ours == client.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key},
                                                     ExpiresIn=900)


def test_anonymous_access_presigns_nothing() -> None:
    wire = S3Wire(endpoint_url="http://127.0.0.1:1", bucket="b", region="us-east-1", path_style=True,
                  credentials=None)
    assert wire.presigned_get("b", "k", 60) is None
