"""arco.vending.signing as a decision table: parsing RemoteSignRequest bodies, resolving the bucket and key an S3
URI addresses, deciding whether a request stays inside a table, and the SigV4 signature itself (checked against
an independent implementation of the algorithm, and, header for header, against botocore's S3 signer, which signed
these requests before)."""

from __future__ import annotations

import datetime
import hashlib
import hmac
from typing import Any
from urllib.parse import urlsplit

import pytest
from botocore.auth import UNSIGNED_PAYLOAD, S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from arco.vending.signing import (
    InvalidSignRequest,
    S3Credentials,
    SignRequest,
    UnsafeS3Request,
    may_sign,
    parse_sign_request,
    resolve_s3_target,
    sign,
)

EP = "http://127.0.0.1:9000"
BUCKET = "warehouse"
TABLE = (BUCKET, "wh/db/t1")
OBJ = f"{EP}/{BUCKET}/wh/db/t1"


def req(method: str, uri: str, headers: dict[str, list[str]] | None = None, body: str | None = None) -> SignRequest:
    return SignRequest(method, "us-east-1", uri, headers or {}, body)


# --- parse_sign_request ---------------------------------------------------------------------------------------

GOOD: dict[str, Any] = {"method": "GET", "region": "us-east-1", "uri": f"{OBJ}/a", "headers": {"Range": ["bytes=0-1"]}}


def test_parse_accepts_what_pyiceberg_and_java_send() -> None:
    parsed = parse_sign_request({**GOOD, "method": "put", "body": "<Delete/>", "provider": "s3",
                                 "properties": {"k": "v"}, "future-field": 1})
    assert parsed == SignRequest("PUT", "us-east-1", f"{OBJ}/a", {"Range": ["bytes=0-1"]}, "<Delete/>", "s3",
                                 {"k": "v"})
    assert parse_sign_request(GOOD).provider == "s3"  # absent provider means s3, per the spec


@pytest.mark.parametrize(("change", "message"), [
    ({"method": "TRACE"}, "'method'"),
    ({"method": 1}, "'method'"),
    ({"region": ""}, "'region'"),
    ({"region": "us-east-1/../x"}, "region"),
    ({"uri": "s3://bucket/key"}, "'uri'"),
    ({"uri": "http://user:pw@host/b/k"}, "'uri'"),
    ({"uri": "/relative/path"}, "'uri'"),
    ({"uri": "http://s3.amazonaws.com:99999/b/k"}, "not a valid URL"),
    ({"uri": "http://s3.amazonaws.com:x/b/k"}, "not a valid URL"),
    ({"uri": "http://[::1/b/k"}, "not a valid URL"),
    ({"headers": ["Range"]}, "'headers'"),
    ({"headers": {"Range": "bytes=0-1"}}, "list of strings"),
    ({"headers": {"Range": [1]}}, "list of strings"),
    ({"headers": {"Bad Name": ["v"]}}, "invalid header name"),
    ({"headers": {"X-Evil": ["a\r\nHost: other"]}}, "control character"),
    ({"headers": {"x-amz-date": ["1"], "X-Amz-Date": ["2"]}}, "twice"),
    ({"body": 42}, "'body'"),
    ({"provider": "gcs"}, "provider"),
    ({"properties": {"k": 1}}, "'properties'"),
])
def test_parse_refuses_malformed_fields(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSignRequest, match=message):
        parse_sign_request({**GOOD, **change})


@pytest.mark.parametrize("missing", ["method", "region", "uri", "headers"])
def test_parse_refuses_missing_required_fields(missing: str) -> None:
    with pytest.raises(InvalidSignRequest):
        parse_sign_request({k: v for k, v in GOOD.items() if k != missing})


def test_parse_refuses_a_non_object_and_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        parse_sign_request([GOOD])


