"""Metastores (UC 2.0 sections 6.1-6.3): the tenants of a warehouse, their settings, and workspace assignments.

The model is :mod:`arco.catalog.tenancy`. Who may do what (the spec contradicts itself between sections 2.1 and
6.1; this is the reading that keeps a tenant's admins inside their tenant):

    create a metastore                 account admins
    list                               account admins see all; a metastore admin sees the ones it administers
    get, update (owner included)       account admins, and the admins of that metastore
    delete                             the same; the primary metastore cannot be deleted; a metastore that still
                                       holds catalogs or securables only with force=true
    assign (PUT), unassign (DELETE)    account admins
    update an assignment (PATCH)       account admins; without a new metastore_id also the admins of the
                                       workspace's metastore (Arco's workspace admins)
    summary, current assignment        anyone, for the workspace the request works in
"""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth.principals import Principal
from arco.auth.subjects import METASTORE_OWNER, admins_metastore
from arco.catalog.errors import NotFoundError
from arco.catalog.securables import securable_key
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.catalog.tenancy import Tenant
from arco.unity.common import denied, owner_in, uc_name
from arco.unity.errors import UnityError, invalid
from arco.unity.named import within

SETTINGS = ("delta_sharing_scope", "delta_sharing_recipient_token_lifetime_in_seconds",
            "delta_sharing_organization_name", "storage_root_credential_id", "default_data_access_config_id")
SUMMARY_FIELDS = ("metastore_id", "name", "owner", "storage_root", "cloud", "region", "global_metastore_id",
                  "delta_sharing_scope")


def _no_such_metastore(metastore_id: str) -> UnityError:
    return UnityError(404, "METASTORE_DOES_NOT_EXIST", f"Metastore '{metastore_id}' does not exist.")


def _settings(body: dict[str, Any]) -> dict[str, Any]:
    scope = body.get("delta_sharing_scope")
    if scope is not None and scope not in ("INTERNAL", "INTERNAL_AND_EXTERNAL"):
        raise invalid("delta_sharing_scope must be INTERNAL or INTERNAL_AND_EXTERNAL")
    if scope == "INTERNAL_AND_EXTERNAL" and body.get("delta_sharing_recipient_token_lifetime_in_seconds") is None:
        raise invalid("delta_sharing_recipient_token_lifetime_in_seconds is required for INTERNAL_AND_EXTERNAL")
    lifetime = body.get("delta_sharing_recipient_token_lifetime_in_seconds")
    if lifetime is not None and (not isinstance(lifetime, int) or isinstance(lifetime, bool) or lifetime < 0):
        raise invalid("delta_sharing_recipient_token_lifetime_in_seconds must be a non-negative integer")
    return {k: body[k] for k in SETTINGS if body.get(k) is not None}


