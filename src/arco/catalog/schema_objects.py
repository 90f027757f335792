"""Schema-level objects in Tier 1: volumes, functions and registered models (with their versions), pure rules.

They are kept as generic named securables (:mod:`arco.catalog.securables`), one entry per object, keyed by
``<schema id>.<name>`` within the catalog's metastore, so renaming the catalog or the schema needs no change to
them (a name never contains a period, and a schema id is a uuid). The object's own name is in ``fields["name"]``
and its schema in ``fields["schema_id"]``. A registered model keeps its versions in ``fields["versions"]``
(version number as a string -> the version's fields) and the last number it gave in ``fields["max_version"]``:
numbers are never reused, as in MLflow.

Dropping a schema without force refuses while it holds any of these (as with tables); with force, and when its
catalog or metastore goes, they go with it (:func:`remove_schema_objects`, called by :mod:`arco.catalog.state`).
"""

from __future__ import annotations

import copy
from typing import Any

from arco.catalog.errors import AlreadyExistsError, InvalidRequestError, NamespaceNotFound, NotFoundError
from arco.catalog.securables import SecurableEntry, securable_key

SCHEMA_OBJECT_TYPES = ("volume", "function", "registered_model")
MODEL_VERSION_STATUSES = ("PENDING_REGISTRATION", "FAILED_REGISTRATION", "READY")


def object_key_name(schema_id: str, name: str) -> str:
    return f"{schema_id}.{name}"


def schema_object(state: Any, object_type: str, schema_id: str, name: str,
                  metastore_id: str | None) -> SecurableEntry:
    found = state.securables.get(securable_key(object_type, object_key_name(schema_id, name), metastore_id))
    if found is None:
        raise NotFoundError(object_type, name)
    return found


def objects_in_schema(state: Any, schema_id: str, object_type: str | None = None) -> list[SecurableEntry]:
    """The schema's volumes, functions and models (or only those of ``object_type``), sorted by name."""
    types = (object_type,) if object_type else SCHEMA_OBJECT_TYPES
    return sorted((e for (t, _, _), e in state.securables.items()
                   if t in types and e.fields.get("schema_id") == schema_id),
                  key=lambda e: (e.type, e.fields["name"].casefold()))


def remove_schema_objects(state: Any, schema_id: str) -> None:
    """Everything of a schema that is being dropped (force) or whose catalog is, and the grants on it."""
    for entry in objects_in_schema(state, schema_id):
        del state.securables[securable_key(entry.type, entry.name, entry.metastore_id)]
        state.grants.pop((entry.type, entry.id), None)


def _key(op: dict[str, Any], name: str | None = None) -> tuple[str, str, str]:
    return securable_key(op["type"], object_key_name(op["schema_id"], name or op["name"]), op.get("metastore_id"))


def _entry(state: Any, op: dict[str, Any]) -> SecurableEntry:
    if op.get("type") not in SCHEMA_OBJECT_TYPES:
        raise InvalidRequestError(f"{op.get('type')!r} is not a schema-level object type")
    return schema_object(state, op["type"], op["schema_id"], op["name"], op.get("metastore_id"))


# -- create / update / drop ------------------------------------------------------------------------------------


def _check_create(state: Any, op: dict[str, Any]) -> None:
    if op.get("type") not in SCHEMA_OBJECT_TYPES:
        raise InvalidRequestError(f"{op.get('type')!r} is not a schema-level object type")
    if op["schema_id"] not in state.namespaces:
        raise NamespaceNotFound(op["schema_id"])
    if _key(op) in state.securables:
        raise AlreadyExistsError(op["type"], op["name"])
    if any(e.id == op["id"] for e in state.securables.values()):
        raise AlreadyExistsError(f"{op['type']} id", op["id"])


def schema_object_of(op: dict[str, Any]) -> SecurableEntry:
    """The volume, function or model a committed ``create_schema_object`` made (also what its creator is
    answered, should another server drop it before the answer is read back)."""
    fields = {**copy.deepcopy(op.get("fields", {})), "name": op["name"], "schema_id": op["schema_id"]}
    if op["type"] == "registered_model":
        fields.setdefault("versions", {})
        fields.setdefault("max_version", 0)
    return SecurableEntry(
        id=op["id"], type=op["type"], name=object_key_name(op["schema_id"], op["name"]), owner=op["owner"],
        comment=op.get("comment"), fields=fields, created_at_ms=op["at_ms"], updated_at_ms=op["at_ms"],
        created_by=op.get("principal"), updated_by=op.get("principal"), metastore_id=op.get("metastore_id"))


def made_schema_object(state: Any, op: dict[str, Any]) -> SecurableEntry:
    """What a committed ``create_schema_object`` made, as ``state`` holds it now, or as the operation made it if
    another server dropped it before the creator read it back (the creator is answered as created)."""
    return next((e for e in state.securables_in_every_metastore(op["type"]) if e.id == op["id"]),
                None) or schema_object_of(op)


