"""Rules every Unity Catalog securable's create and update follow (pure): an empty comment is no comment, a new
owner must be a principal, and an Iceberg table's last change is its metadata's when that is later."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from arco.catalog.access import PrincipalEntry
from arco.catalog.model import TableEntry
from arco.unity.common import comment_of, known_principal, owner_in
from arco.unity.errors import UnityError
from arco.unity.infos import check_columns, check_view_dependencies, last_change


@pytest.mark.parametrize(("body", "comment"), [
    ({"comment": ""}, None), ({"comment": None}, None), ({}, None), ({"comment": "kept"}, "kept"),
])
def test_an_empty_comment_is_no_comment(body: dict[str, Any], comment: str | None) -> None:
    assert comment_of(body) == comment


def test_a_comment_that_is_not_text_is_refused() -> None:
    with pytest.raises(UnityError) as refused:
        comment_of({"comment": 5})
    assert refused.value.status == 400


def state_with(*names: str) -> Any:
    return SimpleNamespace(principals={n.casefold(): PrincipalEntry(name=n, kind="user", id=n) for n in names})


@pytest.mark.parametrize("owner", ["ann@x.com", "ANN@x.com", "account users", "admin"])
def test_users_groups_and_the_bootstrap_admin_may_own(owner: str) -> None:
    state = state_with("ann@x.com")
    assert known_principal(state, owner)
    assert owner_in(state, {"owner": owner}) == owner


@pytest.mark.parametrize(("body", "fragment"), [
    ({"owner": "ghost@x.com"}, "principal 'ghost@x.com' does not exist"),
    ({"owner": ""}, "non-empty"),
    ({"owner": 7}, "non-empty"),
])
def test_an_owner_that_is_no_principal_is_refused(body: dict[str, Any], fragment: str) -> None:
    with pytest.raises(UnityError) as refused:
        owner_in(state_with("ann@x.com"), body)
    assert (refused.value.status, refused.value.error_type) == (400, "INVALID_PARAMETER_VALUE")
    assert fragment in refused.value.message


def test_no_owner_asked_for_is_no_change() -> None:
    assert owner_in(state_with(), {"comment": "c", "owner": None}) is None


def table(updated_at_ms: int, updated_by: str | None = None) -> TableEntry:
    return TableEntry(id="t", catalog_id="c", namespace=("s",), name="t", kind="TABLE", format="ICEBERG",
                      location="file:///t", owner="olga",
                      created_at_ms=100, updated_at_ms=updated_at_ms, updated_by=updated_by)


@pytest.mark.parametrize(("entry", "elsewhere", "expected"), [
    (table(100), None, (100, "olga")),  # not an Iceberg table, or its metadata unread
    (table(100), (900, "ann"), (900, "ann")),  # an Iceberg commit after the creation
    (table(100), (900, None), (900, "olga")),  # ... by someone the pointer does not name
    (table(1000, "eve"), (900, "ann"), (1000, "eve")),  # a UC change after the last commit
    (table(100), (None, None), (100, "olga")),
])
def test_an_iceberg_table_s_last_change_is_the_later_of_uc_s_and_its_metadata_s(
        entry: TableEntry, elsewhere: tuple[int | None, str | None] | None, expected: tuple[int, str]) -> None:
    assert last_change(entry, elsewhere) == expected


def test_view_dependencies_are_kept_as_given_when_well_formed() -> None:
    given = {"dependencies": [{"table": {"table_full_name": "a.b.c"}}, {"function": {"function_full_name": "a.b.f"}}]}
    assert check_view_dependencies(given) == given
    assert check_view_dependencies(None) is None
    assert check_view_dependencies({}) == {"dependencies": []}


@pytest.mark.parametrize("raw", [
    [], "a.b.c", {"dependencies": {}}, {"dependencies": [], "extra": 1},
    {"dependencies": [{"table": {"table_full_name": "b.c"}}]},  # not a full name
    {"dependencies": [{"table": {"table_full_name": "a..c"}}]},
    {"dependencies": [{"table": {"table_full_name": "a.b.c\n"}}]},
    {"dependencies": [{"table": {"function_full_name": "a.b.c"}}]},  # the other kind's field
    {"dependencies": [{"table": {"table_full_name": "a.b.c"}, "function": {"function_full_name": "a.b.f"}}]},
    {"dependencies": [{"view": {"table_full_name": "a.b.c"}}]},
    {"dependencies": [{"table": {"table_full_name": 5}}]},
    {"dependencies": [{"table": {"table_full_name": "a.b.c"}}] * 1001},
])
def test_malformed_view_dependencies_are_refused(raw: Any) -> None:
    with pytest.raises(UnityError) as refused:
        check_view_dependencies(raw)
    assert refused.value.status == 400


COLUMN = {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "nullable": False,
          "type_json": '{"name":"id","type":"long","nullable":false,"metadata":{}}'}


def test_well_typed_columns_are_kept() -> None:
    [kept] = check_columns([COLUMN | {"type_precision": 0, "type_scale": 0, "partition_index": 1, "comment": "c"}])
    assert kept["position"] == 0 and kept["nullable"] is False and kept["partition_index"] == 1


@pytest.mark.parametrize("change, field", [
    ({"position": "0"}, "position"), ({"position": -1}, "position"), ({"position": True}, "position"),
    ({"nullable": "yes"}, "nullable"), ({"nullable": 1}, "nullable"), ({"type_precision": "x"}, "type_precision"),
    ({"type_scale": 2**31}, "type_scale"), ({"partition_index": 1.5}, "partition_index"),
    ({"type_text": 5}, "type_text"), ({"comment": ["c"]}, "comment"), ({"type_json": "not json"}, "type_json"),
])
def test_a_column_field_of_the_wrong_type_is_refused(change: dict[str, Any], field: str) -> None:
    with pytest.raises(UnityError) as refused:
        check_columns([COLUMN | change])
    assert refused.value.status == 400 and f"columns[0].{field}" in str(refused.value)
