"""The pure commit rules (arco.iceberg.commit_rules): the reference implementation's requirement wording, spec
and sort-order id assignment, and format v3 (field default values, upgrades, row lineage)."""

from __future__ import annotations

import uuid

import pytest
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import RemovePropertiesUpdate

from arco.catalog.locations import LocationRefused
from arco.iceberg import commit_rules as rules
from arco.iceberg import table_requirements
from arco.iceberg.errors import BadRequest, CommitFailed, InvalidArgument

TABLE_UUID = "f79c3e09-677c-4bbd-a479-3f349cb785e7"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "required": False, "type": "long"},
    {"id": 2, "name": "s", "required": False, "type": "string"},
]}


def base(format_version: int = 2) -> TableMetadata:
    return new_table_metadata(Schema.model_validate(SCHEMA), UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER,
                              "file:///wh/t", properties={"format-version": str(format_version)},
                              table_uuid=uuid.UUID(TABLE_UUID))


def fail_message(requirement: dict, metadata: TableMetadata | None) -> str:
    with pytest.raises(CommitFailed) as caught:
        table_requirements.check_requirements(table_requirements.parse_requirements([requirement]), metadata)
    return caught.value.message


@pytest.mark.parametrize(("requirement", "message"), [
    ({"type": "assert-current-schema-id", "current-schema-id": 1},
     "Requirement failed: current schema changed: expected id 1 != 0"),
    ({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 1},
     "Requirement failed: last assigned field id changed: expected id 1 != 2"),
    ({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1000},
     "Requirement failed: last assigned partition id changed: expected id 1000 != 999"),
    ({"type": "assert-default-spec-id", "default-spec-id": 3},
     "Requirement failed: default partition spec changed: expected id 3 != 0"),
    ({"type": "assert-default-sort-order-id", "default-sort-order-id": 1},
     "Requirement failed: default sort order changed: expected id 1 != 0"),
    ({"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"},
     f"Requirement failed: UUID does not match: expected {TABLE_UUID} != 00000000-0000-0000-0000-000000000000"),
    ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 7},
     "Requirement failed: branch or tag main is missing, expected 7"),
    ({"type": "assert-create"}, "Requirement failed: table already exists"),
])
def test_requirement_failures_use_the_reference_wording(requirement: dict, message: str) -> None:
    assert fail_message(requirement, base()) == message


def test_an_absent_ref_expected_absent_holds() -> None:
    metadata = base().model_copy(update={"refs": {}})
    # A ref that is absent and expected absent holds (Java), even off main on a table without snapshots.
    table_requirements.check_requirements(table_requirements.parse_requirements(
        [{"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": None}]), metadata)


def test_requirements_that_hold_pass() -> None:
    table_requirements.check_requirements(table_requirements.parse_requirements([
        {"type": "assert-current-schema-id", "current-schema-id": 0},
        {"type": "assert-table-uuid", "uuid": TABLE_UUID.upper()},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
        {"type": "assert-default-spec-id", "default-spec-id": 0},
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
    ]), base())
    table_requirements.check_requirements(table_requirements.parse_requirements([{"type": "assert-create"}]), None)


# -- spec and sort-order ids -------------------------------------------------------------------------------------

def order(order_id: int, source_id: int, direction: str = "asc") -> dict:
    return {"order-id": order_id, "fields": [
        {"source-id": source_id, "transform": "identity", "direction": direction, "null-order": "nulls-first"}]}


def spec(spec_id: int, source_id: int, name: str) -> dict:
    return {"spec-id": spec_id, "fields": [
        {"source-id": source_id, "field-id": 1000, "transform": "identity", "name": name}]}


def add_order(o: dict) -> list[dict]:
    return [{"action": "add-sort-order", "sort-order": o}, {"action": "set-default-sort-order", "sort-order-id": -1}]


def add_spec(s: dict) -> list[dict]:
    return [{"action": "add-spec", "spec": s}, {"action": "set-default-spec", "spec-id": -1}]


def apply(metadata: TableMetadata, raw: list[dict]) -> TableMetadata:
    return rules.apply_updates(metadata, rules.parse_updates(raw), "file:///wh/t/metadata/00000-x.metadata.json")


