"""Which paths the web UI's pages answer. Kept free of imports: :mod:`arco.api.auth` reads it to let these pages
through without a bearer token, because they authenticate the session cookie themselves (:mod:`arco.ui.session`)
and answer the sign-in page without one. The UI's JSON API (``/ui/api/...``) is not here: the bearer-token
middleware guards it like every other API."""

from __future__ import annotations

PAGE_PATHS = frozenset({"/", "/runs", "/shares", "/ui/signin", "/ui/signout", "/favicon.ico"})
PAGE_PREFIXES = ("/catalogs/", "/tables/", "/ui/static/")
API_PREFIX = "/ui/api"
