"""Group commit: requests to one table that meet in one server share one metadata file and one CAS, and each keeps
its own requirement check, answer, Idempotency-Key recovery, receipt and history row."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise
from typing import Any

import orjson
import pytest
from uuid6 import uuid7

from arco.catalog.store import CatalogStore
from arco.events import after_answer
from arco.events.receipts import EVENTS, iceberg_receipt_key
from arco.events.reconcile import reconcile_table, table_history
from arco.iceberg import commit
from arco.iceberg.errors import CommitFailed, IcebergError, ServiceUnavailable
from arco.iceberg.file_names import carries_tag, group_part, is_group_file
from arco.iceberg.group_commit import (
    GROUPS,
    Coalescer,
    GroupMember,
    GroupRecord,
    GroupRecords,
    Pending,
    group_record_key,
)
from arco.iceberg.idempotency import Outcome, key_hash
from arco.iceberg.mutations import Caller
from arco.iceberg.pointer import POINTERS
from arco.iceberg.tables import TableService
from arco.pipeline.gc import group_record_deletions, known_commit_keys
from arco.pipeline.gc_rules import GcPolicy
from arco.pipeline.rows import timeline_row
from arco.storage.backoff import backoff_delay
from arco.storage.base import PreconditionFailed
from arco.storage.faults import FaultRule, SimulatedCrash
from support.iceberg_harness import Harness, make_harness
from support.storage_targets import StorageTarget

TIMEOUT = 0.4  # the in-progress timeout of these tests' "servers"


def caller(i: int, key: str | None = None) -> Caller:
    principal = f"user{i}"
    return Caller(principal, {"kind": "iceberg_rest", "client_info": f"client{i}", "principal": principal},
                  key if key is not None else str(uuid7()))


def set_property(name: str, value: str = "1", requirements: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"requirements": requirements or [], "updates": [{"action": "set-properties", "updates": {name: value}}]}


@pytest.fixture
def table(harness: Harness) -> Harness:
    harness.create_table("t")
    return harness


def table_uuid(h: Harness) -> str:
    return h.tables.entry(h.catalog, ("db",), "t").id


def history(h: Harness) -> list[str]:
    loaded = h.tables.load(h.catalog, ("db",), "t")
    return [location for location, _ in table_history(h.tables.files, loaded.pointer.pointer.current_metadata_location)]


def metadata_folder(h: Harness) -> str:
    """The storage prefix of the table's metadata files."""
    loaded = h.tables.load(h.catalog, ("db",), "t")
    return h.tables.files.key_of(loaded.entry.location.rstrip("/") + "/metadata/")


def current(h: Harness) -> Any:
    return h.tables.load(h.catalog, ("db",), "t").metadata


def run_grouped(h: Harness, calls: list[Callable[[], Outcome]]) -> list[Outcome | BaseException]:
    """Run the calls in threads while the table's commits are held, so that they go as one batch, in this order."""
    results: list[Outcome | BaseException | None] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            results[index] = calls[index]()
        except BaseException as exc:  # noqa: BLE001 - the test looks at each answer
            results[index] = exc

    uuid = table_uuid(h)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    with h.tables.committer.hold(uuid):
        for queued, thread in enumerate(threads, start=1):
            thread.start()
            deadline = time.monotonic() + 10
            while h.tables.committer.queued(uuid) < queued:
                assert time.monotonic() < deadline, "the request never queued up"
                time.sleep(0.002)
    for thread in threads:
        thread.join(30)
    return results  # type: ignore[return-value]


def commit_call(h: Harness, i: int, body: dict[str, Any], key: str | None = None,
                timeout: float = 60.0) -> Callable[[], Outcome]:
    return lambda: h.mutations(timeout).commit_table(h.catalog, ("db",), "t", body, caller(i, key))


