"""The authorization engine as a decision table: who may do what, with no inheritance and no DENY."""

from __future__ import annotations

import pytest

from arco.auth import decisions as d
from arco.auth.decisions import Securable, Subject

ADMIN = Subject("root@x", metastore_admin=True)
ACCOUNT_ADMIN = Subject("boss@x", account_admin=True)
OWNER = Subject("owner@x")
GRANTEE = Subject("ann@x", groups=frozenset({"analysts", "account users"}))
STRANGER = Subject("eve@x", groups=frozenset({"account users"}))

CATALOG = Securable("owner@x", {"analysts": ["USE_CATALOG"]})
SCHEMA = Securable("owner@x", {"ann@x": ["USAGE", "CREATE"]})
TABLE = Securable("owner@x", {"analysts": ["SELECT"]})
BARE = Securable("owner@x", {})
CREDENTIAL = Securable("owner@x", {"analysts": ["CREATE EXTERNAL LOCATION"]})


@pytest.mark.parametrize(("decision", "expected"), [
    # who:                          admin  account_admin  owner  grantee  stranger
    (lambda s: d.can_use_catalog(s, CATALOG), (True, True, True, True, False)),
    (lambda s: d.can_create_schema(s, CATALOG), (True, True, True, False, False)),
    (lambda s: d.can_see_schema(s, CATALOG, SCHEMA), (True, True, True, True, False)),
    (lambda s: d.can_create_table(s, CATALOG, SCHEMA), (False, True, True, True, False)),
    (lambda s: d.can_read_table(s, CATALOG, SCHEMA, TABLE), (True, True, True, True, False)),
    (lambda s: d.can_modify_table(s, CATALOG, SCHEMA, TABLE), (False, True, True, False, False)),
    (lambda s: d.can_delete_table(s, CATALOG, SCHEMA, TABLE), (False, True, True, False, False)),
    (lambda s: d.can_delete_catalog(s, CATALOG), (False, True, True, False, False)),
    (lambda s: d.can_manage_grants(s, TABLE), (True, True, True, False, False)),
    (lambda s: d.can_update_catalog(s, CATALOG, owner_only=True, renames=False), (True, True, True, False, False)),
    (lambda s: d.can_update_catalog(s, CATALOG, owner_only=False, renames=False), (False, True, True, False, False)),
    (lambda s: d.can_use_credential_for_location(s, CREDENTIAL), (True, True, True, True, False)),
    (lambda s: d.can_use_credential_for_location(s, BARE), (True, True, True, False, False)),
])
def test_decision_table(decision, expected: tuple[bool, ...]) -> None:  # type: ignore[no-untyped-def]
    got = tuple(decision(s) for s in (ADMIN, ACCOUNT_ADMIN, OWNER, GRANTEE, STRANGER))
    assert got == expected


def test_no_inheritance_from_catalog_to_table() -> None:
    everything_on_catalog = Securable("owner@x", {"eve@x": ["USAGE", "CREATE"]})
    assert not d.can_read_table(STRANGER, everything_on_catalog, SCHEMA, BARE)


def test_groups_and_account_users_carry_grants() -> None:
    public = Securable("owner@x", {"account users": ["SELECT", "USAGE"]})
    assert d.can_read_table(STRANGER, public, public, public)
    assert d.holds(GRANTEE, TABLE, "SELECT") and not d.holds(STRANGER, TABLE, "SELECT")


def test_a_group_can_own() -> None:
    owned_by_group = Securable("analysts", {})
    assert d.owns(GRANTEE, owned_by_group) and not d.owns(STRANGER, owned_by_group)


def test_all_privileges_and_aliases() -> None:
    all_of_it = Securable("owner@x", {"eve@x": ["ALL_PRIVILEGES"]})
    assert d.holds(STRANGER, all_of_it, "MODIFY")
    assert d.holds(GRANTEE, CATALOG, "USAGE")  # USE_CATALOG is USAGE


@pytest.mark.parametrize(("securable_type", "privileges"), [
    ("schema", ["SELECT"]), ("table", ["USAGE"]), ("catalog", ["READ_FILES"]), ("nonsense", ["USAGE"]),
])
def test_privileges_that_do_not_apply_are_refused(securable_type: str, privileges: list[str]) -> None:
    with pytest.raises(d.InvalidPrivilege):
        d.check_privileges(securable_type, privileges)


def test_privileges_are_upper_cased() -> None:
    assert d.check_privileges("table", ["select", "Modify"]) == ["SELECT", "MODIFY"]


