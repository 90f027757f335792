"""Temporary credentials (UC ``temporary-table-credentials``, ``-path-``, ``-volume-`` and ``-model-version-``).

The same scoped, short-lived credentials Iceberg REST vends (:mod:`arco.vending`): read-only for READ /
PATH_READ / READ_VOLUME / READ_MODEL_VERSION, read-write for the others. Each is scoped to one object's location
and follows that object's grants: SELECT on a table to read, SELECT and MODIFY to read and write (MODIFY "requires
SELECT privilege also"); READ_FILES on an external location to read, READ_FILES and WRITE_FILES to read and write;
READ_VOLUME on a volume to read, READ_VOLUME and WRITE_VOLUME to read and write (a read-write credential reads, so
it never goes to a holder of the write privilege alone); EXECUTE on a registered model to read a version's files
and ownership of the model to write those of a version still PENDING_REGISTRATION (a finalized version's files are
not rewritten).
An external object's credential is minted with the role of the storage credential behind its external location; a
managed one's with the server's. A local directory needs no credential: the answer names the location and carries
none. Storage that cannot mint says 501 and names the setting, never an empty success.
"""

from __future__ import annotations

import time
from typing import Any

from arco.api.errors import ApiError
from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.auth.subjects import securable, subject_of
from arco.catalog import locations
from arco.catalog.securables import SecurableEntry
from arco.catalog.state import CatalogState
from arco.catalog.storage_roles import external_role, role_of, table_role
from arco.catalog.store import CatalogStore
from arco.storage.urls import as_given
from arco.unity import objects
from arco.unity.common import check_table, staging_table_is_callers, table_by_id, tenant_of
from arco.unity.errors import UnityError, invalid
from arco.unity.models import PENDING, version_number
from arco.vending.locations import InvalidLocation
from arco.vending.model import Access, VendedCredential, VendingFailed, VendingUnavailable
from arco.vending.vendor import CredentialVendor

LOCAL_LIFETIME_MS = 3600 * 1000
# operation -> (table rule, the privileges it needs, access vended)
TABLE_OPERATIONS = {"READ": (can.can_read_table, "SELECT", Access.READ),
                    "READ_WRITE": (can.can_read_and_modify_table, "SELECT and MODIFY", Access.READ_WRITE)}
# operation -> (sets of privileges on the external location, each set allowing it whole; access vended)
PATH_OPERATIONS = {"PATH_READ": ((("READ_FILES",),), Access.READ),
                   "PATH_READ_WRITE": ((("READ_FILES", "WRITE_FILES"),), Access.READ_WRITE),
                   "PATH_CREATE_TABLE": ((("CREATE_EXTERNAL_TABLE",), ("CREATE_TABLE",)), Access.READ_WRITE)}
# operation -> (privileges on the volume, all needed; access vended)
VOLUME_OPERATIONS = {"READ_VOLUME": (("READ_VOLUME",), Access.READ),
                     "WRITE_VOLUME": (("READ_VOLUME", "WRITE_VOLUME"), Access.READ_WRITE)}
MODEL_VERSION_OPERATIONS = {"READ_MODEL_VERSION": Access.READ, "READ_WRITE_MODEL_VERSION": Access.READ_WRITE}


def _operation(body: dict[str, Any], allowed: dict[str, Any]) -> str:
    operation = str(body.get("operation") or "").upper()
    if operation not in allowed:
        raise invalid(f"operation must be one of {sorted(allowed)}")
    return operation


def table_credentials(store: CatalogStore, vendor: CredentialVendor, body: dict[str, Any],
                      caller: Principal) -> dict[str, Any]:
    operation = _operation(body, TABLE_OPERATIONS)
    if not isinstance(body.get("table_id"), str) or not body["table_id"]:
        raise invalid("table_id is required: the id of the table (tables/{full_name} answers it)")
    rule, privilege, access = TABLE_OPERATIONS[operation]
    with store.read() as state:
        staged = _staging_table(state, caller, body.get("table_id"))
        if staged is not None:
            _refuse_writes_in_read_only_location(state, caller, staged.fields["location"], access)
            return _vend(vendor, staged.fields["location"], access, caller, None)
        entry = table_by_id(state, caller, body.get("table_id"))
        check_table(state, caller, entry, rule, f"{operation} table", f"USE_CATALOG, USE_SCHEMA and {privilege}")
        if entry.kind == "VIEW" or not entry.location:
            raise invalid(f"{entry.name} has no storage of its own: a view's data is read through its tables")
        _refuse_writes_in_read_only_location(state, caller, entry.location, access)
        role = table_role(state, entry)
    return _vend(vendor, entry.location, access, caller, role)


