"""Remote signing against a real SeaweedFS: requests signed by arco.vending.signing with the server's keys are
accepted exactly as signed, and the decision keeps them inside one table's prefix.

The sign requests are built the way PyIceberg's S3V4RestSigner builds them (method, region, uri, the request's
headers as single-value lists), and the last test drives PyIceberg's own FsspecFileIO through a signing server.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

import httpx
import pytest

from arco.vending.signing import S3Credentials, SignRequest, may_sign, parse_sign_request, sign
from support import emulators
from support.net import free_port
from support.storage_targets import StorageTarget

pytestmark = [pytest.mark.emulator, pytest.mark.timeout(180)]

REGION = "us-east-1"


@dataclass(frozen=True)
class Table:
    endpoint: str
    bucket: str
    prefix: str  # key prefix, no trailing slash
    credentials: S3Credentials

    def url(self, key: str, query: str = "") -> str:
        return f"{self.endpoint}/{self.bucket}/{quote(key)}" + (f"?{query}" if query else "")


@pytest.fixture
def table(seaweedfs_server: emulators.S3Server, s3_seaweedfs_bucket: StorageTarget) -> Table:
    bucket = s3_seaweedfs_bucket.url.removeprefix("s3://")
    creds = S3Credentials(seaweedfs_server.access_key_id, seaweedfs_server.secret_access_key)
    return Table(seaweedfs_server.endpoint_url, bucket, f"wh/db/t1-{uuid.uuid4().hex[:8]}", creds)


def sign_request(method: str, uri: str, headers: dict[str, str], body: str | None = None) -> SignRequest:
    """What S3V4RestSigner posts: every request header as a one-element list."""
    payload: dict[str, object] = {"method": method, "region": REGION, "uri": uri,
                                  "headers": {k: [v] for k, v in headers.items()}}
    if body is not None:
        payload["body"] = body
    return parse_sign_request(payload)


def send(table: Table, method: str, uri: str, headers: dict[str, str] | None = None,
         content: bytes | None = None, write: bool = True) -> httpx.Response:
    """Decide, sign and send with the client's headers plus only the returned ones, as PyIceberg does."""
    headers = dict(headers or {})
    request = sign_request(method, uri, headers)
    assert may_sign(request, (table.bucket, table.prefix), write, endpoint=table.endpoint) is None
    result = sign(request, table.credentials, REGION)
    for name, values in result["headers"].items():
        assert name.lower() not in {h.lower() for h in headers}, "a returned header would duplicate the client's"
        headers[name] = ", ".join(values)
    return httpx.request(method, result["uri"], headers=headers, content=content, timeout=10)


def test_put_get_head_and_list_inside_the_prefix_are_accepted(table: Table) -> None:
    key = f"{table.prefix}/data/part 0001=a+b.parquet"  # space and '+' exercise the path encoding
    body = b"hello remote signing"
    put = send(table, "PUT", table.url(key), {"Content-Length": str(len(body)),
                                              "Content-Type": "application/octet-stream"}, body)
    assert put.status_code == 200, put.text

    got = send(table, "GET", table.url(key), {"Range": "bytes=6-11"}, write=False)
    assert got.status_code == 206, got.text
    assert got.content == b"remote"

    head = send(table, "HEAD", table.url(key), write=False)
    assert head.status_code == 200
    assert int(head.headers["content-length"]) == len(body)

    prefix = quote(table.prefix + "/", safe="")
    listing = send(table, "GET", f"{table.endpoint}/{table.bucket}?list-type=2&prefix={prefix}", write=False)
    assert listing.status_code == 200, listing.text
    assert "part 0001=a+b.parquet" in listing.text


def test_signature_for_one_uri_does_not_authorise_another(table: Table) -> None:
    key = f"{table.prefix}/secret.txt"
    assert send(table, "PUT", table.url(key), {"Content-Length": "2"}, b"ok").status_code == 200
    request = sign_request("GET", table.url(key), {})
    headers = {n: ", ".join(v) for n, v in sign(request, table.credentials, REGION)["headers"].items()}
    assert httpx.get(table.url(key), headers=headers).status_code == 200
    tampered = httpx.get(table.url(f"{table.prefix}/other.txt"), headers=headers)
    assert tampered.status_code == 403
    assert httpx.head(table.url(key), headers=headers).status_code == 403  # method is signed too


def test_the_decision_refuses_out_of_prefix_sibling_and_unauthorised_writes(table: Table) -> None:
    scope = (table.bucket, table.prefix)
    inside = sign_request("PUT", table.url(f"{table.prefix}/x"), {})
    assert may_sign(inside, scope, True, endpoint=table.endpoint) is None
    assert "MODIFY" in str(may_sign(inside, scope, False, endpoint=table.endpoint))
    outside = sign_request("GET", table.url("wh/db/other/x"), {})
    assert "outside" in str(may_sign(outside, scope, True, endpoint=table.endpoint))
    sibling = sign_request("GET", table.url(f"{table.prefix}0/x"), {})  # t1-<id>0 is not under t1-<id>/
    assert "outside" in str(may_sign(sibling, scope, True, endpoint=table.endpoint))
    sibling_list = sign_request("GET", f"{table.endpoint}/{table.bucket}?list-type=2&prefix={table.prefix}", {})
    assert "outside" in str(may_sign(sibling_list, scope, False, endpoint=table.endpoint))


def delete_objects_body(*keys: str) -> str:
    objects = "".join(f"<Object><Key>{k}</Key></Object>" for k in keys)
    return f'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{objects}<Quiet>true</Quiet></Delete>'