def test_the_oss_spelling_with_spaces_is_the_same_privilege() -> None:
    assert d.check_privileges("catalog", ["USE CATALOG"]) == ["USE CATALOG"]
    spaced = Securable("owner@x", {"eve@x": ["USE CATALOG"]})
    assert d.can_use_catalog(STRANGER, spaced)
    with pytest.raises(d.InvalidPrivilege):
        d.check_privileges("table", ["USE CATALOG"])


VOLUME = Securable("owner@x", {"analysts": ["READ_VOLUME"]})
CREATOR_SCHEMA = Securable("owner@x", {"ann@x": ["USE_SCHEMA", "CREATE_VOLUME"], "analysts": ["CREATE_TABLE"]})


@pytest.mark.parametrize(("decision", "expected"), [
    # who:                          admin  account_admin  owner  grantee  stranger
    (lambda s: d.can_create_in_schema(s, CATALOG, CREATOR_SCHEMA, "CREATE_VOLUME"), (False, True, True, True, False)),
    # CREATE_TABLE (and the legacy CREATE) do not stand in for CREATE_FUNCTION / CREATE_MODEL
    (lambda s: d.can_create_in_schema(s, CATALOG, SCHEMA, "CREATE_FUNCTION"), (False, True, True, False, False)),
    (lambda s: d.can_create_in_schema(s, CATALOG, CREATOR_SCHEMA, "CREATE_MODEL"), (False, True, True, False, False)),
    (lambda s: d.can_use_object(s, CATALOG, SCHEMA, VOLUME, "READ_VOLUME"), (True, True, True, True, False)),
    (lambda s: d.can_use_object(s, CATALOG, SCHEMA, VOLUME, "EXECUTE"), (True, True, True, False, False)),
    (lambda s: d.can_update_object(s, CATALOG, SCHEMA, VOLUME, owner_only=False, renames=False,
                                   create_privilege="CREATE_VOLUME"), (False, True, True, False, False)),
    (lambda s: d.can_update_object(s, CATALOG, SCHEMA, VOLUME, owner_only=True, renames=False,
                                   create_privilege="CREATE_VOLUME"), (False, True, True, False, False)),
    (lambda s: d.can_delete_object(s, CATALOG, SCHEMA, VOLUME), (True, True, True, False, False)),
    (lambda s: d.can_list_in_schema(s, CATALOG, SCHEMA), (True, True, True, True, False)),
    (lambda s: d.can_see_table_exists(s, CATALOG, SCHEMA, TABLE), (True, True, True, True, False)),
    (lambda s: d.can_see_table_exists(s, CATALOG, SCHEMA, BARE), (True, True, True, False, False)),
    (lambda s: d.can_see_table_exists(s, CATALOG, SCHEMA, None), (True, True, True, True, False)),
    (lambda s: d.can_read_effective_grants(s, TABLE, None), (True, True, True, False, False)),
    (lambda s: d.can_read_effective_grants(s, TABLE, "analysts"), (True, True, True, True, False)),
    (lambda s: d.can_read_effective_grants(s, TABLE, "ann@x"), (True, True, True, True, False)),
])
def test_schema_objects_decision_table(decision, expected: tuple[bool, ...]) -> None:  # type: ignore[no-untyped-def]
    got = tuple(decision(s) for s in (ADMIN, ACCOUNT_ADMIN, OWNER, GRANTEE, STRANGER))
    assert got == expected


def test_new_securable_types_take_their_privileges() -> None:
    assert d.check_privileges("volume", ["READ VOLUME", "WRITE_VOLUME"]) == ["READ VOLUME", "WRITE_VOLUME"]
    assert d.check_privileges("external_location", ["CREATE_EXTERNAL_VOLUME"]) == ["CREATE_EXTERNAL_VOLUME"]
    assert d.check_privileges("schema", ["CREATE_VOLUME", "CREATE FUNCTION", "CREATE_MODEL"])
    for kind, privilege in [("volume", "SELECT"), ("function", "READ_VOLUME"), ("registered_model", "MODIFY")]:
        with pytest.raises(d.InvalidPrivilege):
            d.check_privileges(kind, [privilege])


@pytest.mark.parametrize("privileges", [1, True, "SELECT", [5], [None], {"SELECT": 1}])
def test_privileges_that_are_not_a_list_of_names_are_refused(privileges: object) -> None:
    with pytest.raises(d.InvalidPrivilege, match="list of privilege names"):
        d.check_privileges("table", privileges)  # type: ignore[arg-type]