def _display_name(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 255 or any(ord(c) < 32 for c in raw):
        raise invalid("name is required: 1-255 printable characters")
    return raw.strip()


def _workspace(raw: str) -> int:
    try:
        workspace = int(raw)
    except ValueError:
        raise invalid(f"workspace_id must be an integer, got {raw!r}") from None
    if workspace < 0:
        raise invalid("workspace_id must not be negative")
    return workspace


class MetastoreService:
    def __init__(self, store: CatalogStore, warehouse_root: str) -> None:
        self.store = store
        self.warehouse_root = warehouse_root.rstrip("/")

    # -- views -------------------------------------------------------------------------------------------------

    def info(self, tenant: Tenant) -> dict[str, Any]:
        entry, fields = tenant.entry, tenant.entry.fields
        region = fields.get("region", "local")
        return {
            "metastore_id": tenant.id, "name": entry.comment or "arco",
            "storage_root": fields.get("storage_root", self.warehouse_root), "owner": entry.owner,
            "delta_sharing_scope": fields.get("delta_sharing_scope", "INTERNAL"),
            "cloud": "arco", "region": region, "global_metastore_id": f"arco:{region}:{tenant.id}",
            "created_at": fields.get("created_at", entry.created_at_ms),
            "created_by": entry.created_by or METASTORE_OWNER,
            "updated_at": entry.updated_at_ms, "updated_by": entry.updated_by or METASTORE_OWNER,
            **{k: fields[k] for k in SETTINGS if k in fields and k != "delta_sharing_scope"},
        }

    def _tenant(self, state: CatalogState, metastore_id: str) -> Tenant:
        try:
            return state.tenant(metastore_id)
        except NotFoundError:
            raise _no_such_metastore(metastore_id) from None

    def _administered(self, state: CatalogState, metastore_id: str, caller: Principal, what: str) -> Tenant:
        tenant = self._tenant(state, metastore_id)
        if not admins_metastore(state, caller, tenant):
            raise denied(caller, f"{what} metastore {tenant.id} (account admins and its own admins only)")
        return tenant

    # -- CRUD --------------------------------------------------------------------------------------------------

    def create(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        if not caller.is_account_admin:
            raise denied(caller, "create metastores (account admins only)")
        name = _display_name(body.get("name"))
        metastore_id = str(uuid.uuid4())
        root = self._storage_root(body.get("storage_root"))
        region = body.get("region")
        if region is not None and not isinstance(region, str):
            raise invalid("region must be a string")
        fields = {**_settings(body), "storage_root": f"{root}/{metastore_id}", "region": region or "local"}
        self.store.execute(lambda state: {
            "op": "create_securable", "id": str(uuid.uuid4()), "type": "metastore", "name": metastore_id,
            "owner": caller.name, "comment": name, "fields": fields}, principal=caller.name)
        with self.store.read() as state:
            return self.info(state.tenant(metastore_id))

    def _storage_root(self, raw: Any) -> str:
        """Where the new metastore's catalogs go; the spec appends the metastore id to it, as this does."""
        if raw is None or raw == "":
            return f"{self.warehouse_root}/metastores"
        if not isinstance(raw, str):
            raise invalid("storage_root must be a string")
        root = f"file://{raw}" if raw.startswith("/") else raw
        root = root.rstrip("/")
        if not within(root, self.warehouse_root) or "/../" in f"{root}/" or "/./" in f"{root}/":
            raise invalid(f"storage_root must be inside this warehouse ({self.warehouse_root}): Arco writes every "
                          "table through the warehouse's storage; leave it out to use "
                          f"{self.warehouse_root}/metastores")
        return root

    def list(self, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            tenants = [state.tenant(e.name) for e in state.securables_of("metastore")]
            mine = [t for t in tenants if admins_metastore(state, caller, t)]
            if not mine:
                raise denied(caller, "list metastores (metastore admins only; everyone may read metastore_summary)")
            return {"metastores": [self.info(t) for t in sorted(mine, key=lambda t: (not t.primary, t.id))]}

    def get(self, metastore_id: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            return self.info(self._administered(state, metastore_id, caller, "read"))

    def summary(self, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            info = self.info(state.tenant_of_workspace(caller.workspace_id))
        return {k: info[k] for k in SUMMARY_FIELDS}

    def update(self, metastore_id: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        fields = _settings(body)
        name = _display_name(body["name"]) if body.get("name") is not None else None

        def build(state: CatalogState) -> dict[str, Any]:
            tenant = self._administered(state, metastore_id, caller, "update")
            if body.get("storage_root") not in (None, tenant.entry.fields.get("storage_root", self.warehouse_root)):
                raise invalid("a metastore's storage_root cannot change")
            op: dict[str, Any] = {"op": "update_securable", "type": "metastore", "name": tenant.id, "fields": fields}
            owner = owner_in(state, body)
            if owner:
                op["owner"] = owner
            if name:
                op["comment"] = name  # the display name; the id stays the securable's name
            return op

        self.store.execute(build, principal=caller.name)
        with self.store.read() as state:
            return self.info(state.tenant(metastore_id))

    def delete(self, metastore_id: str, force: bool, caller: Principal) -> None:
        def build(state: CatalogState) -> dict[str, Any]:
            tenant = self._administered(state, metastore_id, caller, "delete")
            if tenant.primary:
                raise invalid(f"metastore {tenant.id} is this warehouse's primary metastore and cannot be deleted")
            contents = state.metastore_contents(tenant)
            if contents and not force:
                shown = ", ".join(contents[:5]) + (f" and {len(contents) - 5} more" if len(contents) > 5 else "")
                raise UnityError(400, "METASTORE_NOT_EMPTY", f"Metastore {tenant.id} still holds {shown}; delete "
                                                             "them first, or pass force=true to delete it all")
            return {"op": "drop_metastore", "metastore_id": tenant.id, "force": force}

        self.store.execute(build, principal=caller.name)

    # -- workspace assignments -----------------------------------------------------------------------------------

    def assign(self, workspace_id: str, body: dict[str, Any], caller: Principal, *, method: str) -> dict[str, Any]:
        workspace = _workspace(workspace_id)
        wanted = body.get("metastore_id")
        if wanted is not None and (not isinstance(wanted, str) or not wanted):
            raise invalid("metastore_id must be a metastore id")
        if method in ("PUT", "DELETE") and not wanted:
            raise invalid("metastore_id is required")
        default = body.get("default_catalog_name")
        if method == "PUT" and default is None:
            raise invalid("default_catalog_name is required")
        if default is not None:
            default = uc_name("catalog", default)

        def build(state: CatalogState) -> dict[str, Any]:
            current, current_default = state.assignment(workspace)
            if method == "PATCH" and not (wanted and wanted != current):
                tenant = state.tenant_or_none(workspace)
                if not (caller.is_account_admin or (tenant is not None and admins_metastore(state, caller, tenant))):
                    raise denied(caller, f"change workspace {workspace}'s default catalog (account admins and the "
                                         "admins of its metastore only)")
            elif not caller.is_account_admin:
                raise denied(caller, "assign metastores to workspaces (account admins only)")
            if wanted:
                self._tenant(state, wanted)
            if method == "DELETE":
                if current != wanted:
                    raise UnityError(404, "METASTORE_ASSIGNMENT_DOES_NOT_EXIST",
                                     f"workspace {workspace} is not assigned to metastore {wanted}")
                fields = {"metastore_id": None, "default_catalog_name": current_default}
            elif method == "PATCH":
                if current is None and not wanted:
                    raise UnityError(404, "METASTORE_ASSIGNMENT_DOES_NOT_EXIST",
                                     f"workspace {workspace} has no metastore; assign one with PUT")
                fields = {"metastore_id": wanted or current, "default_catalog_name": default or current_default}
            else:
                fields = {"metastore_id": wanted, "default_catalog_name": default}
            if securable_key("workspace", str(workspace)) in state.securables:
                return {"op": "update_securable", "type": "workspace", "name": str(workspace), "fields": fields}
            return {"op": "create_securable", "id": str(uuid.uuid4()), "type": "workspace", "name": str(workspace),
                    "owner": METASTORE_OWNER, "fields": fields}

        self.store.execute(build, principal=caller.name)
        return {}

    def current_assignment(self, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            tenant = state.tenant_of_workspace(caller.workspace_id)
            _, default = state.assignment(caller.workspace_id)
        return {"metastore_id": tenant.id, "workspace_id": caller.workspace_id, "default_catalog_name": default}