def committed_receipts(h: Harness, uuid: str) -> list[tuple[str, dict[str, Any]]]:
    """The table's committed receipts, once those written after their commit's answer are written."""
    assert after_answer.drain(10)
    found = []
    for meta in h.storage.list(f"{EVENTS}/"):
        if "/iceberg/committed/" in meta.key:
            event = orjson.loads(h.storage.get(meta.key).data)
            if event["table_uuid"] == uuid:
                found.append((meta.key, event))
    return found


# -- one batch ----------------------------------------------------------------------------------------------------


def test_requests_that_meet_share_one_file_and_keep_their_own_receipts(table: Harness) -> None:
    n = 5
    results = run_grouped(table, [commit_call(table, i, set_property(f"p{i}")) for i in range(n)])
    locations = {r.metadata_location for r in results}  # type: ignore[union-attr]
    assert len(locations) == 1 and all(isinstance(r, Outcome) for r in results)
    location = locations.pop()
    assert is_group_file(location)
    assert history(table)[0] == location and len(history(table)) == 2  # one version step for the group
    assert {f"p{i}" for i in range(n)} <= set(current(table).properties)
    metadata = current(table)
    assert [e.metadata_file for e in metadata.metadata_log] == [history(table)[1]]

    record = table.tables.groups.read(table_uuid(table), location)
    assert record is not None and [m.principal for m in record.members] == [f"user{i}" for i in range(n)]

    receipts = committed_receipts(table, table_uuid(table))
    group_receipts = [(k, e) for k, e in receipts if e["metadata_location"] == location]
    assert len(group_receipts) == n
    rows = [timeline_row(key, event, {table_uuid(table)}) for key, event in group_receipts]
    assert sorted(r["principal"] for r in rows) == [f"user{i}" for i in range(n)]
    assert {r["metadata_location"] for r in rows} == {location}
    assert sorted(e["group"]["index"] for _, e in group_receipts) == list(range(n))
    assert all(e["group"]["size"] == n and e["group"]["actions"] == ["set-properties"] for _, e in group_receipts)


def test_a_failed_requirement_fails_only_its_own_request(table: Harness) -> None:
    stale = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}]
    results = run_grouped(table, [commit_call(table, 0, set_property("a")),
                                  commit_call(table, 1, set_property("b", requirements=stale)),
                                  commit_call(table, 2, set_property("c"))])
    assert isinstance(results[0], Outcome) and isinstance(results[2], Outcome)
    assert results[0].metadata_location == results[2].metadata_location
    assert isinstance(results[1], CommitFailed)
    assert results[1].message == "Requirement failed: branch or tag main is missing, expected 42"
    properties = current(table).properties
    assert "a" in properties and "c" in properties and "b" not in properties
    assert len(committed_receipts(table, table_uuid(table))) == 2 + 1  # two members, and the create


