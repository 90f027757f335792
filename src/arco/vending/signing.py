"""Iceberg S3 remote signing: parse a ``RemoteSignRequest``, decide whether it stays inside a table, sign it.

Everything but :func:`sign`'s clock is pure. What the two clients do, which shaped this module:

- PyIceberg (``S3V4RestSigner``) sends ``method``, ``region``, ``uri`` and the request's headers, never a body,
  then *appends* every returned header to its request. Returning a header it already has duplicates it and
  breaks the signature, so :func:`sign` returns only the headers signing adds.
- Iceberg Java (``S3V4RestSignerClient``) also sends ``body`` for DeleteObjects (and ``provider``, ``properties``
  in newer releases), then lays its own request headers *over* the returned ones, so again only added headers
  take effect. It may cache a GET/HEAD signature per (method, region, uri) and reuse it with other headers, which
  is why ``Range`` and the per-attempt ``amz-sdk-*`` headers are left out of the signature.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.etree import ElementTree

from arco.storage.connections import host_header
from arco.storage.sigv4 import UNSIGNED_HEADERS, authorization, canonical_query, header_value, timestamp

_METHODS = frozenset({"PUT", "GET", "HEAD", "POST", "DELETE", "PATCH", "OPTIONS"})
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name (RFC 9110 token)
# Replaced by signing, or (host) taken from the URI: a client-chosen Host could name another virtual-hosted bucket.
_DROPPED = frozenset({"authorization", "x-amz-date", "date", "x-amz-security-token", "host"})
_UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
_UNSIGNED = frozenset({"range", "amz-sdk-invocation-id", "amz-sdk-request", "amz-sdk-retry"})
# Headers that widen access beyond the table (ACLs) or block its later cleanup (object lock).
# What the signature leaves out of the client's headers: those signing replaces, those that vary per attempt, and
# those SigV4 never signs.
_NOT_SIGNED = _DROPPED | _UNSIGNED | UNSIGNED_HEADERS
_FORBIDDEN_HEADER = re.compile(r"x-amz-(acl|grant-.*|object-lock-.*|bypass-governance-retention)")
_AWS_HOST = re.compile(r"(?:(?P<bucket>.+)\.)?s3(?:[.-][a-z0-9-]+)*\.amazonaws\.com(?:\.cn)?(?::\d+)?")
_LIST = {"list-type", "prefix", "delimiter", "continuation-token", "start-after", "max-keys", "encoding-type",
         "fetch-owner", "marker", "x-id"}
_LIST_UPLOADS = {"uploads", "prefix", "delimiter", "key-marker", "upload-id-marker", "max-uploads",
                 "encoding-type", "x-id"}


class InvalidSignRequest(ValueError):
    """The body is not a well-formed RemoteSignRequest (HTTP 400)."""


class UnsafeS3Request(ValueError):
    """The S3 request cannot be attributed to one bucket and key without ambiguity."""


@dataclass(frozen=True)
class SignRequest:
    method: str
    region: str
    uri: str
    headers: dict[str, list[str]]
    body: str | None = None
    provider: str = "s3"
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class S3Credentials:
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None


@dataclass(frozen=True)
class S3Target:
    bucket: str
    key: str  # "" for a bucket-level request
    query: dict[str, str]


def _str(payload: dict[str, Any], name: str, required: bool = True) -> str | None:
    value = payload.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise InvalidSignRequest(f"'{name}' must be a {'non-empty ' if required else ''}string")
    return value


def parse_sign_request(payload: object) -> SignRequest:
    """Validate a decoded JSON body; raises :class:`InvalidSignRequest` naming the bad field."""
    if not isinstance(payload, dict):
        raise InvalidSignRequest("the body must be a JSON object")
    method = str(_str(payload, "method")).upper()
    if method not in _METHODS:
        raise InvalidSignRequest(f"'method' must be one of {sorted(_METHODS)}")
    uri = str(_str(payload, "uri"))
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises for a port that is not a number from 0 to 65535
    except ValueError as exc:  # an unclosed IPv6 bracket, a bad port
        raise InvalidSignRequest(f"'uri' is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment or parts.username:
        raise InvalidSignRequest("'uri' must be an absolute http(s) URL without credentials or fragment")
    raw_headers = payload.get("headers")
    if not isinstance(raw_headers, dict):
        raise InvalidSignRequest("'headers' must be an object of header name to list of values")
    headers: dict[str, list[str]] = {}
    for name, values in raw_headers.items():
        if not _TOKEN.fullmatch(name):
            raise InvalidSignRequest(f"invalid header name {name!r}")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidSignRequest(f"header {name!r} must map to a list of strings")
        if any(c in v for v in values for c in "\r\n\x00"):
            raise InvalidSignRequest(f"header {name!r} has a control character in a value")
        if name.lower() in (n.lower() for n in headers):
            raise InvalidSignRequest(f"header {name!r} appears twice with different case")
        headers[name] = list(values)
    provider = _str(payload, "provider", required=False) or "s3"
    if provider != "s3":
        raise InvalidSignRequest(f"provider {provider!r} is not supported; only 's3' is")
    properties = payload.get("properties") or {}
    if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
        raise InvalidSignRequest("'properties' must be an object of strings")
    region = str(_str(payload, "region"))
    if not re.fullmatch(r"[a-z0-9-]+", region):  # it goes into the SigV4 credential scope
        raise InvalidSignRequest(f"invalid region {region!r}")
    return SignRequest(method, region, uri, headers, _str(payload, "body", required=False),
                       provider, dict(properties))


def _check_key(key: str) -> str:
    # S3 keys are literal, but servers and proxies on the way may resolve dot segments or treat '\' as '/'; a key
    # whose *second* decoding has dot segments is refused too, against anything that decodes twice.
    if "\\" in key or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        raise UnsafeS3Request(f"key {key!r} has a backslash or control character")
    for candidate in (key, unquote(key)):
        if any(segment in (".", "..") for segment in candidate.replace("\\", "/").split("/")):
            raise UnsafeS3Request(f"key {key!r} has a '.' or '..' segment")
    return key


def _decode(raw: str) -> str:
    if re.search(r"%(?![0-9A-Fa-f]{2})", raw):
        raise UnsafeS3Request(f"malformed percent-encoding in {raw!r}")
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError as e:
        raise UnsafeS3Request(f"percent-encoding in {raw!r} is not UTF-8") from e


def resolve_s3_target(uri: str, endpoint: str | None = None) -> S3Target:
    """The bucket, decoded key and query a path-style or virtual-hosted S3 URI addresses.

    ``endpoint`` is the S3 endpoint URL the catalog uses (None for AWS): the URI's host must be that host
    (path-style) or ``<bucket>.<that host>`` (virtual-hosted). Raises :class:`UnsafeS3Request`.
    """
    parts = urlsplit(uri)
    host = parts.netloc.lower()
    if endpoint is not None:
        expected = urlsplit(endpoint).netloc.lower()
        bucket: str | None = None if host == expected else (
            host[: -len(expected) - 1] if host.endswith("." + expected) else "")
    else:
        match = _AWS_HOST.fullmatch(host)
        bucket = match.group("bucket") if match else ""
    if bucket == "":
        raise UnsafeS3Request(f"host {host!r} is not the storage endpoint")
    path = _decode(parts.path)
    if bucket is None:  # path-style: the first segment is the bucket
        bucket, _, key = path.lstrip("/").partition("/")
    else:
        key = path.removeprefix("/")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket or ""):
        raise UnsafeS3Request(f"{bucket!r} is not a valid bucket name")
    if re.search(r"%(?![0-9A-Fa-f]{2})", parts.query):
        raise UnsafeS3Request("malformed percent-encoding in the query")
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError as e:
        raise UnsafeS3Request("query percent-encoding is not UTF-8") from e
    query = dict(pairs)
    if len(query) != len(pairs):  # which of two values a server would use is not ours to guess
        raise UnsafeS3Request("a query parameter appears twice")
    return S3Target(bucket, _check_key(key), query)


def _delete_keys(body: str | None) -> list[str]:
    if not body:
        raise UnsafeS3Request("DeleteObjects without its body cannot be checked key by key")
    if "<!" in body:  # no DOCTYPE or entities: nothing legitimate needs them
        raise UnsafeS3Request("DeleteObjects body has a DOCTYPE or entity declaration")
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as e:
        raise UnsafeS3Request(f"DeleteObjects body is not XML: {e}") from e
    keys = [el.text or "" for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "Key"]
    if not keys:
        raise UnsafeS3Request("DeleteObjects body names no key")
    return [_check_key(k) for k in keys]


def _params(query: dict[str, str], allowed: set[str], required: frozenset[str] | set[str] = frozenset()) -> bool:
    # Only the operations a FileIO makes: ?acl, ?tagging, ?policy, ?select ... change what the request does.
    names = {n for n in query if not n.startswith("response-")}
    return required <= names <= allowed | required


# (required, also allowed) query parameters of each object write: Put/UploadPart, Create/Complete MPU, Delete/Abort.
_WRITES = {"PUT": [(set(), {"x-id"}), ({"partNumber", "uploadId"}, {"x-id"})],
           "POST": [({"uploads"}, {"x-id"}), ({"uploadId"}, {"x-id"})],
           "DELETE": [(set(), {"versionId", "x-id"}), ({"uploadId"}, {"x-id"})]}


def _classify(request: SignRequest, target: S3Target, storage_checks_payload: bool) -> tuple[bool, list[str]]:
    """(is a write, the keys or list prefixes it touches); raises UnsafeS3Request with the reason to refuse."""
    method, q, key = request.method, target.query, target.key
    if method in ("GET", "HEAD"):
        if not key and method == "GET" and (_params(q, _LIST) or _params(q, _LIST_UPLOADS, {"uploads"})):
            if q.get("list-type", "2") != "2":
                raise UnsafeS3Request("unknown list-type")
            return False, [_check_key(q.get("prefix", ""))]  # judged by its prefix; none means the whole bucket
        if key and (_params(q, {"versionId", "partNumber", "x-id"})
                    or _params(q, {"max-parts", "part-number-marker", "x-id"}, {"uploadId"})):
            return False, [key]
        raise UnsafeS3Request(f"{method} {sorted(q)} is not an object read or a listing")
    if method not in _WRITES:
        raise UnsafeS3Request(f"method {method} is not an S3 data operation")
    if not key and method == "POST" and _params(q, {"x-id"}, {"delete"}):
        if not storage_checks_payload:
            raise UnsafeS3Request("DeleteObjects is not signed: this storage does not check bodies against their hash")
        scopes = _delete_keys(request.body)
    elif key and any(_params(q, allowed, required) for required, allowed in _WRITES[method]):
        scopes = [key]
    else:
        raise UnsafeS3Request(f"{method} {sorted(q)} is not an object write the table's FileIO makes")
    # CopyObject / UploadPartCopy read their source: it must be inside the table as well.
    for name, values in request.headers.items():
        for source in values if name.lower() == "x-amz-copy-source" else []:
            src_bucket, _, src_key = _decode(source.split("?", 1)[0]).lstrip("/").partition("/")
            if src_bucket != target.bucket:
                raise UnsafeS3Request(f"copy source {source!r} is outside the table")
            scopes.append(_check_key(src_key))
    return True, scopes


def may_sign(request: SignRequest, table_prefix: tuple[str, str], write_allowed: bool,
             endpoint: str | None = None, storage_checks_payload: bool = False) -> str | None:
    """None if the request may be signed for a table at ``(bucket, key_prefix)``, else the reason it may not.

    Reads (GET/HEAD) need SELECT, which the caller has checked; writes (PUT/POST/DELETE) also need
    ``write_allowed`` (MODIFY). Objects, list prefixes, copy sources and DeleteObjects keys must lie under
    ``key_prefix + '/'``; only the S3 operations a table's FileIO uses are allowed. ``endpoint`` is as for
    :func:`resolve_s3_target`. DeleteObjects is signed only if ``storage_checks_payload``: its keys are in the
    body, which only the signed payload hash binds, and some servers (SeaweedFS) never compare the two.
    Raises ValueError for an empty key prefix (a whole bucket is never a table's).
    """
    bucket, prefix = table_prefix[0], table_prefix[1].strip("/") + "/"
    if prefix == "/":
        raise ValueError("a table prefix must name a key prefix, not a whole bucket")
    try:
        target = resolve_s3_target(request.uri, endpoint)
        if target.bucket != bucket:
            return f"bucket {target.bucket!r} is not the table's bucket"
        for name in sorted(n.lower() for n in request.headers):
            if _FORBIDDEN_HEADER.fullmatch(name):
                return f"header {name!r} is not allowed"
        write, scopes = _classify(request, target, storage_checks_payload)
    except UnsafeS3Request as e:
        return str(e)
    if write and not write_allowed:
        return "writing needs MODIFY on the table"
    for scope in scopes:  # not a truthiness test: "" (the whole bucket) is the widest scope of all
        if not scope.startswith(prefix):
            return f"{scope!r} is outside the table's prefix {prefix!r}"
    return None


def sign(request: SignRequest, credentials: S3Credentials, region: str | None = None,
         now: float | None = None) -> dict[str, Any]:
    """A RemoteSignResult for ``request``: its URI and the headers SigV4 adds (never the client's own).

    Call :func:`may_sign` first: this signs anything. Signs with ``region`` (default: the request's), at ``now``
    (default: the clock). The payload is ``UNSIGNED-PAYLOAD`` unless the client sent ``x-amz-content-sha256``; a
    request with a body (DeleteObjects) is bound to that body's SHA-256, which storage that checks payload hashes
    (AWS S3) holds the client to. The signature is the one botocore's S3 signer makes of the same request (the
    unit tests compare them); :mod:`arco.storage.sigv4` computes it, in a sixth of the time.
    """
    client = {name.lower(): values for name, values in request.headers.items()}
    if request.body is not None:
        payload_hash = hashlib.sha256(request.body.encode()).hexdigest()
    elif client.get("x-amz-content-sha256"):
        payload_hash = client["x-amz-content-sha256"][0]
    else:
        payload_hash = _UNSIGNED_PAYLOAD
    stamp = timestamp(now)
    parts = urlsplit(request.uri)
    canonical = {name: ",".join(header_value(v) for v in values) for name, values in client.items()
                 if values and name not in _NOT_SIGNED}
    canonical.update({"host": host_header(parts.scheme, parts.hostname or "", parts.port), "x-amz-date": stamp,
                      "x-amz-content-sha256": payload_hash})
    if credentials.session_token:
        canonical["x-amz-security-token"] = credentials.session_token
    added = {"Authorization": [authorization(credentials.access_key_id, credentials.secret_access_key,
                                             region or request.region, "s3", stamp, request.method, parts.path,
                                             canonical_query(parts.query), canonical, payload_hash)],
             "X-Amz-Date": [stamp]}
    if credentials.session_token:
        added["X-Amz-Security-Token"] = [credentials.session_token]
    if request.body is not None or "x-amz-content-sha256" not in client:
        added["X-Amz-Content-SHA256"] = [payload_hash]
    return {"uri": request.uri, "headers": added}
