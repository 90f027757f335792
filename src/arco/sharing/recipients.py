"""Who a recipient is and what it may see (pure decisions over Tier 1 state, tested directly).

A recipient's bearer token is not an Arco principal: it is matched by hash against the TOKEN recipients' tokens
(the catalog keeps hashes only). A token past its ``expiration_time`` (set at creation, or by rotate-token, which
lets the old token live until the expiry it was given) is refused with 401; a caller outside the recipient's
IP access list gets 403; a share is visible only while it grants SELECT to the recipient, so revoking the grant
hides it from the next request on.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from arco.auth import decisions as can
from arco.auth.subjects import securable, subject_in
from arco.auth.tokens import hash_token
from arco.catalog.model import TableEntry
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.sharing.errors import forbidden, not_found, unauthenticated


@dataclass(frozen=True)
class Recipient:
    name: str
    metastore_id: str | None
    entry: SecurableEntry


def recipient_for_token(recipients: list[SecurableEntry], token: str | None, now_ms: int) -> Recipient:
    """The recipient whose live token this is; 401 for a missing, unknown or expired token."""
    if not token:
        raise unauthenticated("a bearer token is required: send 'Authorization: Bearer <token>' from your profile")
    wanted = hash_token(token)
    for entry in recipients:
        if entry.fields.get("authentication_type") != "TOKEN":
            continue
        for record in entry.fields.get("tokens", []):
            if record.get("token_hash") and record["token_hash"] == wanted:
                expiry = record.get("expiration_time")
                if expiry is not None and int(expiry) <= now_ms:
                    raise unauthenticated("the bearer token has expired; ask the provider for a new activation link")
                return Recipient(entry.name, entry.metastore_id, entry)
    raise unauthenticated("the bearer token is not valid")


def ip_allowed(ip_access_list: dict[str, Any] | None, client_ip: str | None) -> bool:
    """True when there is no list, or the caller's address is in one of its addresses or CIDR ranges."""
    allowed = (ip_access_list or {}).get("allowed_ip_addresses")
    if not allowed:
        return True
    if not client_ip:
        return False
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        return False
    for item in allowed:
        try:
            if address in ipaddress.ip_network(str(item), strict=False):
                return True
        except ValueError:
            continue
    return False


def check_ip(recipient: Recipient, client_ip: str | None) -> None:
    if not ip_allowed(recipient.entry.fields.get("ip_access_list"), client_ip):
        raise forbidden(f"requests from {client_ip} are outside recipient {recipient.name}'s IP access list")


def owner_may_read(state: CatalogState, share: SecurableEntry, table: TableEntry) -> bool:
    """Whether the share's owner may read the table now (USE on its catalog and schema and SELECT, or as an
    admin): a share gives recipients what its owner may read, and stops giving a table once the owner may not."""
    owner = subject_in(state, share.owner, share.metastore_id)
    catalog = state.catalogs[table.catalog_id]
    schema = state.namespace(table.catalog_id, table.namespace[:1])
    return can.can_read_table(owner, securable(state, "catalog", catalog), securable(state, "schema", schema),
                              securable(state, "table", table))


def holds_select(state: CatalogState, share: SecurableEntry, recipient: Recipient) -> bool:
    held = state.grants_on("share", share.id).get(recipient.name.casefold()) or []
    return "SELECT" in {str(p).upper() for p in held}


def visible_shares(state: CatalogState, recipient: Recipient) -> list[SecurableEntry]:
    """The shares of the recipient's metastore that grant it SELECT, by name."""
    return [s for s in state.securables_of("share", recipient.metastore_id) if holds_select(state, s, recipient)]


def visible_share(state: CatalogState, recipient: Recipient, name: str) -> SecurableEntry:
    """One share by (case-insensitive) name; 404 whether it is missing or not granted, so names do not leak."""
    for share in visible_shares(state, recipient):
        if share.name.casefold() == name.casefold():
            return share
    raise not_found(f"share {name!r} does not exist or is not shared with you")
