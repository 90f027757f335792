"""The read-only ``system`` catalog: Arco's history as Iceberg tables (written by ``arco pipeline compact``).

It is an ordinary catalog of the primary metastore named ``system`` and marked with the reserved property
``arco.system=true`` (the compactor creates it the first time it runs). Reading it takes the usual grants:
metastore admins read everything; anyone else needs USE_CATALOG, USE_SCHEMA and SELECT, which the catalog's owner
or an admin grants as on any catalog. Writing it is for the pipeline alone: every Tier 1 change of its namespaces,
tables and schema objects (and of the catalog itself) is refused here, whoever asks, account admins included;
grants are not changes of it and stay allowed. Iceberg commits, which change no Tier 1 state, are refused by the
Iceberg routes (:func:`arco.iceberg.http.allow`) with the same rule.
"""

from __future__ import annotations

from typing import Any

from arco.auth.principals import PIPELINE
from arco.catalog.errors import ReadOnlyCatalogError
from arco.catalog.model import CatalogEntry

SYSTEM_CATALOG = "system"
SYSTEM_PROPERTY = "arco.system"
PIPELINE_PRINCIPAL = PIPELINE.name  # Tier 1 operations name their principal only; it is known in-process only


def is_system(catalog: CatalogEntry | None) -> bool:
    return (catalog is not None and catalog.name == SYSTEM_CATALOG and not catalog.metastore_id
            and (catalog.properties or {}).get(SYSTEM_PROPERTY) == "true")


def catalog_of_op(state: Any, op: dict[str, Any]) -> CatalogEntry | None:
    """The catalog a Tier 1 operation changes something in, if it is about one."""
    name = op.get("op")
    if name in ("update_catalog", "drop_catalog"):
        return state.catalogs.get(op.get("id"))
    if op.get("catalog_id") is not None:
        return state.catalogs.get(op["catalog_id"])
    if name in ("update_namespace", "drop_namespace"):
        entry = state.namespaces.get(op.get("id"))
        return state.catalogs.get(entry.catalog_id) if entry is not None else None
    if name in ("update_table", "rename_table", "drop_table"):
        entry = state.tables.get(op.get("id"))
        return state.catalogs.get(entry.catalog_id) if entry is not None else None
    if op.get("schema_id") is not None:
        entry = state.namespaces.get(op["schema_id"])
        return state.catalogs.get(entry.catalog_id) if entry is not None else None
    return None


def refusal(catalog_name: str) -> ReadOnlyCatalogError:
    return ReadOnlyCatalogError(f"the {catalog_name} catalog is read-only: Arco's pipeline writes it "
                                "(`arco pipeline compact`); read it with SELECT")


def check_writable(state: Any, op: dict[str, Any], principal: str) -> None:
    """Refuse a change of the system catalog by anyone but the pipeline (:class:`ReadOnlyCatalogError`)."""
    if principal == PIPELINE_PRINCIPAL or op.get("op") == "update_grants":
        return
    if op.get("op") == "create_catalog" and (op.get("properties") or {}).get(SYSTEM_PROPERTY) is not None:
        raise refusal(str(op.get("name")))
    if is_system(catalog_of_op(state, op)):
        raise refusal(SYSTEM_CATALOG)
