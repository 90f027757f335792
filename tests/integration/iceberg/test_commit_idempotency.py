"""Idempotency-Key on table commits: replay, conflicts, and retries after a crash at each step."""

from __future__ import annotations

import time

import pytest
from support.iceberg_harness import Harness

from arco.iceberg import commit
from arco.iceberg.errors import BadRequest, CommitFailed, IcebergError, ServiceUnavailable
from arco.iceberg.idempotency import IdempotencyMarkers, check_key, request_hash
from arco.storage.faults import FaultRule, SimulatedCrash

KEY = "01936f8e-7c2a-7b3d-9f4e-5a6b7c8d9e0f"


def body(value: str, requirements: list | None = None) -> dict:
    return {"requirements": requirements or [],
            "updates": [{"action": "set-properties", "updates": {"counter": value}}]}


def run(h: Harness, payload: dict, key: str = KEY, timeout: float = 60.0) -> commit.CommitResult:
    idem = commit.Idempotency(IdempotencyMarkers(h.storage, timeout), key, request_hash("updateTable", payload))
    return commit.commit_table(h.tables, h.catalog, ("db",), "t", payload, "admin", {"kind": "test"}, idem)


def history(h: Harness) -> list[str]:
    loaded = h.tables.load(h.catalog, ("db",), "t")
    return [e.metadata_file for e in loaded.metadata.metadata_log] + [loaded.pointer.pointer.current_metadata_location]


@pytest.fixture
def table(harness: Harness) -> Harness:
    harness.create_table("t")
    return harness


def test_a_retry_with_the_same_key_is_applied_once(table: Harness) -> None:
    first = run(table, body("1"))
    again = run(table, body("1"))
    assert again.metadata_location == first.metadata_location
    assert again.metadata.properties["counter"] == "1"
    assert len(history(table)) == 2  # the create and one commit


def test_the_same_key_with_another_body_is_a_conflict(table: Harness) -> None:
    run(table, body("1"))
    with pytest.raises(CommitFailed, match="different request payload"):
        run(table, body("2"))
    assert len(history(table)) == 2


def test_a_deterministic_failure_is_replayed(table: Harness) -> None:
    bad = body("1", [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}])
    with pytest.raises(CommitFailed) as first:
        run(table, bad)
    with pytest.raises(IcebergError) as again:
        run(table, bad)
    replayed = again.value
    assert (replayed.status, replayed.error_type, replayed.message) == (409, "CommitFailedException", first.value.message)
    assert len(history(table)) == 1


@pytest.mark.parametrize("raw", ["", "not-a-uuid", "{01936f8e-7c2a-7b3d-9f4e-5a6b7c8d9e0f}",
                                 "01936f8e7c2a7b3d9f4e5a6b7c8d9e0f", "550e8400-e29b-41d4-a716-446655440000",
                                 "01936f8e-7c2a-7b3d-1f4e-5a6b7c8d9e0f", "x" * 10_000])
def test_malformed_keys_are_refused(raw: str) -> None:
    with pytest.raises(BadRequest):
        check_key(raw)


def test_bodies_that_cannot_be_canonicalized_are_refused() -> None:
    with pytest.raises(BadRequest):
        request_hash("updateTable", {"n": float("nan")})


@pytest.mark.parametrize("rule", [
    FaultRule(op="put", key="_catalog/iceberg_pointers/*", when="after"),          # after the pointer CAS
    FaultRule(op="put", key="_catalog/iceberg_idempotency/*", when="before", nth=2),  # before finalizing
])
def test_a_crash_after_the_commit_point_is_recovered_by_the_retry(table: Harness, rule: FaultRule) -> None:
    table.storage.inject(rule)
    with pytest.raises(SimulatedCrash):
        run(table, body("1"))
    table.storage.clear()
    retried = run(table.reopen(), body("1"))
    assert retried.metadata.properties["counter"] == "1"
    assert len(history(table)) == 2
    assert run(table.reopen(), body("1")).metadata_location == retried.metadata_location


@pytest.mark.parametrize("rule", [
    FaultRule(op="put", key="_catalog/iceberg_idempotency/*", when="after"),        # after the claim
    FaultRule(op="put", key="*.metadata.json", when="after"),                       # after the metadata file
    FaultRule(op="put", key="_catalog/iceberg_pointers/*", when="before"),          # before the pointer CAS
])
def test_a_crash_before_the_commit_point_is_taken_over_after_the_timeout(table: Harness, rule: FaultRule) -> None:
    table.storage.inject(rule)
    with pytest.raises(SimulatedCrash):
        run(table, body("1"), timeout=0.5)
    table.storage.clear()
    with pytest.raises(ServiceUnavailable) as busy:
        run(table.reopen(), body("1"), timeout=0.5)  # within the timeout the first attempt may still be running
    assert busy.value.headers["Retry-After"]
    time.sleep(0.6)
    retried = run(table.reopen(), body("1"), timeout=0.5)
    assert retried.metadata.properties["counter"] == "1"
    assert len(history(table)) == 2
