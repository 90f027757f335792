"""Iceberg REST listFunctions / loadFunction against a real ``arco serve``: functions made through Unity Catalog's
API, read through Iceberg REST, with paging, 404s in Iceberg's shape and UC's grants (EXECUTE to load)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.arco_server import ARCO_TOKEN, arco_server, run_cli

pytestmark = pytest.mark.timeout(180)

ANN = "ann@x.com"
FUNCTIONS = "/iceberg/v1/main/namespaces/fdb/functions"


def function_body(name: str, **changes: Any) -> dict[str, Any]:
    body = {"name": name, "catalog_name": "main", "schema_name": "fdb",
            "input_params": {"parameters": [
                {"name": "x", "type_text": "int", "type_name": "INT", "position": 0, "type_json": '{"type":"int"}'},
                {"name": "scale", "type_text": "decimal(10,2)", "type_name": "DECIMAL", "position": 1,
                 "type_precision": 10, "type_scale": 2, "type_json": '{"type":"decimal(10,2)"}',
                 "comment": "the factor"}]},
            "data_type": "DOUBLE", "full_data_type": "double", "routine_body": "SQL",
            "routine_definition": "x * scale", "parameter_style": "S", "is_deterministic": True,
            "sql_data_access": "CONTAINS_SQL", "is_null_call": True, "security_type": "DEFINER",
            "specific_name": name, "comment": "scales x", "properties": '{"team": "risk"}'}
    return {**body, **changes}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("functions")
    warehouse = workdir / "warehouse"
    with arco_server(warehouse, workdir, admin_token=ARCO_TOKEN) as server:
        run_cli(warehouse, "user", "create", ANN)
        tokens = {"admin": ARCO_TOKEN, ANN: run_cli(warehouse, "token", "create", ANN).strip()}
        world = {"server": server, "tokens": tokens}
        assert call(world, "admin", "POST", "/iceberg/v1/main/namespaces",
                    json={"namespace": ["fdb"]}).status_code == 200
        for body in (function_body("scale"),
                     function_body("py_inc", routine_body="EXTERNAL", external_language="PYTHON",
                                   sql_data_access="NO_SQL", routine_definition="return x + 1",
                                   data_type="LONG", full_data_type="bigint", is_deterministic=False,
                                   is_null_call=False, comment=None, properties=None),
                     function_body("ages", data_type="TABLE_TYPE", full_data_type="TABLE(name STRING, age INT)",
                                   routine_definition="SELECT 'a', x", comment=None),
                     function_body("odd", data_type="INTERVAL", full_data_type="interval day")):
            made = call(world, "admin", "POST", "/api/2.1/unity-catalog/functions", json={"function_info": body})
            assert made.status_code == 200, made.text
        yield world


def call(world: dict[str, Any], who: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, world["server"].base_url + path, timeout=30,
                         headers={"Authorization": f"Bearer {world['tokens'][who]}"}, **kwargs)


def grant(world: dict[str, Any], kind: str, name: str, *privileges: str) -> None:
    r = call(world, "admin", "PATCH", f"/api/2.1/unity-catalog/permissions/{kind}/{name}",
             json={"changes": [{"principal": ANN, "add": list(privileges)}]})
    assert r.status_code == 200, r.text


def error_of(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status
    return error["type"]


def test_config_advertises_both_function_endpoints(world: dict[str, Any]) -> None:
    endpoints = call(world, "admin", "GET", "/iceberg/v1/config?warehouse=main").json()["endpoints"]
    assert "GET /v1/{prefix}/namespaces/{namespace}/functions" in endpoints
    assert "GET /v1/{prefix}/namespaces/{namespace}/functions/{function}" in endpoints


def test_list_shows_every_function_iceberg_can_express(world: dict[str, Any]) -> None:
    r = call(world, "admin", "GET", FUNCTIONS)
    assert r.status_code == 200, r.text
    # "odd" returns an INTERVAL, which Iceberg cannot express: not listed
    assert r.json() == {"identifiers": [["fdb", "ages"], ["fdb", "py_inc"], ["fdb", "scale"]]}


def test_list_pages(world: dict[str, Any]) -> None:
    seen, token, pages = [], None, 0
    while True:
        params = {"pageSize": "2", **({"pageToken": token} if token else {})}
        body = call(world, "admin", "GET", FUNCTIONS, params=params).json()
        assert len(body["identifiers"]) <= 2
        seen += body["identifiers"]
        pages += 1
        token = body.get("next-page-token")
        if not token:
            break
    assert pages == 2 and seen == [["fdb", "ages"], ["fdb", "py_inc"], ["fdb", "scale"]]
    assert error_of(call(world, "admin", "GET", FUNCTIONS, params={"pageSize": "0"}), 400) == "BadRequestException"
    assert error_of(call(world, "admin", "GET", FUNCTIONS, params={"pageToken": "gA"}), 400) == "BadRequestException"


def test_load_a_sql_function(world: dict[str, Any]) -> None:
    uc = call(world, "admin", "GET", "/api/2.1/unity-catalog/functions/main.fdb.scale").json()
    r = call(world, "admin", "GET", FUNCTIONS + "/scale")
    assert r.status_code == 200, r.text
    metadata = r.json()["metadata"]
    assert metadata["function-uuid"] == uc["function_id"] and metadata["format-version"] == 1
    assert metadata["doc"] == "scales x"
    assert metadata["properties"]["team"] == "risk" and metadata["properties"]["owner"] == "admin"
    [definition] = metadata["definitions"]
    assert definition["definition-id"] == "int,decimal(10,2)"
    assert definition["parameters"] == [{"name": "x", "type": "int"},
                                        {"name": "scale", "type": "decimal(10,2)", "doc": "the factor"}]
    assert definition["return-type"] == "double" and definition["function-type"] == "udf"
    assert definition["specific-name"] == "scale" and definition["current-version-id"] == 1
    [version] = definition["versions"]
    assert version == {"version-id": 1, "representations": [{"type": "sql", "dialect": "spark", "sql": "x * scale"}],
                       "deterministic": True, "on-null-input": "return-null", "timestamp-ms": uc["created_at"]}
    assert metadata["definition-log"] == [{"timestamp-ms": uc["created_at"], "definition-versions": [
        {"definition-id": "int,decimal(10,2)", "version-id": 1}]}]
    assert call(world, "admin", "GET", FUNCTIONS + "/SCALE").json() == r.json()  # names are case-insensitive


def test_load_an_external_and_a_table_function(world: dict[str, Any]) -> None:
    metadata = call(world, "admin", "GET", FUNCTIONS + "/py_inc").json()["metadata"]
    [definition] = metadata["definitions"]
    assert definition["return-type"] == "long" and definition["function-type"] == "udf"
    assert definition["versions"][0]["representations"] == []
    assert definition["versions"][0]["deterministic"] is False
    assert definition["versions"][0]["on-null-input"] == "call"
    assert metadata["properties"]["uc.external-language"] == "PYTHON"
    assert metadata["properties"]["uc.routine-definition"] == "return x + 1"
    assert "doc" not in metadata

    [table_fn] = call(world, "admin", "GET", FUNCTIONS + "/ages").json()["metadata"]["definitions"]
    assert table_fn["function-type"] == "udtf"
    assert table_fn["return-type"] == {"type": "struct", "fields": [{"name": "name", "type": "string"},
                                                                    {"name": "age", "type": "int"}]}


def test_missing_functions_and_namespaces(world: dict[str, Any]) -> None:
    assert error_of(call(world, "admin", "GET", FUNCTIONS + "/nope"), 404) == "NoSuchFunctionException"
    odd = call(world, "admin", "GET", FUNCTIONS + "/odd")
    assert error_of(odd, 404) == "NoSuchFunctionException" and "INTERVAL" in odd.json()["error"]["message"]
    for path in ("/iceberg/v1/main/namespaces/missing/functions",
                 "/iceberg/v1/main/namespaces/missing/functions/scale"):
        assert error_of(call(world, "admin", "GET", path), 404) == "NoSuchNamespaceException"
    assert error_of(call(world, "admin", "GET", "/iceberg/v1/nocat/namespaces/fdb/functions"),
                    404) == "NoSuchWarehouseException"
    # a nested namespace is no UC schema: it holds no functions
    assert call(world, "admin", "POST", "/iceberg/v1/main/namespaces",
                json={"namespace": ["fdb", "inner"]}).status_code == 200
    assert call(world, "admin", "GET", FUNCTIONS.replace("fdb", "fdb%1Finner")).json() == {"identifiers": []}
    assert error_of(call(world, "admin", "GET", FUNCTIONS.replace("fdb", "fdb%1Finner") + "/scale"),
                    404) == "NoSuchFunctionException"


def test_grants_decide_what_a_user_lists_and_loads(world: dict[str, Any]) -> None:
    # nothing granted: not even the catalog
    assert error_of(call(world, ANN, "GET", FUNCTIONS), 403) == "ForbiddenException"
    grant(world, "catalog", "main", "USE_CATALOG")
    assert error_of(call(world, ANN, "GET", FUNCTIONS), 403) == "ForbiddenException"  # no USE_SCHEMA yet
    grant(world, "schema", "main.fdb", "USE_SCHEMA")
    assert call(world, ANN, "GET", FUNCTIONS).json() == {"identifiers": []}
    assert error_of(call(world, ANN, "GET", FUNCTIONS + "/scale"), 403) == "ForbiddenException"
    grant(world, "function", "main.fdb.scale", "EXECUTE")
    assert call(world, ANN, "GET", FUNCTIONS).json() == {"identifiers": [["fdb", "scale"]]}
    loaded = call(world, ANN, "GET", FUNCTIONS + "/scale")
    assert loaded.status_code == 200 and loaded.json() == call(world, "admin", "GET", FUNCTIONS + "/scale").json()
    assert error_of(call(world, ANN, "GET", FUNCTIONS + "/py_inc"), 403) == "ForbiddenException"
    # UC agrees
    assert call(world, ANN, "GET", "/api/2.1/unity-catalog/functions/main.fdb.py_inc").status_code == 403
    assert error_of(call(world, ANN, "GET", FUNCTIONS + "/nope"), 404) == "NoSuchFunctionException"