def test_a_requirement_is_checked_against_the_earlier_members_changes(table: Harness) -> None:
    schema = {"type": "struct", "schema-id": 1, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
    evolve = {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
              "updates": [{"action": "add-schema", "schema": schema},
                          {"action": "set-current-schema", "schema-id": -1}]}
    same_base = set_property("late", requirements=[{"type": "assert-current-schema-id", "current-schema-id": 0}])
    results = run_grouped(table, [commit_call(table, 0, evolve), commit_call(table, 1, same_base),
                                  commit_call(table, 2, set_property("other"))])
    assert isinstance(results[0], Outcome) and isinstance(results[2], Outcome)
    assert isinstance(results[1], CommitFailed)
    assert results[1].message == "Requirement failed: current schema changed: expected id 0 != 1"
    metadata = current(table)
    assert metadata.current_schema_id == 1 and "late" not in metadata.properties
    assert "other" in metadata.properties


def test_a_group_of_one_is_an_ordinary_commit(table: Harness) -> None:
    key = str(uuid7())
    outcome = commit_call(table, 0, set_property("solo"), key)()
    name = outcome.metadata_location.rsplit("/", 1)[-1]  # type: ignore[union-attr]
    assert carries_tag(name, key_hash(key)) and not is_group_file(outcome.metadata_location)  # type: ignore[arg-type]
    assert not list(table.storage.list(f"{GROUPS}/"))


# -- crashes inside a group, then every member retried with its key -------------------------------------------

GROUP_STEPS = {
    "after-metadata-write": FaultRule(op="put", key="*.metadata.json", when="after"),
    "after-group-record": FaultRule(op="put", key=f"{GROUPS}/*", when="after"),
    "after-pointer-cas": FaultRule(op="put", key=f"{POINTERS}/*", when="after"),
}
LANDED_AFTER = ("after-pointer-cas",)


def retry_until_done(run: Callable[[], Outcome]) -> Outcome:
    for _ in range(5):
        try:
            return run()
        except ServiceUnavailable:
            time.sleep(TIMEOUT + 0.1)
    raise AssertionError("the retry never completed")


@pytest.mark.parametrize("step", list(GROUP_STEPS))
def test_group_crash_then_keyed_retries_apply_each_request_once(table: Harness, step: str) -> None:
    n = 4
    keys = [str(uuid7()) for _ in range(n)]
    bodies = [set_property(f"k{i}") for i in range(n)]
    table.storage.inject(replace(GROUP_STEPS[step]))
    results = run_grouped(table, [commit_call(table, i, bodies[i], keys[i], TIMEOUT) for i in range(n)])
    assert all(isinstance(r, SimulatedCrash) for r in results), results
    table.storage.clear()

    after = table.reopen()
    retried = [retry_until_done(commit_call(after, i, bodies[i], keys[i], TIMEOUT)) for i in range(n)]

    versions = history(after.reopen())
    properties = current(after.reopen()).properties
    assert {f"k{i}" for i in range(n)} <= set(properties)
    if step in LANDED_AFTER:
        assert len(versions) == 2, "the group landed once; the retries found it"
        assert {r.metadata_location for r in retried} == {versions[0]}
    else:
        assert len(versions) == 1 + n, "nothing landed before the crash; each retry applied its request once"
    for i in range(n):  # and from now on each key answers the same
        assert commit_call(after.reopen(), i, bodies[i], keys[i])() == retried[i]
    fresh = after.reopen()
    loaded = fresh.tables.load(fresh.catalog, ("db",), "t")
    reconcile_table(fresh.storage, fresh.tables.files, fresh.tables.resolver, loaded.entry, {"name": "t"})
    records = GroupRecords(fresh.storage)
    for location, updated_ms in table_history(fresh.tables.files, loaded.pointer.pointer.current_metadata_location):
        record = records.read(loaded.entry.id, location) if is_group_file(location) else None
        for member in range(len(record.members) if record else 1):
            assert fresh.storage.head(iceberg_receipt_key("committed", location, updated_ms, member)) is not None


# -- many writers, two "servers" (two services, one warehouse) ---------------------------------------------------


def test_storm_of_writers_over_two_services_loses_nothing(table: Harness) -> None:
    storm(table)


def test_storm_on_seaweedfs(s3_seaweedfs_bucket: StorageTarget) -> None:
    """The same storm on S3 (SeaweedFS): conditional writes by ETag, deletes of lost tries over HTTP."""
    target = replace(s3_seaweedfs_bucket, url=f"{s3_seaweedfs_bucket.url}/storm-{uuid7().hex[:8]}")
    h = make_harness(target.open())  # type: ignore[arg-type]
    h.namespaces.create(h.catalog, ["db"], {}, "admin")
    h.create_table("t")
    storm(h, writers=8, commits=5)


def storm(table: Harness, writers: int = 12, commits: int = 8) -> None:
    servers = [table, make_harness(table.storage.inner)]
    acked: list[str] = []
    answered: dict[str, str] = {}  # each acknowledged change's answer: the metadata file it was told holds it
    refused: list[BaseException] = []
    lock = threading.Lock()
    planted = {(3, 2), (7, 4)}  # requests whose requirement fails on purpose

    def write(w: int) -> None:
        h = servers[w % 2]
        for n in range(commits):
            name = f"w{w}-{n}"
            requirements = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 7}] \
                if (w, n) in planted else None
            try:
                outcome = commit_call(h, w, set_property(name, requirements=requirements))()
            except IcebergError as exc:
                with lock:
                    refused.append(exc)
                continue
            with lock:
                acked.append(name)
                answered[name] = str(outcome.metadata_location)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert len(refused) == len(planted)
    assert all(isinstance(e, CommitFailed) and e.message.startswith("Requirement failed") for e in refused)
    assert len(acked) == writers * commits - len(planted)
    fresh = table.reopen()
    metadata = current(fresh)
    missing = set(acked) - set(metadata.properties)
    assert not missing, lost_commits_report(fresh, missing, answered)
    # Each request's own change is in the version it was answered with (the group commit's promise to clients).
    assert all(name in fresh.tables.files.read(answered[name]).properties for name in acked)
    # The metadata log is a chain: every version's log ends with the version before it.
    versions = history(fresh)
    for newer, older in pairwise(versions):
        assert fresh.tables.files.read(newer).metadata_log[-1].metadata_file == older
    # One receipt per acknowledged request (and the create's), each request exactly once.
    receipts = committed_receipts(fresh, table_uuid(fresh))
    assert len(receipts) == len(acked) + 1
    changed = [e for _, e in receipts if e.get("group")]
    assert all(e["group"]["actions"] == ["set-properties"] for e in changed)
    # Lost races leave nothing behind: every metadata file and group record belongs to the history.
    uuid = table_uuid(fresh)
    on_disk = {m.key for m in fresh.storage.list(metadata_folder(fresh)) if m.key.endswith(".metadata.json")}
    assert on_disk == {fresh.tables.files.key_of(v) for v in versions}
    grouped = {v for v in versions if is_group_file(v)}
    assert grouped, "this many writers on two services always meet"
    assert len(list(fresh.storage.list(f"{GROUPS}/{uuid}/"))) == len(grouped)