def _refuse_writes_in_read_only_location(state: CatalogState, caller: Principal, location: str,
                                         access: Access) -> None:
    """A read-write credential for a table or volume inside a read-only external location is refused, as one for
    a path there is: the location's read-only flag holds for everything under it."""
    if access is Access.READ_WRITE:
        read_only = locations.read_only_location(state, location, tenant_of(state, caller).scope)
        if read_only is not None:
            raise UnityError(403, "PERMISSION_DENIED", f"{location} is inside external location {read_only.name}, "
                                                       "which is read-only: ask for READ credentials")


def _staging_table(state: CatalogState, caller: Principal, table_id: Any) -> SecurableEntry | None:
    """A staging table of the caller's metastore by id (None: no staging table has it). The spec vends credentials
    for one "as though the staging table were a regular table": its creator writes the data there before the
    managed table exists, and holds every privilege on it, as an owner does; others get 403."""
    entry = next((e for e in state.securables_of("staging_table") if e.id == str(table_id)), None)
    if entry is None or state.catalogs[entry.fields["catalog_id"]].metastore_id != tenant_of(state, caller).scope:
        return None
    if entry.name in state.tables:  # promoted before promotions removed their staging table: the table's now
        return None
    if not staging_table_is_callers(state, caller, entry):
        raise UnityError(403, "PERMISSION_DENIED", f"{caller.name} may not use staging table {table_id} (only "
                                                   "its creator may)")
    return entry


def path_credentials(store: CatalogStore, vendor: CredentialVendor, body: dict[str, Any],
                     caller: Principal) -> dict[str, Any]:
    """A path inside an external location, for a caller holding the operation's privilege on that location.
    READ_FILES reads every file under the location, external tables' and volumes' included (the location's owner
    granted exactly that); writing to, or creating a table over, a table's path is refused: a table's bytes are
    changed through the table's own grants. Managed storage inside the location (a catalog's or schema's
    ``storage_root`` there) is neither read nor written this way, as its tables' and volumes' own grants decide
    who may: a path that reaches into it, or holds it, is refused for every operation."""
    operation = _operation(body, PATH_OPERATIONS)
    allowing, access = PATH_OPERATIONS[operation]
    url = locations.canonical(body.get("url"), "url")
    with store.read() as state:
        tenant = tenant_of(state, caller)
        container = locations.containing_external_location(state, url, tenant.scope)
        if container is None:
            raise UnityError(403, "PERMISSION_DENIED", f"{url} is in no external location; path credentials are "
                                                       "for paths inside one")
        who = subject_of(state, caller)
        target = securable(state, "external_location", container)
        if not (can.admin(who) or any(all(can.holds(who, target, p) for p in held) for held in allowing)):
            needs = " or ".join(" and ".join(held) for held in allowing)
            raise UnityError(403, "PERMISSION_DENIED", f"{caller.name} may not {operation} {url} (needs {needs} "
                                                       f"on external location {container.name})")
        _refuse_writes_in_read_only_location(state, caller, url, access)
        # Arco's own files and managed storage are never reached through a path, whatever a location covers
        # (one made over them before the rules refused it included).
        managed = locations.first_overlap(url, [*locations.arco_claims(store.storage.url),
                                                *locations.managed_root_claims(state)])
        if managed is not None:
            raise UnityError(403, "PERMISSION_DENIED", f"{url} overlaps {managed.what}, which no path credential "
                                                       "reaches: tables and volumes are reached through their own "
                                                       "credentials, which follow their grants")
        table = locations.first_overlap(url, locations.table_claims(state))
        if table is not None and operation != "PATH_READ":
            raise UnityError(403, "PERMISSION_DENIED", f"{url} overlaps {table.what}: use temporary table "
                                                       "credentials, which follow the table's grants")
        role = role_of(state, container)
    return _vend(vendor, as_given(body.get("url")), access, caller, role)  # answered as the client spelled it


