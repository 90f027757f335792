"""Users, groups, service principals and tokens: the operations, over the Tier 1 log (:mod:`arco.catalog.access`).

Tokens are random, shown once, and stored as SHA-256 hashes. A service principal has an OAuth2 client secret
(also stored hashed) that it exchanges at ``/iceberg/v1/oauth/tokens`` for a short-lived signed token that is not
stored at all (:mod:`arco.auth.oauth_tokens`).
"""

from __future__ import annotations

import secrets
import time
import uuid
from dataclasses import dataclass

from arco.auth import oauth_tokens
from arco.auth.oauth_tokens import SigningKeys
from arco.auth.principals import Principal
from arco.auth.tokens import hash_token
from arco.catalog.access import ACCOUNT_USERS, PrincipalEntry, TokenEntry
from arco.catalog.errors import InvalidRequestError
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore

TOKEN_PREFIX = "arco_pat_"
OAUTH_TOKEN_LIFETIME_S = oauth_tokens.LIFETIME_S


def _check_principal_name(kind: str, name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 255 or any(ord(c) < 32 for c in name):
        raise InvalidRequestError(f"{kind} name must be 1-255 printable characters")
    if kind == "user" and "@" not in name:
        raise InvalidRequestError("users are named by their email address")
    if name.casefold() == ACCOUNT_USERS:
        raise InvalidRequestError(f"'{ACCOUNT_USERS}' is the built-in group of every user")
    return name.strip()


def create_principal(store: CatalogStore, kind: str, name: str, *, by: str, members: list[str] | None = None,
                     account_admin: bool = False, display_name: str | None = None,
                     secret_hash: str | None = None) -> PrincipalEntry:
    name = _check_principal_name(kind, name)
    store.execute(lambda state: {"op": "create_principal", "kind": kind, "name": name, "id": str(uuid.uuid4()),
                                 "members": list(members or []), "account_admin": account_admin,
                                 "display_name": display_name, "secret_hash": secret_hash}, principal=by)
    with store.read() as state:
        return state.principal(name)


def update_members(store: CatalogStore, group: str, *, by: str, add: list[str] | None = None,
                   remove: list[str] | None = None) -> PrincipalEntry:
    store.execute(lambda state: {"op": "update_principal", "name": state.principal(group).name,
                                 "add_members": list(add or []), "remove_members": list(remove or [])},
                  principal=by)
    with store.read() as state:
        return state.principal(group)


@dataclass(frozen=True)
class IssuedToken:
    token: str  # shown once
    entry: TokenEntry


def create_token(store: CatalogStore, principal: str, *, by: str, lifetime_s: int | None = None,
                 comment: str | None = None, workspace_id: int | None = None) -> IssuedToken:
    """A new token for ``principal``; with ``workspace_id`` it works in that workspace only."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token_id = uuid.uuid4().hex
    expires = int((time.time() + lifetime_s) * 1000) if lifetime_s else None
    store.execute(lambda state: {"op": "create_token", "id": token_id, "token_hash": hash_token(raw),
                                 "owner": state.principal(principal).name, "comment": comment,
                                 "expires_at_ms": expires, "workspace_id": workspace_id}, principal=by)
    with store.read() as state:
        return IssuedToken(raw, state.tokens[token_id])


def revoke_token(store: CatalogStore, token_id: str, *, by: str) -> None:
    store.execute(lambda state: {"op": "revoke_token", "id": token_id}, principal=by)


def create_service_principal(store: CatalogStore, name: str, *, by: str) -> tuple[PrincipalEntry, str]:
    """A service principal and its OAuth2 client secret (shown once); ``name`` is its application (client) id."""
    secret = secrets.token_urlsafe(32)
    entry = create_principal(store, "service_principal", name, by=by, secret_hash=hash_token(secret))
    return entry, secret


def principal_for_token(state: CatalogState, raw_token: str, now_ms: int | None = None) -> Principal | None:
    """The principal a token stands for, if it is known, not revoked, not expired, and its principal active."""
    token_id = state.token_by_hash.get(hash_token(raw_token))
    if token_id is None:
        return None
    token = state.tokens[token_id]
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if token.revoked or (token.expires_at_ms is not None and token.expires_at_ms <= now_ms):
        return None
    entry = state.principals.get(token.principal.casefold())
    if entry is None or not entry.active:
        return None
    kind = "service_principal" if entry.kind == "service_principal" else "user"
    return Principal(name=entry.name, kind=kind, is_account_admin=entry.account_admin,  # type: ignore[arg-type]
                     token_workspace=token.workspace_id, workspace_id=token.workspace_id or 0,
                     credential_expires_at_ms=token.expires_at_ms)


def exchange_client_credentials(store: CatalogStore, keys: SigningKeys, client_id: str,
                                client_secret: str) -> str | None:
    """OAuth2 client credentials -> a short-lived stateless token (:mod:`arco.auth.oauth_tokens`: nothing is
    written per exchange); None if the id or secret is wrong."""
    with store.read() as state:
        entry = state.principals.get(client_id.casefold())
        valid = (entry is not None and entry.kind == "service_principal" and entry.active
                 and entry.secret_hash is not None
                 and secrets.compare_digest(entry.secret_hash, hash_token(client_secret)))
        if not valid:
            return None
        assert entry is not None
        return keys.issue(state, entry.name)
