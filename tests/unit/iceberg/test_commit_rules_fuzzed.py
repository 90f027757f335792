"""The pure commit path under generated updates: every input ends in a new metadata or in an Iceberg error.

What a client sends passes through parse_updates, the guardrails, the requirements and the appliers
(commit_rules), and a view's create or updates through view_rules; whatever PyIceberg raises underneath must come
out as one of Arco's Iceberg errors (400, 409), never as another exception, which the server could only answer
500. The inputs are updates of every known action with fields drawn from the names those actions use and values
of every JSON shape, biased towards the strings that reach PyIceberg's own parsers (type names, transforms, sort
directions).
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from arco.iceberg import commit_rules as rules
from arco.iceberg import table_requirements, view_rules
from arco.iceberg.errors import IcebergError
from arco.iceberg.metadata_files import metadata_bytes

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": False, "type": "long"},
    {"id": 2, "name": "s", "required": False, "type": "string"},
]}
BASE: TableMetadata = new_table_metadata(Schema.model_validate(SCHEMA), UNPARTITIONED_PARTITION_SPEC,
                                         UNSORTED_SORT_ORDER, "file:///wh/t", properties={"format-version": "2"},
                                         table_uuid=uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"))

WORDS = ["list", "map", "struct", "long", "int", "string", "decimal(a,b)", "decimal(40,2)", "fixed[x]", "fixed[4]",
         "bucket[x]", "bucket[0]", "bucket[16]", "truncate[-1]", "identity", "year", "void", "unknown", "asc",
         "desc", "nulls-first", "branch", "tag", "main", "id", "s", "", "timestamp_ns", "variant", "geometry(x)"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**64, 2**64), st.sampled_from(WORDS),
                    st.text(max_size=8), st.floats(allow_nan=False))
FIELD_NAMES = ["schema", "fields", "type", "id", "name", "required", "element", "element-id", "element-required",
               "key", "key-id", "value", "value-id", "value-required", "schema-id", "last-column-id", "spec",
               "spec-id", "source-id", "source-ids", "field-id", "transform", "sort-order", "order-id", "direction",
               "null-order", "snapshot", "snapshot-id", "parent-snapshot-id", "sequence-number", "timestamp-ms",
               "manifest-list", "summary", "operation", "ref-name", "updates", "removals", "location",
               "format-version", "snapshot-ids", "spec-ids", "schema-ids", "statistics", "max-ref-age-ms",
               "initial-default", "write-default", "doc", "identifier-field-ids", "sort-order-id", "view-version",
               "view-version-id", "version-id", "uuid", "representations", "default-namespace", "sql", "dialect"]
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(FIELD_NAMES), inner, max_size=5)), max_leaves=12)
fields = st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=5)


def objects_of(key: str, kinds: frozenset[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects whose ``key`` ("action", "type") is one of ``kinds``, with generated fields beside it."""
    return st.builds(lambda kind, rest: {**rest, key: kind}, st.sampled_from(sorted(kinds)), fields)


update = objects_of("action", rules.KNOWN_UPDATE_ACTIONS)
requirement = objects_of("type", table_requirements.KNOWN_REQUIREMENT_TYPES)


def commit(raw_updates: list[dict[str, Any]], raw_requirements: list[dict[str, Any]]) -> None:
    """The steps a commit takes without I/O, on one table, through both appliers (a lone commit or a transaction
    uses apply_updates, a group member apply_member_updates), and the bytes the metadata file would hold."""
    updates = rules.parse_updates(raw_updates)
    requirements = table_requirements.parse_requirements(raw_requirements)
    rules.check_guardrails(updates, allowed_location=BASE.location)
    table_requirements.check_requirements(requirements, BASE)
    metadata_bytes(rules.apply_updates(BASE, updates, "file:///wh/t/metadata/00000-x.metadata.json"))
    member, _ = rules.apply_member_updates(BASE, updates)
    metadata_bytes(member)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(update, min_size=1, max_size=3), st.lists(requirement, max_size=2))
def test_generated_commits_end_in_metadata_or_an_iceberg_error(raw_updates: list[dict[str, Any]],
                                                               raw_requirements: list[dict[str, Any]]) -> None:
    try:
        commit(raw_updates, raw_requirements)
    except IcebergError:
        pass


VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["db"],
           "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}
VIEW = view_rules.new_view_metadata("0c3c1f3e-6a8e-4c0b-9d55-5a1f0c9b7c11", "file:///wh/v", view_rules.parse_create(
    {"name": "v", "schema": SCHEMA, "view-version": VERSION}), 1)
view_update = objects_of("action", view_rules.VIEW_UPDATE_ACTIONS)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(fields, fields, st.lists(view_update, min_size=1, max_size=3))
def test_generated_view_creates_and_updates_end_in_a_view_or_an_iceberg_error(
        schema: dict[str, Any], version: dict[str, Any], raw_updates: list[dict[str, Any]]) -> None:
    for body in ({"name": "v", "schema": {**schema, "type": "struct"}, "view-version": VERSION},
                 {"name": "v", "schema": SCHEMA, "view-version": version}):
        try:
            view_rules.new_view_metadata(VIEW.view_uuid, "file:///wh/v", view_rules.parse_create(body), 1)
        except IcebergError:
            pass
    try:
        view_rules.apply_updates(VIEW, view_rules.parse_updates(raw_updates), 2)
    except IcebergError:
        pass