# --- resolve_s3_target ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("uri", "endpoint", "bucket", "key"), [
    (f"{EP}/warehouse/wh/db/t1/a.parquet", EP, "warehouse", "wh/db/t1/a.parquet"),
    (f"{EP}/warehouse", EP, "warehouse", ""),
    (f"{EP}/warehouse/", EP, "warehouse", ""),
    ("http://warehouse.localhost:9000/wh/k", "http://localhost:9000", "warehouse", "wh/k"),
    (f"{EP}/warehouse/a%20b/c%2Bd+e", EP, "warehouse", "a b/c+d+e"),  # '+' in a path is literal
    (f"{EP}/warehouse/p%2Fq", EP, "warehouse", "p/q"),  # S3 decodes once: an encoded '/' is a '/'
    ("https://warehouse.s3.us-east-1.amazonaws.com/wh/k", None, "warehouse", "wh/k"),
    ("https://my.dotted.bucket.s3.amazonaws.com/wh/k", None, "my.dotted.bucket", "wh/k"),
    ("https://s3.eu-west-1.amazonaws.com/warehouse/wh/k", None, "warehouse", "wh/k"),
    ("https://s3-eu-west-1.amazonaws.com/warehouse/wh/k", None, "warehouse", "wh/k"),
])
def test_resolve_path_style_and_virtual_hosted(uri: str, endpoint: str | None, bucket: str, key: str) -> None:
    target = resolve_s3_target(uri, endpoint)
    assert (target.bucket, target.key) == (bucket, key)


def test_resolve_decodes_the_query_once() -> None:
    target = resolve_s3_target(f"{EP}/warehouse?list-type=2&prefix=wh%2Fdb%2Ft1%2F&delimiter=%2F", EP)
    assert target.query == {"list-type": "2", "prefix": "wh/db/t1/", "delimiter": "/"}


@pytest.mark.parametrize(("uri", "endpoint", "message"), [
    ("http://other-host:9000/warehouse/k", EP, "not the storage endpoint"),
    ("http://warehouse.evil.com:9000/k", EP, "not the storage endpoint"),
    ("https://warehouse.s3.amazonaws.com.evil.com/k", None, "not the storage endpoint"),
    (f"{EP}/", EP, "bucket name"),
    (f"{EP}/Bad_Bucket/k", EP, "bucket name"),
    (f"{EP}/warehouse/wh/db/t1/../t2/x", EP, "'..'"),
    (f"{EP}/warehouse/wh/db/t1/%2E%2E/t2/x", EP, "'..'"),
    (f"{EP}/warehouse/wh/db/t1%2F..%2Ft2/x", EP, "'..'"),
    (f"{EP}/warehouse/wh/db/t1/%252E%252E/t2/x", EP, "'..'"),  # escapes only if something decodes twice
    (f"{EP}/warehouse/wh/db/t1/./x", EP, "'.'"),
    (f"{EP}/warehouse/wh/db/t1%5C..%5Ct2", EP, "backslash"),
    (f"{EP}/warehouse/wh/db/t1/%00", EP, "control"),
    (f"{EP}/warehouse/wh/db/t1/%zz", EP, "malformed"),
    (f"{EP}/warehouse/wh/db/t1/%ff", EP, "UTF-8"),
    (f"{EP}/warehouse?prefix=a&prefix=b", EP, "twice"),
    (f"{EP}/warehouse?prefix=%zz", EP, "malformed"),
])
def test_resolve_refuses_ambiguous_uris(uri: str, endpoint: str | None, message: str) -> None:
    with pytest.raises(UnsafeS3Request, match=message):
        resolve_s3_target(uri, endpoint)


# --- may_sign -------------------------------------------------------------------------------------------------