def test_delete_objects_is_refused_where_the_storage_does_not_check_the_body(table: Table) -> None:
    """Iceberg Java sends DeleteObjects' body, and the signature binds its SHA-256; SeaweedFS ignores that hash, so
    a signed DeleteObjects would delete whatever keys the client sends instead. Hence refused by default."""
    keys = [f"{table.prefix}/data/a.parquet", f"{table.prefix}/data/b.parquet", f"{table.prefix}/data/c.parquet"]
    for key in keys:
        assert send(table, "PUT", table.url(key), {"Content-Length": "1"}, b"x").status_code == 200
    body = delete_objects_body(*keys[:2])
    uri = f"{table.endpoint}/{table.bucket}?delete"
    request = sign_request("POST", uri, {"Content-Type": "application/xml"}, body)
    scope = (table.bucket, table.prefix)
    assert "does not check bodies" in str(may_sign(request, scope, True, endpoint=table.endpoint))
    assert may_sign(request, scope, True, endpoint=table.endpoint, storage_checks_payload=True) is None

    headers = {"Content-Type": "application/xml"}
    headers.update({n: ", ".join(v) for n, v in sign(request, table.credentials, REGION)["headers"].items()})
    # The checked body is accepted with the signature ...
    deleted = httpx.post(uri, headers=headers, content=body.encode())
    assert deleted.status_code == 200, deleted.text
    assert [send(table, "HEAD", table.url(k), write=False).status_code for k in keys] == [404, 404, 200]
    # ... and so is a body naming another key, which AWS S3 would reject (XAmzContentSHA256Mismatch). If this
    # starts failing, SeaweedFS checks payload hashes and storage_checks_payload may be enabled for it.
    swapped = httpx.post(uri, headers=headers, content=delete_objects_body(keys[2]).encode())
    assert swapped.status_code == 200
    assert send(table, "HEAD", table.url(keys[2]), write=False).status_code == 404


SIGN_PATH = "v1/main/namespaces/db/tables/t1/sign"  # table-scoped, as the Arco route will be


@dataclass
class SigningServer:
    uri: str
    seen: list[dict[str, object]]


@pytest.fixture
def signing_server(table: Table) -> Iterator[SigningServer]:
    """A minimal signing endpoint for one table: parse, decide (MODIFY granted), sign with the storage keys."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    seen: list[dict[str, object]] = []

    async def sign_route(request: Request) -> JSONResponse:
        payload = await request.json()
        seen.append({"auth": request.headers.get("authorization"), **payload})
        try:
            parsed = parse_sign_request(payload)
        except ValueError as e:
            return JSONResponse({"error": {"message": str(e), "type": "BadRequestException", "code": 400}}, 400)
        if reason := may_sign(parsed, (table.bucket, table.prefix), True, endpoint=table.endpoint):
            return JSONResponse({"error": {"message": reason, "type": "ForbiddenException", "code": 403}}, 403)
        return JSONResponse(sign(parsed, table.credentials), headers={"Cache-Control": "no-cache"})

    app = Starlette(routes=[Route(f"/{SIGN_PATH}", sign_route, methods=["POST"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "signing server did not start"
        time.sleep(0.05)
    try:
        yield SigningServer(f"http://127.0.0.1:{port}", seen)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_pyiceberg_fsspec_file_io_writes_and_reads_through_remote_signing(
        table: Table, signing_server: SigningServer) -> None:
    pytest.importorskip("s3fs")
    from pyiceberg.io.fsspec import FsspecFileIO, SignError

    # What a LoadTableResult config needs for PyIceberg: no storage keys, only where to get signatures. "uri" is
    # the catalog's own property, always there in a RestCatalog; S3V4RestSigner reads it even when
    # s3.signer.uri is set (its dict.get default is evaluated eagerly).
    io = FsspecFileIO({
        "uri": "http://127.0.0.1:1/unused-catalog",
        "s3.endpoint": table.endpoint, "s3.region": REGION, "token": "catalog-token",
        "s3.remote-signing-enabled": "true", "s3.signer": "S3V4RestSigner",
        "s3.signer.uri": signing_server.uri, "s3.signer.endpoint": SIGN_PATH,
    })
    location = f"s3://{table.bucket}/{table.prefix}/metadata/00000-{uuid.uuid4()}.metadata.json"
    with io.new_output(location).create() as out:
        out.write(b'{"format-version": 2}')
    assert io.new_input(location).exists()
    with io.new_input(location).open() as f:
        assert f.read() == b'{"format-version": 2}'
    assert len(io.new_input(location)) == len(b'{"format-version": 2}')

    seen = signing_server.seen
    assert {r["method"] for r in seen} >= {"PUT", "HEAD", "GET"}
    assert all(r["auth"] == "Bearer catalog-token" and r["region"] == REGION for r in seen)
    assert all("body" not in r for r in seen)  # PyIceberg never sends one

    outside = f"s3://{table.bucket}/wh/db/other/{uuid.uuid4()}.json"
    with pytest.raises(SignError), io.new_output(outside).create() as out:
        out.write(b"nope")
    with pytest.raises(SignError):
        io.new_input(f"s3://{table.bucket}/{table.prefix}0/sibling.json").open().read()

    # s3fs deletes with DeleteObjects, and PyIceberg does not send the body the keys are in: refused, not guessed.
    with pytest.raises(SignError):
        io.delete(location)
    assert io.new_input(location).exists()
    assert any(r["method"] == "POST" and str(r["uri"]).endswith("?delete") for r in seen)
