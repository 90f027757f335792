"""Functions (OSS 2.1 ``/functions``): create, get, list, delete, and Databricks' owner-only PATCH.

A function is metadata only (Arco runs no code): the ``CreateFunction`` fields are checked against the spec (every
required field present and of its type, enums by value, parameters complete) and returned as given, plus the
catalog's bookkeeping (full_name, owner, times, function_id). An EXTERNAL routine needs ``external_language``,
has no ``return_params`` and must be NO_SQL, as the spec says.

Privileges: CREATE_FUNCTION on the schema to create; EXECUTE to see one (lists show only those); ownership (or
the schema's / catalog's) to delete.
"""

from __future__ import annotations

import uuid
from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog.schema_objects import made_schema_object
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.unity import objects
from arco.unity.common import comment_of, denied, owner_in, uc_name
from arco.unity.errors import invalid
from arco.unity.infos import COLUMN_TYPES

TYPE_NAMES = tuple(sorted(COLUMN_TYPES))
REQUIRED_TEXT = ("full_data_type", "routine_definition", "specific_name")
OPTIONAL_TEXT = ("comment", "properties", "external_language", "external_name", "sql_path")
PARAMETER_TEXT = ("name", "type_text", "type_json")


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid(f"{what} must be an integer")
    return value


def _parameters(raw: Any, what: str) -> dict[str, Any]:
    """``FunctionParameterInfos``: ``{"parameters": [FunctionParameterInfo, ...]}``."""
    if not isinstance(raw, dict):
        raise invalid(f"{what} must be an object with a 'parameters' list")
    params = raw.get("parameters", [])
    if not isinstance(params, list):
        raise invalid(f"{what}.parameters must be a list")
    checked = []
    for index, param in enumerate(params):
        where = f"{what}.parameters[{index}]"
        if not isinstance(param, dict):
            raise invalid(f"{where} must be an object")
        kept: dict[str, Any] = {}
        for key in PARAMETER_TEXT:
            kept[key] = objects.text(param, key, required=True)
        kept["type_name"] = objects.choice(param, "type_name", TYPE_NAMES)
        kept["position"] = _int(param.get("position"), f"{where}.position")
        for key in ("type_precision", "type_scale"):
            if param.get(key) is not None:
                kept[key] = _int(param[key], f"{where}.{key}")
        for key in ("type_interval_type", "parameter_default", "comment"):
            if objects.text(param, key) is not None:
                kept[key] = param[key]
        if param.get("parameter_mode") is not None:
            kept["parameter_mode"] = objects.choice(param, "parameter_mode", ("IN",))
        if param.get("parameter_type") is not None:
            kept["parameter_type"] = objects.choice(param, "parameter_type", ("PARAM", "COLUMN"))
        checked.append(kept)
    names = [p["name"].casefold() for p in checked]
    if len(set(names)) != len(names):
        raise invalid(f"{what}: parameter names must be unique")
    return {"parameters": checked}