def volume_credentials(store: CatalogStore, vendor: CredentialVendor, body: dict[str, Any],
                       caller: Principal) -> dict[str, Any]:
    """A volume's files, by ``volume_id`` (as getVolume answers it), for READ_VOLUME or WRITE_VOLUME holders."""
    operation = _operation(body, VOLUME_OPERATIONS)
    privileges, access = VOLUME_OPERATIONS[operation]
    volume_id = body.get("volume_id")
    with store.read() as state:
        scope = tenant_of(state, caller).scope
        entry = next((e for e in state.securables_of("volume", scope) if e.id == volume_id), None)
        if entry is None:
            raise UnityError(404, "RESOURCE_DOES_NOT_EXIST", f"Volume with id '{volume_id}' does not exist.")
        schema = state.namespaces[entry.fields["schema_id"]]
        where = objects.Place(state.catalogs[schema.catalog_id], schema)
        if not all(objects.usable(state, caller, where, "volume", entry, privilege) for privilege in privileges):
            raise UnityError(403, "PERMISSION_DENIED", f"{caller.name} may not {operation} volume "
                                                       f"{where.prefix()}.{entry.fields['name']} (needs "
                                                       f"USE_CATALOG, USE_SCHEMA and {' and '.join(privileges)})")
        location = entry.fields["storage_location"]
        _refuse_writes_in_read_only_location(state, caller, location, access)
        role = None if entry.fields["volume_type"] == "MANAGED" else external_role(state, location, scope)
    return _vend(vendor, location, access, caller, role)


def model_version_credentials(store: CatalogStore, vendor: CredentialVendor, body: dict[str, Any],
                              caller: Principal) -> dict[str, Any]:
    """A model version's files: to read them (EXECUTE on the model), or to write them while the version is
    PENDING_REGISTRATION (the model's owner, who registers versions)."""
    operation = _operation(body, MODEL_VERSION_OPERATIONS)
    names = [objects.text(body, key, required=True) for key in ("catalog_name", "schema_name", "model_name")]
    full_name, number = ".".join(str(n) for n in names), version_number(body.get("version"))
    with store.read() as state:
        where, model = objects.find(state, caller, "registered_model", full_name)
        who, target = subject_of(state, caller), securable(state, "registered_model", model)
        if operation == "READ_MODEL_VERSION":
            allowed, needs = can.can_use_object(who, *where.parents(state), target, "EXECUTE"), "EXECUTE on it"
        else:
            allowed = can.can_update_object(who, *where.parents(state), target, owner_only=False, renames=False,
                                            create_privilege="CREATE_MODEL")
            needs = "to own it"
        if not allowed:
            raise UnityError(403, "PERMISSION_DENIED", f"{caller.name} may not {operation} of registered model "
                                                       f"{full_name} (needs USE_CATALOG, USE_SCHEMA and {needs})")
        version = model.fields.get("versions", {}).get(str(number))
        if version is None:
            raise objects.not_found("model_version", f"{full_name}/{number}")
        if operation != "READ_MODEL_VERSION" and version["status"] != PENDING:
            raise invalid(f"model version {full_name}/{number} is {version['status']}: its files are written "
                          "only while it is PENDING_REGISTRATION")
        location = version["storage_location"]
    return _vend(vendor, location, MODEL_VERSION_OPERATIONS[operation], caller, None)


def _vend(vendor: CredentialVendor, location: str, access: Access, caller: Principal,
          role: str | None) -> dict[str, Any]:
    credential = vend(vendor, location, access, caller.name, role)
    if credential is None:  # a local directory: nothing to vend
        return {"expiration_time": int(time.time() * 1000) + LOCAL_LIFETIME_MS, "url": location}
    return credential.unity()


def vend(vendor: CredentialVendor, location: str, access: Access, who: str, role: str | None, *,
         error: type[ApiError] = UnityError, hint: str = "") -> VendedCredential | None:
    """``vendor.vend``, its refusals as ``error`` (the API's own error class) with the status each means: 501 not
    configured (``hint`` says what to do instead), 503 the token service failed, 400 a location that cannot be
    scoped. None for a local directory."""
    try:
        return vendor.vend(location, access, who, role_arn=role)
    except VendingUnavailable as exc:
        raise error(501, "NOT_IMPLEMENTED", f"credential vending is not configured for {location}: {exc}{hint}") \
            from None
    except VendingFailed as exc:
        raise error(503, "TEMPORARILY_UNAVAILABLE", f"the storage's token service failed: {exc}") from None
    except InvalidLocation as exc:
        raise error(400, "INVALID_PARAMETER_VALUE", f"cannot scope credentials to {location}: {exc}") from None