def test_a_sort_order_whose_id_is_taken_gets_the_next_id() -> None:
    first = apply(base(), add_order(order(1, 1)))
    second = apply(first, add_order(order(1, 2)))  # a concurrent writer's "order 1", from the same base
    assert {o.order_id: o.fields[0].source_id for o in second.sort_orders if o.fields} == {1: 1, 2: 2}
    assert second.default_sort_order_id == 2


def test_an_identical_sort_order_is_reused_not_duplicated() -> None:
    first = apply(base(), add_order(order(1, 1)))
    again = apply(first, add_order(order(5, 1)) + [{"action": "set-properties", "updates": {"k": "v"}}])
    assert [o.order_id for o in again.sort_orders] == [0, 1]
    assert again.default_sort_order_id == 1
    unsorted = apply(again, add_order({"order-id": 0, "fields": []}))
    assert [o.order_id for o in unsorted.sort_orders] == [0, 1] and unsorted.default_sort_order_id == 0


def test_a_partition_spec_whose_id_is_taken_gets_the_next_id() -> None:
    first = apply(base(), add_spec(spec(1, 1, "id")))
    second = apply(first, add_spec(spec(1, 2, "s")))
    assert {s.spec_id: s.fields[0].name for s in second.partition_specs if s.fields} == {1: "id", 2: "s"}
    assert second.default_spec_id == 2
    same = apply(second, add_spec(spec(9, 1, "id")))
    assert [s.spec_id for s in same.partition_specs] == [0, 1, 2] and same.default_spec_id == 1


def add_schema(schema: dict) -> list[dict]:
    return [{"action": "add-schema", "schema": schema}, {"action": "set-current-schema", "schema-id": -1}]


def test_a_schema_added_without_an_id_or_with_a_taken_one_gets_the_next_id() -> None:
    wider = {"type": "struct", "fields": [*SCHEMA["fields"], {"id": 3, "name": "n", "required": False,
                                                               "type": "int"}]}
    first = apply(base(), add_schema(wider))  # no schema-id at all: it was stored as a second schema 0
    assert [sc.schema_id for sc in first.schemas] == [0, 1] and first.current_schema_id == 1
    assert first.last_column_id == 3
    other = {**SCHEMA, "schema-id": 1, "fields": [*SCHEMA["fields"], {"id": 3, "name": "m", "required": False,
                                                                        "type": "long"}]}
    second = apply(first, add_schema(other))  # a concurrent writer's "schema 1"
    assert [sc.schema_id for sc in second.schemas] == [0, 1, 2] and second.current_schema_id == 2
    assert second.schema().find_field("m").field_id == 3


def test_an_identical_schema_is_reused_not_duplicated() -> None:
    wider = {"type": "struct", "schema-id": 7, "fields": [*SCHEMA["fields"], {"id": 3, "name": "n",
                                                                               "required": False, "type": "int"}]}
    first = apply(base(), add_schema(wider))
    back = apply(first, add_schema({**SCHEMA, "schema-id": 9}))  # the first schema again: made current, not added
    assert [sc.schema_id for sc in back.schemas] == [0, 1] and back.current_schema_id == 0
    with pytest.raises(BadRequest, match="no schema has been added"):
        apply(base(), [{"action": "set-current-schema", "schema-id": -1}])


def test_removing_no_schemas_or_specs_changes_nothing() -> None:
    metadata = base()
    updates = rules.parse_updates([{"action": "remove-schemas", "schema-ids": []},
                                   {"action": "remove-partition-specs", "spec-ids": []}])
    assert rules.assign_added_ids(metadata, updates) == []


def test_minus_one_without_an_add_is_refused() -> None:
    with pytest.raises(BadRequest):
        apply(base(), [{"action": "set-default-sort-order", "sort-order-id": -1}])


def test_assign_ids_is_pure() -> None:
    metadata = base()
    updates = rules.parse_updates(add_order(order(0, 1)))
    assigned = rules.assign_added_ids(metadata, updates)
    assert assigned[0].sort_order.order_id == 1 and assigned[1].sort_order_id == 1
    assert updates[0].sort_order.order_id == 0 and updates[1].sort_order_id == -1