def _dependencies(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or not isinstance(raw.get("dependencies", []), list):
        raise invalid("routine_dependencies must be an object with a 'dependencies' list")
    kept = []
    for index, dep in enumerate(raw.get("dependencies", [])):
        table, function = (dep.get("table"), dep.get("function")) if isinstance(dep, dict) else (None, None)
        if isinstance(table, dict) and isinstance(table.get("table_full_name"), str):
            kept.append({"table": {"table_full_name": table["table_full_name"]}})
        elif isinstance(function, dict) and isinstance(function.get("function_full_name"), str):
            kept.append({"function": {"function_full_name": function["function_full_name"]}})
        else:
            raise invalid(f"routine_dependencies.dependencies[{index}] needs a table (table_full_name) or a "
                          "function (function_full_name)")
    return {"dependencies": kept}


def check_function(info: dict[str, Any]) -> dict[str, Any]:
    """The stored definition of a ``CreateFunction``, or 400 naming the first field that is missing or wrong."""
    definition: dict[str, Any] = {"input_params": _parameters(info.get("input_params"), "input_params")}
    definition["data_type"] = objects.choice(info, "data_type", TYPE_NAMES)
    for key in REQUIRED_TEXT:
        definition[key] = objects.text(info, key, required=key != "routine_definition")
        if key == "routine_definition" and definition[key] is None:
            raise invalid("routine_definition is required")
    definition["routine_body"] = objects.choice(info, "routine_body", ("SQL", "EXTERNAL"))
    definition["parameter_style"] = objects.choice(info, "parameter_style", ("S",))
    definition["is_deterministic"] = objects.boolean(info, "is_deterministic")
    definition["sql_data_access"] = objects.choice(info, "sql_data_access",
                                                   ("CONTAINS_SQL", "READS_SQL_DATA", "NO_SQL"))
    definition["is_null_call"] = objects.boolean(info, "is_null_call")
    definition["security_type"] = objects.choice(info, "security_type", ("DEFINER",))
    for key in OPTIONAL_TEXT:
        if objects.text(info, key) is not None:
            definition[key] = info[key]
    if not comment_of(info):  # an empty comment is no comment (see comment_of)
        definition.pop("comment", None)
    if info.get("return_params") is not None:
        definition["return_params"] = _parameters(info["return_params"], "return_params")
    if info.get("routine_dependencies") is not None:
        definition["routine_dependencies"] = _dependencies(info["routine_dependencies"])
    if definition["routine_body"] == "EXTERNAL":
        if not definition.get("external_language"):
            raise invalid("an EXTERNAL function needs external_language")
        if "return_params" in definition:
            raise invalid("an EXTERNAL function cannot have return_params")
        if definition["sql_data_access"] != "NO_SQL":
            raise invalid("an EXTERNAL function's sql_data_access must be NO_SQL")
    return definition


def function_info(state: CatalogState, entry: SecurableEntry) -> dict[str, Any]:
    return {**entry.fields["definition"], **objects.common_info(state, entry, "function_id")}


class FunctionService:
    def __init__(self, store: CatalogStore) -> None:
        self.store = store

    def create(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        info = body.get("function_info")
        if not isinstance(info, dict):
            raise invalid("function_info is required: a CreateFunction object")
        name = uc_name("function", info.get("name"))
        for key in ("catalog_name", "schema_name"):
            objects.text(info, key, required=True)
        definition = check_function(info)
        function_id = str(uuid.uuid4())

        def build(state: CatalogState) -> dict[str, Any]:
            where = objects.place(state, caller, info["catalog_name"], info["schema_name"])
            objects.check(state, caller, where, lambda s, c, sc: can.can_create_in_schema(s, c, sc, "CREATE_FUNCTION"),
                          "create functions", "USE_CATALOG, USE_SCHEMA and CREATE_FUNCTION")
            return {"op": "create_schema_object", "type": "function", "id": function_id,
                    "schema_id": where.schema.id, "name": name, "owner": caller.name,
                    "comment": definition.get("comment"), "metastore_id": where.catalog.metastore_id,
                    "fields": {"definition": definition}}

        op = self.store.execute(build, principal=caller.name)
        with self.store.read() as state:
            return function_info(state, made_schema_object(state, op))

    @staticmethod
    def _executable(state: CatalogState, caller: Principal, where: objects.Place, entry: SecurableEntry) -> bool:
        return objects.usable(state, caller, where, "function", entry, "EXECUTE")

    def get(self, full_name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            where, entry = objects.find(state, caller, "function", full_name)
            if not self._executable(state, caller, where, entry):
                raise denied(caller, f"use function {full_name} (needs USE_CATALOG, USE_SCHEMA and EXECUTE)")
            return function_info(state, entry)

    def list(self, catalog_name: Any, schema_name: Any, max_results: Any, token: str | None,
             caller: Principal) -> tuple[list[dict[str, Any]], str | None]:
        return objects.page_in_schema(self.store, caller, "function", "EXECUTE", catalog_name, schema_name,
                                      max_results, token, function_info)

    def update(self, full_name: str, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        """Databricks' updateFunction: only the owner changes (by the owner, or an admin)."""
        if body.get("owner") is None or set(k for k, v in body.items() if v is not None) - {"owner", "name"}:
            raise invalid("only owner can be updated on a function")

        def build(state: CatalogState) -> dict[str, Any]:
            where, entry = objects.find(state, caller, "function", full_name)
            if not can.can_update_object(subject_of(state, caller), *where.parents(state),
                                         securable(state, "function", entry), owner_only=True, renames=False,
                                         create_privilege="CREATE_FUNCTION"):
                raise denied(caller, f"update function {full_name} (only its owner or an admin may)")
            return {"op": "update_schema_object", "type": "function", "schema_id": where.schema.id,
                    "name": entry.fields["name"], "metastore_id": entry.metastore_id, "owner": owner_in(state, body)}

        self.store.execute(build, principal=caller.name)
        return self._info(full_name, caller)

    def _info(self, full_name: str, caller: Principal) -> dict[str, Any]:
        with self.store.read() as state:
            return function_info(state, objects.find(state, caller, "function", full_name)[1])

    def delete(self, full_name: str, caller: Principal) -> None:
        def build(state: CatalogState) -> dict[str, Any]:
            where, entry = objects.find(state, caller, "function", full_name)
            if not can.can_delete_object(subject_of(state, caller), *where.parents(state),
                                         securable(state, "function", entry)):
                raise denied(caller, f"delete function {full_name} (only its owner, or the schema's or catalog's, "
                                     "may)")
            return {"op": "drop_schema_object", "type": "function", "schema_id": where.schema.id,
                    "name": entry.fields["name"], "metastore_id": entry.metastore_id}

        self.store.execute(build, principal=caller.name)
