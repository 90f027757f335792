"""Iceberg's ``pageSize`` parameter; the tokens themselves are :mod:`arco.catalog.paging`'s."""

from __future__ import annotations

from arco.catalog.paging import MAX_PAGE_SIZE, page
from arco.iceberg.errors import BadRequest

__all__ = ["page", "parse_page_size"]


def parse_page_size(raw: str | None) -> int | None:
    if raw is None or raw == "":
        return None
    try:
        size = int(raw)
    except ValueError:
        raise BadRequest(f"pageSize must be a positive integer, got {raw!r}") from None
    if size < 1:
        raise BadRequest(f"pageSize must be a positive integer, got {raw!r}")
    return min(size, MAX_PAGE_SIZE)