ALLOWED = [
    ("GET", f"{OBJ}/data/a.parquet", {}, True),
    ("GET", f"{OBJ}/data/a.parquet?x-id=GetObject&response-content-type=x", {}, True),
    ("HEAD", f"{OBJ}/metadata/v1.json", {}, True),
    ("GET", f"{EP}/{BUCKET}?list-type=2&prefix=wh%2Fdb%2Ft1%2F&delimiter=%2F&max-keys=1", {}, True),
    ("GET", f"{EP}/{BUCKET}?list-type=2&prefix=wh%2Fdb%2Ft1%2Fdata%2Fpart", {}, True),
    ("GET", f"{EP}/{BUCKET}?prefix=wh/db/t1/&marker=x", {}, True),  # ListObjects v1
    ("GET", f"{EP}/{BUCKET}?uploads&prefix=wh/db/t1/", {}, True),  # ListMultipartUploads
    ("GET", f"{OBJ}/data/a.parquet?uploadId=u1", {}, True),  # ListParts
    ("PUT", f"{OBJ}/data/a.parquet", {}, True),
    ("PUT", f"{OBJ}/data/a.parquet?partNumber=2&uploadId=u1", {}, True),
    ("PUT", f"{OBJ}/data/b.parquet", {"x-amz-copy-source": ["warehouse/wh/db/t1/data/a.parquet"]}, True),
    ("POST", f"{OBJ}/data/a.parquet?uploads", {}, True),
    ("POST", f"{OBJ}/data/a.parquet?uploadId=u1", {}, True),
    ("DELETE", f"{OBJ}/data/a.parquet?uploadId=u1", {}, True),
    ("DELETE", f"{OBJ}/data/a.parquet", {}, True),
]


@pytest.mark.parametrize(("method", "uri", "headers", "write"), ALLOWED)
def test_may_sign_allows_what_a_table_file_io_does(method: str, uri: str, headers: dict[str, list[str]],
                                                   write: bool) -> None:
    assert may_sign(req(method, uri, headers), TABLE, write, endpoint=EP) is None


@pytest.mark.parametrize(("method", "uri"), [(m, u) for m, u, _, _ in ALLOWED if m in ("PUT", "POST", "DELETE")])
def test_may_sign_needs_modify_for_every_write(method: str, uri: str) -> None:
    assert may_sign(req(method, uri), TABLE, False, endpoint=EP) == "writing needs MODIFY on the table"


@pytest.mark.parametrize(("method", "uri"), [(m, u) for m, u, _, _ in ALLOWED if m in ("GET", "HEAD")])
def test_may_sign_reads_without_modify(method: str, uri: str) -> None:
    assert may_sign(req(method, uri), TABLE, False, endpoint=EP) is None


@pytest.mark.parametrize(("method", "uri", "headers", "reason"), [
    ("GET", f"{EP}/{BUCKET}/wh/db/t10/a", {}, "outside"),  # sibling: t1 does not cover t10
    ("GET", f"{EP}/{BUCKET}/wh/db/t1", {}, "outside"),  # the prefix without its slash could be a sibling's
    ("GET", f"{EP}/{BUCKET}/wh/db/other/a", {}, "outside"),
    ("GET", f"{EP}/other-bucket/wh/db/t1/a", {}, "not the table's bucket"),
    ("GET", f"{EP}/{BUCKET}/wh/db/t1/../t2/a", {}, "'..'"),
    ("GET", f"{EP}/{BUCKET}?list-type=2&prefix=wh%2Fdb%2Ft1", {}, "outside"),  # would list t10 too
    ("GET", f"{EP}/{BUCKET}?list-type=2", {}, "outside"),  # no prefix: the whole bucket
    ("GET", f"{EP}/{BUCKET}?list-type=2&prefix=", {}, "outside"),
    ("GET", f"{EP}/{BUCKET}?list-type=3&prefix=wh/db/t1/", {}, "list-type"),
    ("GET", f"{EP}/{BUCKET}?policy", {}, "not an object read"),
    ("HEAD", f"{EP}/{BUCKET}", {}, "not an object read"),
    ("GET", f"{OBJ}/a?acl", {}, "not an object read"),
    ("GET", f"{OBJ}/a?tagging", {}, "not an object read"),
    ("PUT", f"{OBJ}/a?acl", {}, "not an object write"),
    ("PUT", f"{OBJ}/a?partNumber=1", {}, "not an object write"),  # UploadPart without its upload
    ("PUT", f"{EP}/{BUCKET}?policy", {}, "not an object write"),
    ("DELETE", f"{EP}/{BUCKET}", {}, "not an object write"),
    ("POST", f"{OBJ}/a?select&select-type=2", {}, "not an object write"),
    ("PUT", f"{OBJ}/a", {"x-amz-acl": ["public-read"]}, "x-amz-acl"),
    ("PUT", f"{OBJ}/a", {"X-Amz-Grant-Read": ["uri=AllUsers"]}, "x-amz-grant-read"),
    ("PUT", f"{OBJ}/a", {"x-amz-object-lock-mode": ["COMPLIANCE"]}, "object-lock"),
    ("PUT", f"{OBJ}/b", {"x-amz-copy-source": ["warehouse/wh/db/other/secret"]}, "outside"),
    ("PUT", f"{OBJ}/b", {"x-amz-copy-source": ["/other-bucket/wh/db/t1/a"]}, "outside the table"),
    ("PUT", f"{OBJ}/b", {"x-amz-copy-source": ["warehouse/wh/db/t1/%2E%2E/t2/a"]}, "'..'"),
    ("PATCH", f"{OBJ}/a", {}, "not an S3 data operation"),
    ("OPTIONS", f"{OBJ}/a", {}, "not an S3 data operation"),
    ("GET", "http://elsewhere:9000/warehouse/wh/db/t1/a", {}, "not the storage endpoint"),
])
def test_may_sign_refuses(method: str, uri: str, headers: dict[str, list[str]], reason: str) -> None:
    assert reason in str(may_sign(req(method, uri, headers), TABLE, True, endpoint=EP))


