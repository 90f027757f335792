"""Iceberg REST routes, mounted at ``/iceberg``. Thin: parse the request, call a service, shape the answer."""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from arco.api.responses import JsonResponse
from arco.iceberg.config import catalog_config


async def get_config(request: Request) -> JsonResponse:
    services = request.app.state.services
    return JsonResponse(catalog_config(services.settings, request.query_params.get("warehouse")))


routes = [Route("/v1/config", get_config, methods=["GET"])]
