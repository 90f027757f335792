"""The audit table's rows, from real Tier 1 writes: every operation named, tokens credited to whoever made them,
and the commit operation of a timeline row saying what the commit did (not what the current snapshot did)."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest
from pyiceberg.schema import Schema
from pyiceberg.table.update import AddSchemaUpdate, SetCurrentSchemaUpdate, SetPropertiesUpdate, SetSnapshotRefUpdate
from pyiceberg.types import LongType, NestedField, StringType

from arco.auth.identity import create_principal, create_token, revoke_token
from arco.auth.oauth_tokens import revoke_tokens
from arco.catalog.catalogs import create_catalog
from arco.catalog.store import CatalogStore
from arco.events.receipts import EVENTS, commit_operation, iceberg_event
from arco.iceberg.commit_rules import apply_updates
from arco.pipeline import rows
from arco.storage.memory import MemoryBackend


def audit_rows(storage: MemoryBackend) -> list[dict[str, Any]]:
    """The audit rows of every catalog receipt written so far, in log order."""
    keys = sorted(m.key for m in storage.list(f"{EVENTS}/") if "/catalog/committed/" in m.key)
    built = [rows.audit_row(key, orjson.loads(storage.get(key).data)) for key in keys]
    return sorted(built, key=lambda r: r["seq"])


@pytest.fixture
def store() -> CatalogStore:
    return CatalogStore(MemoryBackend())


def test_every_operation_is_named_also_those_that_carry_only_an_id(store: CatalogStore) -> None:
    catalog = create_catalog(store, "main", owner="admin")
    for ns_id, path in (("ns0", ["sales"]), ("ns1", ["sales", "eu"])):
        store.execute(lambda s, ns_id=ns_id, path=path: {"op": "create_namespace", "id": ns_id,
                                                         "catalog_id": catalog.id, "path": path, "owner": "admin"},
                      principal="admin")
    store.execute(lambda s: {"op": "create_table", "id": "t1", "catalog_id": catalog.id, "namespace": ["sales", "eu"],
                             "name": "orders", "location": "memory://wh/orders", "owner": "admin"}, principal="admin")
    create_principal(store, "user", "ann@x.com", by="admin")
    store.execute(lambda s: {"op": "update_grants", "securable_type": "table", "securable_id": "t1",
                             "changes": [{"principal": "ann@x.com", "add": ["SELECT"], "remove": []}]},
                  principal="admin")
    store.execute(lambda s: {"op": "update_grants", "securable_type": "schema", "securable_id": "ns1",
                             "changes": [{"principal": "ann@x.com", "add": ["USE_SCHEMA"], "remove": []}]},
                  principal="admin")
    store.execute(lambda s: {"op": "drop_table", "id": "t1", "location": "memory://wh/orders"}, principal="admin")
    store.execute(lambda s: {"op": "drop_namespace", "id": "ns1"}, principal="admin")

    named = [(r["op"], r["object_type"], r["name"], r["namespace"]) for r in audit_rows(store.storage)]
    assert named == [
        ("create_catalog", "catalog", "main", None),
        ("create_namespace", "namespace", "sales", ["sales"]),
        ("create_namespace", "namespace", "sales.eu", ["sales", "eu"]),
        ("create_table", "table", "orders", ["sales", "eu"]),
        ("create_principal", "principal", "ann@x.com", None),
        ("update_grants", "grants", "main.sales.eu.orders", ["sales", "eu"]),
        ("update_grants", "grants", "main.sales.eu", ["sales", "eu"]),
        ("drop_table", "table", "orders", ["sales", "eu"]),  # named although its id resolves to nothing now
        ("drop_namespace", "namespace", "sales.eu", ["sales", "eu"]),
    ]
    by_op = {r["op"]: r for r in audit_rows(store.storage)}
    assert by_op["drop_table"]["catalog_id"] == catalog.id and by_op["drop_table"]["object_id"] == "t1"
    assert all(r["name"] for r in audit_rows(store.storage))


def test_a_token_made_by_an_admin_is_credited_to_the_admin_and_names_its_owner(store: CatalogStore) -> None:
    create_principal(store, "user", "ann@x.com", by="admin")
    issued = create_token(store, "ann@x.com", by="admin", comment="for ann")
    revoke_token(store, issued.entry.id, by="ops@x.com")

    made, revoked = [r for r in audit_rows(store.storage) if r["object_type"] == "token"]
    assert (made["op"], made["principal"], made["name"], made["object_id"]) == (
        "create_token", "admin", "ann@x.com", issued.entry.id)
    assert (revoked["op"], revoked["principal"], revoked["name"]) == ("revoke_token", "ops@x.com", "ann@x.com")
    assert "token_hash" not in orjson.loads(made["details"])  # a credential's lookup key stays out of the audit
    with store.read() as state:
        assert state.tokens[issued.entry.id].principal == "ann@x.com"  # the token still authenticates ann


def test_revoking_a_principals_oauth_tokens_credits_the_actor_and_names_the_principal(store: CatalogStore) -> None:
    create_principal(store, "service_principal", "etl", by="admin")
    revoke_tokens(store, "etl", by="ops@x.com")

    (revoked,) = [r for r in audit_rows(store.storage) if r["op"] == "revoke_oauth_tokens"]
    assert (revoked["principal"], revoked["name"]) == ("ops@x.com", "etl")
    with store.read() as state:
        assert "etl" in state.oauth_not_before  # the revocation applies to etl, not to whoever ran it


def test_a_token_logged_before_owner_existed_still_belongs_to_the_principal_it_named() -> None:
    """Log entries written by earlier versions named the token's owner in ``principal``; replaying them must
    give the same tokens."""
    from arco.catalog.state import CatalogState
    from support.tier1 import commit

    state = CatalogState()
    commit(state, {"op": "create_principal", "kind": "user", "name": "ann@x.com", "id": "p1"})
    commit(state, {"op": "create_token", "id": "k1", "token_hash": "h", "principal": "ann@x.com"})
    assert state.tokens["k1"].principal == "ann@x.com"


def test_receipts_logged_without_names_fall_back_to_what_the_operation_says() -> None:
    old = {"event_type": "CatalogMutationCommitted", "event_id": "e", "seq": 7, "at_ms": 1_700_000_000_000,
           "principal": "admin", "operation": {"op": "create_namespace", "id": "n", "catalog_id": "c",
                                                "path": ["a", "b"]}}
    row = rows.audit_row("k", old)
    assert (row["name"], row["namespace"], row["catalog_id"]) == ("a.b", ["a", "b"], "c")
    assert row["committed_at"].year == 2023 and "at" not in row


SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


def appended(metadata: Any, snapshot_id: int, location: str, branch: str = "main") -> Any:
    """``metadata`` after an append commit to ``branch``, the snapshot as PyIceberg's writer makes it (stamped after
    the base)."""
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary
    from pyiceberg.table.update import AddSnapshotUpdate

    head = metadata.refs[branch].snapshot_id if branch in metadata.refs else None
    # After the base and every snapshot (this test's steps may all fall in one millisecond) ...
    stamp = max([metadata.last_updated_ms, *(s.timestamp_ms for s in metadata.snapshots)]) + 1
    snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=head,
                        sequence_number=metadata.last_sequence_number + 1, timestamp_ms=stamp,
                        manifest_list=f"memory://wh/t/{snapshot_id}.avro",
                        summary=Summary(Operation.APPEND), schema_id=metadata.current_schema_id)
    added = apply_updates(metadata, [AddSnapshotUpdate(snapshot=snapshot),
                                     SetSnapshotRefUpdate(ref_name=branch, type="branch", snapshot_id=snapshot_id)],
                          location)
    # ... and before every later version, which the clock stamps: a metadata-only commit in the snapshot's own
    # millisecond would be read as the one that added it (arco.events.receipts.commit_operation).
    while time.time() * 1000 <= stamp + 1:
        time.sleep(0.001)
    return added


def test_the_operation_of_a_commit_is_what_the_commit_did() -> None:
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

    created = new_table_metadata(SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "memory://wh/t", {})
    assert commit_operation(created, None) == ("create", None)
    first = appended(created, 11, "memory://wh/t/v0.json")
    operation, added = commit_operation(first, "memory://wh/t/v0.json")
    assert operation == "append" and added is not None and added.snapshot_id == 11

    wider = Schema(NestedField(1, "id", LongType(), required=False),
                   NestedField(2, "name", StringType(), required=False), schema_id=1)
    schema_only = apply_updates(first, [AddSchemaUpdate(schema_=wider), SetCurrentSchemaUpdate(schema_id=-1)],
                                "memory://wh/t/v1.json")
    assert schema_only.current_snapshot_id == 11  # the current snapshot is still the append's
    assert commit_operation(schema_only, "memory://wh/t/v1.json") == ("update-metadata", None)
    props_only = apply_updates(schema_only, [SetPropertiesUpdate(updates={"owner": "ann"})], "memory://wh/t/v2.json")
    assert commit_operation(props_only, "memory://wh/t/v2.json") == ("update-metadata", None)
    second = appended(props_only, 12, "memory://wh/t/v3.json")
    assert commit_operation(second, "memory://wh/t/v3.json")[0] == "append"
    rolled_back = apply_updates(second, [SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=11)],
                                "memory://wh/t/v4.json")
    assert commit_operation(rolled_back, "memory://wh/t/v4.json") == ("set-current-snapshot", None)

    on_dev = appended(rolled_back, 13, "memory://wh/t/v5.json", branch="dev")
    assert on_dev.current_snapshot_id == 11  # main did not move
    operation, added = commit_operation(on_dev, "memory://wh/t/v5.json")
    assert operation == "append" and added is not None and added.snapshot_id == 13
    dev_event = iceberg_event("committed", table_uuid=str(on_dev.table_uuid), metadata_location="memory://wh/t/v5",
                              metadata=on_dev, previous_metadata_location="memory://wh/t/v4.json",
                              source={"kind": "iceberg_rest"})
    assert (dev_event["operation"], dev_event["snapshot_id"]) == ("append", 13)
    assert dev_event["summary"]["operation"] == "append"

    event = iceberg_event("committed", table_uuid=str(schema_only.table_uuid), metadata_location="memory://wh/t/v2",
                          metadata=schema_only, previous_metadata_location="memory://wh/t/v1.json",
                          source={"kind": "iceberg_rest"})
    row = rows.timeline_row("k", event, {str(schema_only.table_uuid)})
    assert (row["operation"], row["summary"], row["snapshot_id"]) == ("update-metadata", [], 11)


def test_with_the_base_at_hand_the_operation_is_exact_even_in_the_snapshots_own_millisecond() -> None:
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

    created = new_table_metadata(SCHEMA, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "memory://wh/t", {})
    first = appended(created, 11, "memory://wh/t/v0.json")
    stamp = first.snapshot_by_id(11).timestamp_ms
    # A metadata-only commit stamped by the server's clock in the millisecond the client stamped its snapshot with.
    props = apply_updates(first, [SetPropertiesUpdate(updates={"owner": "ann"})], "memory://wh/t/v1.json")
    same_ms = props.model_copy(update={"last_updated_ms": stamp})
    assert commit_operation(same_ms, "memory://wh/t/v1.json")[0] == "append"  # the new file alone misleads
    assert commit_operation(same_ms, "memory://wh/t/v1.json", base=first) == ("update-metadata", None)

    operation, added = commit_operation(first, "memory://wh/t/v0.json", base=created)
    assert operation == "append" and added is not None and added.snapshot_id == 11
    second = appended(first, 12, "memory://wh/t/v1.json")
    rolled_back = apply_updates(second, [SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=11)],
                                "memory://wh/t/v2.json")
    assert commit_operation(rolled_back, "memory://wh/t/v2.json", base=second) == ("set-current-snapshot", None)
    on_dev = appended(rolled_back, 13, "memory://wh/t/v3.json", branch="dev")
    operation, added = commit_operation(on_dev, "memory://wh/t/v3.json", base=rolled_back)
    assert operation == "append" and added is not None and added.snapshot_id == 13
    event = iceberg_event("committed", table_uuid=str(same_ms.table_uuid), metadata_location="memory://wh/t/v2",
                          metadata=same_ms, previous_metadata_location="memory://wh/t/v1.json",
                          source={"kind": "iceberg_rest"}, base=first)
    assert (event["operation"], event["summary"], event["snapshot_id"]) == ("update-metadata", None, 11)
