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
from arco.sharing.errors import SharingError, bad_request, malformed
from arco.sharing.file_server import SignedFiles
from arco.sharing.recipients import Recipient
from arco.sharing.service import SharingServer
from arco.sharing.table_reads import CHANGE_QUERY_FIELDS, Answer, SharedTable

NDJSON = "application/x-ndjson; charset=utf-8"
JSON = "application/json; charset=utf-8"  # as the protocol gives its JSON answers (and the reference sends them)
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


def _answer(request: Request, answer: Answer, *, head: bool = False, streams: bool = True) -> Response:
    """``streams`` False: an answer of two lines by the protocol (the table's metadata), never an EndStreamAction."""
    capabilities = f"responseformat={answer.fmt}"
    lines = answer.lines
    asked = protocol.capabilities(request.headers.get("delta-sharing-capabilities"))
    asked_end = streams and asked.get("includeendstreamaction") == ["true"]
    if asked_end:
        # Told in the response header, the client then requires the EndStreamAction as the last line.
        capabilities += ";includeendstreamaction=true"
    if asked_end or answer.end_stream is not None:
        # Owed also to a paged or refreshable answer: its next page and refresh tokens travel in it.
        end: dict[str, Any] = dict(answer.end_stream or {})
        if answer.url_expiration_ms is not None:
            end["minUrlExpirationTimestamp"] = answer.url_expiration_ms
        lines = [*lines, orjson.dumps({"endStreamAction": end}) + b"\n"]
    return _ndjson(request, b"" if head else b"".join(lines), answer.version, capabilities)


def _ndjson(request: Request, body: bytes, version: int, capabilities: str) -> Response:
    headers = {"Delta-Table-Version": str(version), "delta-sharing-capabilities": capabilities}
    file_id_hash = request.headers.get("fileidhash")
    if file_id_hash is not None:
        headers["fileidhash"] = file_id_hash.strip().lower()
    return Response(body, media_type=NDJSON, headers=headers)


async def _body(request: Request) -> Any:
    try:
        return await read_json(request, server(request).settings.max_body_bytes, required=False)
    except BodyError as exc:
        if exc.status == 400:
            raise malformed(exc.message) from None
        raise SharingError(exc.status, "INVALID_PARAMETER_VALUE", exc.message) from None


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
    return JsonResponse(body, media_type=JSON)


async def get_share(request: Request) -> Response:
    recipient = await _recipient(request)
    body = await blocking(server(request).get_share, recipient, request.path_params["share"])
    await blocking(_record, request, recipient, "getShare", share=body["share"]["name"])
    return JsonResponse(body, media_type=JSON)


async def list_schemas(request: Request) -> Response:
    recipient = await _recipient(request)
    q = request.query_params
    share = request.path_params["share"]
    body = await blocking(server(request).list_schemas, recipient, share, q.get("pageToken"), q.get("maxResults"))
    await blocking(_record, request, recipient, "listSchemas", share=share)
    return JsonResponse(body, media_type=JSON)


async def list_tables(request: Request) -> Response:
    recipient = await _recipient(request)
    q = request.query_params
    share, schema = request.path_params["share"], request.path_params["schema"]
    body = await blocking(server(request).list_tables, recipient, share, schema, q.get("pageToken"),
                          q.get("maxResults"))
    await blocking(_record, request, recipient, "listTables", share=share)
    return JsonResponse(body, media_type=JSON)


async def list_all_tables(request: Request) -> Response:
    recipient = await _recipient(request)
    q = request.query_params
    share = request.path_params["share"]
    body = await blocking(server(request).list_tables, recipient, share, None, q.get("pageToken"),
                          q.get("maxResults"))
    await blocking(_record, request, recipient, "listAllTables", share=share)
    return JsonResponse(body, media_type=JSON)


# -- a table -----------------------------------------------------------------------------------------------------

async def table_version(request: Request) -> Response:
    recipient, t = await _table(request)
    version = await blocking(server(request).reads.table_version, t, request.query_params.get("startingTimestamp"))
    await blocking(_record, request, recipient, "getTableVersion", t=t, version=version)
    return Response(b"", headers={"Delta-Table-Version": str(version)})


