"""The Delta Sharing protocol's REST endpoints under ``/delta-sharing`` (thin: parse, authenticate, call the
service, shape the answer). Recipients are not Arco principals, so these routes authenticate the recipient's
bearer token themselves (the Arco middleware lets ``/delta-sharing`` through); the signed file URLs need no token
at all, the signature is the credential.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import BodyError, blocking, read_json
from arco.api.responses import JsonResponse
from arco.sharing import cloud_tokens, protocol
from arco.sharing.errors import SharingError, bad_request
from arco.sharing.file_server import SignedFiles, local_path
from arco.sharing.recipients import Recipient
from arco.sharing.service import Answer, SharedTable, SharingServer

NDJSON = "application/x-ndjson; charset=utf-8"
FILE_ID_HASHES = ("parquet", "delta")


def server(request: Request) -> SharingServer:
    return request.app.state.delta_sharing


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, credentials = header.partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else ""


def _ip(request: Request) -> str | None:
    return request.client.host if request.client else None


async def _recipient(request: Request) -> Recipient:
    return await blocking(server(request).authenticate, _token(request), _ip(request))


def _record(request: Request, recipient: Recipient, action: str, **kwargs: Any) -> None:
    server(request).record(recipient, action, client_ip=_ip(request),
                           user_agent=request.headers.get("user-agent"), **kwargs)


async def _table(request: Request) -> tuple[Recipient, SharedTable]:
    recipient = await _recipient(request)
    p = request.path_params
    t = await blocking(server(request).table, recipient, p["share"], p["schema"], p["table"])
    return recipient, t


def _answer(request: Request, answer: Answer, *, head: bool = False) -> Response:
    capabilities = f"responseformat={answer.fmt}"
    lines = answer.lines
    asked = protocol.capabilities(request.headers.get("delta-sharing-capabilities"))
    if asked.get("includeendstreamaction") == ["true"]:
        # Told in the response header, the client then requires the EndStreamAction as the last line.
        capabilities += ";includeendstreamaction=true"
        end: dict[str, Any] = {}
        if answer.url_expiration_ms is not None:
            end["minUrlExpirationTimestamp"] = answer.url_expiration_ms
        lines = [*lines, orjson.dumps({"endStreamAction": end}) + b"\n"]
    headers = {"Delta-Table-Version": str(answer.version), "delta-sharing-capabilities": capabilities}
    file_id_hash = request.headers.get("fileidhash")
    if file_id_hash is not None:
        headers["fileidhash"] = file_id_hash.strip().lower()
    return Response(b"" if head else b"".join(lines), media_type=NDJSON, headers=headers)


def _check_file_id_hash(request: Request) -> None:
    value = request.headers.get("fileidhash")
    if value is not None and value.strip().lower() not in FILE_ID_HASHES:
        raise bad_request(f"fileidhash must be one of {', '.join(FILE_ID_HASHES)}, not {value[:40]!r}")


# -- listings ----------------------------------------------------------------------------------------------------

async def list_shares(request: Request) -> Response:
    recipient = await _recipient(request)
    q = request.query_params
    body = await blocking(server(request).list_shares, recipient, q.get("pageToken"), q.get("maxResults"))
    await blocking(_record, request, recipient, "listShares")
    return JsonResponse(body)


async def get_share(request: Request) -> Response:
    recipient = await _recipient(request)
    body = await blocking(server(request).get_share, recipient, request.path_params["share"])
    await blocking(_record, request, recipient, "getShare", share=body["share"]["name"])
    return JsonResponse(body)


async def list_schemas(request: Request) -> Response:
    recipient = await _recipient(request)
    q = request.query_params
    share = request.path_params["share"]
    body = await blocking(server(request).list_schemas, recipient, share, q.get("pageToken"), q.get("maxResults"))
    await blocking(_record, request, recipient, "listSchemas", share=share)
    return JsonResponse(body)


async def list_tables(request: Request) -> Response:
    recipient = await _recipient(request)
    q = request.query_params
    share, schema = request.path_params["share"], request.path_params["schema"]
    body = await blocking(server(request).list_tables, recipient, share, schema, q.get("pageToken"),
                          q.get("maxResults"))
    await blocking(_record, request, recipient, "listTables", share=share)
    return JsonResponse(body)


async def list_all_tables(request: Request) -> Response:
    recipient = await _recipient(request)
    q = request.query_params
    share = request.path_params["share"]
    body = await blocking(server(request).list_tables, recipient, share, None, q.get("pageToken"),
                          q.get("maxResults"))
    await blocking(_record, request, recipient, "listAllTables", share=share)
    return JsonResponse(body)


# -- a table -----------------------------------------------------------------------------------------------------

async def table_version(request: Request) -> Response:
    recipient, t = await _table(request)
    version = await blocking(server(request).table_version, t, request.query_params.get("startingTimestamp"))
    await blocking(_record, request, recipient, "getTableVersion", t=t, version=version)
    return Response(b"", headers={"Delta-Table-Version": str(version)})


async def table_metadata(request: Request) -> Response:
    recipient, t = await _table(request)
    q = request.query_params
    version = protocol.parse_version(q.get("version"), "version")
    answer = await blocking(server(request).metadata, t, protocol.capabilities(
        request.headers.get("delta-sharing-capabilities")), version, q.get("timestamp"))
    await blocking(_record, request, recipient, "getTableMetadata", t=t, version=answer.version)
    return _answer(request, answer)


async def query_table(request: Request) -> Response:
    recipient, t = await _table(request)
    _check_file_id_hash(request)
    try:
        raw = await read_json(request, server(request).settings.max_body_bytes, required=False)
    except BodyError as exc:
        raise SharingError(exc.status, "INVALID_PARAMETER_VALUE", exc.message) from None
    body = protocol.query_body(raw)
    caps = protocol.capabilities(request.headers.get("delta-sharing-capabilities"))
    answer = await blocking(server(request).query, t, caps, body, recipient)
    await blocking(_record, request, recipient, "queryTable", t=t, version=answer.version,
                   files=len(answer.lines) - 2, details={k: v for k, v in (raw or {}).items()
                                                         if k in ("version", "timestamp", "startingVersion",
                                                                  "endingVersion", "limitHint")})
    return _answer(request, answer)


async def table_changes(request: Request) -> Response:
    recipient, t = await _table(request)
    _check_file_id_hash(request)
    caps = protocol.capabilities(request.headers.get("delta-sharing-capabilities"))
    params = {k: v for k, v in request.query_params.items()
              if k in ("startingVersion", "endingVersion", "startingTimestamp", "endingTimestamp",
                       "includeHistoricalMetadata", "includeHistoricalProtocol")}
    answer = await blocking(server(request).changes, t, caps, params, recipient)
    await blocking(_record, request, recipient, "queryTableChanges", t=t, version=answer.version,
                   files=len(answer.lines) - 2, details=params)
    return _answer(request, answer)


async def table_credentials(request: Request) -> Response:
    recipient, t = await _table(request)
    try:
        raw = await read_json(request, server(request).settings.max_body_bytes, required=False)
    except BodyError as exc:
        raise SharingError(exc.status, "INVALID_PARAMETER_VALUE", exc.message) from None
    body = await blocking(cloud_tokens.table_credentials, server(request).store,
                          request.app.state.iceberg.access.vendor, t, raw, recipient.name)
    await blocking(_record, request, recipient, "generateTemporaryTableCredential", t=t)
    return JsonResponse(body)


# -- signed files ------------------------------------------------------------------------------------------------

# GET, HEAD and Range requests by the signed token in the URL (no bearer token; the signature is the credential).
# As served, arco.api.app sends these paths to the same app before the middleware stack (see file_server).
signed_file = SignedFiles()
_local_path = local_path


routes = [
    Route("/shares", list_shares, methods=["GET"]),
    Route("/shares/{share}", get_share, methods=["GET"]),
    Route("/shares/{share}/schemas", list_schemas, methods=["GET"]),
    Route("/shares/{share}/all-tables", list_all_tables, methods=["GET"]),
    Route("/shares/{share}/schemas/{schema}/tables", list_tables, methods=["GET"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}", table_version, methods=["HEAD"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}/version", table_version, methods=["GET"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}/metadata", table_metadata, methods=["GET"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}/query", query_table, methods=["POST"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}/changes", table_changes, methods=["GET"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}/temporary-table-credentials", table_credentials,
          methods=["POST"]),
    Route("/files/{token}/{name}", signed_file, methods=["GET", "HEAD"]),
    Route("/files/{token}", signed_file, methods=["GET", "HEAD"]),
]