# -- format v3 ---------------------------------------------------------------------------------------------------

DEFAULTS_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 7, "name": "n", "required": False, "type": "int", "initial-default": 5, "write-default": 6},
    {"id": 8, "name": "st", "required": False, "type": {"type": "struct", "fields": [
        {"id": 9, "name": "d", "required": False, "type": "date", "initial-default": "2020-01-01"}]}},
]}


def test_field_defaults_survive_fresh_ids() -> None:
    original = Schema.model_validate(DEFAULTS_SCHEMA)
    created = new_table_metadata(original, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "file:///wh/t",
                                 properties={"format-version": "3"})
    kept = rules.keep_field_defaults(created.schemas[0], original)
    assert [f.field_id for f in kept.fields] == [1, 2]
    assert (kept.fields[0].initial_default, kept.fields[0].write_default) == (5, 6)
    assert str(kept.find_field("st.d").initial_default) == "2020-01-01"


def test_field_defaults_need_v3() -> None:
    with pytest.raises(BadRequest, match="not supported until v3"):
        rules.check_field_defaults(Schema.model_validate(DEFAULTS_SCHEMA), 2)
    rules.check_field_defaults(Schema.model_validate(DEFAULTS_SCHEMA), 3)


def create_updates(*first: dict) -> list[dict]:
    return [*first,
            {"action": "assign-uuid", "uuid": TABLE_UUID},
            {"action": "add-schema", "schema": DEFAULTS_SCHEMA},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
            {"action": "set-default-spec", "spec-id": -1},
            {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
            {"action": "set-default-sort-order", "sort-order-id": -1},
            {"action": "set-location", "location": "file:///wh/t"}]


def test_a_create_upgrading_to_v3_keeps_defaults_and_starts_row_lineage() -> None:
    created = rules.apply_updates(None, rules.parse_updates(
        create_updates({"action": "upgrade-format-version", "format-version": 3})), None)
    assert created.format_version == 3 and created.next_row_id == 0
    assert created.schema().find_field("n").initial_default == 5


def test_a_create_with_defaults_below_v3_is_refused() -> None:
    with pytest.raises(BadRequest, match="not supported until v3"):
        rules.apply_updates(None, rules.parse_updates(create_updates()), None)


def test_an_existing_table_upgrades_to_v3_but_not_beyond() -> None:
    upgraded = apply(base(2), [{"action": "upgrade-format-version", "format-version": 3}])
    assert upgraded.format_version == 3 and upgraded.next_row_id == 0
    with pytest.raises(BadRequest, match="Unsupported table format version"):
        apply(base(2), [{"action": "upgrade-format-version", "format-version": 4}])
    with pytest.raises(BadRequest, match="downgrade"):
        apply(upgraded, [{"action": "upgrade-format-version", "format-version": 2}])


# -- snapshots built on an older table: a retryable 409, as Java's RetryableValidationException --------------------

def add_snapshot(snapshot_id: int, parent: int | None, sequence_number: int, **fields: object) -> list[dict]:
    return [{"action": "add-snapshot", "snapshot": {
        "snapshot-id": snapshot_id, "parent-snapshot-id": parent, "sequence-number": sequence_number,
        "timestamp-ms": 1_700_000_000_000 + snapshot_id, "manifest-list": f"file:///wh/t/metadata/snap-{snapshot_id}.avro",
        "summary": {"operation": "append"}, "schema-id": 0, **fields}}]


@pytest.mark.parametrize("format_version", [2, 3])
def test_a_snapshot_with_a_stale_sequence_number_is_a_retryable_conflict(format_version: int) -> None:
    lineage = {"first-row-id": 0, "added-rows": 10} if format_version == 3 else {}
    first = apply(base(format_version), add_snapshot(1, None, 1, **lineage))
    later = {"first-row-id": 10, "added-rows": 5} if format_version == 3 else {}
    with pytest.raises(CommitFailed, match="^Validation failed, please retry: Cannot add snapshot with sequence "
                                           "number 1 older than last sequence number 1$"):
        apply(first, add_snapshot(2, 1, 1, **later))
    assert apply(first, add_snapshot(2, 1, 2, **later)).last_sequence_number == 2
    assert apply(first, add_snapshot(3, None, 1, **later)).snapshots[-1].snapshot_id == 3  # no parent: no order


def test_a_v3_snapshot_whose_rows_start_behind_the_table_is_a_retryable_conflict() -> None:
    first = apply(base(3), add_snapshot(1, None, 1, **{"first-row-id": 0, "added-rows": 10}))
    assert first.next_row_id == 10
    with pytest.raises(CommitFailed, match="first-row-id is behind table next-row-id: 4 < 10"):
        apply(first, add_snapshot(2, 1, 2, **{"first-row-id": 4, "added-rows": 5}))
    with pytest.raises(CommitFailed):  # the same, as one member of a group commit
        rules.apply_member_updates(first, rules.parse_updates(add_snapshot(2, 1, 2, **{"first-row-id": 4,
                                                                                      "added-rows": 5})))


def test_an_update_the_table_cannot_take_is_an_illegal_argument_as_in_java() -> None:
    with pytest.raises(InvalidArgument, match="cannot apply the updates"):
        apply(base(), [{"action": "set-current-schema", "schema-id": 7}])
    assert InvalidArgument.error_type == "IllegalArgumentException"


def test_an_existing_table_keeps_its_uuid() -> None:
    """The spec: "It is not safe to re-assign the UUID if a table/view already has a UUID assigned" (a client that
    loaded the table refuses it afterwards); assigning the one it has changes nothing; a create assigns its own."""
    with pytest.raises(InvalidArgument, match="Cannot reassign uuid"):
        apply(base(), [{"action": "assign-uuid", "uuid": "00000000-0000-0000-0000-000000000001"}])
    assert str(apply(base(), [{"action": "assign-uuid", "uuid": TABLE_UUID}]).table_uuid) == TABLE_UUID
    created = rules.apply_updates(None, rules.parse_updates(
        create_updates({"action": "upgrade-format-version", "format-version": 3})), None)
    assert str(created.table_uuid) == TABLE_UUID


@pytest.mark.parametrize("ref", ["main", "audit"])
def test_main_is_always_a_branch(ref: str) -> None:
    """The table spec: "There is always a main branch reference"; Java refuses it as a tag, in these words."""
    tagged = [{"action": "set-snapshot-ref", "ref-name": ref, "type": "tag", "snapshot-id": 1}]
    metadata = apply(base(), add_snapshot(1, None, 1))
    if ref == "main":
        with pytest.raises(InvalidArgument, match="Cannot set main to a tag, it must be a branch"):
            apply(metadata, tagged)
    else:
        assert apply(metadata, tagged).refs[ref].snapshot_ref_type == "tag"


# -- group commit: members applied one after another, one metadata-log entry -------------------------------------

GROUP_MEMBERS = [
    [{"action": "set-properties", "updates": {"a": "1"}}],
    [{"action": "add-schema", "schema": {**SCHEMA, "schema-id": 1, "fields": [
        *SCHEMA["fields"], {"id": 3, "name": "t", "required": False, "type": "string"}]}},
     {"action": "set-current-schema", "schema-id": -1}],
    [{"action": "add-sort-order", "sort-order": order(1, 1)},
     {"action": "set-default-sort-order", "sort-order-id": -1}],
    [{"action": "remove-properties", "removals": ["a"]}, {"action": "set-properties", "updates": {"b": "2"}}],
]


def test_a_group_ends_where_one_commit_of_all_its_updates_ends() -> None:
    start = base()
    alone = rules.apply_updates(start, rules.parse_updates([u for m in GROUP_MEMBERS for u in m]), "file:///wh/0.json")
    running, changed = start, False
    for member in GROUP_MEMBERS:
        running, member_changed = rules.apply_member_updates(running, rules.parse_updates(member))
        changed = changed or member_changed
    assert changed
    grouped = rules.close_group(start, running, "file:///wh/0.json")
    without_time = {"last_updated_ms"}
    assert grouped.model_dump(exclude=without_time) == alone.model_dump(exclude=without_time)
    assert [e.metadata_file for e in grouped.metadata_log] == ["file:///wh/0.json"]
    assert grouped.metadata_log[0].timestamp_ms == start.last_updated_ms
    assert grouped.last_updated_ms >= start.last_updated_ms


def test_a_group_that_changes_nothing_adds_no_log_entry() -> None:
    # Its callers write nothing and answer the base (test_iceberg_compat checks that over HTTP): the members'
    # updates alone log nothing.
    start = base()
    running, changed = rules.apply_member_updates(start, [])
    assert not changed and running.metadata_log == start.metadata_log == []


def test_set_location_is_accepted_only_where_the_table_already_is() -> None:
    same = rules.parse_updates([{"action": "set-location", "location": "file:/wh/t/"}])
    rules.check_guardrails(same, allowed_location="file:///wh/t")  # another spelling of the same place
    moved = rules.parse_updates([{"action": "set-location", "location": "file:///wh/elsewhere"}])
    with pytest.raises(BadRequest, match=r"set-location to another place is refused.*this table's is file:///wh/t;"):
        rules.check_guardrails(moved, allowed_location="file:///wh/t")


def test_removing_an_absent_property_changes_nothing_and_a_later_set_is_seen() -> None:
    start = base().model_copy(update={"properties": {**base().properties, "kept": "1", "gone": "2"}})
    updates = rules.parse_updates([
        {"action": "remove-properties", "removals": ["never-there", "gone"]},
        {"action": "set-properties", "updates": {"added": "3"}},
        {"action": "remove-properties", "removals": ["added", "gone"]}])  # "gone" was removed just before
    new = rules.apply_updates(start, updates, "file:///wh/t/metadata/00000-a.metadata.json")
    assert "kept" in new.properties and not {"never-there", "gone", "added"} & set(new.properties)
    grouped, changed = rules.apply_member_updates(start, updates)  # one member of a group commit: the same rule
    assert changed and grouped.properties == new.properties
    filtered = rules.only_present_removals(start, updates)
    assert [u.removals for u in filtered if isinstance(u, RemovePropertiesUpdate)] == [["gone"], ["added"]]


@pytest.mark.parametrize("value", ["x", "", "1.5", "5_0", " 5", "99999999999"])
def test_a_table_property_the_server_reads_as_an_integer_must_be_one(value: str) -> None:
    updates = rules.parse_updates([{"action": "set-properties",
                                    "updates": {"write.metadata.previous-versions-max": value}}])
    with pytest.raises(BadRequest, match="write.metadata.previous-versions-max must be an integer"):
        rules.check_guardrails(updates, allowed_location="file:///wh/t")
    rules.check_property_values({"write.metadata.previous-versions-max": "-7"})
    rules.check_property_values({"write.metadata.previous-versions-max": "+12"})


def test_a_group_over_a_table_that_already_has_a_bad_value_is_a_bad_request() -> None:
    start = base().model_copy(update={"properties": {"write.metadata.previous-versions-max": "x"}})
    updates = rules.parse_updates([{"action": "set-properties", "updates": {"a": "b"}}])
    new, _ = rules.apply_member_updates(start, updates)
    with pytest.raises(BadRequest, match="cannot apply the updates"):
        rules.close_group(start, new, "file:///wh/t/metadata/00000-a.metadata.json")


# -- expiring snapshots: removals of what the table no longer has ---------------------------------------------------


def statistics(snapshot_id: int) -> list[dict]:
    return [{"action": "set-statistics", "snapshot-id": snapshot_id, "statistics": {
        "snapshot-id": snapshot_id, "statistics-path": f"file:///wh/t/metadata/{snapshot_id}.stats",
        "file-size-in-bytes": 10, "file-footer-size-in-bytes": 5, "blob-metadata": []}},
        {"action": "set-partition-statistics", "partition-statistics": {
            "snapshot-id": snapshot_id, "statistics-path": f"file:///wh/t/metadata/{snapshot_id}.pstats",
            "file-size-in-bytes": 10}}]


def test_expiring_a_snapshot_with_statistics_as_spark_sends_it() -> None:
    """Spark's expire_snapshots sends remove-statistics after the remove-snapshots that already removed them; the
    reference accepts it, and takes the snapshot's partition statistics too."""
    table = apply(base(), [*add_snapshot(1, None, 1), *statistics(1)])
    table = apply(table, [*add_snapshot(2, 1, 2), {"action": "set-snapshot-ref", "ref-name": "main",
                                                   "type": "branch", "snapshot-id": 2}])
    expired = apply(table, [{"action": "remove-snapshots", "snapshot-ids": [1]},
                            {"action": "remove-statistics", "snapshot-id": 1}])
    assert [s.snapshot_id for s in expired.snapshots] == [2]
    assert (expired.statistics, expired.partition_statistics) == ([], [])


@pytest.mark.parametrize("removal", [
    {"action": "remove-snapshots", "snapshot-ids": [404]},
    {"action": "remove-statistics", "snapshot-id": 404},
    {"action": "remove-partition-statistics", "snapshot-id": 404},
])
def test_removing_what_the_table_does_not_have_changes_nothing(removal: dict) -> None:
    """Two expiries racing: the second, applied again to the table the first left, removes nothing and fails not."""
    table = apply(base(), [*add_snapshot(1, None, 1), *statistics(1)])
    _, changed = rules.apply_member_updates(table, rules.parse_updates([removal]))
    assert not changed
    assert apply(table, [removal]).snapshots == table.snapshots
    kept = apply(table, [{"action": "remove-snapshots", "snapshot-ids": [404, 1]}])
    assert kept.snapshots == [] and kept.statistics == [] and kept.partition_statistics == []


def test_expiring_a_snapshot_keeps_its_children_as_written_and_cuts_the_log_before_it() -> None:
    """As Java's TableMetadata.Builder: snapshots are immutable (a child keeps its removed parent's id), and the
    history before an entry of a removed snapshot goes, so time travel to a moment it was current fails instead of
    reading an older snapshot (A stayed by a tag here)."""
    table = base()
    for snapshot_id, parent in ((1, None), (2, 1), (3, 2)):
        table = apply(table, [*add_snapshot(snapshot_id, parent, snapshot_id), {
            "action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}])
    table = apply(table, [{"action": "set-snapshot-ref", "ref-name": "first", "type": "tag", "snapshot-id": 1}])
    assert [e.snapshot_id for e in table.snapshot_log] == [1, 2, 3]
    expired = apply(table, [{"action": "remove-snapshots", "snapshot-ids": [2]}])
    assert [(s.snapshot_id, s.parent_snapshot_id) for s in expired.snapshots] == [(1, None), (3, 2)]
    assert [e.snapshot_id for e in expired.snapshot_log] == [3]
    assert expired.refs["first"].snapshot_id == 1 and expired.current_snapshot_id == 3
    # Removing the newest of the logged snapshots too leaves no history at all, as in Java.
    assert apply(table, [{"action": "remove-snapshots", "snapshot-ids": [3, 2]}]).snapshot_log == []


@pytest.mark.parametrize("action, field", [("set-statistics", "statistics"),
                                           ("set-partition-statistics", "partition-statistics")])
def test_a_statistics_file_must_lie_inside_the_table(action: str, field: str) -> None:
    """Maintenance deletes the statistics files of expired snapshots: one naming another table's file (or any file
    at all) would have it deleted, as a foreign manifest list would."""
    def update(path: str) -> list:
        stats = {"snapshot-id": 1, "statistics-path": path, "file-size-in-bytes": 10}
        if action == "set-statistics":
            stats |= {"file-footer-size-in-bytes": 4, "blob-metadata": []}
        return rules.parse_updates([{"action": action, field: stats}])

    for outside in ("file:///etc/passwd", "file:///wh/other/metadata/s.puffin", "file:///wh/t/../other/s.puffin"):
        with pytest.raises((BadRequest, LocationRefused)):  # both 400s
            rules.check_guardrails(update(outside), "file:///wh/t")
    rules.check_guardrails(update("file:///wh/t/metadata/s.puffin"), "file:///wh/t")
