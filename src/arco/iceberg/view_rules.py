"""The pure rules of Iceberg views: a new view's first metadata, and replaceView's requirements and updates.

PyIceberg has the view models (:mod:`pyiceberg.view.metadata`) but no builder, so the builder of the reference
implementation (``ViewMetadata.Builder``) is written in :mod:`arco.iceberg.view_builder`, with its rules:

* a schema equal to a known one (ignoring its id) reuses that id, else it gets the highest id + 1;
* a version equal to a known one (summary, representations, default catalog and namespace, schema id) reuses that
  version's id, else it gets the highest id + 1; ``schema-id: -1`` is the schema added last in the same request
  and ``set-current-view-version: -1`` the version added last;
* one SQL representation per dialect (case-insensitive) in a version;
* a replace may not drop a dialect of the previous current version unless ``replace.drop-dialect.allowed``;
* only ``version.history.num-entries`` (10) versions are kept, always with the current one and those just added;
  the version log loses the entries of expired versions (and everything before them).

Errors: a malformed request or an update that cannot apply is :class:`BadRequest` (400); only a failed requirement
is :class:`CommitFailed` (409). No I/O happens here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyiceberg.schema import Schema
from pyiceberg.view.metadata import ViewMetadata, ViewVersion

from arco.iceberg import field_checks, json_shapes
from arco.iceberg.commit_rules import check_reserved_properties
from arco.iceberg.errors import BadRequest, CommitFailed, InvalidArgument
from arco.iceberg.malformed import MALFORMED, check_schema_limits, describe, parse_strictly
from arco.iceberg.view_builder import (
    ViewBuilder,
    ViewUpdate,
    check_dialects,
    version_of,
)

VIEW_REQUIREMENT_TYPES = frozenset({"assert-view-uuid"})
VIEW_UPDATE_ACTIONS = frozenset({
    "assign-uuid", "upgrade-format-version", "add-schema", "set-location", "set-properties", "remove-properties",
    "add-view-version", "set-current-view-version",
})


@dataclass(frozen=True)
class ViewRequirement:
    type: str
    uuid: str


# -- parsing ---------------------------------------------------------------------------------------------------


def parse_schema(raw: Any, what: str = "schema") -> Schema:
    if not isinstance(raw, dict):
        raise BadRequest(f"'{what}' must be an Iceberg schema object")
    try:
        check_schema_limits(raw, what)
        json_shapes.check_schema_json(raw, what)
        schema = parse_strictly(Schema, raw)
    except MALFORMED as exc:
        raise BadRequest(f"invalid {what}: {describe(exc, limit=1)}") from None
    field_checks.check_schema(schema, what)
    return schema


def parse_view_version(raw: Any) -> ViewVersion:
    """A ``ViewVersion`` object; at least one representation, each SQL with a dialect, one per dialect."""
    if not isinstance(raw, dict):
        raise BadRequest("'view-version' must be a ViewVersion object")
    representations = raw.get("representations")
    if not isinstance(representations, list) or not representations:
        raise InvalidArgument("Cannot create a view version without specifying a query: 'representations' is empty")
    for index, rep in enumerate(representations):
        if not isinstance(rep, dict):
            raise BadRequest(f"representations[{index}] must be an object")
        if rep.get("type") != "sql":
            raise BadRequest(f"Found unsupported view representation type: {rep.get('type')!r} (only 'sql')")
        dialect = rep.get("dialect")
        if not isinstance(dialect, str) or not dialect.strip():
            raise InvalidArgument(f"Invalid dialect: {'null' if dialect is None else '(empty string)'}")
        if not isinstance(rep.get("sql"), str):
            raise BadRequest(f"representations[{index}].sql must be a string")
    if "default-namespace" not in raw or not isinstance(raw.get("default-namespace"), list):
        raise InvalidArgument("Cannot create a view version without specifying a default namespace")
    if raw.get("default-catalog") is not None and not isinstance(raw.get("default-catalog"), str):
        raise BadRequest("'default-catalog' must be a string")
    try:
        version = parse_strictly(ViewVersion, raw)
    except MALFORMED as exc:
        raise BadRequest(f"invalid view version: {describe(exc, limit=1)}") from None
    check_dialects(version)
    return version


def _properties(raw: Any, what: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise BadRequest(f"'{what}' must be an object of string values")
    return dict(raw)


def parse_requirements(raw: Any) -> list[ViewRequirement]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest("'requirements' must be a list")
    parsed = []
    for index, req in enumerate(raw):
        if not isinstance(req, dict):
            raise BadRequest(f"requirements[{index}] must be an object")
        kind = req.get("type")
        if kind not in VIEW_REQUIREMENT_TYPES:
            raise BadRequest(f"unknown view requirement type {kind!r}; a view accepts {sorted(VIEW_REQUIREMENT_TYPES)}")
        if not isinstance(req.get("uuid"), str):
            raise BadRequest(f"requirements[{index}].uuid must be a string")
        parsed.append(ViewRequirement(kind, req["uuid"]))
    return parsed


def parse_updates(raw: Any) -> list[ViewUpdate]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest("'updates' must be a list")
    return [_parse_update(index, update) for index, update in enumerate(raw)]


def _parse_update(index: int, raw: Any) -> ViewUpdate:
    if not isinstance(raw, dict):
        raise BadRequest(f"updates[{index}] must be an object")
    action = raw.get("action")
    if action not in VIEW_UPDATE_ACTIONS:
        raise BadRequest(f"unknown view update action {action!r}; a view accepts {sorted(VIEW_UPDATE_ACTIONS)}")
    if action == "assign-uuid":
        value = raw.get("uuid")
        if not isinstance(value, str) or not value:
            raise InvalidArgument("Cannot set uuid to null")
        return ViewUpdate(action, value)
    if action == "upgrade-format-version":
        value = raw.get("format-version")
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadRequest("'format-version' must be an integer")
        return ViewUpdate(action, value)
    if action == "add-schema":
        return ViewUpdate(action, parse_schema(raw.get("schema")))
    if action == "set-location":
        value = raw.get("location")
        if not isinstance(value, str) or not value:
            raise InvalidArgument("Invalid view location: null")
        return ViewUpdate(action, value)
    if action == "set-properties":
        updates = _properties(raw.get("updates"), "updates")
        check_reserved_properties(list(updates))
        return ViewUpdate(action, updates)
    if action == "remove-properties":
        removals = raw.get("removals")
        if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
            raise BadRequest("'removals' must be a list of strings")
        check_reserved_properties(removals)
        return ViewUpdate(action, tuple(removals))
    if action == "add-view-version":
        return ViewUpdate(action, parse_view_version(raw.get("view-version")))
    value = raw.get("view-version-id")  # set-current-view-version
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest("'view-version-id' must be an integer")
    return ViewUpdate(action, value)


# -- requirements ----------------------------------------------------------------------------------------------


def check_requirements(requirements: Sequence[ViewRequirement], base: ViewMetadata) -> None:
    for requirement in requirements:
        if requirement.uuid != base.view_uuid:
            raise CommitFailed(f"Requirement failed: view UUID does not match: expected {base.view_uuid} != "
                               f"{requirement.uuid}")


# -- the two entry points --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CreateView:
    name: Any
    location: str | None
    schema: Schema
    version: ViewVersion
    properties: dict[str, str]


def parse_create(body: Any) -> CreateView:
    """A ``CreateViewRequest``: name, optional location, schema, view-version, properties."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    if "schema" not in body or body.get("schema") is None:
        raise BadRequest("Cannot create view without specifying schema")
    if "view-version" not in body or body.get("view-version") is None:
        raise BadRequest("Cannot create view without specifying a view version (with a query)")
    location = body.get("location")
    if location is not None and not isinstance(location, str):
        raise BadRequest("'location' must be a string")
    properties = _properties(body.get("properties"), "properties")
    check_reserved_properties(list(properties))
    return CreateView(body.get("name"), location or None, parse_schema(body.get("schema")),
                      parse_view_version(body.get("view-version")), properties)


