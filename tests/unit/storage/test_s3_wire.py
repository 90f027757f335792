"""Where the S3 wire client sends a request, and how it reads an error answer (no server needed)."""

from __future__ import annotations

import pytest
from botocore.credentials import Credentials

from arco.storage.connections import Headers
from arco.storage.object_calls import Reply
from arco.storage.s3_wire import S3Wire, bucket_base_url


@pytest.mark.parametrize(("endpoint", "bucket", "path_style", "expected"), [
    ("http://127.0.0.1:8333", "warehouse", True, "http://127.0.0.1:8333/warehouse/"),
    ("https://s3.eu-west-1.amazonaws.com", "warehouse", False, "https://warehouse.s3.eu-west-1.amazonaws.com/"),
    # A dotted name does not match the wildcard certificate over https: path style, as boto3 does.
    ("https://s3.eu-west-1.amazonaws.com", "my.bucket", False, "https://s3.eu-west-1.amazonaws.com/my.bucket/"),
    ("http://s3.local:9000", "my.bucket", False, "http://my.bucket.s3.local:9000/"),
    # Not a DNS name (capitals, underscores): path style.
    ("https://s3.amazonaws.com", "Old_Bucket", False, "https://s3.amazonaws.com/Old_Bucket/"),
    ("http://proxy:8080/s3/", "b-1", True, "http://proxy:8080/s3/b-1/"),
])
def test_bucket_base_url(endpoint: str, bucket: str, path_style: bool, expected: str) -> None:
    assert bucket_base_url(endpoint, bucket, path_style) == expected


def test_keys_are_percent_encoded_once_with_slashes_kept() -> None:
    wire = S3Wire(endpoint_url="http://127.0.0.1:1", bucket="b", region="us-east-1", path_style=True,
                  credentials=None)
    assert wire.url_of("w/a b/ø+x=1&y?.json") == "http://127.0.0.1:1/b/w/a%20b/%C3%B8%2Bx%3D1%26y%3F.json"
    assert wire.url_of("w/~tilde") == "http://127.0.0.1:1/b/w/~tilde"


def test_requests_are_signed_with_the_payload_hash_and_the_session_token() -> None:
    wire = S3Wire(endpoint_url="http://127.0.0.1:1", bucket="b", region="eu-west-1", path_style=True,
                  credentials=Credentials("AKIDEXAMPLE", "secret", "session-token"))
    headers = wire.signed_headers("PUT", "/b/k", {"If-None-Match": "*"}, b"body")
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/s3/aws4_request" in headers["Authorization"]
    assert "if-none-match" in headers["Authorization"]  # the precondition is signed, so it cannot be stripped
    # sha256(b"body")
    assert headers["X-Amz-Content-SHA256"] == "230d8358dc8e8890b4c58deeb62912ee2f20357ae92a5cc861b98e68fe31acb5"
    assert headers["X-Amz-Security-Token"] == "session-token"


def test_anonymous_requests_are_not_signed() -> None:
    wire = S3Wire(endpoint_url="http://127.0.0.1:1", bucket="b", region="us-east-1", path_style=True,
                  credentials=None)
    assert wire.signed_headers("GET", "/b/k", {}, b"") == {}


def test_an_error_answer_is_read_for_its_code_and_message() -> None:
    body = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code>'
            b"<Message>At least one of the pre-conditions you specified did not hold</Message></Error>")
    headers = Headers(etag='"abc"')  # looked up whatever its case
    reply = Reply(412, headers, body)
    assert reply.error_code == "PreconditionFailed"
    assert reply.describe() == ("HTTP 412 PreconditionFailed: At least one of the pre-conditions you specified "
                                "did not hold")
    assert reply.etag == '"abc"'
    bare = Reply(503, Headers(), b"")
    assert bare.error_code == "503" and bare.describe() == "HTTP 503 503"
