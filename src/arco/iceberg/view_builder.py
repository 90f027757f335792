"""The reference implementation's view metadata builder (``ViewMetadata.Builder``), which PyIceberg does not have:
it applies a view's updates one by one and keeps the rules :mod:`arco.iceberg.view_rules` lists (schema and version
ids reused for equal ones, one query per dialect, no dropped dialect unless allowed, a bounded version history).
Pure: no I/O happens here."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pyiceberg.schema import Schema
from pyiceberg.view.metadata import ViewHistoryEntry, ViewMetadata, ViewVersion

from arco.iceberg.errors import BadRequest, InvalidArgument
from arco.iceberg.log_cut import after_last_gap
from arco.iceberg.malformed import describe

LAST_ADDED = -1
SUPPORTED_VIEW_FORMAT_VERSION = 1
VERSION_HISTORY_SIZE = "version.history.num-entries"
VERSION_HISTORY_SIZE_DEFAULT = 10
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"


@dataclass(frozen=True)
class ViewUpdate:
    """One parsed update: its action and its (validated) argument."""

    action: str
    value: Any = None


def dialects_of(version: ViewVersion) -> list[str]:
    return [rep.root.dialect.lower() for rep in version.representations]


def check_dialects(version: ViewVersion) -> None:
    seen: set[str] = set()
    for dialect in dialects_of(version):
        if dialect in seen:
            raise InvalidArgument(f"Invalid view version: Cannot add multiple queries for dialect {dialect}")
        seen.add(dialect)


def same_schema(a: Schema, b: Schema) -> bool:
    return a.fields == b.fields and sorted(a.identifier_field_ids) == sorted(b.identifier_field_ids)


def same_version(a: ViewVersion, b: ViewVersion) -> bool:
    return (a.summary == b.summary and a.representations == b.representations
            and a.default_catalog == b.default_catalog and list(a.default_namespace) == list(b.default_namespace)
            and a.schema_id == b.schema_id)


class ViewBuilder:
    """``ViewMetadata.Builder``: start from a base (or nothing), apply changes, :meth:`build`."""

    def __init__(self, base: ViewMetadata | None, now_ms: int) -> None:
        self.now_ms = now_ms
        self.base = base
        self.uuid = base.view_uuid if base else None
        self.format_version = base.format_version if base else SUPPORTED_VIEW_FORMAT_VERSION
        self.location = base.location if base else None
        self.schemas: list[Schema] = list(base.schemas) if base else []
        self.versions: list[ViewVersion] = list(base.versions) if base else []
        self.history: list[ViewHistoryEntry] = list(base.version_log) if base else []
        self.properties: dict[str, str] = dict(base.properties) if base else {}
        self.current_version_id = base.current_version_id if base else None
        self.previous_version = version_of(base, base.current_version_id) if base else None
        self.changed = False
        self.added_versions: set[int] = set()
        self.last_added_version: int | None = None
        self.last_added_schema: int | None = None
        self.history_entry: ViewHistoryEntry | None = None

    # -- changes ---------------------------------------------------------------------------------------------

    def assign_uuid(self, new_uuid: str) -> None:
        if self.uuid is not None and new_uuid != self.uuid:
            raise InvalidArgument("Cannot reassign uuid")
        if new_uuid != self.uuid:
            try:
                uuid.UUID(new_uuid)
            except ValueError:
                raise BadRequest(f"Invalid view uuid: {new_uuid!r}") from None
            self.uuid, self.changed = new_uuid, True

    def upgrade_format_version(self, version: int) -> None:
        if version < self.format_version:
            raise InvalidArgument(f"Cannot downgrade v{self.format_version} view to v{version}")
        if version > SUPPORTED_VIEW_FORMAT_VERSION:
            raise InvalidArgument(f"Unsupported format version: {version}")
        if version != self.format_version:
            self.format_version, self.changed = version, True

    def set_location(self, location: str, allowed: str | None = None) -> None:
        """Arco owns view locations: setting one is accepted only where it changes nothing."""
        if location.rstrip("/") == (self.location or "").rstrip("/") or self.location is None:
            if self.location is None:
                self.location, self.changed = location.rstrip("/"), True
            return
        raise BadRequest(f"set-location to another place is refused: Arco owns view locations "
                         f"(this view's is {self.location})")

    def set_properties(self, updates: dict[str, str]) -> None:
        if updates:
            self.properties.update(updates)
            self.changed = True

    def remove_properties(self, removals: Sequence[str]) -> None:
        if removals:
            for key in removals:
                self.properties.pop(key, None)
            self.changed = True

    def add_schema(self, schema: Schema) -> int:
        new_id = 0
        for known in self.schemas:
            if same_schema(known, schema):
                # Reused: it still counts as the schema added last (-1), which the reference leaves unset.
                self.last_added_schema = known.schema_id
                return known.schema_id
            new_id = max(new_id, known.schema_id + 1)
        self.schemas.append(schema if schema.schema_id == new_id else schema.model_copy(update={"schema_id": new_id}))
        self.last_added_schema, self.changed = new_id, True
        return new_id

    def add_version(self, version: ViewVersion) -> int:
        if version.schema_id == LAST_ADDED and self.last_added_schema is not None:
            # Resolved before the reuse check (the reference resolves it after), so that replacing a view with
            # exactly its current definition reuses the current version.
            version = version.model_copy(update={"schema_id": self.last_added_schema})
        new_id = version.version_id
        for known in self.versions:
            if same_version(known, version):
                new_id = known.version_id
                break
            if known.version_id >= new_id:
                new_id = known.version_id + 1
        if any(v.version_id == new_id for v in self.versions):
            # An equal version already known is reused, and -1 then means it (the reference leaves -1 unset).
            self.last_added_version = new_id
            return new_id
        if version.schema_id == LAST_ADDED:
            if self.last_added_schema is None:
                raise InvalidArgument("Cannot set last added schema: no schema has been added")
            version = version.model_copy(update={"schema_id": self.last_added_schema})
        if not any(s.schema_id == version.schema_id for s in self.schemas):
            raise InvalidArgument(f"Cannot add version with unknown schema: {version.schema_id}")
        check_dialects(version)
        if new_id != version.version_id:
            version = version.model_copy(update={"version_id": new_id})
        self.versions.append(version)
        self.added_versions.add(new_id)
        self.last_added_version, self.changed = new_id, True
        return new_id

    def set_current_version(self, version_id: int) -> None:
        if version_id == LAST_ADDED:
            if self.last_added_version is None:
                raise InvalidArgument("Cannot set last version id: no current version id has been set")
            version_id = self.last_added_version
        if version_id == self.current_version_id:
            return
        version = next((v for v in self.versions if v.version_id == version_id), None)
        if version is None:
            raise InvalidArgument(f"Cannot set current version to unknown version: {version_id}")
        self.current_version_id, self.changed = version_id, True
        timestamp = version.timestamp_ms if version_id in self.added_versions else self.now_ms
        self.history_entry = ViewHistoryEntry(**{"timestamp-ms": timestamp, "version-id": version_id})

    def apply(self, update: ViewUpdate) -> None:
        handlers = {
            "assign-uuid": self.assign_uuid, "upgrade-format-version": self.upgrade_format_version,
            "add-schema": self.add_schema, "set-location": self.set_location,
            "set-properties": self.set_properties, "remove-properties": self.remove_properties,
            "add-view-version": self.add_version, "set-current-view-version": self.set_current_version,
        }
        handlers[update.action](update.value)

    # -- building --------------------------------------------------------------------------------------------

    def build(self) -> ViewMetadata:
        if self.location is None:
            raise InvalidArgument("Invalid view location: null")
        if not self.versions or self.current_version_id is None:
            raise InvalidArgument("Invalid view: no versions were added")
        history = list(self.history)
        if self.history_entry is not None:
            history.append(self.history_entry)
        current = next(v for v in self.versions if v.version_id == self.current_version_id)
        if self.previous_version is not None and \
                self.properties.get(REPLACE_DROP_DIALECT_ALLOWED, "false").lower() != "true":
            dropped = set(dialects_of(self.previous_version)) - set(dialects_of(current))
            if dropped:
                raise InvalidArgument(f"Cannot replace view due to loss of view dialects "
                                      f"({REPLACE_DROP_DIALECT_ALLOWED}=false): Previous dialects: "
                                      f"{sorted(dialects_of(self.previous_version))}, New dialects: "
                                      f"{sorted(dialects_of(current))}")
        raw_size = self.properties.get(VERSION_HISTORY_SIZE, str(VERSION_HISTORY_SIZE_DEFAULT))
        try:
            size = int(raw_size)
        except ValueError:
            raise BadRequest(f"{VERSION_HISTORY_SIZE} must be an integer, got {raw_size!r}") from None
        if size <= 0:
            raise InvalidArgument(f"{VERSION_HISTORY_SIZE} must be positive but was {size}")
        keep = max(len(self.added_versions | {current.version_id}), size)
        versions = self.versions
        if len(versions) > keep:
            versions = expire_versions(versions, keep, current)
            history = retained_history(history, {v.version_id for v in versions})
        try:
            return ViewMetadata.model_validate({
                "view-uuid": self.uuid or str(uuid.uuid4()), "format-version": self.format_version,
                "location": self.location, "schemas": [s.model_dump(by_alias=True) for s in self.schemas],
                "current-version-id": current.version_id,
                "versions": [v.model_dump(by_alias=True) for v in versions],
                "version-log": [h.model_dump(by_alias=True) for h in history],
                "properties": self.properties,
            })
        except ValidationError as exc:
            raise BadRequest(f"invalid view metadata: {describe(exc, limit=1)}") from None


def version_of(metadata: ViewMetadata, version_id: int) -> ViewVersion | None:
    return next((v for v in metadata.versions if v.version_id == version_id), None)


def expire_versions(versions: Sequence[ViewVersion], keep: int, current: ViewVersion) -> list[ViewVersion]:
    """The ``keep`` newest versions by id, always with the current one."""
    retained = [current]
    for version in sorted(versions, key=lambda v: -v.version_id)[:keep]:
        if len(retained) == keep:
            break
        if version.version_id != current.version_id:
            retained.append(version)
    return retained


def retained_history(history: Sequence[ViewHistoryEntry], ids: set[int]) -> list[ViewHistoryEntry]:
    """The log after its last entry of an expired version (:mod:`arco.iceberg.log_cut`)."""
    return after_last_gap(history, ids, lambda entry: entry.version_id)