def lost_commits_report(h: Harness, missing: set[str], answered: dict[str, str]) -> str:
    """Where acknowledged changes missing from the table's current version went: the file each was answered with
    (still stored or not, in the version chain or not), which stored metadata files hold them, and the chain around
    them (a storage CAS that let two writers through leaves a holder outside the chain; a commit built on a stale
    base leaves it inside, then dropped; an answer naming a file that was deleted is a lost try acknowledged)."""
    versions = history(h)
    chain = {h.tables.files.key_of(v): i for i, v in enumerate(versions)}  # newest first

    def place(key: str) -> str:
        return f"chain position {chain[key]}" if key in chain else "NOT in the chain"

    def properties_at(key: str) -> dict[str, str]:
        return orjson.loads(h.storage.get(key).data).get("properties", {})

    lines = [f"acknowledged but missing from the current version: {sorted(missing)}",
             f"chain of {len(versions)} versions, newest first"]
    for name in sorted(missing):
        key = h.tables.files.key_of(answered[name])
        stored = h.storage.head(key) is not None
        holds = stored and name in properties_at(key)
        lines.append(f"{name} was answered with {key}: {'stored' if stored else 'NOT stored'}, {place(key)}, "
                     f"{'holds' if holds else 'does NOT hold'} the change")
    for meta in h.storage.list(metadata_folder(h)):
        if not meta.key.endswith(".metadata.json"):
            continue
        properties = properties_at(meta.key)
        held = sorted(missing & set(properties))
        if held:
            lines.append(f"{meta.key}: holds {held}, {place(meta.key)}, {len(properties)} properties")
    for i, version in enumerate(versions[:60]):
        data = h.tables.files.read(version)
        lines.append(f"  {i:3d} {version.rsplit('/', 1)[-1]} props={len(data.properties)} "
                     f"has={sorted(missing & set(data.properties))}")
    return "\n".join(lines)


# -- the coalescer itself ------------------------------------------------------------------------------------------