def test_table_prefix_is_normalised_and_must_not_be_the_whole_bucket() -> None:
    for prefix in ("wh/db/t1", "wh/db/t1/", "/wh/db/t1/"):
        assert may_sign(req("GET", f"{OBJ}/a"), (BUCKET, prefix), False, endpoint=EP) is None
    with pytest.raises(ValueError):
        may_sign(req("GET", f"{OBJ}/a"), (BUCKET, "/"), False, endpoint=EP)


DELETE_URI = f"{EP}/{BUCKET}?delete"


def delete_body(*keys: str) -> str:
    objects = "".join(f"<Object><Key>{k}</Key><VersionId>v</VersionId></Object>" for k in keys)
    return f'<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{objects}</Delete>'


@pytest.mark.parametrize(("body", "write", "reason"), [
    (delete_body("wh/db/t1/a", "wh/db/t1/b/c"), True, None),
    (delete_body("wh/db/t1/a"), False, "MODIFY"),
    (delete_body("wh/db/t1/a", "wh/db/t10/a"), True, "outside"),  # one bad key refuses the lot
    (delete_body("wh/db/t1/../t2/a"), True, "'..'"),
    (None, True, "without its body"),  # what PyIceberg sends
    ("", True, "without its body"),
    ("<Delete></Delete>", True, "names no key"),
    ("<Delete><Object><Key>wh/db/t1/a", True, "not XML"),
    ('<!DOCTYPE d [<!ENTITY e "wh/db/t2/x">]><Delete><Object><Key>&e;</Key></Object></Delete>', True, "DOCTYPE"),
])
def test_delete_objects_is_judged_by_every_key_in_its_body(body: str | None, write: bool, reason: str | None) -> None:
    decision = may_sign(req("POST", DELETE_URI, body=body), TABLE, write, endpoint=EP, storage_checks_payload=True)
    assert decision is None if reason is None else reason in str(decision)


def test_delete_objects_is_refused_where_the_storage_ignores_payload_hashes() -> None:
    decision = may_sign(req("POST", DELETE_URI, body=delete_body("wh/db/t1/a")), TABLE, True, endpoint=EP)
    assert "does not check bodies" in str(decision)


# --- sign -----------------------------------------------------------------------------------------------------

