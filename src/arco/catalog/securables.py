"""Named metastore-level securables in Tier 1: storage credentials, external locations (and later shares,
recipients, providers). One entry type and three operations serve them all; what each type's fields mean is the
API's business (:mod:`arco.unity.named`).
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


class SecurablesState:
    securables: dict[tuple[str, str], SecurableEntry]

    def _init_securables(self) -> None:
        self.securables = {}

    def securable(self, securable_type: str, name: str) -> SecurableEntry:
        found = self.securables.get((securable_type, name.casefold()))
        if found is None:
            raise NotFoundError(securable_type, name)
        return found

    def securables_of(self, securable_type: str) -> list[SecurableEntry]:
        return sorted((e for (t, _), e in self.securables.items() if t == securable_type),
                      key=lambda e: e.name.casefold())

    def securables_snapshot(self) -> dict[str, Any]:
        return {"securables": [asdict(e) for e in self.securables.values()]}

    def load_securables(self, snapshot: dict[str, Any]) -> None:
        for raw in snapshot.get("securables", []):
            entry = SecurableEntry(**raw)
            self.securables[(entry.type, entry.name.casefold())] = entry


def _check_create(state: Any, op: dict[str, Any]) -> None:
    if (op["type"], op["name"].casefold()) in state.securables:
        raise AlreadyExistsError(op["type"], op["name"])


def _apply_create(state: Any, op: dict[str, Any]) -> None:
    state.securables[(op["type"], op["name"].casefold())] = SecurableEntry(
        id=op["id"], type=op["type"], name=op["name"], owner=op["owner"], comment=op.get("comment"),
        fields=dict(op.get("fields", {})), created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"))


def _check_update(state: Any, op: dict[str, Any]) -> None:
    state.securable(op["type"], op["name"])
    new_name = op.get("new_name")
    if new_name and new_name.casefold() != op["name"].casefold() and \
            (op["type"], new_name.casefold()) in state.securables:
        raise AlreadyExistsError(op["type"], new_name)


def _apply_update(state: Any, op: dict[str, Any]) -> None:
    entry = state.securables.pop((op["type"], op["name"].casefold()))
    if op.get("new_name"):
        entry.name = op["new_name"]
    if "owner" in op:
        entry.owner = op["owner"]
    if "comment" in op:
        entry.comment = op["comment"]
    entry.fields = {k: v for k, v in entry.fields.items() if k not in set(op.get("unset", []))}
    entry.fields.update(op.get("fields", {}))
    entry.updated_at_ms = op["at_ms"]
    entry.updated_by = op.get("principal")
    state.securables[(entry.type, entry.name.casefold())] = entry


def _check_drop(state: Any, op: dict[str, Any]) -> None:
    state.securable(op["type"], op["name"])


def _apply_drop(state: Any, op: dict[str, Any]) -> None:
    del state.securables[(op["type"], op["name"].casefold())]


SECURABLE_RULES = {
    "create_securable": (_check_create, _apply_create),
    "update_securable": (_check_update, _apply_update),
    "drop_securable": (_check_drop, _apply_drop),
}