def test_the_coalescer_hands_each_member_its_answer_and_a_crash_to_all() -> None:
    coalescer: Coalescer = Coalescer(max_batch=3)
    seen: list[list[int]] = []

    def run(batch: list[Pending[int]]) -> None:
        seen.append([p.item for p in batch])
        for p in batch:
            if p.item % 2:
                p.fail(ValueError(p.item))
            else:
                p.succeed(p.item * 10)

    answers: dict[int, Any] = {}

    def submit(i: int) -> None:
        try:
            answers[i] = coalescer.submit("t", i, run)
        except ValueError as exc:
            answers[i] = exc

    with coalescer.hold("t"):
        threads = [threading.Thread(target=submit, args=(i,)) for i in range(7)]
        for thread in threads:
            thread.start()
        while coalescer.queued("t") < 7:
            time.sleep(0.001)
    for thread in threads:
        thread.join(10)
    assert sorted(len(batch) for batch in seen) == [1, 3, 3]
    assert all(answers[i] == i * 10 for i in range(0, 7, 2))
    assert all(isinstance(answers[i], ValueError) for i in range(1, 7, 2))

    def crash(batch: list[Pending[int]]) -> None:
        raise SimulatedCrash("boom")

    with pytest.raises(SimulatedCrash):
        coalescer.submit("t", 1, crash)
    assert coalescer.queued("t") == 0


def test_backoff_is_jittered_and_capped() -> None:
    import random

    rng = random.Random(1)
    delays = [backoff_delay(attempt, rng) for attempt in range(40)]
    assert all(0 <= d <= 0.25 for d in delays)
    assert len(set(delays)) == len(delays)


# -- garbage collection of what lost or crashed groups leave -------------------------------------------------------


def test_gc_removes_group_records_outside_the_history_and_counts_member_receipts_as_committed(
        table: Harness) -> None:
    results = run_grouped(table, [commit_call(table, i, set_property(f"p{i}")) for i in range(3)])
    landed = results[0].metadata_location  # type: ignore[union-attr]
    uuid = table_uuid(table)
    lost = f"{landed.rsplit('-', 5)[0]}-{group_part()}.metadata.json"  # a file that never became a version
    table.tables.groups.write(GroupRecord(uuid, lost, history(table)[1], [GroupMember(None, "x", {}, [])]))
    policy = GcPolicy()
    now = time.time() + policy.orphan_metadata_age_s + 60
    chosen = group_record_deletions(table.storage, policy, now)
    assert [d.key for d in chosen] == [group_record_key(uuid, lost)]
    assert group_record_deletions(table.storage, policy, time.time()) == []  # too young to judge
    # Every member's receipt names the same committed file: GC knows it was a table version. The receipts are
    # written after the answers, on the after-answer pool: wait for them.
    assert after_answer.drain(10)
    assert hashlib.sha256(landed.encode()).hexdigest() in known_commit_keys(table.storage)


# -- a CAS that landed although the storage client reported a lost race ---------------------------------------


class _LandsButReportsLost:
    """Wraps a backend: the first pointer compare-and-swap is applied, then reported as a failed precondition, as
    an S3 client that retried a put whose first try had in fact succeeded would report it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.fired = inner, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, key: str, data: bytes, precondition: Any = None) -> Any:
        result = self.inner.put(key, data, precondition)
        if key.startswith(f"{POINTERS}/") and result.ok and not self.fired:
            self.fired = True
            return PreconditionFailed()
        return result


def test_a_cas_reported_lost_that_landed_is_answered_once_and_its_file_kept(table: Harness) -> None:
    storage = _LandsButReportsLost(table.storage)
    tables = TableService(CatalogStore(storage), storage)  # type: ignore[arg-type]
    result = commit.commit_table(tables, table.catalog, ("db",), "t", set_property("once"), "admin", {"kind": "t"})
    assert storage.fired
    versions = history(table.reopen())
    assert len(versions) == 2 and versions[0] == result.metadata_location, "applied once, not re-applied"
    assert table.storage.head(table.tables.files.key_of(result.metadata_location)) is not None