CREDS = S3Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def expected_signature(method: str, uri: str, headers: dict[str, str], signed: list[str], amz_date: str,
                       region: str, secret: str) -> str:
    """SigV4 from the AWS documentation, written out independently of botocore: S3 paths are not normalised."""
    parts = urlsplit(uri)
    pairs = sorted(tuple(p.split("=", 1)) if "=" in p else (p, "") for p in parts.query.split("&") if p)
    lower = {k.lower(): " ".join(v.split()) for k, v in headers.items()}
    lower["host"] = parts.netloc
    canonical = "\n".join([method, parts.path, "&".join(f"{k}={v}" for k, v in pairs),
                           "".join(f"{h}:{lower[h]}\n" for h in signed), ";".join(signed),
                           lower["x-amz-content-sha256"]])
    scope = f"{amz_date[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), amz_date[:8]), region), "s3"), "aws4_request")
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def check(result: dict[str, Any], request: SignRequest, region: str,
          secret: str = CREDS.secret_access_key) -> list[str]:
    """Verify the returned Authorization against the client's headers plus the returned ones; the signed names."""
    returned = {n: v[0] for n, v in result["headers"].items()}
    sent = {n: v[0] for n, v in request.headers.items()} | returned
    auth = returned["Authorization"]
    credential, signed_headers, signature = (p.split("=", 1)[1] for p in auth.split(" ", 1)[1].split(", "))
    signed = signed_headers.split(";")
    amz_date = returned["X-Amz-Date"]
    assert credential == f"{CREDS.access_key_id}/{amz_date[:8]}/{region}/s3/aws4_request"
    assert signature == expected_signature(request.method, result["uri"], sent, signed, amz_date, region, secret)
    return signed


def test_sign_returns_only_the_headers_it_adds_and_a_valid_signature() -> None:
    request = req("GET", f"{OBJ}/data/a%20b.parquet?x-id=GetObject",
                  {"User-Agent": ["aiobotocore/3"], "If-Match": ['"etag"'], "Range": ["bytes=0-9"],
                   "amz-sdk-invocation-id": ["abc"], "amz-sdk-request": ["attempt=1; max=3"],
                   "Expect": ["100-continue"]})
    result = sign(request, CREDS, "eu-west-1")
    assert result["uri"] == request.uri
    assert set(result["headers"]) == {"Authorization", "X-Amz-Date", "X-Amz-Content-SHA256"}
    assert result["headers"]["X-Amz-Content-SHA256"] == ["UNSIGNED-PAYLOAD"]
    # Range and the per-attempt SDK headers stay unsigned so a cached or retried signature still matches.
    assert check(result, request, "eu-west-1") == ["host", "if-match", "x-amz-content-sha256", "x-amz-date"]


def test_sign_keeps_a_client_payload_hash_and_does_not_return_it() -> None:
    request = req("PUT", f"{OBJ}/a", {"x-amz-content-sha256": ["STREAMING-UNSIGNED-PAYLOAD-TRAILER"],
                                      "x-amz-checksum-crc32": ["8vjRIw=="], "Content-Length": ["21"]})
    result = sign(request, CREDS)
    assert set(result["headers"]) == {"Authorization", "X-Amz-Date"}  # PyIceberg would duplicate it otherwise
    assert "x-amz-checksum-crc32" in check(result, request, "us-east-1")


def test_sign_defaults_to_the_request_region_and_adds_the_session_token() -> None:
    request = req("HEAD", f"{OBJ}/a")
    result = sign(request, S3Credentials(CREDS.access_key_id, CREDS.secret_access_key, "token/with+chars"))
    assert result["headers"]["X-Amz-Security-Token"] == ["token/with+chars"]
    assert "x-amz-security-token" in check(result, request, "us-east-1")


