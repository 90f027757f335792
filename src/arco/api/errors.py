"""Error bodies in each API's own shape.

Iceberg REST: ``{"error": {"message", "type", "code"}}``. Unity Catalog: ``{"error_code", "message", "details"}``.
Delta Sharing: ``{"errorCode", "message"}``.
"""

from __future__ import annotations

import orjson

from arco.api.responses import JSON_HEADERS


class ApiError(Exception):
    """An error a handler raises to answer with a given status and message, shaped by the surface it is on."""

    def __init__(self, status: int, error_type: str, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.headers = headers or {}


UC_CODES = {
    400: "INVALID_PARAMETER_VALUE",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "ALREADY_EXISTS",
    413: "REQUEST_LIMIT_EXCEEDED",
    429: "REQUEST_LIMIT_EXCEEDED",
    500: "INTERNAL_ERROR",
    501: "NOT_IMPLEMENTED",
    503: "TEMPORARILY_UNAVAILABLE",
}


ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
NO_SUCH_ENDPOINT = "NoSuchEndpointException"  # the error type of a request no route matches


def surface_of(path: str) -> str:
    if path.startswith("/api/"):
        return "unity"
    if path.startswith("/delta-sharing"):
        return "sharing"
    return "iceberg"


def _uc_code(status: int, error_type: str) -> str:
    """The Databricks-style code: the error's own when it has one (upper case), else the status's."""
    if error_type.isupper():
        return error_type
    return UC_CODES.get(status, "BAD_REQUEST" if status < 500 else "INTERNAL_ERROR")


def error_body(surface: str, status: int, error_type: str, message: str) -> bytes:
    if surface == "unity":
        # A path no route matches: Databricks' code for an API it does not serve, so that a client can tell it
        # from a missing table or schema (NOT_FOUND, *_DOES_NOT_EXIST).
        code = "ENDPOINT_NOT_FOUND" if error_type == NO_SUCH_ENDPOINT else _uc_code(status, error_type)
        # The reference server's envelope: the code again as a google.rpc.ErrorInfo reason, which its clients and
        # the Databricks SDK read from ``details``.
        return orjson.dumps({"error_code": code, "message": message,
                             "details": [{"@type": ERROR_INFO, "reason": code, "domain": "unity-catalog"}]})
    if surface == "sharing":
        # A path no route matches is a resource that does not exist, in the code Delta Sharing clients know.
        code = "RESOURCE_DOES_NOT_EXIST" if status == 404 and not error_type.isupper() else _uc_code(
            status, error_type)
        return orjson.dumps({"errorCode": code, "message": message})
    return orjson.dumps({"error": {"message": message, "type": error_type, "code": status}})


def error_headers(extra: dict[str, str] | None = None) -> list[tuple[bytes, bytes]]:
    headers = list(JSON_HEADERS)
    for name, value in (extra or {}).items():
        headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    return headers