def _apply_create(state: Any, op: dict[str, Any]) -> None:
    state.store_securable(schema_object_of(op))


def _check_update(state: Any, op: dict[str, Any]) -> None:
    _entry(state, op)
    new_name = op.get("new_name")
    if new_name and new_name.casefold() != op["name"].casefold() and _key(op, new_name) in state.securables:
        raise AlreadyExistsError(op["type"], new_name)
    if {"name", "schema_id", "versions", "max_version"} & set(op.get("fields", {})):
        raise InvalidRequestError("name, schema_id and versions change only through their own operations")


def _apply_update(state: Any, op: dict[str, Any]) -> None:
    entry = state.securables.pop(_key(op))
    fields = {**entry.fields, **copy.deepcopy(op.get("fields", {}))}
    if op.get("new_name"):
        fields["name"] = op["new_name"]
        entry.name = object_key_name(op["schema_id"], op["new_name"])
    entry.fields = fields
    if "owner" in op:
        entry.owner = op["owner"]
    if "comment" in op:
        entry.comment = op["comment"]
    entry.updated_at_ms = op["at_ms"]
    entry.updated_by = op.get("principal")
    state.store_securable(entry)


def _check_drop(state: Any, op: dict[str, Any]) -> None:
    entry = _entry(state, op)
    if entry.type == "registered_model" and entry.fields.get("versions") and not op.get("force"):
        raise InvalidRequestError(f"registered model {op['name']} still has model versions; delete them first "
                                  "or pass force=true")


def _apply_drop(state: Any, op: dict[str, Any]) -> None:
    entry = state.securables.pop(_key(op))
    state.grants.pop((entry.type, entry.id), None)


# -- model versions --------------------------------------------------------------------------------------------


def _model(state: Any, op: dict[str, Any]) -> SecurableEntry:
    return schema_object(state, "registered_model", op["schema_id"], op["name"], op.get("metastore_id"))


def _version_of(state: Any, op: dict[str, Any]) -> dict[str, Any]:
    found = _model(state, op).fields.get("versions", {}).get(str(op["version"]))
    if found is None:
        raise NotFoundError("model_version", f"{op['name']}/{op['version']}")
    return found


def _check_create_version(state: Any, op: dict[str, Any]) -> None:
    model = _model(state, op)
    if op["version"] != model.fields.get("max_version", 0) + 1:
        raise InvalidRequestError(f"model {op['name']}'s next version is {model.fields.get('max_version', 0) + 1}")


def _apply_create_version(state: Any, op: dict[str, Any]) -> None:
    model = _model(state, op)
    versions = copy.deepcopy(model.fields.get("versions", {}))
    versions[str(op["version"])] = {**copy.deepcopy(op.get("fields", {})), "id": op["id"], "version": op["version"],
                                    "created_at": op["at_ms"], "created_by": op.get("principal"),
                                    "updated_at": op["at_ms"], "updated_by": op.get("principal"),
                                    "status": "PENDING_REGISTRATION"}
    model.fields = {**model.fields, "versions": versions, "max_version": op["version"]}


def _check_update_version(state: Any, op: dict[str, Any]) -> None:
    version = _version_of(state, op)
    expected = op.get("expect_status")
    if expected and version.get("status") != expected:
        raise InvalidRequestError(f"model version {op['name']}/{op['version']} is {version.get('status')}, "
                                  f"not {expected}")
    status = op.get("fields", {}).get("status")
    if status is not None and status not in MODEL_VERSION_STATUSES:
        raise InvalidRequestError(f"unknown model version status {status!r}")


def _apply_update_version(state: Any, op: dict[str, Any]) -> None:
    model = _model(state, op)
    versions = copy.deepcopy(model.fields["versions"])
    versions[str(op["version"])].update({**copy.deepcopy(op.get("fields", {})), "updated_at": op["at_ms"],
                                         "updated_by": op.get("principal")})
    model.fields = {**model.fields, "versions": versions}


def _check_drop_version(state: Any, op: dict[str, Any]) -> None:
    _version_of(state, op)


def _apply_drop_version(state: Any, op: dict[str, Any]) -> None:
    model = _model(state, op)
    versions = {k: v for k, v in model.fields["versions"].items() if k != str(op["version"])}
    model.fields = {**model.fields, "versions": versions}


SCHEMA_OBJECT_RULES = {
    "create_schema_object": (_check_create, _apply_create),
    "update_schema_object": (_check_update, _apply_update),
    "drop_schema_object": (_check_drop, _apply_drop),
    "create_model_version": (_check_create_version, _apply_create_version),
    "update_model_version": (_check_update_version, _apply_update_version),
    "drop_model_version": (_check_drop_version, _apply_drop_version),
}
