"""Unity Catalog functions as Iceberg REST ``FunctionMetadata`` (pure): the read-only projection loadFunction serves.

Arco keeps functions once, as UC functions (:mod:`arco.unity.functions`); Iceberg REST shows the same ones, each a
UDF metadata document built from its ``FunctionInfo``:

- ``function-uuid`` is the function's id, ``format-version`` 1, ``doc`` its comment;
- one definition: ``definition-id`` the comma-joined parameter types (no spaces), ``specific-name`` UC's, the
  parameters in position order with Iceberg types (UC's ``type_name``; ``type_text`` for decimals and nested
  types), ``return-type`` from ``data_type`` / ``full_data_type``, ``function-type`` ``udtf`` for a function that
  returns ``TABLE_TYPE`` (its return type the struct of its ``return_params``), else ``udf``;
- one version (id 1, stamped with the creation time): a SQL function's body is its one representation, dialect
  ``spark``; the spec has only SQL representations, so an EXTERNAL function (Python, ...) has none, and its
  language and body are in ``properties`` (``uc.external-language``, ``uc.routine-definition``) for clients that
  know Unity Catalog. ``deterministic`` is ``is_deterministic``; ``on-null-input`` is ``return-null`` when
  ``is_null_call`` is set (RETURNS NULL ON NULL INPUT), else ``call``;
- ``definition-log`` one entry selecting that version; ``properties`` the UC properties (a JSON object in a
  string) plus ``owner`` and UC's routine facts under ``uc.``.

A function whose signature uses a type Iceberg cannot express (INTERVAL, NULL, USER_DEFINED_TYPE, a TABLE_TYPE
parameter, a type text that does not parse) is :class:`Unrepresentable`: Iceberg REST neither lists nor loads it.
"""

from __future__ import annotations

from typing import Any

import orjson

from arco.unity.type_text import TypeForms, UnreadableType, read_type_text

FORMAT_VERSION = 1
SQL_DIALECT = "spark"
VERSION_ID = 1

# UC type_name -> Iceberg type string, for the types whose name says everything.
SIMPLE_TYPES: dict[str, str] = {
    "BOOLEAN": "boolean", "BYTE": "int", "SHORT": "int", "INT": "int", "LONG": "long", "FLOAT": "float",
    "DOUBLE": "double", "DATE": "date", "TIMESTAMP": "timestamptz", "TIMESTAMP_NTZ": "timestamp",
    "STRING": "string", "CHAR": "string", "BINARY": "binary", "VARIANT": "variant",
}
NESTED_KINDS = {"ARRAY": "list", "MAP": "map", "STRUCT": "struct"}

# Spark SQL type words (lower case) -> Iceberg type string.
_SQL_WORDS: dict[str, str] = {
    "boolean": "boolean", "bool": "boolean", "tinyint": "int", "byte": "int", "smallint": "int", "short": "int",
    "int": "int", "integer": "int", "bigint": "long", "long": "long", "float": "float", "real": "float",
    "double": "double", "date": "date", "timestamp": "timestamptz", "timestamp_ltz": "timestamptz",
    "timestamp_ntz": "timestamp", "string": "string", "char": "string", "varchar": "string",
    "binary": "binary", "variant": "variant",
}

FunctionDataType = str | dict[str, Any]


class Unrepresentable(ValueError):
    """The function's signature has a type Iceberg's UDF spec cannot express."""


# -- types -----------------------------------------------------------------------------------------------------


def decimal_type(precision: int, scale: int) -> str:
    if not 1 <= precision <= 38 or not 0 <= scale <= precision:
        raise Unrepresentable(f"decimal({precision},{scale}) is not a valid decimal type")
    return f"decimal({precision},{scale})"


ICEBERG_FORMS = TypeForms(
    words=_SQL_WORDS, decimal=decimal_type,
    array=lambda element: {"type": "list", "element": element},
    map=lambda key, value: {"type": "map", "key": key, "value": value},
    struct=lambda fields: {"type": "struct", "fields": [{"name": name, "type": field_type}
                                                        for name, field_type, _ in fields]})


def parse_type_text(text: str, *, table: bool = False) -> FunctionDataType:
    """Spark SQL type text as an Iceberg UDF type; ``table``: the text of a table function's result."""
    try:
        return read_type_text(text, ICEBERG_FORMS, table=table)
    except UnreadableType as exc:
        raise Unrepresentable(f"{exc} in Iceberg") from None


def iceberg_type(type_name: str | None, type_text: str | None, precision: int | None = None,
                 scale: int | None = None) -> FunctionDataType:
    """A UC parameter's (or scalar result's) type as an Iceberg UDF type: the simple ones by ``type_name``,
    decimals by precision and scale (else ``type_text``), nested ones from ``type_text``."""
    name = (type_name or "").upper()
    if name in SIMPLE_TYPES:
        return SIMPLE_TYPES[name]
    if name == "DECIMAL":
        if precision is not None:
            return decimal_type(precision, scale or 0)
        parsed = parse_type_text(type_text or "decimal")
        if not isinstance(parsed, str) or not parsed.startswith("decimal("):
            raise Unrepresentable(f"a DECIMAL whose type text is {type_text!r}")
        return parsed
    if name in NESTED_KINDS:
        parsed = parse_type_text(type_text or "")
        if not isinstance(parsed, dict) or parsed["type"] != NESTED_KINDS[name]:
            raise Unrepresentable(f"a {name} whose type text is {type_text!r}")
        return parsed
    raise Unrepresentable(f"UC type {name or '(none)'} has no Iceberg equivalent")


