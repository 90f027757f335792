"""A Unity Catalog create that landed is answered 200 with what it made, even when another server drops the new
object between the create's commit and its read-back (a 500 would tell the client the outcome is unknown)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from arco.auth.principals import BOOTSTRAP_ADMIN
from arco.catalog.bootstrap import initialise_warehouse
from arco.catalog.state import CatalogState, Operation
from arco.catalog.store import CatalogStore
from arco.iceberg.tables import TableService
from arco.storage.local import LocalBackend
from arco.unity.functions import FunctionService
from arco.unity.models import ModelService
from arco.unity.service import UnityService
from arco.unity.volumes import VolumeService

ADMIN = BOOTSTRAP_ADMIN


class DroppedBeforeTheAnswer(CatalogStore):
    """A server whose next create is dropped by another server (``drop``) as soon as it has landed."""

    drop: Callable[[Operation], None] | None = None

    def execute(self, build: Callable[[CatalogState], Operation], **kwargs: Any) -> Operation:
        op = super().execute(build, **kwargs)
        drop, self.drop = self.drop, None
        if drop is not None:
            drop(op)
        return op


@pytest.fixture
def servers(tmp_path: Path) -> tuple[DroppedBeforeTheAnswer, dict[str, Any]]:
    storage = LocalBackend(str(tmp_path / "warehouse"))
    racing = DroppedBeforeTheAnswer(storage)
    initialise_warehouse(storage, admin_token=False, store=racing)
    other_store = CatalogStore(storage)
    tables = TableService(other_store, storage)
    other = {"unity": UnityService(other_store, tables), "volumes": VolumeService(other_store, tables),
             "functions": FunctionService(other_store), "models": ModelService(other_store, tables)}
    other["unity"].create_schema({"name": "s", "catalog_name": "main"}, ADMIN)
    return racing, other


def test_each_create_is_answered_as_made_though_dropped_at_once(servers: tuple[DroppedBeforeTheAnswer,
                                                                                 dict[str, Any]]) -> None:
    racing, other = servers
    tables = TableService(racing, racing.storage)
    unity, volumes, functions = UnityService(racing, tables), VolumeService(racing, tables), FunctionService(racing)
    column = {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0}

    racing.drop = lambda op: other["unity"].delete_catalog("gone", True, ADMIN)
    assert unity.create_catalog({"name": "gone"}, ADMIN)["name"] == "gone"

    racing.drop = lambda op: other["unity"].delete_schema("main.brief", True, ADMIN)
    assert unity.create_schema({"name": "brief", "catalog_name": "main"}, ADMIN)["full_name"] == "main.brief"

    racing.drop = lambda op: other["unity"].delete_table("main.s.t", ADMIN)
    table = unity.create_table({"name": "t", "catalog_name": "main", "schema_name": "s", "table_type": "MANAGED",
                                "data_source_format": "DELTA", "columns": [column]}, ADMIN)
    assert table["full_name"] == "main.s.t" and table["columns"][0]["name"] == "id"

    racing.drop = lambda op: other["volumes"].delete("main.s.v", ADMIN)
    volume = volumes.create({"name": "v", "catalog_name": "main", "schema_name": "s", "volume_type": "MANAGED"},
                            ADMIN)
    assert volume["full_name"] == "main.s.v"

    racing.drop = lambda op: other["functions"].delete("main.s.f", ADMIN)
    function = functions.create({"function_info": {
        "name": "f", "catalog_name": "main", "schema_name": "s", "data_type": "INT", "full_data_type": "int",
        "routine_body": "SQL", "routine_definition": "1", "parameter_style": "S", "is_deterministic": True,
        "sql_data_access": "NO_SQL", "is_null_call": False, "security_type": "DEFINER", "specific_name": "f",
        "input_params": {"parameters": []}}}, ADMIN)
    assert function["full_name"] == "main.s.f"

    racing.drop = lambda op: other["models"].delete("main.s.m", True, ADMIN)
    model = ModelService(racing, tables).create({"name": "m", "catalog_name": "main", "schema_name": "s"}, ADMIN)
    assert model["full_name"] == "main.s.m"

    with racing.read() as state:  # every one of them is gone: the answers were not read back from the catalog
        assert "gone" not in [c.name for c in state.catalogs.values()]
        assert not any(n.path == ("brief",) for n in state.namespaces.values())