def new_view_metadata(view_uuid: str, location: str, request: CreateView, now_ms: int) -> ViewMetadata:
    """The first metadata of a view: its schema (id 0), its version (id 1, current) and one log entry."""
    builder = ViewBuilder(None, now_ms)
    builder.assign_uuid(view_uuid)
    builder.set_location(location)
    builder.set_properties(request.properties)
    schema_id = builder.add_schema(request.schema)
    version = request.version.model_copy(update={"version_id": 1, "schema_id": schema_id})
    builder.set_current_version(builder.add_version(version))
    return builder.build()


def apply_updates(base: ViewMetadata, updates: Sequence[ViewUpdate], now_ms: int) -> ViewMetadata | None:
    """The metadata after ``updates``, or None if they change nothing (no new file is written then)."""
    builder = ViewBuilder(base, now_ms)
    for update in updates:
        builder.apply(update)
    if not builder.changed:
        return None
    return builder.build()


def view_definition(metadata: ViewMetadata) -> tuple[str | None, Schema | None]:
    """The SQL of the current version (the ``spark`` dialect's, else the first) and its schema."""
    version = version_of(metadata, metadata.current_version_id)
    if version is None or not version.representations:
        return None, None
    reps = [r.root for r in version.representations]
    chosen = next((r for r in reps if r.dialect.lower() == "spark"), reps[0])
    schema = next((s for s in metadata.schemas if s.schema_id == version.schema_id), None)
    return chosen.sql, schema
