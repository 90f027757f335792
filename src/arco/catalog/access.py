"""Who exists and who may do what, as Tier 1 facts: principals, personal access tokens, and grants.

They live in the same operation log as catalogs and tables, so every server sees a new token, a revocation or a
grant as soon as it sees the next catalog change, and two administrators granting on one securable at once both
land (each grant is a delta applied in log order: no lost update).

    principals  users (by email), groups (with members: users, service principals or other groups), service
                principals (by application id); the group ``account users`` holds every user implicitly
    tokens      personal access tokens, stored as SHA-256 hashes, with an expiry and a revoked flag
    grants      (securable type, securable id) -> principal -> privileges
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from arco.auth.principals import PIPELINE
from arco.catalog.errors import AlreadyExistsError, InvalidRequestError, NotFoundError

PrincipalType = Literal["user", "group", "service_principal"]
ACCOUNT_USERS = "account users"


@dataclass
class PrincipalEntry:
    name: str  # email for users, group name, application id for service principals
    kind: PrincipalType
    id: str
    display_name: str | None = None
    members: list[str] = field(default_factory=list)  # groups only: names of member principals
    active: bool = True
    account_admin: bool = False
    secret_hash: str | None = None  # service principals: OAuth2 client secret (SHA-256)
    created_at_ms: int = 0


@dataclass
class TokenEntry:
    id: str
    token_hash: str
    principal: str
    comment: str | None = None
    created_at_ms: int = 0
    expires_at_ms: int | None = None
    revoked: bool = False
    workspace_id: int | None = None  # the one workspace the token works in; None: any


def principal_key(name: str) -> str:
    return name.casefold()


class AccessState:
    """The access part of :class:`arco.catalog.state.CatalogState` (mixed in)."""

    principals: dict[str, PrincipalEntry]
    tokens: dict[str, TokenEntry]
    token_by_hash: dict[str, str]
    grants: dict[tuple[str, str], dict[str, list[str]]]
    # Stateless OAuth tokens (arco.auth.oauth_tokens): the current signing key once rotated, and per principal the
    # time before which its tokens are void. Written on rotation and revocation only, never per token.
    oauth_key_id: str | None
    oauth_not_before: dict[str, int]

    def _init_access(self) -> None:
        self.principals = {}
        self.tokens = {}
        self.token_by_hash = {}
        self.grants = {}
        self.oauth_key_id = None
        self.oauth_not_before = {}

    def principal(self, name: str) -> PrincipalEntry:
        found = self.principals.get(principal_key(name))
        if found is None:
            raise NotFoundError("principal", name)
        return found

    def groups_of(self, name: str) -> frozenset[str]:
        """Every group ``name`` belongs to, directly or through nested groups, plus ``account users``."""
        found: set[str] = {ACCOUNT_USERS}
        frontier = {principal_key(name)}
        while frontier:
            current = frontier.pop()
            for group in self.principals.values():
                if group.kind == "group" and current in {principal_key(m) for m in group.members}:
                    key = principal_key(group.name)
                    if key not in found:
                        found.add(key)
                        frontier.add(key)
        return frozenset(found)

    def grants_on(self, securable_type: str, securable_id: str) -> dict[str, list[str]]:
        return self.grants.get((securable_type, securable_id), {})

    def access_snapshot(self) -> dict[str, Any]:
        return {
            "principals": [asdict(p) for p in self.principals.values()],
            "tokens": [asdict(t) for t in self.tokens.values()],
            "grants": [{"type": t, "id": i, "principals": p} for (t, i), p in self.grants.items()],
            "oauth": {"key_id": self.oauth_key_id, "not_before": dict(self.oauth_not_before)},
        }

    def load_access(self, snapshot: dict[str, Any]) -> None:
        for raw in snapshot.get("principals", []):
            entry = PrincipalEntry(**raw)
            self.principals[principal_key(entry.name)] = entry
        for raw in snapshot.get("tokens", []):
            token = TokenEntry(**raw)
            self.tokens[token.id] = token
            self.token_by_hash[token.token_hash] = token.id
        for raw in snapshot.get("grants", []):
            self.grants[(raw["type"], raw["id"])] = {k: list(v) for k, v in raw["principals"].items()}
        oauth = snapshot.get("oauth") or {}
        self.oauth_key_id = oauth.get("key_id")
        self.oauth_not_before = {k: int(v) for k, v in (oauth.get("not_before") or {}).items()}


# -- the operations (check, apply) -----------------------------------------------------------------------------

def _check_create_principal(state: Any, op: dict[str, Any]) -> None:
    if principal_key(op["name"]) in state.principals or principal_key(op["name"]) == ACCOUNT_USERS:
        raise AlreadyExistsError(op["kind"].replace("_", " "), op["name"])
    if principal_key(op["name"]) == principal_key(PIPELINE.name):
        # Reserved: Tier 1 knows a change's author by name, and this name alone may write the system catalog.
        raise AlreadyExistsError(op["kind"].replace("_", " "), op["name"])
    for member in op.get("members", []):
        state.principal(member)


def _apply_create_principal(state: Any, op: dict[str, Any]) -> None:
    state.principals[principal_key(op["name"])] = PrincipalEntry(
        name=op["name"], kind=op["kind"], id=op["id"], display_name=op.get("display_name"),
        members=list(op.get("members", [])), account_admin=bool(op.get("account_admin")),
        secret_hash=op.get("secret_hash"), created_at_ms=op["at_ms"])


def _check_update_principal(state: Any, op: dict[str, Any]) -> None:
    entry = state.principal(op["name"])
    if (op.get("add_members") or op.get("remove_members")) and entry.kind != "group":
        raise InvalidRequestError(f"{entry.name} is not a group")
    for member in op.get("add_members", []):
        state.principal(member)
        # A cycle would appear if the new member already contains this group (is one of its ancestors).
        if principal_key(member) == principal_key(entry.name) or principal_key(member) in state.groups_of(entry.name):
            raise InvalidRequestError(f"adding {member} to {entry.name} would make a cycle of groups")


def _apply_update_principal(state: Any, op: dict[str, Any]) -> None:
    entry = state.principal(op["name"])
    removed = {principal_key(m) for m in op.get("remove_members", [])}
    members = [m for m in entry.members if principal_key(m) not in removed]
    for member in op.get("add_members", []):
        if principal_key(member) not in {principal_key(m) for m in members}:
            members.append(member)
    entry.members = members
    if "active" in op:
        entry.active = bool(op["active"])
    if "secret_hash" in op:
        entry.secret_hash = op["secret_hash"]
        # A replaced client secret ends the tokens exchanged with the old one.
        state.oauth_not_before[principal_key(entry.name)] = op["at_ms"]


def token_owner(op: dict[str, Any]) -> str:
    """Whom a ``create_token`` operation makes a token for: ``owner``. Entries logged before ``owner`` existed
    named the owner in ``principal``, the field that otherwise names who made the change."""
    return op["owner"] if "owner" in op else op["principal"]


def _check_create_token(state: Any, op: dict[str, Any]) -> None:
    state.principal(token_owner(op))
    if op["token_hash"] in state.token_by_hash:
        raise AlreadyExistsError("token", op["id"])


def _apply_create_token(state: Any, op: dict[str, Any]) -> None:
    token = TokenEntry(id=op["id"], token_hash=op["token_hash"], principal=token_owner(op),
                       comment=op.get("comment"), created_at_ms=op["at_ms"], expires_at_ms=op.get("expires_at_ms"),
                       workspace_id=op.get("workspace_id"))
    state.tokens[token.id] = token
    state.token_by_hash[token.token_hash] = token.id


def _check_revoke_token(state: Any, op: dict[str, Any]) -> None:
    if op["id"] not in state.tokens:
        raise NotFoundError("token", op["id"])


def _apply_revoke_token(state: Any, op: dict[str, Any]) -> None:
    state.tokens[op["id"]].revoked = True


def _check_revoke_oauth_tokens(state: Any, op: dict[str, Any]) -> None:
    state.principal(op["subject"])  # whose tokens end; ``principal`` names who ended them, as on every operation


def _apply_revoke_oauth_tokens(state: Any, op: dict[str, Any]) -> None:
    state.oauth_not_before[principal_key(op["subject"])] = op["at_ms"]


def _check_rotate_oauth_key(state: Any, op: dict[str, Any]) -> None:
    if not isinstance(op.get("key_id"), str) or not op["key_id"]:
        raise InvalidRequestError("a signing key id is required")


def _apply_rotate_oauth_key(state: Any, op: dict[str, Any]) -> None:
    state.oauth_key_id = op["key_id"]


def _check_update_grants(state: Any, op: dict[str, Any]) -> None:
    if op.get("grantee_kind") == "recipient":  # share grants go to Delta Sharing recipients, not principals
        for change in op["changes"]:
            state.securable("recipient", change["principal"], op.get("metastore_id"))
        return
    for change in op["changes"]:
        if principal_key(change["principal"]) != ACCOUNT_USERS:
            state.principal(change["principal"])


def _apply_update_grants(state: Any, op: dict[str, Any]) -> None:
    key = (op["securable_type"], op["securable_id"])
    current = {} if op.get("replace") else {k: list(v) for k, v in state.grants.get(key, {}).items()}
    kind = op["securable_type"]
    for change in op["changes"]:
        who = principal_key(change["principal"])
        removed = {meaning(kind, p) for p in change.get("remove", [])}
        added = {meaning(kind, p): p for p in change.get("add", [])}
        # One privilege per meaning: a new spelling of a held privilege replaces the old one (a client reads back
        # what it wrote last), and removing any spelling removes the privilege.
        held = [p for p in current.get(who, []) if meaning(kind, p) not in removed and meaning(kind, p) not in added]
        held += list(added.values())
        if held:
            current[who] = held
        else:
            current.pop(who, None)
    if current:
        state.grants[key] = current
    else:
        state.grants.pop(key, None)


# The 2.0 names of privileges whose current name depends on the securable they are granted on.
_MEANINGS = {
    "metastore": {"CREATE": "CREATE_CATALOG"},
    "catalog": {"USAGE": "USE_CATALOG", "CREATE": "CREATE_SCHEMA"},
    "schema": {"USAGE": "USE_SCHEMA", "CREATE": "CREATE_TABLE"},
    "external_location": {"CREATE_TABLE": "CREATE_EXTERNAL_TABLE"},
    "storage_credential": {"CREATE_TABLE": "CREATE_EXTERNAL_TABLE"},
}


def meaning(securable_type: str, privilege: str) -> str:
    """One privilege however it is spelled: ``USE CATALOG``, ``use_catalog`` and (on a catalog) ``USAGE`` are
    ``USE_CATALOG``."""
    spelled = privilege.strip().upper().replace(" ", "_")
    return _MEANINGS.get(securable_type, {}).get(spelled, spelled)


ACCESS_RULES = {
    "create_principal": (_check_create_principal, _apply_create_principal),
    "update_principal": (_check_update_principal, _apply_update_principal),
    "create_token": (_check_create_token, _apply_create_token),
    "revoke_token": (_check_revoke_token, _apply_revoke_token),
    "revoke_oauth_tokens": (_check_revoke_oauth_tokens, _apply_revoke_oauth_tokens),
    "rotate_oauth_key": (_check_rotate_oauth_key, _apply_rotate_oauth_key),
    "update_grants": (_check_update_grants, _apply_update_grants),
}
