"""Iceberg REST errors: each carries its HTTP status and the exception type name clients switch on."""

from __future__ import annotations


class IcebergError(Exception):
    status = 500
    error_type = "InternalServerError"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class BadRequest(IcebergError):
    status, error_type = 400, "BadRequestException"


class InvalidArgument(BadRequest):
    """A rule of Iceberg's metadata builders broken. The reference raises IllegalArgumentException there and its server
    answers that type name, which Java clients raise again as IllegalArgumentException (other 400s are
    BadRequestException, "Malformed request: ...")."""

    error_type = "IllegalArgumentException"


class NotAuthorized(IcebergError):
    status, error_type = 401, "NotAuthorizedException"


class Forbidden(IcebergError):
    status, error_type = 403, "ForbiddenException"


class NoSuchNamespace(IcebergError):
    status, error_type = 404, "NoSuchNamespaceException"


class NoSuchTable(IcebergError):
    status, error_type = 404, "NoSuchTableException"


class NoSuchView(IcebergError):
    status, error_type = 404, "NoSuchViewException"


class NoSuchWarehouse(IcebergError):
    status, error_type = 404, "NoSuchWarehouseException"


class AlreadyExists(IcebergError):
    status, error_type = 409, "AlreadyExistsException"


class NamespaceNotEmpty(IcebergError):
    status, error_type = 409, "NamespaceNotEmptyException"


class CommitFailed(IcebergError):
    status, error_type = 409, "CommitFailedException"


class PayloadTooLarge(IcebergError):
    status, error_type = 413, "BadRequestException"


class UnprocessableEntity(IcebergError):
    status, error_type = 422, "UnprocessableEntityException"


class UnsupportedOperation(IcebergError):
    status, error_type = 406, "UnsupportedOperationException"


class ServiceUnavailable(IcebergError):
    status, error_type = 503, "ServiceUnavailableException"


class CommitStateUnknown(IcebergError):
    status, error_type = 500, "CommitStateUnknownException"


def from_catalog_error(exc: Exception) -> IcebergError:
    """The Iceberg error for a catalog-level error (see :mod:`arco.catalog.errors`)."""
    from arco.catalog import errors as ce
    from arco.catalog.tenancy import MetastoreNotAssigned

    if isinstance(exc, ce.NamespaceNotFound):
        return NoSuchNamespace(f"Namespace does not exist: {ce.shown(exc.name)}")
    if isinstance(exc, ce.TableNotFound):
        return NoSuchTable(f"Table does not exist: {ce.shown(exc.name)}")
    if isinstance(exc, ce.ViewNotFound):
        return NoSuchView(f"View does not exist: {ce.shown(exc.name)}")
    if isinstance(exc, ce.CatalogNotFound):
        return NoSuchWarehouse(f"Catalog (warehouse) does not exist: {ce.shown(exc.name)}")
    if isinstance(exc, MetastoreNotAssigned):
        return NoSuchWarehouse(f"No metastore is assigned to workspace {exc.workspace_id}, so it has no catalogs; "
                               "an account admin assigns one with PUT /api/2.1/unity-catalog/workspaces/"
                               f"{exc.workspace_id}/metastore")
    if isinstance(exc, ce.AlreadyExistsError):
        return AlreadyExists(f"{exc.kind.capitalize()} already exists: {ce.shown(exc.name)}")
    if isinstance(exc, ce.NotEmptyError):
        return NamespaceNotEmpty(str(exc))
    if isinstance(exc, ce.InvalidRequestError):
        return BadRequest(str(exc))
    if isinstance(exc, ce.ReadOnlyCatalogError):
        return Forbidden(f"Forbidden: {exc}")
    if isinstance(exc, ce.ConflictError):
        return ServiceUnavailable(str(exc), headers={"Retry-After": "1"})
    return IcebergError(str(exc))
