"""Delta Sharing securables in UC (sections 6.14-6.16): shares, recipients and providers.

Shares hold table objects (added by owners who hold SELECT on each table) and grant SELECT to recipients.
A TOKEN recipient gets an activation URL; the bearer token is made when the recipient activates it, so only its
hash is ever stored (the catalog log is immutable and must never hold a usable secret). Rotation ends the old
token no later than asked and issues a new activation URL.
"""

from __future__ import annotations

import ipaddress
import secrets
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import orjson

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import may_look_up_tables, securable, subject_of
from arco.auth.tokens import hash_token
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.sharing import partition_filter
from arco.sharing.recipients import owner_may_read
from arco.unity.common import denied, split_full_name, usable_catalog
from arco.unity.errors import UnityError, invalid
from arco.unity.named import KINDS_BY_TYPE, Kind, NamedSecurables

RECIPIENT_TOKEN_PREFIX = "arco_share_"


# -- shares ----------------------------------------------------------------------------------------------------

MAX_PROVIDER_ANSWER_BYTES = 1 << 20  # a page of share names


def _share_object(raw: Any, state: CatalogState, share: SecurableEntry, caller: Principal,
                  now_ms: int) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise invalid("every shared object needs a 'name' (<catalog>.<schema>.<table>)")
    kind = str(raw.get("data_object_type") or "TABLE").upper()
    if kind != "TABLE":
        raise invalid(f"data_object_type {kind!r} is not supported; only TABLE")
    catalog_name, schema_name, name = split_full_name(raw["name"], 3)
    # Names in a catalog, or a schema, the caller may not use are refused alike whether they exist or not.
    catalog = usable_catalog(state, caller, catalog_name)
    if not may_look_up_tables(state, caller, catalog, (schema_name,)):
        raise denied(caller, f"use schema {catalog.name}.{schema_name} (needs USE_SCHEMA)")
    table = state.table(catalog.id, (schema_name,), name)
    if not owner_may_read(state, share, table):
        raise UnityError(403, "PERMISSION_DENIED", f"the share's owner {share.owner} needs USE_CATALOG, USE_SCHEMA "
                                                   f"and SELECT on {raw['name']} to share it")
    shared_as = raw.get("shared_as") or f"{schema_name}.{name}"
    if not isinstance(shared_as, str) or len(shared_as.split(".")) != 2:
        raise invalid("shared_as must have the form <schema>.<table>")
    out = {"name": f"{catalog_name}.{schema_name}.{name}".lower(), "data_object_type": "TABLE",
           "shared_as": shared_as.lower(), "added_at": now_ms, "added_by": caller.name, "table_id": table.id}
    for optional in ("comment", "cdf_enabled", "start_version", "history_data_sharing_status"):
        if raw.get(optional) is not None:
            out[optional] = raw[optional]
    _check_history_fields(out)
    spec = raw.get("partitions") if raw.get("partitions") is not None else raw.get("partition_specification")
    if spec is not None:  # the Delta Sharing server serves only the files it admits (arco.sharing.partition_filter)
        try:
            out["partition_specification"] = partition_filter.parse(spec).spec()
        except partition_filter.InvalidPartitionFilter as exc:
            raise invalid(f"{raw['name']}: {exc}") from None
        out["partitions"] = out["partition_specification"]["partitions"]  # Databricks' name for the same list
    return out


def _updated_object(stored: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """A shared object with an UPDATE's fields over it; a partition filter given in either spelling replaces the
    stored one (kept in both)."""
    if target.get("partitions") is not None or target.get("partition_specification") is not None:
        stored = {k: v for k, v in stored.items() if k not in ("partitions", "partition_specification")}
    return {**stored, **target}


def _check_history_fields(obj: dict[str, Any]) -> None:
    """The fields the Delta Sharing server enforces (arco.sharing.history) must mean something."""
    status = obj.get("history_data_sharing_status")
    if status is not None:
        if str(status).upper() not in ("ENABLED", "DISABLED"):
            raise invalid("history_data_sharing_status must be ENABLED or DISABLED")
        obj["history_data_sharing_status"] = str(status).upper()
    if "cdf_enabled" in obj and not isinstance(obj["cdf_enabled"], bool):
        raise invalid("cdf_enabled must be a boolean")
    floor = obj.get("start_version")
    if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int) or floor < 0):
        raise invalid("start_version must be a non-negative integer")


