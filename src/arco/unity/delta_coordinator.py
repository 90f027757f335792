"""``/delta/preview/commits``: Unity Catalog as the commit coordinator of managed Delta tables.

The rules are :mod:`arco.unity.delta_commits`'; this service finds the table, checks the caller's grants (SELECT to
read the commits, MODIFY to commit), and makes each accepted commit one Tier 1 operation on the table's entry:
the tracked commits and the table metadata the commit carries (description, properties, columns) change together,
in one conditional write, checked against the state they land on (a writer that loses the log position rebuilds
against the winner's state, so two writers of one version get one success and one 409).
"""

from __future__ import annotations

from typing import Any

from arco.auth import decisions as can
from arco.auth.principals import Principal
from arco.catalog.model import TableEntry
from arco.catalog.state import CatalogState
from arco.catalog.store import CatalogStore
from arco.iceberg.metadata_files import MetadataLocationError
from arco.iceberg.tables import TableService
from arco.storage.base import NotFound, StorageError
from arco.storage.urls import same_place
from arco.unity import delta_commits as rules
from arco.unity import infos
from arco.unity.common import check_table, properties_of, replacing, table_by_id
from arco.unity.errors import UnityError, invalid

TABLE_ID_PROPERTY = "io.unitycatalog.tableId"


class _Unchanged(Exception):  # noqa: N818 - not an error: the request changes nothing
    def __init__(self, outcome: rules.Outcome, location: str) -> None:
        self.outcome, self.location = outcome, location


class DeltaCommitCoordinator:
    def __init__(self, store: CatalogStore, tables: TableService) -> None:
        self.store = store
        self.tables = tables

    def commits(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        """``getCommits``: the commits not yet backfilled in a version range, and the table's latest version."""
        request = rules.parse_get(body)
        with self.store.read() as state:
            entry = self._table(state, caller, request.table_id, request.table_uri, write=False)
            tracked = entry.delta_commits or []
            return {"commits": rules.unbackfilled(tracked, request.start_version, request.end_version),
                    "latest_table_version": rules.latest_version(tracked)}

    def commit(self, body: dict[str, Any], caller: Principal) -> dict[str, Any]:
        """``commit``: accept a version, report a backfill, or both; a replay of an accepted commit is a 200."""
        request = rules.parse_commit(body)

        def build(state: CatalogState) -> dict[str, Any]:
            entry = self._table(state, caller, request.table_id, request.table_uri, write=True)
            outcome = rules.next_tracked(entry.delta_commits or [], request)
            if outcome.replay or outcome.check_published is not None:
                raise _Unchanged(outcome, entry.location)
            op: dict[str, Any] = {"op": "update_table", "id": entry.id, "delta_commits": outcome.tracked}
            if request.metadata is not None:
                op.update(_metadata_changes(entry, request.metadata))
            return op

        try:
            self.store.execute(build, principal=caller.name)
        except _Unchanged as unchanged:
            if unchanged.outcome.check_published is not None:
                assert request.commit is not None
                self._settle_by_files(unchanged.location, request.commit)
        return {}

    def _table(self, state: CatalogState, caller: Principal, table_id: str, table_uri: str,
               write: bool) -> TableEntry:
        entry = table_by_id(state, caller, table_id)
        rule, what, needs = (can.can_modify_table, "commit to", "MODIFY") if write else \
            (can.can_read_table, "read", "SELECT")
        check_table(state, caller, entry, rule, f"{what} table", f"USE_CATALOG, USE_SCHEMA and {needs}")
        if not (entry.managed and entry.format == "DELTA" and entry.kind == "TABLE"):
            raise invalid("only managed Delta tables have their commits coordinated by the catalog")
        if not same_place(table_uri, entry.location):
            raise invalid(f"table_uri {table_uri} is not the table's location {entry.location}")
        return entry

    def _settle_by_files(self, location: str, commit: rules.Commit) -> None:
        """A backfilled version sent again: a replay if the staged file is the one published, else a conflict."""
        log = f"{location.rstrip('/')}/_delta_log"
        try:
            published = self.tables.storage.get(self.tables.files.key_of(f"{log}/{commit['version']:020d}.json"))
        except NotFound:  # no such version in the log (one before the table's first commit): never a resend
            raise UnityError(409, "RESOURCE_CONFLICT", f"commit version {commit['version']} was never committed "
                                                       "here: it is before the table's commits") from None
        except (MetadataLocationError, StorageError) as exc:
            raise _outcome_unknown(commit, exc) from None
        try:  # a staged file cleaned up after its backfill leaves the outcome unknown, not a conflict
            staged = self.tables.storage.get(self.tables.files.key_of(f"{log}/_staged_commits/{commit['file_name']}"))
        except (MetadataLocationError, StorageError) as exc:
            raise _outcome_unknown(commit, exc) from None
        if published.data != staged.data:
            raise UnityError(409, "RESOURCE_CONFLICT", f"commit version {commit['version']} is already published")


def _outcome_unknown(commit: rules.Commit, exc: Exception) -> UnityError:
    return UnityError(503, "TEMPORARILY_UNAVAILABLE", f"could not tell whether commit version {commit['version']} "
                                                      f"is a resend ({exc}); retry")


def _metadata_changes(entry: TableEntry, metadata: dict[str, Any]) -> dict[str, Any]:
    """The table changes a commit's ``DeltaMetadata`` makes: properties and columns are replaced whole."""
    changes: dict[str, Any] = {}
    if metadata.get("description") is not None:
        changes["comment"] = metadata["description"] or None  # an empty comment is no comment (common.comment_of)
    properties = (metadata.get("properties") or {}).get("properties")
    if properties:
        new = properties_of(properties)
        if new.get(TABLE_ID_PROPERTY, entry.id) != entry.id:
            raise invalid(f"the {TABLE_ID_PROPERTY} property must be this table's id, {entry.id}")
        changes.update(replacing(entry.properties, new))
    columns = (metadata.get("schema") or {}).get("columns")
    if columns:
        changes["columns"] = infos.check_columns(columns)
    return changes