def type_string(data_type: FunctionDataType) -> str:
    """The canonical text of a type, no spaces: ``int``, ``list<int>``, ``map<string,long>``, ``struct<a:int>``."""
    if isinstance(data_type, str):
        return data_type
    kind = data_type["type"]
    if kind == "list":
        return f"list<{type_string(data_type['element'])}>"
    if kind == "map":
        return f"map<{type_string(data_type['key'])},{type_string(data_type['value'])}>"
    return "struct<" + ",".join(f"{f['name']}:{type_string(f['type'])}" for f in data_type["fields"]) + ">"


# -- functions -------------------------------------------------------------------------------------------------


def _params(info: dict[str, Any], key: str) -> list[dict[str, Any]]:
    params = (info.get(key) or {}).get("parameters") or []
    return sorted(params, key=lambda p: p.get("position", 0))


def _param_type(param: dict[str, Any]) -> FunctionDataType:
    return iceberg_type(param.get("type_name"), param.get("type_text"), param.get("type_precision"),
                        param.get("type_scale"))


def parameters(info: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for param in _params(info, "input_params"):
        parameter: dict[str, Any] = {"name": param["name"], "type": _param_type(param)}
        if param.get("comment"):
            parameter["doc"] = param["comment"]
        out.append(parameter)
    return out


def is_table_function(info: dict[str, Any]) -> bool:
    return str(info.get("data_type") or "").upper() == "TABLE_TYPE"


def return_type(info: dict[str, Any]) -> FunctionDataType:
    """A scalar function's ``data_type`` / ``full_data_type``; a table function's row: the struct of its
    ``return_params`` (UC's output columns), else of ``full_data_type`` (``TABLE(a INT, ...)``)."""
    if is_table_function(info):
        columns = _params(info, "return_params")
        if columns:
            return {"type": "struct", "fields": [{"name": c["name"], "type": _param_type(c)} for c in columns]}
        return parse_type_text(info.get("full_data_type") or "", table=True)
    return iceberg_type(info.get("data_type"), info.get("full_data_type"))


def definition_id(params: list[dict[str, Any]]) -> str:
    return ",".join(type_string(p["type"]) for p in params)


def _uc_properties(raw: Any) -> dict[str, str]:
    """UC's ``properties``: a JSON object in a string (values as strings); anything else is kept whole."""
    if not raw:
        return {}
    try:
        decoded = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError:
        return {"uc.properties": str(raw)}
    if not isinstance(decoded, dict):
        return {"uc.properties": str(raw)}
    return {str(k): v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in decoded.items()}


def properties(info: dict[str, Any]) -> dict[str, str]:
    props = _uc_properties(info.get("properties"))
    facts = {"owner": info.get("owner"), "uc.full-name": info.get("full_name"),
             "uc.routine-body": info.get("routine_body"), "uc.sql-data-access": info.get("sql_data_access"),
             "uc.security-type": info.get("security_type"), "uc.external-language": info.get("external_language"),
             "uc.external-name": info.get("external_name"), "uc.sql-path": info.get("sql_path")}
    if info.get("routine_body") == "EXTERNAL":
        facts["uc.routine-definition"] = info.get("routine_definition")
    props.update({k: str(v) for k, v in facts.items() if v is not None})
    return props


def representations(info: dict[str, Any]) -> list[dict[str, Any]]:
    """A SQL function's body, as Spark SQL; an EXTERNAL one has no representation the spec can carry."""
    if info.get("routine_body") == "SQL" and info.get("routine_definition") is not None:
        return [{"type": "sql", "dialect": SQL_DIALECT, "sql": info["routine_definition"]}]
    return []


def function_metadata(info: dict[str, Any]) -> dict[str, Any]:
    """A UC ``FunctionInfo`` as Iceberg ``FunctionMetadata``; :class:`Unrepresentable` if its types are not
    Iceberg's."""
    params = parameters(info)
    def_id = definition_id(params)
    created = int(info.get("created_at") or info.get("updated_at") or 0)
    version = {"version-id": VERSION_ID, "representations": representations(info),
               "deterministic": bool(info.get("is_deterministic")),
               "on-null-input": "return-null" if info.get("is_null_call") else "call", "timestamp-ms": created}
    definition: dict[str, Any] = {"definition-id": def_id, "parameters": params, "return-type": return_type(info),
                                  "versions": [version], "current-version-id": VERSION_ID,
                                  "function-type": "udtf" if is_table_function(info) else "udf"}
    if info.get("specific_name"):
        definition["specific-name"] = info["specific_name"]
    metadata: dict[str, Any] = {
        "function-uuid": info["function_id"], "format-version": FORMAT_VERSION, "definitions": [definition],
        "definition-log": [{"timestamp-ms": created,
                            "definition-versions": [{"definition-id": def_id, "version-id": VERSION_ID}]}],
        "properties": properties(info),
    }
    if info.get("comment"):
        metadata["doc"] = info["comment"]
    return metadata


def representable(info: dict[str, Any]) -> bool:
    try:
        function_metadata(info)
    except Unrepresentable:
        return False
    return True