def _share_fields(body: dict[str, Any], creating: bool, state: CatalogState, old: SecurableEntry | None,
                  caller: Principal) -> dict[str, Any]:
    if creating:
        return {"objects": []}  # objects are IGN on create: added by updateShare
    assert old is not None
    now_ms = int(time.time() * 1000)
    # Named as their tables are now (a renamed table is found under its new name); a dropped table's object goes.
    objects = [{**o, "name": current_name(state, o)} for o in live_objects(state, old.fields.get("objects", []))]
    if body.get("objects") is not None:  # 2.0: the list given replaces the share's objects
        if not isinstance(body["objects"], list) or not all(isinstance(o, dict) for o in body["objects"]):
            raise invalid("objects must be a list of objects")
        kept = {o["name"]: o for o in objects}
        objects = [kept.get(str(o.get("name", "")).lower()) or _share_object(o, state, old, caller, now_ms)
                   for o in body["objects"]]
    updates = body.get("updates")
    if updates is None:
        updates = []
    # Only null is absent: 0, "" or false where a list or an object belongs is a malformed request, not an empty one.
    if not isinstance(updates, list) or not all(
            isinstance(u, dict) and isinstance(_or_empty(u.get("data_object")), dict) for u in updates):
        raise invalid("updates must be a list of objects, each with a data_object object")
    for update in updates:  # the current API: ADD / REMOVE / UPDATE actions
        action = str(update.get("action", "")).upper()
        target = _or_empty(update.get("data_object"))
        name = str(target.get("name", "")).lower()
        if action == "ADD":
            if any(o["name"] == name for o in objects):
                raise UnityError(409, "RESOURCE_ALREADY_EXISTS", f"{name} is already in the share")
            added = _share_object(target, state, old, caller, now_ms)
            if any(o.get("table_id") == added["table_id"] for o in objects):
                raise UnityError(409, "RESOURCE_ALREADY_EXISTS", f"{name} is already in the share")
            objects.append(added)
        elif action == "REMOVE":
            objects = [o for o in objects if o["name"] != name]
        elif action == "UPDATE":
            objects = [(_share_object(_updated_object(o, target), state, old, caller, now_ms)
                        if o["name"] == name else o) for o in objects]
        else:
            raise invalid(f"unknown share update action {action!r}; ADD, REMOVE or UPDATE")
    names = [o["shared_as"] for o in objects]
    if len(set(names)) != len(names):
        raise invalid("shared_as names must be unique within a share")
    tables = [o["table_id"] for o in objects if o.get("table_id")]
    if len(set(tables)) != len(tables):
        raise invalid("a table is in a share once (under one shared_as name)")
    return {"objects": objects}


def _or_empty(value: Any) -> Any:
    return {} if value is None else value


def _render_share(entry: SecurableEntry, state: CatalogState) -> dict[str, Any]:
    """The share's objects as their tables are now: each under its table's current name (a share holds a table,
    not a name: renamed, it is still shared), with UC's status (PERMISSION_DENIED while the share's owner may not
    read it, so recipients get nothing of it); a dropped table's object is gone (the next update prunes it)."""
    shown = []
    for stored in live_objects(state, entry.fields.get("objects", [])):
        table = state.tables.get(stored["table_id"]) if stored.get("table_id") else None
        status = "ACTIVE" if table is None or owner_may_read(state, entry, table) else "PERMISSION_DENIED"
        shown.append({**{k: v for k, v in stored.items() if k != "table_id"}, "name": current_name(state, stored),
                      "status": status})
    return {"objects": shown}


