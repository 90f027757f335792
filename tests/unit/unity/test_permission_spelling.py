"""How a reader of the Permissions API reads privileges (pure): the 2.1 spec's enum for the OSS clients and plain
HTTP, Databricks' for its SDKs, as granted on 2.0."""

from __future__ import annotations

import pytest

from arco.unity.permissions import spelled, spelling_for


@pytest.mark.parametrize(("path", "agent", "spelling"), [
    ("/api/2.1/unity-catalog/permissions/catalog/c", "databricks-sdk-py/0.40.0 python/3.11.7 os/linux", "databricks"),
    ("/api/2.1/unity-catalog/permissions/catalog/c", "OpenAPI-Generator/0.3.0/python", "oss"),
    ("/api/2.1/unity-catalog/permissions/catalog/c", None, "oss"),
    ("/api/2.0/unity-catalog/permissions/catalog/c", "databricks-sdk-py/0.40.0", "as_granted"),
])
def test_the_reader_decides_the_spelling(path: str, agent: str | None, spelling: str) -> None:
    assert spelling_for(path, agent) == spelling


def test_every_spelling_of_a_grant_reads_back_once_in_the_reader_s() -> None:
    granted = ["USE_CATALOG", "USE CATALOG", "usage", "CREATE SCHEMA", "ALL_PRIVILEGES"]
    assert spelled("catalog", granted, "oss") == ["CREATE SCHEMA", "USE CATALOG"]  # ALL_PRIVILEGES is no more here
    assert spelled("catalog", granted, "databricks") == ["ALL_PRIVILEGES", "CREATE_SCHEMA", "USE_CATALOG"]
    assert spelled("catalog", granted, "as_granted") == sorted(granted)
    assert spelled("schema", ["USAGE", "CREATE"], "oss") == ["CREATE TABLE", "USE SCHEMA"]  # 2.0's names, current
    assert spelled("external_location", ["READ_FILES"], "oss") == ["READ FILES"]


def test_an_oss_reader_gets_what_all_privileges_amounts_to_and_nothing_its_enum_cannot_name() -> None:
    assert spelled("table", ["ALL_PRIVILEGES"], "oss") == ["MODIFY", "SELECT"]
    assert spelled("schema", ["ALL_PRIVILEGES"], "oss") == ["CREATE FUNCTION", "CREATE MODEL", "CREATE TABLE",
                                                            "CREATE VOLUME", "MODIFY", "USE SCHEMA"]
    assert spelled("volume", ["WRITE_VOLUME", "READ_VOLUME"], "oss") == ["READ VOLUME"]
    assert spelled("metastore", ["CREATE_SHARE", "CREATE_CATALOG"], "oss") == ["CREATE CATALOG"]
    assert spelled("table", ["ALL_PRIVILEGES"], "databricks") == ["ALL_PRIVILEGES"]
    assert spelled("metastore", ["CREATE_SHARE"], "databricks") == ["CREATE_SHARE"]
