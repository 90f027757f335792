"""The protocol's errors: ``{"errorCode", "message"}`` bodies with the status codes the client expects."""

from __future__ import annotations

from arco.api.errors import ApiError


class SharingError(ApiError):
    """Raised by the sharing service; ``arco.api.errors`` shapes it for ``/delta-sharing`` paths."""


def bad_request(message: str) -> SharingError:
    return SharingError(400, "INVALID_PARAMETER_VALUE", message)


def malformed(message: str) -> SharingError:
    """A body that is not JSON, or not the object the request takes: the reference server's MALFORMED_REQUEST."""
    return SharingError(400, "MALFORMED_REQUEST", message)


def unauthenticated(message: str) -> SharingError:
    return SharingError(401, "UNAUTHENTICATED", message, {"WWW-Authenticate": 'Bearer realm="delta-sharing"'})


def forbidden(message: str) -> SharingError:
    return SharingError(403, "PERMISSION_DENIED", message)


def not_found(message: str) -> SharingError:
    return SharingError(404, "RESOURCE_DOES_NOT_EXIST", message)
