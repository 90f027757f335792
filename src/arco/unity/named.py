"""Storage credentials and external locations (UC 2.0 sections 6.4 and 6.5), and ``listFiles``.

Both are named, metastore-level securables with the same authorization shape: created by metastore admins or
holders of CREATE_<TYPE> on the metastore, seen by admins, owners and anyone holding a privilege on them, changed
by their owner (or an admin changing only the owner), deleted by their owner. Secrets in credentials are kept
(the vending issue will need them) but never shown.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import metastore, securable, subject_of
from arco.catalog import locations
from arco.catalog.paging import page
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.storage import urls
from arco.unity import infos
from arco.unity.common import (
    changes_owner_only,
    comment_of,
    denied,
    new_name_in,
    owner_in,
    page_size,
    tenant_of,
    uc_name,
)
from arco.unity.errors import UnityError, invalid

CREDENTIAL_KINDS = {
    "aws_iam_role": ("role_arn",),
    "azure_service_principal": ("directory_id", "application_id", "client_secret"),
    "azure_managed_identity": ("access_connector_id",),
    "gcp_service_account_key": ("email", "private_key_id", "private_key"),
    "databricks_gcp_service_account": (),
}
SECRETS = {"client_secret", "private_key"}
URL_SCHEMES = {"s3", "s3a", "gs", "abfs", "abfss", "az", "wasbs", "file"}  # as warehouses take them


def _credential_fields(body: dict[str, Any], creating: bool, state: CatalogState, old: SecurableEntry | None,
                       caller: Principal) -> dict[str, Any]:
    given = [k for k in CREDENTIAL_KINDS if body.get(k) is not None]
    if creating and len(given) != 1:
        raise invalid(f"exactly one of {sorted(CREDENTIAL_KINDS)} is required")
    if len(given) > 1:
        raise invalid(f"at most one of {sorted(CREDENTIAL_KINDS)} may be given")
    fields: dict[str, Any] = {}
    for kind in given:
        details = body[kind]
        if not isinstance(details, dict):
            raise invalid(f"{kind} must be an object")
        missing = [f for f in CREDENTIAL_KINDS[kind] if not isinstance(details.get(f), str) or not details[f]]
        if missing:
            raise invalid(f"{kind} needs {', '.join(missing)}")
        fields = {"kind": kind, "details": {k: v for k, v in details.items() if isinstance(v, str)}}
    if body.get("read_only") is not None:
        fields["read_only"] = bool(body["read_only"])
    return fields


def _render_credential(entry: SecurableEntry, state: CatalogState) -> dict[str, Any]:
    kind = entry.fields.get("kind")
    shown = {k: v for k, v in entry.fields.get("details", {}).items() if k not in SECRETS}
    # purpose and full_name: the OSS 2.1 CredentialInfo view of the same object (``/credentials``).
    out: dict[str, Any] = {"read_only": entry.fields.get("read_only", False), "purpose": "STORAGE",
                           "full_name": entry.name}
    if kind == "aws_iam_role":
        # The external id a role's trust policy names: stable per credential, as Databricks hands it out.
        shown = {**shown, "external_id": entry.id}
    if kind:
        out[kind] = shown
    return out


def check_url(raw: Any) -> str:
    if not isinstance(raw, str) or not raw:
        raise invalid("url is required")
    try:
        parsed = urlparse(raw)
    except ValueError:  # an unbalanced '[' or ']' in the host
        parsed = None
    if parsed is None or parsed.scheme not in URL_SCHEMES or (parsed.scheme != "file" and not parsed.netloc):
        raise invalid(f"url must be a storage URL such as s3://bucket/path, gs://bucket/path, "
                      f"abfss://container@account.dfs.core.windows.net/path or file:///path; got {raw!r}")
    return raw.rstrip("/")


def within(child: str, parent: str) -> bool:
    """Whether storage URL ``child`` is ``parent`` or lies under it."""
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def _location_fields(body: dict[str, Any], creating: bool, state: CatalogState, old: SecurableEntry | None,
                     caller: Principal) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if creating or body.get("url") is not None:
        check_url(body.get("url"))
        # Overlap is about storage, which every metastore of the warehouse shares: checked across all of them.
        url = locations.check_external_location_url(state, body.get("url"), state.warehouse_url,
                                                    exclude_id=old.id if old is not None else None)
        for name, location in state.tables.external.values():
            if within(url, locations.canonical(location)) and url != locations.canonical(location):
                raise invalid(f"url {url} is inside the external table {name}'s location {location}")
        fields["url"] = url
    if creating or body.get("credential_name") is not None:
        credential = body.get("credential_name")
        if not isinstance(credential, str) or not credential:
            raise invalid("credential_name is required")
        found = state.securable("storage_credential", credential, tenant_of(state, caller).scope)
        unchanged = old is not None and old.fields.get("credential_id") == found.id
        if not unchanged and not can.can_use_credential_for_location(subject_of(state, caller),
                                                                     securable(state, "storage_credential", found)):
            raise denied(caller, f"use storage credential {found.name} for an external location (needs "
                                 "CREATE_EXTERNAL_LOCATION on it)")
        fields["credential_name"], fields["credential_id"] = found.name, found.id
    if body.get("read_only") is not None:
        fields["read_only"] = bool(body["read_only"])
    return fields


def _render_location(entry: SecurableEntry, state: CatalogState) -> dict[str, Any]:
    shown = {"url": entry.fields["url"], "credential_name": entry.fields["credential_name"],
             "read_only": entry.fields.get("read_only", False)}
    if entry.fields.get("credential_id"):
        shown["credential_id"] = entry.fields["credential_id"]
    return shown


def _credential_in_use(state: CatalogState, entry: SecurableEntry) -> str | None:
    users = [loc.name for loc in state.securables_of("external_location", entry.metastore_id)
             if loc.fields.get("credential_name", "").casefold() == entry.name.casefold()]
    return f"external location(s) {', '.join(users)} use it" if users else None


def _location_in_use(state: CatalogState, entry: SecurableEntry) -> str | None:
    url = locations.canonical(entry.fields["url"])
    tables = [name for name, location in state.tables.external.values()
              if within(locations.canonical(location), url)]
    volumes = [v.name.rsplit(".", 1)[-1] for v in state.securables_in_every_metastore("volume")
               if v.fields.get("volume_type") == "EXTERNAL" and v.fields.get("storage_location")
               and within(locations.canonical(v.fields["storage_location"]), url)]
    users = [f"external table(s) {', '.join(tables)}"] * bool(tables) + \
        [f"external volume(s) {', '.join(volumes)}"] * bool(volumes)
    return f"{' and '.join(users)} are inside it" if users else None


def _location_holds_managed_storage(state: CatalogState, entry: SecurableEntry) -> str | None:
    """Managed storage (a catalog's or schema's chosen storage root) inside the location: no force deletes it from
    under them, since their managed tables' files would be left with no location governing them."""
    url = locations.canonical(entry.fields["url"])
    managed = [claim.what for claim in locations.managed_root_claims(state) if claim.chosen and within(claim.url, url)]
    return f"{' and '.join(managed)} lies inside it" if managed else None


