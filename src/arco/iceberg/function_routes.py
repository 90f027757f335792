"""Iceberg REST function routes (listFunctions, loadFunction): Unity Catalog's functions, read-only.

An Iceberg namespace is a UC schema, so only top-level namespaces hold functions (a deeper namespace that exists
lists none). The metadata is built from the UC ``FunctionInfo`` by :mod:`arco.iceberg.functions`; a function
whose types Iceberg cannot express is neither listed nor loaded.

Authorization is UC's (:mod:`arco.unity.functions`), with the same decisions: USE_CATALOG and USE_SCHEMA to list,
which shows only the functions the caller may load; EXECUTE (or ownership, or the catalog's, or a metastore
admin) to load. Denied: 403 ForbiddenException.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arco.api.requests import blocking, principal_of
from arco.api.responses import JsonResponse
from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog.errors import NotFoundError, shown
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.schema_objects import objects_in_schema, schema_object
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.iceberg import errors
from arco.iceberg.functions import Unrepresentable, function_metadata, representable
from arco.iceberg.http import ENCODED_SLASH, catalog_of, existing_namespace, iceberg_errors, services
from arco.iceberg.paging import page, parse_page_size
from arco.unity.functions import function_info


class NoSuchFunction(errors.IcebergError):
    status, error_type = 404, "NoSuchFunctionException"


def _forbidden(principal: Principal, what: str) -> errors.Forbidden:
    return errors.Forbidden(f"Forbidden: {principal.name} may not {what}")


def _shown(namespace: NamespacePath, name: str | None = None) -> str:
    return shown(".".join((*namespace, name) if name is not None else namespace))


def _schema(state: CatalogState, catalog: CatalogEntry, namespace: NamespacePath) -> Any:
    """The namespace's entry (404 NoSuchNamespace if there is none); the catalog and schema as securables."""
    schema = state.namespace(catalog.id, namespace)
    entry = state.catalogs.get(catalog.id, catalog)
    return schema, securable(state, "catalog", entry), securable(state, "schema", schema)


def list_functions(store: Any, principal: Principal, catalog: CatalogEntry, namespace: NamespacePath,
                   token: str | None, size: int | None) -> tuple[list[str], str | None]:
    """One page of the names of the functions in a namespace that the caller may load."""
    with store.read() as state:
        schema, catalog_s, schema_s = _schema(state, catalog, namespace)
        who = subject_of(state, principal)
        if not can.can_list_in_schema(who, catalog_s, schema_s):
            raise _forbidden(principal, f"list functions in {_shown(namespace)} (needs USE_CATALOG and USE_SCHEMA)")
        if len(namespace) != 1:
            return [], None
        visible = [e for e in objects_in_schema(state, schema.id, "function")
                   if can.can_use_object(who, catalog_s, schema_s, securable(state, "function", e), "EXECUTE")
                   and representable(function_info(state, e))]
        chunk, next_token = page(visible, lambda e: e.fields["name"].casefold(), token, size)
        return [e.fields["name"] for e in chunk], next_token


def load_function(store: Any, principal: Principal, catalog: CatalogEntry, namespace: NamespacePath,
                  name: str) -> dict[str, Any]:
    """``LoadFunctionResult`` of one function (404 NoSuchFunction, 403 without EXECUTE), as UC's getFunction."""
    missing = NoSuchFunction(f"Function does not exist: {_shown(namespace, name)}")
    with store.read() as state:
        schema, catalog_s, schema_s = _schema(state, catalog, namespace)
        if len(namespace) != 1:
            raise missing
        try:
            entry: SecurableEntry = schema_object(state, "function", schema.id, name.lower(), catalog.metastore_id)
        except NotFoundError:
            raise missing from None
        if not can.can_use_object(subject_of(state, principal), catalog_s, schema_s,
                                  securable(state, "function", entry), "EXECUTE"):
            raise _forbidden(principal, f"load function {_shown(namespace, name)} "
                                        "(needs USE_CATALOG, USE_SCHEMA and EXECUTE)")
        info = function_info(state, entry)
    try:
        return {"metadata": function_metadata(info)}
    except Unrepresentable as exc:
        raise NoSuchFunction(f"Function {_shown(namespace, name)} exists in Unity Catalog but Iceberg cannot "
                             f"express it: {exc}") from None


@iceberg_errors
async def list_functions_route(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace = existing_namespace(request.path_params["namespace"])
    size = parse_page_size(request.query_params.get("pageSize"))
    token = request.query_params.get("pageToken") or None
    names, next_token = await blocking(list_functions, services(request).store, principal_of(request), catalog,
                                       namespace, token, size)
    body: dict[str, Any] = {"identifiers": [[*namespace, name] for name in names]}
    if next_token:
        body["next-page-token"] = next_token
    return JsonResponse(body)


@iceberg_errors
async def load_function_route(request: Request) -> Response:
    catalog = await catalog_of(request)
    namespace = existing_namespace(request.path_params["namespace"])
    name = request.path_params["function"].replace(ENCODED_SLASH, "/")
    return JsonResponse(await blocking(load_function, services(request).store, principal_of(request), catalog,
                                       namespace, name))


NS = "/v1/{prefix}/namespaces/{namespace}"

function_routes = [
    Route(NS + "/functions", list_functions_route, methods=["GET"]),
    Route(NS + "/functions/{function}", load_function_route, methods=["GET"]),
]
