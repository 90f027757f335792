"""Personal access tokens over HTTP, as Databricks clients call them: ``/api/2.0/token/create|list|delete``.

A caller manages its own tokens; account admins may also delete anyone's. The token value is shown once.
"""

from __future__ import annotations

import time
from typing import Any

from arco.auth.identity import create_token, revoke_token
from arco.auth.principals import Principal
from arco.catalog.store import CatalogStore
from arco.unity.errors import UnityError, invalid

MAX_LIFETIME_S = 730 * 86400


def _info(token: Any) -> dict[str, Any]:
    return {"token_id": token.id, "comment": token.comment or "", "creation_time": token.created_at_ms,
            "expiry_time": token.expires_at_ms if token.expires_at_ms is not None else -1}


def _known(store: CatalogStore, caller: Principal) -> None:
    with store.read() as state:
        if caller.name.casefold() not in state.principals:
            raise UnityError(400, "INVALID_PARAMETER_VALUE", f"{caller.name} is not a user or service principal "
                                                             "of this warehouse; tokens are for those")


def create(store: CatalogStore, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
    lifetime = body.get("lifetime_seconds")
    if lifetime is not None and (not isinstance(lifetime, int) or isinstance(lifetime, bool)
                                 or not 0 < lifetime <= MAX_LIFETIME_S):
        raise invalid(f"lifetime_seconds must be an integer between 1 and {MAX_LIFETIME_S}")
    comment = body.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise invalid("comment must be a string")
    _known(store, caller)
    if caller.oauth:
        raise UnityError(403, "PERMISSION_DENIED", "a personal access token cannot be made with an OAuth access "
                                                   "token: it would outlive the token and its revocation; a metastore "
                                                   "admin makes one (arco token create)")
    if caller.credential_expires_at_ms is not None:  # never outlives the token that asked for it
        left_s = max(1, (caller.credential_expires_at_ms - int(time.time() * 1000)) // 1000)
        lifetime = left_s if lifetime is None else min(lifetime, left_s)
    # As in Databricks, a token made in a workspace is that workspace's.
    issued = create_token(store, caller.name, by=caller.name, lifetime_s=lifetime, comment=comment,
                          workspace_id=caller.workspace_id)
    return {"token_value": issued.token, "token_info": _info(issued.entry)}


def list_mine(store: CatalogStore, caller: Principal) -> dict[str, Any]:
    with store.read() as state:
        mine = [t for t in state.tokens.values()
                if t.principal.casefold() == caller.name.casefold() and not t.revoked]
    return {"token_infos": [_info(t) for t in sorted(mine, key=lambda t: t.created_at_ms)]}


def delete(store: CatalogStore, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
    token_id = body.get("token_id")
    if not isinstance(token_id, str) or not token_id:
        raise invalid("token_id is required")
    with store.read() as state:
        token = state.tokens.get(token_id)
        if token is None or (token.principal.casefold() != caller.name.casefold() and not caller.is_account_admin):
            raise UnityError(404, "RESOURCE_DOES_NOT_EXIST", f"token {token_id} does not exist")
    revoke_token(store, token_id, by=caller.name)
    return {}