Fields = Callable[[dict[str, Any], bool, CatalogState, SecurableEntry | None, Principal], dict[str, Any]]


@dataclass(frozen=True)
class Kind:
    type: str
    word: str
    create_privilege: str
    fields: Fields  # the stored fields from a create (True) or update (False) body, validated
    render: Callable[[SecurableEntry, CatalogState], dict[str, Any]]  # what the info shows beyond the common
    in_use: Callable[[CatalogState, SecurableEntry], str | None] = lambda state, entry: None  # force skips it
    kept_by: Callable[[CatalogState, SecurableEntry], str | None] = lambda state, entry: None  # force does not
    seen_by_grantees: bool = True  # storage credentials and locations: yes; shares, recipients, providers: owners
    rename_needs_admin: bool = False


KINDS = {
    "storage_credential": Kind("storage_credential", "storage credential", "CREATE_STORAGE_CREDENTIAL",
                               _credential_fields, _render_credential, _credential_in_use),
    "external_location": Kind("external_location", "external location", "CREATE_EXTERNAL_LOCATION",
                              _location_fields, _render_location, _location_in_use,
                              kept_by=_location_holds_managed_storage),
}


KINDS_BY_TYPE: dict[str, Kind] = KINDS  # extended by arco.unity.sharing with shares, recipients, providers


