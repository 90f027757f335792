"""Fast JSON responses: orjson bytes straight into a Starlette response."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

JSON_HEADERS = [(b"content-type", b"application/json")]


class JsonResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        if isinstance(content, bytes):
            return content
        return orjson.dumps(content)
