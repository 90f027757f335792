"""What a share lets a recipient read of a table's past (pure).

A share's object carries Unity Catalog's ``history_data_sharing_status`` (``ENABLED`` / ``DISABLED``; absent
means ``DISABLED``, as in the Databricks API: a provider shares history only when it says so), the legacy
``cdf_enabled`` flag and ``start_version``. Without history a recipient reads the latest version only: time travel
(``version``, ``timestamp``), streaming queries (``startingVersion``), ``startingTimestamp`` version look-ups and the
change data feed are refused with the protocol's INVALID_PARAMETER_VALUE, as the reference server does. An
explicit ``cdf_enabled: true`` still opens the change data feed (that is what the flag said before history sharing
existed); ``cdf_enabled: false`` closes it even with history. ``start_version`` is the earliest version readable.
"""

from __future__ import annotations

from typing import Any

from arco.sharing.errors import bad_request

STATUSES = ("ENABLED", "DISABLED")


def history_shared(obj: dict[str, Any]) -> bool:
    return str(obj.get("history_data_sharing_status") or "DISABLED").upper() == "ENABLED"


def change_data_shared(obj: dict[str, Any]) -> bool:
    if obj.get("cdf_enabled") is False:
        return False
    return obj.get("cdf_enabled") is True or history_shared(obj)


def records_change_feed(metadata: dict[str, Any]) -> bool:
    """Whether a Delta table, as this ``metaData`` of one of its versions says, records its change data feed."""
    return str((metadata.get("configuration") or {}).get("delta.enableChangeDataFeed", "")).lower() == "true"


def check_history(obj: dict[str, Any], what: str) -> None:
    """Refuses ``what`` (a time travel of some kind) unless the share shares the table's history."""
    if not history_shared(obj):
        raise bad_request(f"{what} is not supported because history sharing is not enabled on this table "
                          "(the share's history_data_sharing_status)")


def check_change_data(obj: dict[str, Any], table: str) -> None:
    if not change_data_shared(obj):
        raise bad_request(f"cdf is not enabled on table {table}: the share must share its history "
                          "(history_data_sharing_status ENABLED) or its change data feed (cdf_enabled)")


def check_floor(obj: dict[str, Any], version: int) -> None:
    """Refuses a version before the share's ``start_version``."""
    floor = obj.get("start_version")
    if isinstance(floor, int) and not isinstance(floor, bool) and version < floor:
        raise bad_request(f"the share's history of this table starts at version {floor}; version {version} "
                          "is not shared")
