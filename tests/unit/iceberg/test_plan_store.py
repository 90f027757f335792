"""Scan plan state in storage: ids and plan tasks, expiry with lazy deletion, a dead planner's plan failing, a
cancel racing completion, and garbage collection of what expired or was orphaned."""

from __future__ import annotations

import time
from dataclasses import replace

from arco.iceberg.plan_store import (
    PlanStore,
    chunk_key,
    finish,
    parse_plan_task,
    plan_task,
    record_key,
    valid_plan_id,
)
from arco.pipeline.gc import plan_deletions
from arco.pipeline.gc_rules import DAY, GcPolicy
from arco.storage.memory import MemoryBackend


def test_plan_ids_and_plan_tasks() -> None:
    store = PlanStore(MemoryBackend(), lifetime_s=60)
    ids = {store.new_record("t", "p").plan_id for _ in range(100)}
    assert len(ids) == 100 and all(valid_plan_id(i) for i in ids)
    plan_id = next(iter(ids))
    assert parse_plan_task(plan_task(plan_id, 12)) == (plan_id, 12)
    for bad in (f"{plan_id}.01", f"{plan_id}.-1", f"{plan_id}/1", f"{plan_id}.1.2", "x.1", f"{plan_id}.", 7):
        assert parse_plan_task(bad) is None  # type: ignore[arg-type]
    assert not valid_plan_id("../../x" + "a" * 25)


def test_a_plan_from_submitted_to_completed() -> None:
    store = PlanStore(MemoryBackend(), lifetime_s=60)
    record = store.new_record("table", "ann")
    store.create(record)
    store.write_chunk(record.plan_id, 0, b"{}")
    store.write_chunk(record.plan_id, 1, b"{}")
    assert finish(store, record.plan_id, lambda r: replace(r, status="completed", chunk_count=2))
    loaded, _ = store.load(record.plan_id)  # type: ignore[misc]
    assert loaded.status == "completed" and loaded.plan_tasks == [plan_task(record.plan_id, n) for n in (0, 1)]
    assert store.read_chunk(record.plan_id, 1) == b"{}"


def test_a_cancel_before_completion_wins_and_the_planner_cleans_up() -> None:
    storage = MemoryBackend()
    store = PlanStore(storage, lifetime_s=60)
    record = store.new_record("table", "ann")
    store.create(record)
    assert store.cancel(record.plan_id).status == "cancelled"  # type: ignore[union-attr]
    store.write_chunk(record.plan_id, 0, b"{}")  # the planner, unaware, goes on
    assert not finish(store, record.plan_id, lambda r: replace(r, status="completed", chunk_count=1))
    assert store.load(record.plan_id)[0].status == "cancelled"  # type: ignore[index]
    assert storage.head(chunk_key(record.plan_id, 0)) is None


def test_a_plan_whose_planner_stopped_heartbeating_fails() -> None:
    store = PlanStore(MemoryBackend(), lifetime_s=600, stale_after_s=30)
    record = store.new_record("table", "ann")
    store.create(replace(record, heartbeat_at_ms=record.heartbeat_at_ms - 31_000))
    failed, _ = store.load(record.plan_id)  # type: ignore[misc]
    assert failed.status == "failed" and "no heartbeat" in failed.error["message"]  # type: ignore[index]
    assert not finish(store, record.plan_id, lambda r: replace(r, status="completed"))  # too late


def test_an_expired_plan_is_gone_and_deleted_by_the_reader() -> None:
    storage = MemoryBackend()
    store = PlanStore(storage, lifetime_s=0.05)
    record = store.new_record("table", "ann", status="completed")
    store.write_chunk(record.plan_id, 1, b"{}")
    store.create(replace(record, first_chunk=1, chunk_count=2))
    assert store.load(record.plan_id) is not None
    time.sleep(0.06)
    assert store.load(record.plan_id) is None
    assert list(storage.list(f"_catalog/iceberg_plans/{record.plan_id}/")) == []


def test_gc_deletes_expired_plans_and_old_orphaned_task_files() -> None:
    storage = MemoryBackend()
    store = PlanStore(storage, lifetime_s=10 * DAY)
    live, expired = store.new_record("t", "p"), store.new_record("t", "p")
    store.create(live)
    store.create(replace(expired, expires_at_ms=expired.created_at_ms - 1000))
    store.write_chunk(expired.plan_id, 0, b"{}")
    store.write_chunk("o" * 32, 0, b"{}")  # a crash between the chunks and the record
    storage.put(record_key("u" * 32), b"not json")
    now = time.time()
    assert {d.key for d in plan_deletions(storage, GcPolicy(), now)} == {
        record_key(expired.plan_id), chunk_key(expired.plan_id, 0)}
    later = {d.key for d in plan_deletions(storage, GcPolicy(), now + DAY + 1)}
    assert chunk_key("o" * 32, 0) in later and record_key(live.plan_id) not in later
    assert record_key("u" * 32) not in later
