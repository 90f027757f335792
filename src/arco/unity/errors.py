"""Unity Catalog errors: ``{"error_code", "message", "details"}`` with the status Databricks clients map to
exceptions."""

from __future__ import annotations

from arco.api.errors import ApiError
from arco.catalog import errors as ce
from arco.catalog.tenancy import MetastoreNotAssigned

_NOT_FOUND = {"catalog": "CATALOG_DOES_NOT_EXIST", "namespace": "SCHEMA_DOES_NOT_EXIST",
              "table": "TABLE_DOES_NOT_EXIST", "view": "TABLE_DOES_NOT_EXIST",
              "storage_credential": "STORAGE_CREDENTIAL_DOES_NOT_EXIST",
              "external_location": "EXTERNAL_LOCATION_DOES_NOT_EXIST", "principal": "PRINCIPAL_DOES_NOT_EXIST",
              "share": "SHARE_DOES_NOT_EXIST", "recipient": "RECIPIENT_DOES_NOT_EXIST",
              "provider": "PROVIDER_DOES_NOT_EXIST", "metastore": "METASTORE_DOES_NOT_EXIST"}
_EXISTS = {"catalog": "CATALOG_ALREADY_EXISTS", "namespace": "SCHEMA_ALREADY_EXISTS",
           "table": "TABLE_ALREADY_EXISTS", "view": "TABLE_ALREADY_EXISTS",
           "storage_credential": "STORAGE_CREDENTIAL_ALREADY_EXISTS",
           "external_location": "EXTERNAL_LOCATION_ALREADY_EXISTS", "share": "SHARE_ALREADY_EXISTS",
           "recipient": "RECIPIENT_ALREADY_EXISTS", "provider": "PROVIDER_ALREADY_EXISTS"}
_KIND_WORDS = {"namespace": "Schema", "catalog": "Catalog", "table": "Table", "view": "View",
               "storage_credential": "Storage credential", "external_location": "External location",
               "principal": "Principal", "share": "Share", "recipient": "Recipient", "provider": "Provider",
               "metastore": "Metastore"}


class UnityError(ApiError):
    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(status, error_code, message)


def invalid(message: str) -> UnityError:
    return UnityError(400, "INVALID_PARAMETER_VALUE", message)


def not_found(kind: str, name: str) -> UnityError:
    return UnityError(404, _NOT_FOUND.get(kind, "RESOURCE_DOES_NOT_EXIST"),
                      f"{_KIND_WORDS.get(kind, kind)} '{ce.shown(name)}' does not exist.")


def _full_name(exc: ce.NotFoundError | ce.AlreadyExistsError) -> str:
    """The name as Unity Catalog spells it: a schema's or table's with its catalog in front."""
    return f"{exc.catalog}.{exc.name}" if exc.catalog else exc.name


def from_catalog_error(exc: ce.CatalogError) -> UnityError:
    if isinstance(exc, MetastoreNotAssigned):
        return UnityError(404, "METASTORE_DOES_NOT_EXIST",
                          f"No metastore is assigned to workspace {exc.workspace_id}. An account admin assigns one "
                          f"with PUT /api/2.1/unity-catalog/workspaces/{exc.workspace_id}/metastore.")
    if isinstance(exc, ce.NotFoundError):
        return not_found(exc.kind, _full_name(exc))
    if isinstance(exc, ce.AlreadyExistsError):
        word = _KIND_WORDS.get(exc.kind, exc.kind.capitalize())
        return UnityError(409, _EXISTS.get(exc.kind, "RESOURCE_ALREADY_EXISTS"),
                          f"{word} '{ce.shown(_full_name(exc))}' already exists.")
    if isinstance(exc, ce.NotEmptyError):
        code = "SCHEMA_NOT_EMPTY" if exc.kind == "namespace" else "CATALOG_NOT_EMPTY"
        word = _KIND_WORDS.get(exc.kind, exc.kind.capitalize())  # a namespace is a schema here
        if exc.kind == "namespace" and exc.what == "namespaces":  # force does not drop them, nor can UC name them
            return UnityError(400, code, f"{word} '{ce.shown(exc.name)}' is not empty: it holds nested Iceberg "
                                         "namespaces, which Unity Catalog cannot name and force=true does not drop; "
                                         "drop them through Iceberg REST first.")
        return UnityError(400, code, f"{word} '{ce.shown(exc.name)}' is not empty: it still contains {exc.what}; "
                                     "pass force=true to delete it anyway.")
    if isinstance(exc, ce.ReadOnlyCatalogError):
        return UnityError(403, "PERMISSION_DENIED", str(exc))
    if isinstance(exc, ce.ConflictError):
        return UnityError(503, "TEMPORARILY_UNAVAILABLE", str(exc))
    return invalid(str(exc))