def live_objects(state: CatalogState, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects whose table still exists (one added before tables were kept by id is kept as it is)."""
    return [o for o in objects if not o.get("table_id") or o["table_id"] in state.tables]


def current_name(state: CatalogState, stored: dict[str, Any]) -> str:
    """An object's table's full name now, lower-cased as shared names are; the name it was added under if its
    table is not known by id."""
    table = state.tables.get(stored["table_id"]) if stored.get("table_id") else None
    if table is None:
        return str(stored["name"])
    return ".".join((state.catalogs[table.catalog_id].name, *table.namespace, table.name)).lower()


# -- recipients ------------------------------------------------------------------------------------------------

def _ip_list(raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    addresses = raw.get("allowed_ip_addresses") if isinstance(raw, dict) else None
    if not isinstance(addresses, list) or len(addresses) > 100:
        raise invalid("ip_access_list.allowed_ip_addresses must be a list of at most 100 addresses or CIDR ranges")
    for address in addresses:
        try:
            ipaddress.ip_network(str(address), strict=False)
        except ValueError:
            raise invalid(f"{address!r} is not an IP address or CIDR range") from None
    return {"allowed_ip_addresses": [str(a) for a in addresses]}


def new_activation(lifetime_s: int | None = None) -> tuple[str, dict[str, Any]]:
    """A fresh activation id (shown in the URL) and the token record that waits for it (hash only); the token
    expires ``lifetime_s`` after its creation (None: never, Databricks' default), which the profile then says."""
    activation = secrets.token_urlsafe(24)
    now_ms = int(time.time() * 1000)
    expires = None if lifetime_s is None else now_ms + lifetime_s * 1000
    return activation, {"id": uuid.uuid4().hex, "activation_hash": hash_token(activation), "token_hash": None,
                        "expiration_time": expires, "created_at": now_ms, "updated_at": now_ms}


def _recipient_fields(body: dict[str, Any], creating: bool, state: CatalogState, old: SecurableEntry | None,
                      caller: Principal) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if creating:
        auth = str(body.get("authentication_type") or "").upper()
        if auth not in ("TOKEN", "DATABRICKS"):
            raise invalid("authentication_type is required: TOKEN or DATABRICKS")
        fields["authentication_type"] = auth
        if auth == "DATABRICKS":
            global_id = body.get("data_recipient_global_metastore_id")
            if not isinstance(global_id, str) or global_id.count(":") != 2:
                raise invalid("data_recipient_global_metastore_id (<cloud>:<region>:<uuid>) is required for "
                              "DATABRICKS recipients")
            fields["data_recipient_global_metastore_id"] = global_id
        else:
            fields["tokens"] = [body["__pending_token__"]]
    if body.get("ip_access_list") is not None:
        fields["ip_access_list"] = _ip_list(body["ip_access_list"])
    if body.get("properties_kvpairs") is not None:
        fields["properties_kvpairs"] = body["properties_kvpairs"]
    return fields


def _render_recipient(entry: SecurableEntry, state: CatalogState) -> dict[str, Any]:
    out: dict[str, Any] = {"authentication_type": entry.fields["authentication_type"],
                           "activated": any(t.get("token_hash") for t in entry.fields.get("tokens", []))}
    for key in ("ip_access_list", "data_recipient_global_metastore_id", "properties_kvpairs"):
        if entry.fields.get(key) is not None:
            out[key] = entry.fields[key]
    if entry.fields["authentication_type"] == "TOKEN":
        out["tokens"] = [{"id": t["id"], "expiration_time": t.get("expiration_time"), "created_at": t["created_at"],
                          "updated_at": t["updated_at"],
                          "activation_url": "" if t.get("token_hash") else t.get("activation_url", "")}
                         for t in entry.fields.get("tokens", [])]
    return out


# -- providers -------------------------------------------------------------------------------------------------

def _provider_fields(body: dict[str, Any], creating: bool, state: CatalogState, old: SecurableEntry | None,
                     caller: Principal) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if creating:
        auth = str(body.get("authentication_type") or "TOKEN").upper()
        if auth not in ("TOKEN", "DATABRICKS"):
            raise invalid("authentication_type must be TOKEN or DATABRICKS")
        fields["authentication_type"] = auth
    raw = body.get("recipient_profile_str")
    if raw is not None or (creating and fields.get("authentication_type") == "TOKEN"):
        try:
            profile = orjson.loads(raw) if isinstance(raw, str) else None
        except orjson.JSONDecodeError:
            profile = None
        if not isinstance(profile, dict) or not profile.get("endpoint") or not profile.get("bearerToken"):
            raise invalid("recipient_profile_str must be a Delta Sharing profile (JSON with endpoint and "
                          "bearerToken)")
        _check_endpoint(profile["endpoint"])
        fields["profile"] = {"endpoint": str(profile["endpoint"]), "bearer_token": str(profile["bearerToken"]),
                             "share_credentials_version": int(profile.get("shareCredentialsVersion", 1))}
    return fields


def _check_endpoint(raw: Any) -> None:
    """A provider's sharing server, which this server calls (listProviderShares): an http(s) URL naming a server
    and a path, nothing else (a query, a fragment or credentials in it would have the call go elsewhere)."""
    try:
        parts = urlsplit(raw) if isinstance(raw, str) else None
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query \
            or parts.fragment or "#" in raw or "?" in raw or parts.username or parts.password:
        raise invalid("the profile's endpoint must be an http(s) URL of a Delta Sharing server, with no query, "
                      "fragment or credentials")


def _render_provider(entry: SecurableEntry, state: CatalogState) -> dict[str, Any]:
    out: dict[str, Any] = {"authentication_type": entry.fields.get("authentication_type", "TOKEN")}
    profile = entry.fields.get("profile")
    if profile:  # the bearer token is a secret: never shown
        out["recipient_profile"] = {"endpoint": profile["endpoint"],
                                    "share_credentials_version": profile["share_credentials_version"]}
    return out


SHARING_KINDS = {
    "share": Kind("share", "share", "CREATE_SHARE", _share_fields, _render_share, seen_by_grantees=False,
                  rename_needs_admin=True),
    "recipient": Kind("recipient", "recipient", "CREATE_RECIPIENT", _recipient_fields, _render_recipient,
                      seen_by_grantees=False, rename_needs_admin=True),
    "provider": Kind("provider", "provider", "CREATE_PROVIDER", _provider_fields, _render_provider,
                     seen_by_grantees=False, rename_needs_admin=True),
}
KINDS_BY_TYPE.update(SHARING_KINDS)


class SharingService:
    """What shares, recipients and providers do beyond CRUD."""

    def __init__(self, store: CatalogStore, named: NamedSecurables, public_url: str,
                 token_lifetime_s: int | None = None) -> None:
        self.store = store
        self.named = named
        self.token_lifetime_s = token_lifetime_s  # every new recipient token's lifetime (serve's option)
        # The server's configured external URL: activation links and profile endpoints are built from it, never
        # from a request's Host header (which a caller chooses).
        self.public_url = public_url.rstrip("/")

    def activation_url(self, activation: str) -> str:
        return f"{self.public_url}/api/2.1/unity-catalog/public/data_sharing_activation/{activation}"

    def _with_activation_url(self, rendered: dict[str, Any], token_id: str, activation: str) -> dict[str, Any]:
        """The link is a secret stored only hashed, so it is shown once: in the answer that made it."""
        for token in rendered.get("tokens", []):
            if token.get("id") == token_id:
                token["activation_url"] = self.activation_url(activation)
        return rendered

    def create_recipient(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        activation, token = new_activation(self.token_lifetime_s)
        created = self.named.create(SHARING_KINDS["recipient"], {**body, "__pending_token__": token}, caller)
        return self._with_activation_url(created, token["id"], activation)

    def _owner_or_admin(self, state: CatalogState, caller: Principal, entry: SecurableEntry) -> bool:
        who = subject_of(state, caller)
        return can.admin(who) or can.owns(who, securable(state, entry.type, entry))

    def share_permissions(self, name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            share = self.named.entry(state, caller, "share", name)
            if not self._owner_or_admin(state, caller, share):
                raise denied(caller, f"read the permissions of share {share.name}")
            names = {r.name.casefold(): r.name for r in state.securables_of("recipient", share.metastore_id)}
            return {"privilege_assignments": [{"principal": names.get(r, r), "privileges": sorted(p)}
                                              for r, p in sorted(state.grants_on("share", share.id).items())]}

    def update_share_permissions(self, name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        changes = body.get("changes")
        if not isinstance(changes, list):
            raise invalid("'changes' must be a list")

        def build(state: CatalogState) -> dict[str, Any]:
            share = self.named.entry(state, caller, "share", name)
            if not self._owner_or_admin(state, caller, share):
                raise denied(caller, f"change the permissions of share {share.name}")
            checked = []
            for change in changes:
                if not isinstance(change, dict) or not isinstance(change.get("principal"), str) or not all(
                        isinstance(change.get(k) or [], list) and all(isinstance(p, str) for p in change.get(k) or [])
                        for k in ("add", "remove")):
                    raise invalid("every change needs a 'principal' (a recipient's name), and 'add' and 'remove' "
                                  "must be lists of privilege names")
                recipient = self.named.entry(state, caller, "recipient", change["principal"])
                adding = [str(p).upper() for p in change.get("add") or []]
                if any(p != "SELECT" for p in adding + [str(p).upper() for p in change.get("remove") or []]):
                    raise invalid("the only privilege on a share is SELECT")
                if adding and not (subject_of(state, caller).account_admin or
                                   can.owns(subject_of(state, caller), securable(state, recipient.type, recipient))):
                    raise denied(caller, f"grant to recipient {recipient.name} (only its owner may)")
                checked.append({"principal": recipient.name.casefold(), "add": adding,
                                "remove": [str(p).upper() for p in change.get("remove") or []]})
            return {"op": "update_grants", "securable_type": "share", "securable_id": share.id, "changes": checked,
                    "grantee_kind": "recipient", "metastore_id": share.metastore_id}

        self.store.execute(build, principal=caller.name)
        return self.share_permissions(name, caller)

    def recipient_share_permissions(self, name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            recipient = self.named.entry(state, caller, "recipient", name)
            if not self._owner_or_admin(state, caller, recipient):
                raise denied(caller, f"read the share permissions of recipient {recipient.name}")
            rows = []
            for share in state.securables_of("share", recipient.metastore_id):
                held = state.grants_on("share", share.id).get(recipient.name.casefold())
                if held:
                    rows.append({"share_name": share.name, "privilege_assignments": [
                        {"principal": recipient.name, "privileges": sorted(held)}]})
            return {"permissions_out": rows}

    def rotate_token(self, name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        expire_in = body.get("existing_token_expire_in_seconds")
        if not isinstance(expire_in, int) or isinstance(expire_in, bool) or expire_in < 0:
            raise invalid("existing_token_expire_in_seconds must be a non-negative integer")
        activation, token = new_activation(self.token_lifetime_s)

        def build(state: CatalogState) -> dict[str, Any]:
            recipient = self.named.entry(state, caller, "recipient", name)
            who = subject_of(state, caller)
            if not (who.account_admin or can.owns(who, securable(state, recipient.type, recipient))):
                raise denied(caller, f"rotate the token of recipient {recipient.name} (only its owner may)")
            if recipient.fields["authentication_type"] != "TOKEN":
                raise invalid("only TOKEN recipients have tokens")
            cutoff = int(time.time() * 1000) + expire_in * 1000
            tokens = []
            for old in recipient.fields.get("tokens", []):
                current = old.get("expiration_time")
                tokens.append({**old, "expiration_time": cutoff if current is None else min(current, cutoff)})
            return {"op": "update_securable", "type": "recipient", "name": recipient.name,
                    "metastore_id": recipient.metastore_id, "fields": {"tokens": [*tokens, token]}}

        self.store.execute(build, principal=caller.name)
        return self._with_activation_url(self.named.get(SHARING_KINDS["recipient"], name, caller), token["id"],
                                         activation)

    def activate(self, activation: str) -> dict[str, Any]:
        """The recipient's one-time download of its profile: the bearer token is made now and only hashed."""
        raw_token = RECIPIENT_TOKEN_PREFIX + secrets.token_urlsafe(32)
        found: dict[str, Any] = {}

        def build(state: CatalogState) -> dict[str, Any]:
            wanted = hash_token(activation)
            for recipient in state.securables_in_every_metastore("recipient"):
                for token in recipient.fields.get("tokens", []):
                    if token.get("activation_hash") == wanted:
                        if token.get("token_hash"):
                            raise UnityError(404, "RESOURCE_DOES_NOT_EXIST", "this activation link was used already")
                        expires = token.get("expiration_time")
                        if expires is not None and expires <= int(time.time() * 1000):
                            raise UnityError(404, "RESOURCE_DOES_NOT_EXIST", "this activation link's token has "
                                                                             "expired (a rotation replaced it)")
                        found["expiration_time"] = token.get("expiration_time")
                        tokens = [{**t, "token_hash": hash_token(raw_token), "updated_at": int(time.time() * 1000)}
                                  if t is token else t for t in recipient.fields["tokens"]]
                        return {"op": "update_securable", "type": "recipient", "name": recipient.name,
                                "metastore_id": recipient.metastore_id, "fields": {"tokens": tokens}}
            raise UnityError(404, "RESOURCE_DOES_NOT_EXIST", "unknown activation link")

        self.store.execute(build, principal="recipient-activation")
        profile = {"shareCredentialsVersion": 1, "bearerToken": raw_token,
                   "endpoint": f"{self.public_url}/delta-sharing/"}
        if found.get("expiration_time"):
            profile["expirationTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                      time.gmtime(found["expiration_time"] / 1000))
        return profile

    def provider_shares(self, name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            provider = self.named.entry(state, caller, "provider", name)
            if not self._owner_or_admin(state, caller, provider):
                raise denied(caller, f"list the shares of provider {provider.name}")
            profile = provider.fields.get("profile")
        if not profile:
            return {"shares": []}
        # One answer for every way this fails (unreachable, refused, an error status, not a sharing server), so
        # the call cannot be used to tell which hosts and ports answer.
        unanswered = UnityError(502, "BAD_GATEWAY", f"provider {name}'s sharing server did not answer as a Delta "
                                                    "Sharing server does")
        import httpx  # noqa: PLC0415 - a provider's shares are rarely listed: a server starts without the client

        try:
            _check_endpoint(profile["endpoint"])  # also for providers stored before endpoints were checked
            response = httpx.get(profile["endpoint"].rstrip("/") + "/shares", timeout=10, follow_redirects=False,
                                 headers={"Authorization": f"Bearer {profile['bearer_token']}"})
            items = response.json().get("items", []) if response.status_code == 200 and \
                len(response.content) <= MAX_PROVIDER_ANSWER_BYTES else None
        except (httpx.HTTPError, ValueError, AttributeError, UnityError):
            raise unanswered from None
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise unanswered
        return {"shares": [{"name": item.get("name")} for item in items]}
