"""What a catalog operation is about, by name (pure): the ``audit`` part of a Tier 1 log entry.

Many operations name their object by id only (``drop_table``, ``update_grants``, ``revoke_token``), and once the
object is dropped or renamed its id no longer resolves to the name it had. So the writer resolves the names
from the state the operation is checked against, and logs them with the operation: the receipt, the reconciler
(which reads the log) and the pipeline's audit table all see the same names, whenever they look.

``name`` is, per object type: a catalog's name; a namespace's dotted path; a table's or view's name (its
namespace and catalog are separate columns); for grants, the securable's full name (``main.sales.orders``, a
metastore's id); a token's owner; a principal's name; a named securable's name; a volume's, function's or
model's full name (``catalog.schema.name``); a model version's model's full name.
"""

from __future__ import annotations

from typing import Any

from arco.catalog.model import NamespacePath


def _names(catalog_id: str | None, namespace: NamespacePath | list[str] | None, name: str | None) -> dict[str, Any]:
    return {"catalog_id": catalog_id, "namespace": list(namespace) if namespace is not None else None,
            "name": name}


def _catalog_name(state: Any, catalog_id: str | None) -> str | None:
    found = state.catalogs.get(catalog_id) if catalog_id else None
    return found.name if found is not None else None


def _schema_object_names(state: Any, schema_id: str | None, name: str | None) -> dict[str, Any]:
    """A volume's, function's or model's full name, from its schema's id (their ops carry no catalog name)."""
    schema = state.namespaces.get(schema_id) if schema_id else None
    if schema is None:
        return _names(None, None, name)
    full = ".".join((_catalog_name(state, schema.catalog_id) or "?", *schema.path, name or "?"))
    return _names(schema.catalog_id, schema.path, full)


def _securable_full_name(state: Any, securable_type: str, securable_id: str) -> dict[str, Any]:
    """The full name of what grants are changed on; grants name their securable by type and id."""
    if securable_type == "catalog" and securable_id in state.catalogs:
        return _names(securable_id, None, state.catalogs[securable_id].name)
    if securable_type == "schema" and securable_id in state.namespaces:
        ns = state.namespaces[securable_id]
        return _names(ns.catalog_id, ns.path, ".".join((_catalog_name(state, ns.catalog_id) or "?", *ns.path)))
    if securable_type == "table" and securable_id in state.tables:
        t = state.tables[securable_id]
        full = ".".join((_catalog_name(state, t.catalog_id) or "?", *t.namespace, t.name))
        return _names(t.catalog_id, t.namespace, full)
    if securable_type == "metastore":
        return _names(None, None, securable_id)
    for entry in state.securables.values():  # named securables and schema objects: grants on them are rare
        if entry.id == securable_id and entry.type == securable_type:
            if "schema_id" in entry.fields:
                return _schema_object_names(state, entry.fields["schema_id"], entry.fields.get("name"))
            return _names(None, None, entry.name)
    return _names(None, None, None)


def audit_names(state: Any, op: dict[str, Any]) -> dict[str, Any]:
    """``{"catalog_id", "namespace", "name"}`` of what ``op`` is about, as of ``state`` (before it applies).

    Never raises: a name that cannot be resolved is None, and the operation goes ahead regardless."""
    try:
        return _resolve(state, op)
    except Exception:  # noqa: BLE001 - naming is for the audit trail; it must never fail a catalog change
        return _names(None, None, None)


def _resolve(state: Any, op: dict[str, Any]) -> dict[str, Any]:
    kind = op.get("op")
    if kind == "create_catalog":
        return _names(op.get("id"), None, op.get("name"))
    if kind in ("update_catalog", "drop_catalog"):
        return _names(op.get("id"), None, _catalog_name(state, op.get("id")))
    if kind == "create_namespace":
        return _names(op.get("catalog_id"), op.get("path"), ".".join(op.get("path") or ()) or None)
    if kind in ("update_namespace", "drop_namespace"):
        ns = state.namespaces.get(op.get("id"))
        return _names(ns.catalog_id, ns.path, ".".join(ns.path)) if ns else _names(None, None, None)
    if kind == "create_table":
        return _names(op.get("catalog_id"), op.get("namespace"), op.get("name"))
    if kind in ("update_table", "rename_table", "drop_table"):  # a rename is named by its old name
        t = state.tables.get(op.get("id"))
        return _names(t.catalog_id, t.namespace, t.name) if t else _names(None, None, None)
    if kind == "update_grants":
        return _securable_full_name(state, str(op.get("securable_type")), str(op.get("securable_id")))
    if kind == "create_token":
        return _names(None, None, op.get("owner") or op.get("principal"))
    if kind == "revoke_token":
        token = state.tokens.get(op.get("id"))
        return _names(None, None, token.principal if token else None)
    if kind in ("create_schema_object", "update_schema_object", "drop_schema_object",
                "create_model_version", "update_model_version", "drop_model_version"):
        return _schema_object_names(state, op.get("schema_id"), op.get("name"))
    if kind == "revoke_oauth_tokens":
        return _names(None, None, op.get("subject"))
    if kind == "drop_metastore":
        return _names(None, None, op.get("metastore_id"))
    return _names(op.get("catalog_id"), None, op.get("name"))
