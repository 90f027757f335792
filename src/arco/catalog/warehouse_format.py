"""The form a warehouse's catalog files are in, recorded once in the warehouse, so that a process of a version that
cannot read that form refuses to open it instead of misreading it or, worse, rewriting it without what it does
not know (docs: README, "Upgrading").

    _catalog/format.json      {"format": N, "written_by": "arco <version>"}

``FORMAT`` grows when a version writes catalog files that an earlier version would misread. Every process that
opens a warehouse (``arco serve``, each CLI command, the pipeline) checks it first: a warehouse in a newer form is
refused with what to do; one in an older form (or none recorded: every warehouse before this file existed) is
recorded as this version's after a compare-and-swap, which every later process of an older version then refuses.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import orjson

from arco.storage.base import DoesNotExist, MatchesVersion, NotFound, StorageBackend, StorageError

# 1: the first recorded form. 2: the catalog log may hold fence entries (arco.catalog.log), which a version of
# form 1 cannot apply.
FORMAT = 2
KEY = "_catalog/format.json"
ATTEMPTS = 20


class WarehouseFormatError(StorageError):
    """The warehouse is in a form this version cannot read (written by a newer Arco)."""


def _this_version() -> str:
    try:
        return f"arco {version('arco')}"
    except PackageNotFoundError:
        return "arco"


def ensure_format(storage: StorageBackend) -> int:
    """Refuse a warehouse in a newer form; record this version's form on one in an older form or none. The form
    found (before recording), 0 for none."""
    record = orjson.dumps({"format": FORMAT, "written_by": _this_version()})
    for _ in range(ATTEMPTS):  # each lost race means another process wrote the record: a few settle it
        try:
            found = storage.get(KEY)
        except NotFound:
            if storage.put(KEY, record, DoesNotExist()).ok:
                return 0
            continue  # another process recorded it first: read theirs
        try:
            fields = orjson.loads(found.data)
            recorded, writer = fields["format"], str(fields.get("written_by", "a newer Arco"))
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            recorded, writer = None, ""
        if type(recorded) is not int or recorded < 1:  # a bool, a float, a string or a negative number is no form
            raise WarehouseFormatError(f"{KEY} in this warehouse is not a format record: restore it (it holds "
                                       f'{{"format": N}}, N a whole number from 1), or ask whoever wrote it')
        if recorded > FORMAT:
            raise WarehouseFormatError(
                f"this warehouse is in catalog format {recorded} (written by {writer}), newer than {_this_version()} "
                f"reads (format {FORMAT}): upgrade this installation to the version the warehouse's servers run; "
                "servers of two versions cannot share a warehouse")
        if recorded == FORMAT or storage.put(KEY, record, MatchesVersion(found.version)).ok:
            return recorded
    raise WarehouseFormatError(f"{KEY} could be neither read nor written ({ATTEMPTS} tries): storage says it is "
                               "absent yet refuses to create it (is it a directory?); make it a file holding "
                               f'{{"format": {FORMAT}}}, or remove it')
