"""Iceberg REST handlers for storage access: vended credentials and S3 remote signing (see arco.iceberg.access)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import orjson
from starlette.requests import Request
from starlette.responses import Response

from arco.api.requests import blocking, principal_of
from arco.api.responses import JsonResponse
from arco.catalog.locations import read_only_location
from arco.catalog.model import CatalogEntry, NamespacePath
from arco.catalog.storage_roles import location_role, table_role
from arco.iceberg.access import StorageAccess, TableAccess, TableRoute, delegation_modes
from arco.iceberg.http import NAMESPACE_SEPARATOR, allow, catalog_of, iceberg_errors, json_body, services, table_path
from arco.vending.model import Access


def owner_access(request: Request, catalog: CatalogEntry, namespace: NamespacePath,
                 name: str) -> Callable[[str], TableAccess]:
    """Storage access for a table the caller just made (and so owns): read-write."""
    modes = delegation_modes(request.headers.get("x-iceberg-access-delegation"))
    route = table_route(request, catalog, namespace, name)

    def access(location: str) -> TableAccess:
        def role() -> str | None:
            with services(request).store.read() as state:
                return location_role(state, location, catalog.metastore_id)

        return services(request).access.for_table(location, Access.READ_WRITE, principal_of(request).name, modes,
                                                   route, role)

    return access


def table_route(request: Request, catalog: CatalogEntry, namespace: NamespacePath, name: str) -> TableRoute:
    base = str(request.base_url).rstrip("/") + "/iceberg"
    encoded = quote(NAMESPACE_SEPARATOR.join(namespace), safe="")
    return TableRoute(base, f"v1/{quote(catalog.name, safe='')}/namespaces/{encoded}/tables/{quote(name, safe='')}")


def granted_access(request: Request, catalog: CatalogEntry, namespace: NamespacePath, name: str, location: str,
             modes: frozenset[str]) -> TableAccess:
    """Storage access at the caller's privilege: read-write with MODIFY, else read-only (SELECT was checked)."""
    if not StorageAccess.has_access_to_give(location, modes):
        return TableAccess()  # without working out the caller's privilege and the callback route
    return services(request).access.for_table(location, caller_access(request, catalog, namespace, name, location),
                                              principal_of(request).name, modes,
                                              table_route(request, catalog, namespace, name),
                                              lambda: registered_role(request, catalog, namespace, name, location))


def registered_role(request: Request, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                    location: str) -> str | None:
    """The role a table's vended credentials are minted with (:mod:`arco.catalog.storage_roles`): the external
    location's, for a table in one."""
    with services(request).store.read() as state:
        entry = state.table_or_none(catalog.id, namespace, name)
        return table_role(state, entry) if entry is not None else location_role(state, location,
                                                                                  catalog.metastore_id)


def caller_access(request: Request, catalog: CatalogEntry, namespace: NamespacePath, name: str,
                  location: str) -> Access:
    """Read-write storage access with MODIFY on the table, else read-only (SELECT, checked before); read-only too
    for a table at a ``location`` inside a read-only external location."""
    svc = services(request)
    if not svc.guard.may_write(principal_of(request), catalog, namespace, name):
        return Access.READ
    with svc.store.read() as state:
        writable = read_only_location(state, location, catalog.metastore_id) is None
    return Access.READ_WRITE if writable else Access.READ


def with_access(body: bytes, granted: TableAccess) -> bytes:
    """A cached LoadTableResult (which ends with an empty ``config``) with this caller's storage access in it."""
    extra = {"config": granted.config, **({"storage-credentials": granted.credentials} if granted.credentials
                                         else {})}
    return body[:body.rindex(b'"config":')] + orjson.dumps(extra)[1:]


@iceberg_errors
async def load_credentials(request: Request) -> Response:
    """Vended credentials for one table (and the refresh endpoint of long jobs): 501 if this storage cannot vend."""
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    svc = services(request)
    await allow(request, "table", catalog, namespace, name, "read")
    loaded = await blocking(svc.tables.load, catalog, namespace, name)

    def vend() -> TableAccess:
        location = loaded.metadata.location
        return svc.access.vended(location, caller_access(request, catalog, namespace, name, location),
                                 principal_of(request).name, table_route(request, catalog, namespace, name),
                                 registered_role(request, catalog, namespace, name, location))

    return JsonResponse({"storage-credentials": (await blocking(vend)).credentials})


@iceberg_errors
async def sign_request(request: Request) -> Response:
    """S3 remote signing for one table: reads with SELECT, writes with MODIFY, only inside the table's prefix."""
    catalog = await catalog_of(request)
    namespace, name = table_path(request)
    body = await json_body(request)
    svc = services(request)
    await allow(request, "table", catalog, namespace, name, "read")
    loaded = await blocking(svc.tables.load, catalog, namespace, name)

    def sign() -> dict[str, Any]:
        location = loaded.metadata.location
        write = caller_access(request, catalog, namespace, name, location) is Access.READ_WRITE
        return svc.access.sign(location, body, write, registered_role(request, catalog, namespace, name, location))

    # Iceberg Java caches a signature only when told it is private; each request is signed afresh.
    return JsonResponse(await blocking(sign), headers={"Cache-Control": "no-cache"})