class NamedSecurables:
    def __init__(self, store: CatalogStore) -> None:
        self.store = store

    def info(self, kind: Kind, entry: SecurableEntry, state: CatalogState) -> dict[str, Any]:
        info = {"name": entry.name, "comment": entry.comment, "owner": entry.owner, "id": entry.id,
                "metastore_id": entry.metastore_id or state.primary_metastore_id, "created_at": entry.created_at_ms,
                "created_by": entry.created_by, "updated_at": entry.updated_at_ms, "updated_by": entry.updated_by,
                **kind.render(entry, state)}
        return infos.drop_none(info)

    def _may_see(self, state: CatalogState, caller: Principal, entry: SecurableEntry) -> bool:
        who, target = subject_of(state, caller), securable(state, entry.type, entry)
        if can.admin(who) or can.owns(who, target):
            return True
        return KINDS_BY_TYPE[entry.type].seen_by_grantees and any(
            identity in target.grants for identity in who.identities())

    def create(self, kind: Kind, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        name = uc_name(kind.word, body.get("name"))
        entry_id = str(uuid.uuid4())

        def build(state: CatalogState) -> dict[str, Any]:
            who, tenant = subject_of(state, caller), tenant_of(state, caller)
            if not (can.admin(who) or can.holds(who, metastore(state, tenant), kind.create_privilege)):
                raise denied(caller, f"create a {kind.word} (needs {kind.create_privilege} on the metastore)")
            return {"op": "create_securable", "id": entry_id, "type": kind.type, "name": name, "owner": caller.name,
                    "comment": comment_of(body), "fields": kind.fields(body, True, state, None, caller),
                    "metastore_id": tenant.scope}

        self.store.execute(build, principal=caller.name)
        return self.get(kind, name, caller)

    def list(self, kind: Kind, max_results: Any, token: str | None,
             caller: Principal) -> tuple[list[dict[str, Any]], str | None]:
        with self.store.read() as state:
            visible = [e for e in state.securables_of(kind.type, tenant_of(state, caller).scope)
                       if self._may_see(state, caller, e)]
            chunk, next_token = page(visible, lambda e: e.name.casefold(), token, page_size(max_results),
                                     plain=str.casefold)
            return [self.info(kind, e, state) for e in chunk], next_token

    @staticmethod
    def entry(state: CatalogState, caller: Principal, securable_type: str, name: str) -> SecurableEntry:
        """A named securable of the caller's metastore."""
        return state.securable(securable_type, name, tenant_of(state, caller).scope)

    def get(self, kind: Kind, name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            entry = self.entry(state, caller, kind.type, name)
            if not self._may_see(state, caller, entry):
                raise denied(caller, f"see {kind.word} {entry.name}")
            return self.info(kind, entry, state)

    def update(self, kind: Kind, name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        new_name = new_name_in(body, name)

        def build(state: CatalogState) -> dict[str, Any]:
            entry = self.entry(state, caller, kind.type, name)
            who, target = subject_of(state, caller), securable(state, entry.type, entry)
            if not (who.account_admin or can.owns(who, target) or (can.admin(who) and changes_owner_only(body))):
                raise denied(caller, f"update {kind.word} {entry.name} (only its owner may)")
            if new_name and kind.rename_needs_admin and not (who.account_admin or (can.owns(who, target)
                                                                                   and can.admin(who))):
                raise denied(caller, f"rename {kind.word} {entry.name} (its owner, being a metastore admin, may)")
            op: dict[str, Any] = {"op": "update_securable", "type": kind.type, "name": entry.name,
                                  "metastore_id": entry.metastore_id,
                                  "fields": kind.fields(body, False, state, entry, caller)}
            if new_name:
                op["new_name"] = uc_name(kind.word, new_name)
            owner = owner_in(state, body)
            if owner is not None:
                op["owner"] = owner
            if "comment" in body:
                op["comment"] = comment_of(body)
            return op

        self.store.execute(build, principal=caller.name)
        return self.get(kind, uc_name(kind.word, new_name) if new_name else name, caller)

    def delete(self, kind: Kind, name: str, force: bool, caller: Principal) -> None:
        def build(state: CatalogState) -> dict[str, Any]:
            entry = self.entry(state, caller, kind.type, name)
            who = subject_of(state, caller)
            if not (who.account_admin or can.owns(who, securable(state, entry.type, entry))):
                raise denied(caller, f"delete {kind.word} {entry.name} (only its owner may)")
            kept = kind.kept_by(state, entry)
            if kept:
                raise invalid(f"{kind.word} {entry.name} cannot be deleted, even with force, while {kept}")
            reason = kind.in_use(state, entry)
            if reason and not force:
                raise invalid(f"{kind.word} {entry.name} is in use: {reason}; pass force=true to delete it anyway")
            return {"op": "drop_securable", "type": kind.type, "name": entry.name, "metastore_id": entry.metastore_id}

        self.store.execute(build, principal=caller.name)

    def list_files(self, url: Any, max_results: Any, caller: Principal) -> dict[str, Any]:
        """The files under ``url``, which must lie inside an external location (canonical form: no ``..``), for
        admins and READ_FILES holders on that location. On a local directory the listing stays inside the location
        once links are followed too."""
        check_url(url)
        url = locations.canonical(url, "url")
        with self.store.read() as state:
            who = subject_of(state, caller)
            by_root = {urls.normalize(loc.fields["url"]): loc
                       for loc in state.securables_of("external_location", tenant_of(state, caller).scope)}
            containing = {root: loc for root, loc in by_root.items() if urls.within(url, root)}
            allowed = any(can.admin(who) or can.holds(who, securable(state, loc.type, loc), "READ_FILES")
                          for loc in containing.values())
        if not allowed:
            raise denied(caller, f"list {url} (needs READ_FILES on an external location containing it)")
        parsed = urlparse(url)
        if parsed.scheme != "file":
            raise UnityError(501, "NOT_IMPLEMENTED", f"listing {parsed.scheme}:// is not configured on this server")
        real = os.path.realpath(parsed.path)
        if not any(urls.within(real, os.path.realpath(urlparse(root).path)) for root in containing):
            raise denied(caller, f"list {url} (a link there leads out of its external location)")
        limit = page_size(max_results)
        try:
            entries = sorted(os.scandir(real), key=lambda e: e.name)[:limit]
        except FileNotFoundError:
            raise UnityError(404, "RESOURCE_DOES_NOT_EXIST", f"{url} does not exist") from None
        except NotADirectoryError:
            raise invalid(f"{url} is not a directory") from None
        files = []
        for item in entries:
            stat = item.stat()
            files.append({"path": f"{url}/{item.name}", "name": item.name, "size": 0 if item.is_dir() else stat.st_size,
                          "mtime": int(stat.st_mtime * 1000), "is_dir": item.is_dir()})
        return {"files": files}