def test_sign_replaces_client_signing_artifacts_and_ignores_a_client_host() -> None:
    request = req("GET", f"{OBJ}/a", {"Authorization": ["AWS4-HMAC-SHA256 forged"], "X-Amz-Date": ["20000101T000000Z"],
                                      "Host": ["other-bucket.127.0.0.1:9000"],
                                      "Date": ["Sat, 01 Jan 2000 00:00:00 GMT"]})
    result = sign(request, CREDS)
    assert result["headers"]["X-Amz-Date"] != ["20000101T000000Z"]
    client_free = req("GET", request.uri)  # verify against the URI's host, not the client's Host
    assert check(result, client_free, "us-east-1") == ["host", "x-amz-content-sha256", "x-amz-date"]


def test_sign_binds_a_body_to_its_hash() -> None:
    body = delete_body("wh/db/t1/a")
    request = req("POST", DELETE_URI, {"Content-MD5": ["abc="], "x-amz-content-sha256": ["UNSIGNED-PAYLOAD"]}, body)
    result = sign(request, CREDS)
    assert result["headers"]["X-Amz-Content-SHA256"] == [hashlib.sha256(body.encode()).hexdigest()]
    signed = check(result, req("POST", DELETE_URI, {"Content-MD5": ["abc="]}), "us-east-1")
    assert signed == ["content-md5", "host", "x-amz-content-sha256", "x-amz-date"]


def test_a_signature_covers_method_path_and_query() -> None:
    request = req("GET", f"{OBJ}/a?partNumber=1")
    result = sign(request, CREDS)
    amz_date = result["headers"]["X-Amz-Date"][0]
    signature = result["headers"]["Authorization"][0].rsplit("=", 1)[1]
    sent = {"x-amz-content-sha256": "UNSIGNED-PAYLOAD", "x-amz-date": amz_date}
    signed = ["host", "x-amz-content-sha256", "x-amz-date"]
    for method, uri in [("GET", f"{OBJ}/b?partNumber=1"), ("GET", f"{OBJ}/a?partNumber=2"), ("HEAD", request.uri)]:
        assert expected_signature(method, uri, sent, signed, amz_date, "us-east-1",
                                  CREDS.secret_access_key) != signature


# --- the same headers as botocore ----------------------------------------------------------------------------------

INSTANT = datetime.datetime(2026, 11, 26, 23, 59, 58, tzinfo=datetime.timezone.utc)
DROPPED = {"authorization", "x-amz-date", "date", "x-amz-security-token", "host"}
LEFT_UNSIGNED = {"range", "amz-sdk-invocation-id", "amz-sdk-request", "amz-sdk-retry"}


class BotocoreRemoteSigV4(S3SigV4Auth):
    """How this project signed remote-signing requests before: botocore's S3 SigV4 with the payload hash chosen
    by the caller and the volatile headers unsigned."""

    def __init__(self, credentials: Credentials, region: str, payload_hash: str) -> None:
        super().__init__(credentials, "s3", region)
        self._payload_hash = payload_hash

    def payload(self, request: AWSRequest) -> str:
        return self._payload_hash

    def headers_to_sign(self, request: AWSRequest) -> Any:
        headers = super().headers_to_sign(request)
        for name in LEFT_UNSIGNED:
            del headers[name]
        return headers


def botocore_sign(monkeypatch: pytest.MonkeyPatch, request: SignRequest, credentials: S3Credentials,
                  region: str) -> dict[str, Any]:
    monkeypatch.setattr("botocore.auth.get_current_datetime", lambda: INSTANT.replace(tzinfo=None))
    client = {name.lower(): (name, values) for name, values in request.headers.items()}
    if request.body is not None:
        payload_hash = hashlib.sha256(request.body.encode()).hexdigest()
    elif "x-amz-content-sha256" in client and client["x-amz-content-sha256"][1]:
        payload_hash = client["x-amz-content-sha256"][1][0]
    else:
        payload_hash = UNSIGNED_PAYLOAD
    aws = AWSRequest(method=request.method, url=request.uri)
    for lname, (name, values) in client.items():
        if lname not in DROPPED:
            for value in values:
                aws.headers.add_header(name, value)
    creds = Credentials(credentials.access_key_id, credentials.secret_access_key, credentials.session_token)
    BotocoreRemoteSigV4(creds, region, payload_hash).add_auth(aws)
    added = ["Authorization", "X-Amz-Date", "X-Amz-Security-Token"]
    if request.body is not None or "x-amz-content-sha256" not in client:
        added.append("X-Amz-Content-SHA256")
    return {"uri": request.uri, "headers": {n: aws.headers.get_all(n) for n in added if n in aws.headers}}


