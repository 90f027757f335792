"""The pure rules of Iceberg views (arco.iceberg.view_rules): the reference builder's behaviour, checked directly."""

from __future__ import annotations

from typing import Any

import pytest

from arco.iceberg import view_builder as vb
from arco.iceberg import view_rules as vr
from arco.iceberg.errors import BadRequest, CommitFailed

UUID = "3b8e8d7e-7f7c-4f43-9a55-0b0f5d1b8c11"
S1 = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"}]}
S2 = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "required": False, "type": "long"},
                                                   {"id": 2, "name": "y", "required": False, "type": "string"}]}


def version(sql: str, dialect: str = "spark", schema_id: int = 0, **extra: Any) -> dict[str, Any]:
    return {"version-id": 1, "schema-id": schema_id, "timestamp-ms": 1000, "summary": {},
            "representations": [{"type": "sql", "sql": sql, "dialect": dialect}], "default-namespace": ["db"],
            **extra}


def created(sql: str = "SELECT 1 x", properties: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    request = vr.parse_create({"name": "v", "schema": S1, "view-version": version(sql),
                               "properties": properties or {}})
    return vr.new_view_metadata(UUID, "file:///wh/db/v", request, now_ms=5000)


def updates(*raw: dict[str, Any]) -> list[vr.ViewUpdate]:
    return vr.parse_updates(list(raw))


def replace(sql: str, dialect: str = "spark", schema: dict = S2) -> list[vr.ViewUpdate]:
    return updates({"action": "add-schema", "schema": schema},
                   {"action": "add-view-version", "view-version": version(sql, dialect, schema_id=-1)},
                   {"action": "set-current-view-version", "view-version-id": -1})


def test_a_new_view_has_one_schema_one_version_and_one_log_entry() -> None:
    metadata = created()
    assert metadata.view_uuid == UUID and metadata.format_version == 1 and metadata.current_version_id == 1
    assert [s.schema_id for s in metadata.schemas] == [0]
    assert [(h.version_id, h.timestamp_ms) for h in metadata.version_log] == [(1, 1000)]


def test_replace_adds_a_schema_and_a_version_with_minus_one_meaning_last_added() -> None:
    new = vr.apply_updates(created(), replace("SELECT 1 x, 'a' y"), now_ms=9000)
    assert new is not None and new.current_version_id == 2
    assert [s.schema_id for s in new.schemas] == [0, 1] and new.versions[1].schema_id == 1
    assert [h.version_id for h in new.version_log] == [1, 2]


def test_an_equal_schema_and_version_are_reused() -> None:
    base = created()
    same = vr.apply_updates(base, replace("SELECT 1 x", schema=S1), now_ms=9000)
    assert same is None  # nothing changes: no new file


def test_going_back_to_an_older_version_logs_it_with_the_time_of_the_change() -> None:
    second = vr.apply_updates(created(), replace("SELECT 2 x, 'b' y"), now_ms=9000)
    assert second is not None
    back = vr.apply_updates(second, updates({"action": "set-current-view-version", "view-version-id": 1}),
                            now_ms=12345)
    assert back is not None and back.current_version_id == 1
    assert (back.version_log[-1].version_id, back.version_log[-1].timestamp_ms) == (1, 12345)


def test_properties_set_and_removed() -> None:
    new = vr.apply_updates(created(properties={"a": "1", "b": "2"}), updates(
        {"action": "set-properties", "updates": {"c": "3"}}, {"action": "remove-properties", "removals": ["a"]}),
        now_ms=1)
    assert new is not None and new.properties == {"b": "2", "c": "3"}


@pytest.mark.parametrize("raw,fragment", [
    ({"action": "nope"}, "unknown view update action"),
    ({"action": "add-snapshot"}, "unknown view update action"),
    ({"action": "add-view-version", "view-version": {**version("x"), "representations": []}}, "query"),
    ({"action": "add-view-version", "view-version": {**version("x"), "representations": [
        {"type": "sql", "sql": "a", "dialect": "spark"}, {"type": "sql", "sql": "b", "dialect": "SPARK"}]}},
     "multiple queries for dialect spark"),
    ({"action": "add-view-version", "view-version": {**version("x"), "representations": [
        {"type": "other", "sql": "a", "dialect": "spark"}]}}, "unsupported"),
    ({"action": "add-view-version", "view-version": {**version("x"), "representations": [
        {"type": "sql", "sql": "a"}]}}, "Invalid dialect: null"),
    ({"action": "set-properties", "updates": {"arco.x": "1"}}, "reserved"),
    ({"action": "set-properties", "updates": {"a": 1}}, "string values"),
    ({"action": "upgrade-format-version", "format-version": "1"}, "integer"),
])
def test_malformed_updates_are_400(raw: dict, fragment: str) -> None:
    with pytest.raises(BadRequest, match=fragment):
        vr.parse_updates([raw])


@pytest.mark.parametrize("raw,fragment", [
    ({"action": "set-location", "location": "file:///elsewhere"}, "set-location"),
    ({"action": "set-current-view-version", "view-version-id": 9}, "unknown version: 9"),
    ({"action": "set-current-view-version", "view-version-id": -1}, "no current version id has been set"),
    ({"action": "add-view-version", "view-version": version("x", schema_id=-1)}, "no schema has been added"),
    ({"action": "add-view-version", "view-version": version("x", schema_id=4)}, "unknown schema: 4"),
    ({"action": "assign-uuid", "uuid": "6b9a1f1e-1111-4a4a-9b9b-000000000000"}, "reassign"),
    ({"action": "upgrade-format-version", "format-version": 2}, "Unsupported format version"),
    ({"action": "upgrade-format-version", "format-version": 0}, "downgrade"),
])
def test_updates_that_cannot_apply_are_400(raw: dict, fragment: str) -> None:
    with pytest.raises(BadRequest, match=fragment):
        vr.apply_updates(created(), vr.parse_updates([raw]), now_ms=1)


def test_set_location_to_the_same_place_and_assign_of_the_same_uuid_change_nothing() -> None:
    assert vr.apply_updates(created(), updates({"action": "set-location", "location": "file:///wh/db/v/"},
                                               {"action": "assign-uuid", "uuid": UUID},
                                               {"action": "upgrade-format-version", "format-version": 1}),
                            now_ms=1) is None


def test_dropping_a_dialect_needs_the_property() -> None:
    with pytest.raises(BadRequest, match="loss of view dialects"):
        vr.apply_updates(created(), replace("SELECT 1", dialect="trino"), now_ms=1)
    allowed = created(properties={vb.REPLACE_DROP_DIALECT_ALLOWED: "true"})
    assert vr.apply_updates(allowed, replace("SELECT 1", dialect="trino"), now_ms=1) is not None


def test_only_the_configured_number_of_versions_is_kept() -> None:
    metadata = created(properties={vb.VERSION_HISTORY_SIZE: "2"})
    for i in range(4):
        new = vr.apply_updates(metadata, replace(f"SELECT {i} x, 'y' y"), now_ms=100 + i)
        assert new is not None
        metadata = new
    assert [v.version_id for v in metadata.versions] == [5, 4]
    assert [h.version_id for h in metadata.version_log] == [4, 5]


def test_requirements() -> None:
    base = created()
    vr.check_requirements(vr.parse_requirements([{"type": "assert-view-uuid", "uuid": UUID}]), base)
    with pytest.raises(CommitFailed):
        vr.check_requirements(vr.parse_requirements([{"type": "assert-view-uuid", "uuid": "other"}]), base)
    with pytest.raises(BadRequest, match="unknown view requirement"):
        vr.parse_requirements([{"type": "assert-table-uuid", "uuid": UUID}])


@pytest.mark.parametrize("body,fragment", [
    ({"name": "v", "view-version": version("x")}, "schema"),
    ({"name": "v", "schema": S1}, "view version"),
    ({"name": "v", "schema": S1, "view-version": {k: v for k, v in version("x").items()
                                                    if k != "default-namespace"}}, "default namespace"),
    ({"name": "v", "schema": S1, "view-version": version("x"), "properties": {"arco.a": "b"}}, "reserved"),
])
def test_bad_creates(body: dict, fragment: str) -> None:
    with pytest.raises(BadRequest, match=fragment):
        vr.parse_create(body)


def test_the_definition_unity_catalog_shows_prefers_spark() -> None:
    request = vr.parse_create({"name": "v", "schema": S1, "view-version": {**version("x"), "representations": [
        {"type": "sql", "sql": "trino sql", "dialect": "trino"}, {"type": "sql", "sql": "spark sql",
                                                                  "dialect": "spark"}]}})
    sql, schema = vr.view_definition(vr.new_view_metadata(UUID, "file:///wh/v", request, 1))
    assert sql == "spark sql" and schema is not None and schema.fields[0].name == "x"
    request = vr.parse_create({"name": "v", "schema": S1, "view-version": version("only trino", "trino")})
    assert vr.view_definition(vr.new_view_metadata(UUID, "file:///wh/v", request, 1))[0] == "only trino"
