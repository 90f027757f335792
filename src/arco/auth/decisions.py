"""The authorization engine (pure): Unity Catalog's allowlist model, used by the UC and Iceberg REST surfaces.

No inheritance from catalog to schema to table, no DENY. A principal holds a privilege on a securable if the
privilege was granted to it, to a group it belongs to (nested groups count), or to ``account users``. The owner
of a securable (a user, or a group the caller belongs to) holds every privilege on it. Metastore admins (the
metastore's owner and account admins) may do everything the spec lets them do; account admins may do everything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Privileges per securable type, with the current names clients also send (aliases of the spec's names).
PRIVILEGES: dict[str, frozenset[str]] = {
    "metastore": frozenset({"CREATE_CATALOG", "CREATE_EXTERNAL_LOCATION", "CREATE_STORAGE_CREDENTIAL",
                            "CREATE_SHARE", "CREATE_RECIPIENT", "CREATE_PROVIDER", "USE_PROVIDER", "USE_RECIPIENT",
                            "USE_SHARE", "CREATE"}),
    "catalog": frozenset({"USAGE", "USE_CATALOG", "CREATE", "CREATE_SCHEMA", "ALL_PRIVILEGES"}),
    "schema": frozenset({"USAGE", "USE_SCHEMA", "CREATE", "CREATE_TABLE", "MODIFY", "CREATE_VOLUME",
                         "CREATE_FUNCTION", "CREATE_MODEL", "ALL_PRIVILEGES"}),
    "table": frozenset({"SELECT", "MODIFY", "ALL_PRIVILEGES"}),
    "volume": frozenset({"READ_VOLUME", "WRITE_VOLUME", "ALL_PRIVILEGES"}),
    "function": frozenset({"EXECUTE", "ALL_PRIVILEGES"}),
    "registered_model": frozenset({"EXECUTE", "APPLY_TAG", "ALL_PRIVILEGES"}),
    "storage_credential": frozenset({"READ_FILES", "WRITE_FILES", "CREATE_TABLE", "CREATE_EXTERNAL_TABLE",
                                     "CREATE_EXTERNAL_LOCATION", "ALL_PRIVILEGES"}),
    "external_location": frozenset({"READ_FILES", "WRITE_FILES", "CREATE_TABLE", "CREATE_EXTERNAL_TABLE",
                                    "CREATE_EXTERNAL_VOLUME", "ALL_PRIVILEGES"}),
}
ALIASES = {"USE_CATALOG": "USAGE", "USE_SCHEMA": "USAGE", "CREATE_SCHEMA": "CREATE", "CREATE_TABLE": "CREATE",
           "CREATE_EXTERNAL_TABLE": "CREATE_TABLE"}


class InvalidPrivilege(ValueError):
    pass


def canonical(privilege: str) -> str:
    """``USE CATALOG`` (the OSS client's spelling) and ``use_catalog`` are ``USE_CATALOG``."""
    return str(privilege).strip().upper().replace(" ", "_")


def check_privileges(securable_type: str, privileges: Sequence[str]) -> list[str]:
    """The privileges, upper-cased and spelled as the client spelled them (a client reads back what it wrote),
    if each applies to the securable type; else :class:`InvalidPrivilege`."""
    allowed = PRIVILEGES.get(securable_type)
    if allowed is None:
        raise InvalidPrivilege(f"unknown securable type {securable_type!r}; one of {sorted(PRIVILEGES)}")
    if not isinstance(privileges, (list, tuple)) or not all(isinstance(p, str) for p in privileges):
        raise InvalidPrivilege("privileges must be a list of privilege names")
    checked = []
    for privilege in privileges:
        name = privilege.strip().upper()
        if canonical(name) not in allowed:
            raise InvalidPrivilege(f"privilege {privilege!r} does not apply to a {securable_type.replace('_', ' ')}; "
                                   f"valid: {sorted(allowed)}")
        checked.append(name)
    return checked


@dataclass(frozen=True)
class Subject:
    """The caller as the engine sees it: its name, every group it is in, and its admin roles."""

    name: str
    groups: frozenset[str] = frozenset()
    metastore_admin: bool = False
    account_admin: bool = False

    def identities(self) -> frozenset[str]:
        return frozenset({self.name.casefold()}) | self.groups


Grants = Mapping[str, Sequence[str]]  # principal (case-folded) -> privileges


@dataclass(frozen=True)
class Securable:
    owner: str
    grants: Grants


def owns(subject: Subject, securable: Securable) -> bool:
    return securable.owner.casefold() in subject.identities()


def holds(subject: Subject, securable: Securable, privilege: str) -> bool:
    """Owner, or granted ``privilege`` (or an alias of it, or ALL_PRIVILEGES) directly or through a group."""
    if owns(subject, securable):
        return True
    for identity in subject.identities():
        for spelled in securable.grants.get(identity, ()):
            held = canonical(spelled)
            if held == privilege or held == "ALL_PRIVILEGES" or ALIASES.get(held) == privilege:
                return True
    return False


def admin(subject: Subject) -> bool:
    return subject.metastore_admin or subject.account_admin


# -- catalogs --------------------------------------------------------------------------------------------------

def can_create_catalog(s: Subject, metastore: Securable) -> bool:
    return admin(s) or holds(s, metastore, "CREATE_CATALOG") or holds(s, metastore, "CREATE")


def can_use_catalog(s: Subject, catalog: Securable) -> bool:
    """getCatalog, and the parent-catalog access every schema and table operation needs."""
    return admin(s) or holds(s, catalog, "USAGE")


def can_update_catalog(s: Subject, catalog: Securable, *, owner_only: bool, renames: bool) -> bool:
    if renames:
        return s.account_admin or (owns(s, catalog) and admin(s))
    return s.account_admin or owns(s, catalog) or (admin(s) and owner_only)


def can_delete_catalog(s: Subject, catalog: Securable) -> bool:
    return s.account_admin or owns(s, catalog)


# -- schemas ---------------------------------------------------------------------------------------------------

def can_create_schema(s: Subject, catalog: Securable) -> bool:
    return can_use_catalog(s, catalog) and (admin(s) or holds(s, catalog, "CREATE"))


def can_see_schema(s: Subject, catalog: Securable, schema: Securable) -> bool:
    return can_use_catalog(s, catalog) and (admin(s) or owns(s, catalog) or holds(s, schema, "USAGE"))


def can_update_schema(s: Subject, catalog: Securable, schema: Securable, *, owner_only: bool,
                      renames: bool) -> bool:
    if s.account_admin:
        return True
    if not can_use_catalog(s, catalog):
        return False
    allowed = owns(s, schema) or (admin(s) and owner_only)
    return allowed and (not renames or admin(s) or holds(s, catalog, "CREATE"))


def can_delete_schema(s: Subject, catalog: Securable, schema: Securable) -> bool:
    return s.account_admin or owns(s, schema) or owns(s, catalog)


# -- tables ----------------------------------------------------------------------------------------------------

def _parents(s: Subject, catalog: Securable, schema: Securable) -> bool:
    """Ownership of, or USAGE on, the parent catalog and schema (required even of metastore admins)."""
    return holds(s, catalog, "USAGE") and holds(s, schema, "USAGE")


def can_reach_tables(s: Subject, catalog: Securable, schema: Securable) -> bool:
    """Whether a lookup of a table in this schema may be answered at all: one who may neither use the schema nor
    administer the metastore is refused (403) whether the table exists or not, so a lookup tells no names."""
    return admin(s) or _parents(s, catalog, schema)


def can_create_table(s: Subject, catalog: Securable, schema: Securable) -> bool:
    return s.account_admin or (_parents(s, catalog, schema) and holds(s, schema, "CREATE"))


def can_read_table(s: Subject, catalog: Securable, schema: Securable, table: Securable) -> bool:
    return admin(s) or (_parents(s, catalog, schema) and holds(s, table, "SELECT"))


def can_modify_table(s: Subject, catalog: Securable, schema: Securable, table: Securable) -> bool:
    """Committing to an Iceberg table (Iceberg REST); UC updateTable has its own rule below."""
    return s.account_admin or (_parents(s, catalog, schema) and holds(s, table, "MODIFY"))


def can_read_and_modify_table(s: Subject, catalog: Securable, schema: Securable, table: Securable) -> bool:
    """Read-write access to a table's files (UC's READ_WRITE table credential): MODIFY "requires SELECT
    privilege also" (the 2.1 spec's Privilege enum), so a credential that reads needs both."""
    return can_read_table(s, catalog, schema, table) and can_modify_table(s, catalog, schema, table)


def can_update_table(s: Subject, catalog: Securable, schema: Securable, table: Securable, *, owner_only: bool,
                     renames: bool) -> bool:
    if s.account_admin:
        return True
    if not _parents(s, catalog, schema):
        return False
    allowed = owns(s, table) or (admin(s) and owner_only)
    return allowed and (not renames or holds(s, schema, "CREATE"))


def can_delete_table(s: Subject, catalog: Securable, schema: Securable, table: Securable) -> bool:
    if s.account_admin or owns(s, catalog):
        return True
    if holds(s, catalog, "USAGE") and owns(s, schema):
        return True
    return _parents(s, catalog, schema) and owns(s, table)


# -- volumes, functions, registered models (schema-level objects; same parent rules as tables) ------------------
# Creating one needs CREATE_VOLUME / CREATE_FUNCTION / CREATE_MODEL on the schema (no alias: the legacy CREATE and
# CREATE_TABLE do not stand in for them), besides USE_CATALOG and USE_SCHEMA.

def can_create_in_schema(s: Subject, catalog: Securable, schema: Securable, privilege: str) -> bool:
    return s.account_admin or (_parents(s, catalog, schema) and holds(s, schema, privilege))


def can_use_object(s: Subject, catalog: Securable, schema: Securable, obj: Securable, privilege: str) -> bool:
    """getVolume (READ_VOLUME), getFunction (EXECUTE), getRegisteredModel (EXECUTE), and what lists show: a
    metastore admin, the catalog's owner, or USE_CATALOG + USE_SCHEMA and ``privilege`` (owners hold it)."""
    return admin(s) or owns(s, catalog) or (_parents(s, catalog, schema) and holds(s, obj, privilege))


def can_update_object(s: Subject, catalog: Securable, schema: Securable, obj: Securable, *, owner_only: bool,
                      renames: bool, create_privilege: str) -> bool:
    """The object's owner (with USE on the parents); an admin may only change the owner; a rename also needs the
    schema's CREATE_<type> privilege, as renaming a table needs CREATE_TABLE."""
    if s.account_admin:
        return True
    if not _parents(s, catalog, schema):
        return False
    allowed = owns(s, obj) or (admin(s) and owner_only)
    return allowed and (not renames or holds(s, schema, create_privilege))


def can_delete_object(s: Subject, catalog: Securable, schema: Securable, obj: Securable) -> bool:
    """As for tables: the catalog's owner, the schema's owner (with USE_CATALOG), or the object's owner (with
    USE_CATALOG and USE_SCHEMA); and metastore admins."""
    return admin(s) or can_delete_table(s, catalog, schema, obj)


def can_list_in_schema(s: Subject, catalog: Securable, schema: Securable) -> bool:
    """Listing volumes / functions / models: admins, the catalog's owner, or USE_CATALOG + USE_SCHEMA."""
    return admin(s) or owns(s, catalog) or _parents(s, catalog, schema)


def can_see_table_exists(s: Subject, catalog: Securable, schema: Securable, table: Securable | None) -> bool:
    """tables/{name}/exists: a metastore admin, the catalog's owner, the schema's owner with USE_CATALOG, or
    USE_CATALOG + USE_SCHEMA and (when the table exists) ownership of or SELECT on it. Arco has no BROWSE."""
    if admin(s) or owns(s, catalog) or (holds(s, catalog, "USAGE") and owns(s, schema)):
        return True
    return _parents(s, catalog, schema) and (table is None or holds(s, table, "SELECT"))


# -- external locations ----------------------------------------------------------------------------------------

def can_use_credential_for_location(s: Subject, credential: Securable) -> bool:
    """An external location names a storage credential whose role vends its paths' credentials: creating one (or
    pointing one at a credential) needs CREATE_EXTERNAL_LOCATION on that credential too, as the spec says ("on both
    the metastore and referenced storage credential"), else anyone allowed to create locations borrows any role."""
    return admin(s) or holds(s, credential, "CREATE_EXTERNAL_LOCATION")


# -- permissions -----------------------------------------------------------------------------------------------

def can_manage_grants(s: Subject, securable: Securable) -> bool:
    return admin(s) or owns(s, securable)


def can_read_grants(s: Subject, securable: Securable, of_principal: str | None) -> bool:
    if can_manage_grants(s, securable):
        return True
    return of_principal is not None and of_principal.casefold() == s.name.casefold()


def can_read_effective_grants(s: Subject, securable: Securable, of_principal: str | None) -> bool:
    """Effective permissions: admins and owners see everyone's; anyone sees their own and those of the groups they
    are in (what they themselves hold)."""
    if can_manage_grants(s, securable):
        return True
    return of_principal is not None and of_principal.casefold() in s.identities()
