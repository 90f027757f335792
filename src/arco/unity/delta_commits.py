"""The rules of Unity Catalog as commit coordinator of managed Delta tables (``/delta/preview/commits``).

A catalog-managed Delta table's writer stages its commit file (``_delta_log/_staged_commits/<uuid>.json``), then
asks the catalog to accept it as version ``v``: the catalog is the commit point, so of two writers of ``v`` one
succeeds. The writer then *backfills* (publishes the commit as ``_delta_log/<v>.json``) and says so with
``latest_backfilled_version``; the catalog stops tracking what was backfilled, but always keeps the latest commit,
which is the table's version. Readers ask for the commits not yet backfilled.

The rules, as Unity Catalog's own server applies them:

- The first commit a table sends (its *onboarding*) may have any version; each later one must be the latest + 1.
- A version already accepted, sent again with the same file name, is a replay: accepted again, nothing changes.
  With another file name it is a conflict (409). A version no longer tracked (backfilled) is settled by comparing
  the staged file with the published one (:data:`Outcome.check_published`).
- ``latest_backfilled_version`` may not pass the latest commit. A request may carry it alone (backfill only).
- At most :data:`MAX_TRACKED` commits are tracked per table: a writer that does not backfill is refused (429)
  until it does.

This module is pure: tracked commits and a request in, the tracked commits after it out. Tracked commits are
dicts of ``DeltaCommitInfo`` fields, ascending by version; the last may carry ``"backfilled": True``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arco.unity import objects
from arco.unity.errors import UnityError, invalid

MAX_TRACKED = 10
MAX_LONG = 2**63 - 1  # versions and times are Delta's longs (one past it cannot be committed after)
MAX_FILE_NAME = 255  # a file name on every object store and file system
COMMIT_FIELDS = ("version", "timestamp", "file_name", "file_size", "file_modification_timestamp")
Commit = dict[str, Any]


@dataclass(frozen=True)
class CommitRequest:
    table_id: str
    table_uri: str
    commit: Commit | None
    latest_backfilled: int | None
    metadata: dict[str, Any] | None


@dataclass(frozen=True)
class GetRequest:
    table_id: str
    table_uri: str
    start_version: int
    end_version: int | None


@dataclass(frozen=True)
class Outcome:
    tracked: list[Commit]
    replay: bool = False  # an accepted commit sent again: nothing changes
    check_published: int | None = None  # a backfilled version sent again: a replay if its files match


def _required_text(body: dict[str, Any], key: str) -> str:
    value = objects.text(body, key, required=True)
    assert value is not None  # required: text() raised otherwise
    return value


def _integer(body: dict[str, Any], key: str, *, minimum: int, required: bool = True) -> int | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= MAX_LONG:
        raise invalid(f"{key} must be an integer from {minimum} to {MAX_LONG} (a long), got {value!r}")
    return value


def parse_commit_info(raw: Any) -> Commit:
    if not isinstance(raw, dict):
        raise invalid("commit_info must be an object")
    commit = {key: _integer(raw, key, minimum=1) for key in COMMIT_FIELDS if key != "file_name"}
    name = _required_text(raw, "file_name")
    # The name is the staged file's, read back from _delta_log/_staged_commits/: one path segment only.
    if "/" in name or "\\" in name or name in (".", "..") or not name.isprintable() or len(name) > MAX_FILE_NAME:
        raise invalid(f"commit_info.file_name must be a single file name (at most {MAX_FILE_NAME} printable "
                      "characters, without path separators)")
    return {**commit, "file_name": name}


def parse_commit(body: dict[str, Any]) -> CommitRequest:
    """A ``DeltaCommit`` body, checked (400 in UC's shape otherwise)."""
    commit = None if body.get("commit_info") is None else parse_commit_info(body["commit_info"])
    latest_backfilled = _integer(body, "latest_backfilled_version", minimum=0, required=False)
    metadata = body.get("metadata")
    if commit is None:
        if latest_backfilled is None:
            raise invalid("either commit_info or latest_backfilled_version must be set")
        if metadata is not None:
            raise invalid("metadata is not allowed in a backfill-only request")
    if metadata is not None:
        check_metadata(metadata)
    return CommitRequest(_required_text(body, "table_id"), _required_text(body, "table_uri"), commit,
                         latest_backfilled, metadata)


def check_metadata(metadata: Any) -> None:
    """``DeltaMetadata``: set only when something changes (a description, properties or columns)."""
    if not isinstance(metadata, dict):
        raise invalid("metadata must be an object")
    properties, schema = metadata.get("properties"), metadata.get("schema")
    if properties is not None and (not isinstance(properties, dict) or
                                   not isinstance(properties.get("properties", {}), dict)):
        raise invalid("metadata.properties must be an object with an object 'properties'")
    if schema is not None and (not isinstance(schema, dict) or not isinstance(schema.get("columns", []), list)):
        raise invalid("metadata.schema must be an object with a list 'columns'")
    description = metadata.get("description")
    if description is not None and not isinstance(description, str):
        raise invalid("metadata.description must be a string")
    if description is None and not (properties or {}).get("properties") and not (schema or {}).get("columns"):
        raise invalid("metadata must set at least one of description, properties or schema")


def parse_get(body: dict[str, Any]) -> GetRequest:
    start = _integer(body, "start_version", minimum=0)
    end = _integer(body, "end_version", minimum=0, required=False)
    assert start is not None
    if end is not None and end < start:
        raise invalid("end_version must be >= start_version")
    return GetRequest(_required_text(body, "table_id"), _required_text(body, "table_uri"), start, end)


def latest_version(tracked: list[Commit]) -> int:
    """The table's version as the catalog knows it: 0 before its first commit."""
    return tracked[-1]["version"] if tracked else 0


def published_version(tracked: list[Commit] | None) -> int | None:
    """The newest version a reader of the table's ``_delta_log`` may be given: every version up to it accepted by
    the catalog and published (backfilled), so a file the writer put in the log without the catalog (or before
    it accepted it) is never read as the table. None: the catalog does not coordinate this table's commits."""
    if not tracked:
        return None
    pending = [c["version"] for c in tracked if not c.get("backfilled")]
    return min(pending) - 1 if pending else tracked[-1]["version"]


def unbackfilled(tracked: list[Commit], start: int, end: int | None) -> list[Commit]:
    """The commits not yet backfilled in ``[start, end]``, at most :data:`MAX_TRACKED` from the first in range,
    newest first (as Unity Catalog answers)."""
    if not tracked:
        return []
    last = min(end if end is not None else tracked[-1]["version"],
               max(start, tracked[0]["version"]) + MAX_TRACKED - 1)
    return [{k: c[k] for k in COMMIT_FIELDS} for c in reversed(tracked)
            if not c.get("backfilled") and start <= c["version"] <= last]


def next_tracked(tracked: list[Commit], request: CommitRequest) -> Outcome:
    """The tracked commits after ``request``, or why it is refused (a :class:`UnityError`)."""
    commit, backfilled = request.commit, request.latest_backfilled
    if not tracked:
        if commit is None:
            raise invalid("a backfill-only request needs a prior commit: this table's commit log is empty")
        return Outcome([dict(commit)])  # onboarding: any version
    last = tracked[-1]["version"]
    if commit is None:
        assert backfilled is not None
        if backfilled > last:
            raise invalid(f"cannot backfill version {backfilled}: the last version committed is {last}")
        return Outcome(_backfill(tracked, backfilled, new_version=None))
    version = commit["version"]
    if version <= last:
        return _already_taken(tracked, commit)
    if version > last + 1:
        raise invalid(f"commit version must be {last + 1}, the next after the latest commit {last}; got {version}")
    if backfilled is not None and backfilled > last:
        raise invalid(f"latest_backfilled_version {backfilled} cannot pass the last commit version {last}")
    published = published_version(tracked)  # the last version backfilled, so not counted against the limit
    assert published is not None  # tracked is not empty
    effective = published if backfilled is None else max(published, backfilled)
    if version - effective > MAX_TRACKED:
        raise UnityError(429, "RESOURCE_EXHAUSTED", f"{MAX_TRACKED} commits of this table are not backfilled yet: "
                                                    "backfill them (publish to _delta_log/) before committing more")
    grown = [dict(c) for c in tracked] + [dict(commit)]
    return Outcome(grown if backfilled is None else _backfill(grown, backfilled, new_version=version))


def _already_taken(tracked: list[Commit], commit: Commit) -> Outcome:
    version = commit["version"]
    existing = next((c for c in tracked if c["version"] == version), None)
    if existing is None:  # backfilled and no longer tracked: the published file decides
        return Outcome(tracked, check_published=version)
    if existing["file_name"] == commit["file_name"]:
        return Outcome(tracked, replay=True)
    raise UnityError(409, "RESOURCE_CONFLICT", f"commit version {version} is already taken; the table's version is "
                                               f"{tracked[-1]['version']}")


def _backfill(tracked: list[Commit], backfilled: int, new_version: int | None) -> list[Commit]:
    """Forget the commits up to ``backfilled``, but never the last one: a backfill-only request that reaches it
    marks it backfilled instead."""
    if backfilled < tracked[0]["version"]:
        return tracked
    highest = tracked[-1]["version"]
    kept = [dict(c) for c in tracked if c["version"] > min(backfilled, highest - 1)]
    if new_version is None and backfilled == highest:
        kept[-1]["backfilled"] = True
    return kept