async def table_metadata(request: Request) -> Response:
    recipient, t = await _table(request)
    q = request.query_params
    version = protocol.parse_version(q.get("version"), "version")
    answer = await blocking(server(request).metadata, t, protocol.capabilities(
        request.headers.get("delta-sharing-capabilities")), version, q.get("timestamp"))
    await blocking(_record, request, recipient, "getTableMetadata", t=t, version=answer.version)
    return _answer(request, answer, streams=False)


async def query_table(request: Request) -> Response:
    recipient, t = await _table(request)
    _check_file_id_hash(request)
    raw = await _body(request)
    body = protocol.query_body(raw)
    caps = protocol.capabilities(request.headers.get("delta-sharing-capabilities"))
    details = {k: v for k, v in (raw or {}).items() if k in ("version", "timestamp", "startingVersion",
                                                              "endingVersion", "limitHint")}
    if caps.get("asyncquery") == ["true"]:
        query_id, version, fmt = await blocking(server(request).submit_query, t, caps, body, raw or {}, recipient)
        await blocking(_record, request, recipient, "queryTable", t=t, version=version, files=0,
                       details={**details, "queryId": query_id})
        status = orjson.dumps({"queryStatus": {"queryId": query_id, "status": "pending"}}) + b"\n"
        return _ndjson(request, status, version, f"responseformat={fmt};asyncquery=true")
    answer = await blocking(server(request).reads.query, t, caps, body, recipient)
    await blocking(_record, request, recipient, "queryTable", t=t, version=answer.version,
                   files=len(answer.lines) - 2, details=details)
    return _answer(request, answer)


async def query_info(request: Request) -> Response:
    """Get Query Info: an asynchronous query's answer (or a page of it)."""
    recipient, t = await _table(request)
    _check_file_id_hash(request)
    raw = await _body(request)
    if raw is not None and not isinstance(raw, dict):
        raise malformed("the request body must be a JSON object")
    caps = protocol.capabilities(request.headers.get("delta-sharing-capabilities"))
    query_id = request.path_params["query_id"]
    answer = await blocking(server(request).query_info, t, caps, query_id, raw or {}, recipient)
    await blocking(_record, request, recipient, "getQueryInfo", t=t, version=answer.version,
                   files=len(answer.lines) - 2, details={"queryId": query_id})
    return _answer(request, answer)


async def table_changes(request: Request) -> Response:
    recipient, t = await _table(request)
    _check_file_id_hash(request)
    caps = protocol.capabilities(request.headers.get("delta-sharing-capabilities"))
    params = {k: v for k, v in request.query_params.items()
              if k in (*CHANGE_QUERY_FIELDS, "maxFiles", "pageToken")}
    answer = await blocking(server(request).reads.changes, t, caps, params, recipient)
    await blocking(_record, request, recipient, "queryTableChanges", t=t, version=answer.version,
                   files=len(answer.lines) - 2, details=params)
    return _answer(request, answer)


async def table_credentials(request: Request) -> Response:
    recipient, t = await _table(request)
    raw = await _body(request)
    body = await blocking(cloud_tokens.table_credentials, server(request).store, server(request).vendor, t, raw,
                          recipient.name)
    await blocking(_record, request, recipient, "generateTemporaryTableCredential", t=t)
    return JsonResponse(body, media_type=JSON)


# -- signed files ------------------------------------------------------------------------------------------------

# GET, HEAD and Range requests by the signed token in the URL (no bearer token; the signature is the credential).
# As served, arco.api.app sends these paths to the same app before the middleware stack (see file_server).
signed_file = SignedFiles()


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
    Route("/shares/{share}/schemas/{schema}/tables/{table}/queries/{query_id}", query_info, methods=["POST"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}/changes", table_changes, methods=["GET"]),
    Route("/shares/{share}/schemas/{schema}/tables/{table}/temporary-table-credentials", table_credentials,
          methods=["POST"]),
    Route("/files/{token}/{name}", signed_file, methods=["GET", "HEAD"]),
    Route("/files/{token}", signed_file, methods=["GET", "HEAD"]),
]
