"""Metastores (UC 2.0 sections 6.1-6.3): one per warehouse, its settings, and workspace assignments.

A warehouse is a metastore: creating another one means serving another warehouse, so ``createMetastore`` and
``deleteMetastore`` are refused with that advice. Its owner (a metastore admin) and Delta Sharing settings live in
Tier 1, as a named securable whose name is the metastore id.
"""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import METASTORE_OWNER, subject_of
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.unity.errors import UnityError, invalid
from arco.unity.service import denied

SETTINGS = ("delta_sharing_scope", "delta_sharing_recipient_token_lifetime_in_seconds",
            "delta_sharing_organization_name", "storage_root_credential_id", "default_data_access_config_id")
DEFAULT_WORKSPACE = 0  # clients that never name a workspace get this one


class MetastoreService:
    def __init__(self, store: CatalogStore, record: dict[str, Any], storage_root: str) -> None:
        self.store = store
        self.record = record
        self.storage_root = storage_root

    @property
    def id(self) -> str:
        return str(self.record["metastore_id"])

    def _entry(self, state: CatalogState) -> SecurableEntry | None:
        return state.securables.get(("metastore", self.id.casefold()))

    def info(self, state: CatalogState) -> dict[str, Any]:
        entry = self._entry(state)
        fields = entry.fields if entry else {}
        return {
            "metastore_id": self.id, "name": entry.comment or self.record["name"] if entry else self.record["name"],
            "storage_root": self.storage_root, "owner": entry.owner if entry else METASTORE_OWNER,
            "delta_sharing_scope": fields.get("delta_sharing_scope", "INTERNAL"),
            "cloud": "arco", "region": "local", "global_metastore_id": f"arco:local:{self.id}",
            "created_at": self.record["created_at"], "created_by": METASTORE_OWNER,
            "updated_at": entry.updated_at_ms if entry else self.record["created_at"],
            "updated_by": entry.updated_by if entry else METASTORE_OWNER,
            **{k: fields[k] for k in SETTINGS if k in fields and k != "delta_sharing_scope"},
        }

    def _check(self, metastore_id: str) -> None:
        if metastore_id != self.id:
            raise UnityError(404, "METASTORE_DOES_NOT_EXIST", f"Metastore '{metastore_id}' does not exist here; "
                                                              f"this warehouse's metastore is {self.id}")

    def list(self, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            if not can.admin(subject_of(state, caller)):
                raise denied(caller, "list metastores (metastore admins only; everyone may read metastore_summary)")
            return {"metastores": [self.info(state)]}

    def get(self, metastore_id: str, caller: Principal) -> dict[str, Any]:
        self._check(metastore_id)
        with self.store.read() as state:
            if not can.admin(subject_of(state, caller)):
                raise denied(caller, "read the metastore (metastore admins only)")
            return self.info(state)

    def summary(self, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            info = self.info(state)
        return {k: info[k] for k in ("metastore_id", "name", "owner", "storage_root", "cloud", "region",
                                     "global_metastore_id", "delta_sharing_scope")}

    def update(self, metastore_id: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        self._check(metastore_id)
        if body.get("storage_root") not in (None, self.storage_root):
            raise invalid("a metastore's storage_root cannot change")
        scope = body.get("delta_sharing_scope")
        if scope is not None and scope not in ("INTERNAL", "INTERNAL_AND_EXTERNAL"):
            raise invalid("delta_sharing_scope must be INTERNAL or INTERNAL_AND_EXTERNAL")
        if scope == "INTERNAL_AND_EXTERNAL" and body.get("delta_sharing_recipient_token_lifetime_in_seconds") is None:
            raise invalid("delta_sharing_recipient_token_lifetime_in_seconds is required for INTERNAL_AND_EXTERNAL")
        fields = {k: body[k] for k in SETTINGS if body.get(k) is not None}

        def build(state: CatalogState) -> dict[str, Any]:
            if not can.admin(subject_of(state, caller)):
                raise denied(caller, "update the metastore (metastore admins only)")
            entry = self._entry(state)
            if entry is None:
                return {"op": "create_securable", "id": str(uuid.uuid4()), "type": "metastore", "name": self.id,
                        "owner": body.get("owner") or METASTORE_OWNER, "comment": body.get("name"), "fields": fields}
            op: dict[str, Any] = {"op": "update_securable", "type": "metastore", "name": self.id, "fields": fields}
            if body.get("owner"):
                op["owner"] = str(body["owner"])
            if body.get("name"):
                op["comment"] = str(body["name"])  # the display name; the id stays the securable's name
            return op

        self.store.execute(build, principal=caller.name)
        with self.store.read() as state:
            return self.info(state)

    @staticmethod
    def refuse(*_: Any) -> dict[str, Any]:
        raise invalid("a warehouse is one metastore: serve another warehouse (arco serve --warehouse ...) for "
                      "another metastore")

    # -- workspace assignments -----------------------------------------------------------------------------------

    def assign(self, workspace_id: str, body: dict[str, Any], caller: Principal, *, method: str) -> dict[str, Any]:
        try:
            workspace = int(workspace_id)
        except ValueError:
            raise invalid("workspace_id must be an integer") from None
        if method in ("PUT", "DELETE") or body.get("metastore_id") is not None:
            self._check(str(body.get("metastore_id") or self.id))

        def build(state: CatalogState) -> dict[str, Any]:
            who = subject_of(state, caller)
            if not (who.account_admin or (method == "PATCH" and body.get("metastore_id") is None and can.admin(who))):
                raise denied(caller, "assign metastores to workspaces (account admins only)")
            entry = self._entry(state)
            assignments = dict((entry.fields if entry else {}).get("assignments", {}))
            if method == "DELETE":
                assignments.pop(str(workspace), None)
            else:
                default = body.get("default_catalog_name") or assignments.get(str(workspace)) or "main"
                state.catalog(str(default))
                assignments[str(workspace)] = str(default)
            if entry is None:
                return {"op": "create_securable", "id": str(uuid.uuid4()), "type": "metastore", "name": self.id,
                        "owner": METASTORE_OWNER, "fields": {"assignments": assignments}}
            return {"op": "update_securable", "type": "metastore", "name": self.id,
                    "fields": {"assignments": assignments}}

        self.store.execute(build, principal=caller.name)
        return {}

    def current_assignment(self, caller: Principal, workspace_id: int = DEFAULT_WORKSPACE) -> dict[str, Any]:
        with self.store.read() as state:
            entry = self._entry(state)
            assignments = (entry.fields if entry else {}).get("assignments", {})
        return {"metastore_id": self.id, "workspace_id": workspace_id,
                "default_catalog_name": assignments.get(str(workspace_id), "main")}
