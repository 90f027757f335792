"""Named securables in Tier 1: storage credentials, external locations, shares, recipients, providers (each
within one metastore), and the account-level metastores and workspace assignments. One entry type and three
operations serve them all; what each type's fields mean is the API's business (:mod:`arco.unity.named`).

A name is unique per type within its metastore (``metastore_id``; None is the warehouse's primary metastore, and
also the scope of account-level entries), compared case-insensitively.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from arco.catalog.errors import AlreadyExistsError, NotFoundError


@dataclass
class SecurableEntry:
    id: str
    type: str
    name: str
    owner: str
    comment: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    created_at_ms: int = 0
    updated_at_ms: int = 0
    created_by: str | None = None
    updated_by: str | None = None
    metastore_id: str | None = None  # None: the primary metastore, or account-level (metastores, workspaces)


SecurableKey = tuple[str, str, str]  # (type, metastore id or "", name case-folded)


def securable_key(securable_type: str, name: str, metastore_id: str | None = None) -> SecurableKey:
    return securable_type, metastore_id or "", name.casefold()


class SecurablesState:
    securables: dict[SecurableKey, SecurableEntry]
    primary_metastore_id: str | None  # the name of the metastore entry marked primary, once there is one

    def _init_securables(self) -> None:
        self.securables = {}
        self.primary_metastore_id = None

    def securable(self, securable_type: str, name: str, metastore_id: str | None = None) -> SecurableEntry:
        found = self.securables.get(securable_key(securable_type, name, metastore_id))
        if found is None:
            raise NotFoundError(securable_type, name)
        return found

    def securables_of(self, securable_type: str, metastore_id: str | None = None) -> list[SecurableEntry]:
        scope = metastore_id or ""
        return sorted((e for (t, m, _), e in self.securables.items() if t == securable_type and m == scope),
                      key=lambda e: e.name.casefold())

    def securables_in_every_metastore(self, securable_type: str) -> list[SecurableEntry]:
        return sorted((e for (t, _, _), e in self.securables.items() if t == securable_type),
                      key=lambda e: (e.metastore_id or "", e.name.casefold()))

    def store_securable(self, entry: SecurableEntry) -> None:
        self.securables[securable_key(entry.type, entry.name, entry.metastore_id)] = entry
        if entry.type == "metastore" and entry.fields.get("primary"):
            self.primary_metastore_id = entry.name

    def securables_snapshot(self) -> dict[str, Any]:
        return {"securables": [asdict(e) for e in self.securables.values()]}

    def load_securables(self, snapshot: dict[str, Any]) -> None:
        for raw in snapshot.get("securables", []):
            self.store_securable(SecurableEntry(**raw))


def _key(op: dict[str, Any], name_field: str = "name") -> SecurableKey:
    return securable_key(op["type"], op[name_field], op.get("metastore_id"))


def _check_create(state: Any, op: dict[str, Any]) -> None:
    if _key(op) in state.securables:
        raise AlreadyExistsError(op["type"], op["name"])


def _apply_create(state: Any, op: dict[str, Any]) -> None:
    if op["type"] == "recipient":  # a new recipient starts with no share's grant, whoever had its name before
        _move_share_grants(state, op.get("metastore_id"), op["name"], None)
    state.store_securable(SecurableEntry(
        id=op["id"], type=op["type"], name=op["name"], owner=op["owner"], comment=op.get("comment"),
        fields=dict(op.get("fields", {})), created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"), metastore_id=op.get("metastore_id")))


def _check_update(state: Any, op: dict[str, Any]) -> None:
    state.securable(op["type"], op["name"], op.get("metastore_id"))
    new_name = op.get("new_name")
    if new_name and new_name.casefold() != op["name"].casefold() and _key(op, "new_name") in state.securables:
        raise AlreadyExistsError(op["type"], new_name)


def _apply_update(state: Any, op: dict[str, Any]) -> None:
    entry = state.securables.pop(_key(op))
    if op.get("new_name"):
        if entry.type == "recipient":
            _move_share_grants(state, entry.metastore_id, entry.name, op["new_name"])
        entry.name = op["new_name"]
    if "owner" in op:
        entry.owner = op["owner"]
    if "comment" in op:
        entry.comment = op["comment"]
    entry.fields = {k: v for k, v in entry.fields.items() if k not in set(op.get("unset", []))}
    entry.fields.update(op.get("fields", {}))
    entry.updated_at_ms = op["at_ms"]
    entry.updated_by = op.get("principal")
    state.store_securable(entry)


def _check_drop(state: Any, op: dict[str, Any]) -> None:
    state.securable(op["type"], op["name"], op.get("metastore_id"))


def _apply_drop(state: Any, op: dict[str, Any]) -> None:
    entry = state.securables.pop(_key(op))
    if entry.type == "recipient":
        _move_share_grants(state, entry.metastore_id, entry.name, None)


def _move_share_grants(state: Any, metastore_id: str | None, old: str, new: str | None) -> None:
    """Share grants name their recipient (:mod:`arco.unity.sharing`): they follow it when it is renamed and go
    with it when it is dropped, so a recipient made later under the old name gets none of them."""
    shares = {e.id for e in state.securables_of("share", metastore_id)}
    for (kind, share_id), grantees in list(state.grants.items()):
        if kind != "share" or share_id not in shares or old.casefold() not in grantees:
            continue
        held = grantees.pop(old.casefold())
        if new is not None:
            grantees[new.casefold()] = sorted({*grantees.get(new.casefold(), []), *held})
        if not grantees:
            del state.grants[(kind, share_id)]


SECURABLE_RULES = {
    "create_securable": (_check_create, _apply_create),
    "update_securable": (_check_update, _apply_update),
    "drop_securable": (_check_drop, _apply_drop),
}