SAME_AS_BOTOCORE = [
    req("GET", f"{OBJ}/data/a%20b.parquet?x-id=GetObject",
        {"User-Agent": ["aiobotocore/3"], "If-Match": ['"etag"'], "Range": ["bytes=0-9"],
         "amz-sdk-invocation-id": ["abc"], "amz-sdk-request": ["attempt=1; max=3"], "Expect": ["100-continue"]}),
    req("PUT", f"{OBJ}/a", {"x-amz-content-sha256": ["STREAMING-UNSIGNED-PAYLOAD-TRAILER"],
                            "x-amz-checksum-crc32": ["8vjRIw=="], "Content-Length": ["21"]}),
    req("PUT", f"{OBJ}/a", {"x-amz-content-sha256": []}),
    req("HEAD", f"{OBJ}/%C3%B8%2Bx%3D1%26y.json"),
    req("GET", f"{OBJ}/a", {"Authorization": ["AWS4-HMAC-SHA256 forged"], "X-Amz-Date": ["20000101T000000Z"],
                            "Host": ["other-bucket.127.0.0.1:9000"], "Date": ["Sat, 01 Jan 2000 00:00:00 GMT"],
                            "X-Amz-Security-Token": ["forged"]}),
    req("POST", f"{EP}/{BUCKET}?delete", {"Content-MD5": ["abc="], "x-amz-content-sha256": ["UNSIGNED-PAYLOAD"]},
        "<Delete><Object><Key>wh/db/t1/a</Key></Object></Delete>"),
    # Several values of a header, joined with ','; white space trimmed and folded; an empty list sends none.
    req("PUT", f"{OBJ}/a?partNumber=2&uploadId=x%2By",
        {"X-Amz-Meta-A": ["  one  two ", "three"], "Content-Type": ["application/octet-stream"], "X-Empty": [],
         "X-Blank": ["   "]}),
    # The query as sent: sorted by name, then value; no '=' is an empty value; encodings kept.
    req("GET", f"{EP}/{BUCKET}?prefix=wh%2Fdb%2Ft1%2F&list-type=2&delimiter=/&max-keys&start-after=a+b"),
    req("GET", f"{EP}/{BUCKET}?uploads&prefix=wh/db/t1/"),
    req("GET", "https://warehouse.s3.eu-west-1.amazonaws.com/wh/db/t1/a"),
    req("GET", "https://warehouse.s3.eu-west-1.amazonaws.com:443/wh/db/t1/a"),
    req("GET", "http://WAREHOUSE.S3.amazonaws.com:80/wh/db/t1/a"),
    req("GET", "http://[::1]:9000/warehouse/wh/db/t1/a"),
    req("GET", "http://warehouse.s3.amazonaws.com?list-type=2"),
    req("DELETE", f"{OBJ}/a?uploadId=u1", {"x-amzn-trace-id": ["Root=1"], "Connection": ["keep-alive"]}),
]


@pytest.mark.parametrize("request_", SAME_AS_BOTOCORE, ids=[f"{r.method} {r.uri}" for r in SAME_AS_BOTOCORE])
@pytest.mark.parametrize("token", [None, "session//token+="])
@pytest.mark.parametrize("region", [None, "eu-west-1"])
def test_the_same_headers_as_botocore(monkeypatch: pytest.MonkeyPatch, request_: SignRequest, token: str | None,
                                      region: str | None) -> None:
    credentials = S3Credentials(CREDS.access_key_id, CREDS.secret_access_key, token)
    ours = sign(request_, credentials, region, now=INSTANT.timestamp())
    assert ours == botocore_sign(monkeypatch, request_, credentials, region or request_.region)
